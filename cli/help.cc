#include "cli/help.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <regex>

namespace ledgerdiff::cli {

namespace {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

bool IsVisible(const CLI::App* sub) { return !sub->get_group().empty(); }

std::vector<std::string> VisibleCommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return IsVisible(s); }))
    names.push_back(sub->get_name());
  return names;
}

std::string ExamplesSection(const std::vector<std::string>& examples) {
  std::string out = "Examples:\n";
  for (const auto& line : examples) out += line.empty() ? "\n" : "  " + line + "\n";
  return out;
}

// The first argument that is not an option: the command (the root takes no option values).
const char* CommandArgument(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return nullptr;
}

// The option `name` ("--left") of `level`, or of a parent it falls through to (never the root's:
// those come before the command); nullptr when none.
const CLI::Option* FindOption(const CLI::App& level, const std::string& name) {
  for (const CLI::App* at = &level; at != nullptr && at->get_parent() != nullptr; at = at->get_parent()) {
    if (const CLI::Option* opt = at->get_option_no_throw(name)) return opt;
    if (!at->get_fallthrough()) break;
  }
  return nullptr;
}

// The long options a user is told about at `level` (hidden ones are accepted, never suggested).
std::vector<std::string> SuggestableFlags(const CLI::App& level) {
  std::vector<std::string> flags;
  for (const CLI::App* at = &level; at != nullptr && at->get_parent() != nullptr; at = at->get_parent()) {
    for (const CLI::Option* opt : at->get_options())
      if (!opt->get_group().empty())
        for (const auto& l : opt->get_lnames()) flags.push_back("--" + l);
    if (!at->get_fallthrough()) break;
  }
  return flags;
}

// "manifest merge": the names from the root's command down to `level`.
std::string CommandPath(const CLI::App& level) {
  std::string path;
  for (const CLI::App* at = &level; at != nullptr && at->get_parent() != nullptr; at = at->get_parent())
    path = path.empty() ? at->get_name() : at->get_name() + " " + path;
  return path;
}

}  // namespace

std::string SuggestCommand(std::string_view typed, const std::vector<std::string>& candidates) {
  if (typed.empty()) return "";
  const std::string* only_prefix_of = nullptr;
  for (const auto& c : candidates) {
    if (c.size() > typed.size() && c.compare(0, typed.size(), typed) == 0) {
      if (only_prefix_of != nullptr) {
        only_prefix_of = nullptr;
        break;
      }
      only_prefix_of = &c;
    }
  }
  if (only_prefix_of != nullptr && typed.size() >= 3) return *only_prefix_of;
  const size_t allowed = std::max<size_t>(1, std::min<size_t>(3, typed.size() / 3));
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    size_t d = EditDistance(typed, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (!best.empty() || typed.size() < 3) return best;
  for (const auto& c : candidates)
    if (c.size() > typed.size() && c.compare(0, typed.size(), typed) == 0 && (best.empty() || c.size() < best.size()))
      best = c;
  return best;
}

void FormatEnumOption(CLI::Option* opt, const std::vector<std::string>& choices) {
  opt->type_name(Join(choices, "|"));
  // The validators' own descriptions would be appended to the type name: blank them.
  for (int i = 0;; ++i) {
    try {
      opt->get_validator(i)->description("");
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
}

std::vector<std::string> EnumChoices(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  std::vector<std::string> choices;
  size_t open = type.find('{');
  if (open != std::string::npos) {
    // CLI11: "TEXT:{jsonl,csv}" (IsMember) or "ENUM:value in {json->1,text->0} OR {1,0}".
    size_t close = type.find('}', open);
    if (close == std::string::npos) return {};
    std::string body = type.substr(open + 1, close - open - 1);
    // A CheckedTransformer's names come sorted by name: show them in the order of their values
    // (an enum's declaration order, so the default usually comes first).
    std::vector<std::pair<std::string, std::string>> items;  // name, value
    size_t start = 0;
    while (start <= body.size()) {
      size_t comma = body.find(',', start);
      std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      size_t arrow = item.find("->");
      std::string name = item.substr(0, arrow);
      if (name.empty() || name.find(' ') != std::string::npos) return {};
      items.emplace_back(name, arrow == std::string::npos ? "" : item.substr(arrow + 2));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return a.second.size() != b.second.size() ? a.second.size() < b.second.size() : a.second < b.second;
    });
    for (auto& [name, value] : items) choices.push_back(name);
    return choices;
  }
  if (type.find('|') == std::string::npos || type.find(' ') != std::string::npos) return {};
  size_t start = 0;
  while (true) {
    size_t bar = type.find('|', start);
    choices.push_back(type.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return choices;
}

const std::vector<std::string>& CommandExamples(std::string_view command) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> examples = {
      {"ingest",
       {"# the serial reference, then 4 workers pulling jobs of 250 ledgers, into one kept cluster",
        "ledgerdiff ingest --range 2:5001 --schema serial --workers 1 --keep-db /tmp/ld",
        "ledgerdiff ingest --range 2:5001 --schema parallel --workers 4 --job-size 250 --keep-db /tmp/ld",
        "# your own ingester, one command per job",
        "ledgerdiff ingest --range 2:5001 --schema horizon --workers 4 --db \"$DB\" \\",
        "    --ingest-cmd 'stellar-horizon db reingest range {from} {to}'"}},
      {"digest",
       {"ledgerdiff digest --schema serial --keep-db /tmp/ld --out serial.ldm",
        "ledgerdiff digest --schema public --range 2:5001 --db \"$DB\" --jobs 4 --out before.ldm",
        "ledgerdiff digest --schema public --range 2:5001 --shards 4 --shard 0 --out part-0.ldm --db \"$DB\"",
        "# interrupted? continue from before.ldm.partial (same flags): done ledgers are not read again",
        "ledgerdiff digest --schema public --range 2:5001 --db \"$DB\" --jobs 4 --out before.ldm --resume"}},
      {"diff",
       {"ledgerdiff diff serial parallel --keep-db /tmp/ld",
        "ledgerdiff diff before.ldm public --range 2:5001 --db \"$DB\" --format json",
        "ledgerdiff diff 'postgresql://old/horizon#public' 'postgresql://new/horizon#public' --all"}},
      {"dump",
       {"ledgerdiff dump --schema serial --keep-db /tmp/ld --out dump-serial/",
        "ledgerdiff dump --schema public --db \"$DB\" --format csv --out - | head"}},
      {"verify",
       {"# the CI gate: exit 0 identical, 1 divergent (schemas kept, look-again command printed), 2 error",
        "ledgerdiff verify --range 2:5001 --workers 4 --junit verify.xml --markdown summary.md --report report/",
        "# save the serial side once, then compare every run against it",
        "ledgerdiff verify --range 2:5001 --save-baseline base.ldm",
        "ledgerdiff verify --range 2:5001 --baseline base.ldm",
        "ledgerdiff verify --range 2:5001 --ingest-cmd 'stellar-horizon db reingest range {from} {to}'",
        "# the parallel side done by `ledgerdiff worker --run ID` on other machines (verify prints the command)",
        "ledgerdiff verify --range 2:5001 --db \"$DB\" --workers-external --workers-timeout 86400"}},
      {"verify-range",
       {"# before a cut-over: strictly read-only, works against a hot standby",
        "ledgerdiff verify-range --range 2:5001 --left \"$OLD_DB\" --right \"$NEW_DB\"",
        "ledgerdiff verify-range --range 2:5001 --left \"$OLD_DB\" --right \"$NEW_DB\" --all --format json",
        "# one shard per pod (K from JOB_COMPLETION_INDEX); `manifest merge` of the parts exits 1 if any diverged",
        "ledgerdiff verify-range --range 2:5001 --left \"$OLD_DB\" --right \"$NEW_DB\" --shards 8 --shard 0 --out "
        "part-0.ldm",
        "# in CI: JUnit, Markdown and HTML like verify (annotations and step summary on GitHub)",
        "ledgerdiff verify-range --range 2:5001 --left \"$OLD_DB\" --right \"$NEW_DB\" --junit cutover.xml \\",
        "    --markdown cutover.md --report cutover/",
        "# a long check with --out is checkpointed in cutover.ldm.partial; continue it after an interruption",
        "ledgerdiff verify-range --range 2:5001 --left \"$OLD_DB\" --right \"$NEW_DB\" --out cutover.ldm --resume",
        "# follow both databases for weeks: the new ledgers every 30 s, a scrub of the verified ones once a day",
        "ledgerdiff verify-range --follow --from 2 --left \"$OLD_DB\" --right \"$NEW_DB\" --state /var/lib/ledgerdiff/follow \\",
        "    --metrics /var/lib/prometheus/node-exporter/ledgerdiff.prom --interval 30 --keep-going",
        "# ... and compare the state tables (accounts, offers, ...) every 5 minutes when both stand at one ledger",
        "ledgerdiff verify-range --follow --left \"$OLD_DB\" --right \"$NEW_DB\" --state /var/lib/ledgerdiff/follow \\",
        "    --state-interval 300 --keep-going",
        "# both sides re-ingested ledgers 26000:26999 alike: compare them afresh (the state keeps their new rows)",
        "ledgerdiff verify-range --follow --left \"$OLD_DB\" --right \"$NEW_DB\" --state /var/lib/ledgerdiff/follow \\",
        "    --recheck 26000:26999 --interval 30 --keep-going"}},
      {"selftest",
       {"# the gate proves it can fail: every injected bug caught at its ledger", "ledgerdiff selftest",
        "ledgerdiff selftest --range 2:2001 --workers 4 --format json",
        "ledgerdiff selftest --junit selftest.xml --markdown selftest.md"}},
      {"chaos",
       {"ledgerdiff chaos --range 2:3001 --workers 4 --job-size 100 --seed 7",
        "# nightly soak; the printed replay: line reproduces a failure exactly",
        "ledgerdiff chaos --range 2:5001 --workers 4 --seed \"$(date +%Y%m%d)\" --rounds 25 \\",
        "    --faults kill=2,hang=1,crash=2,disconnect=1,orchestrator=1 --format json > chaos.json",
        "# the negative control must fail",
        "ledgerdiff chaos --range 2:3001 --workers 4 --job-size 100 --unsafe-ingester --faults kill=2",
        "# reports: one JUnit case per round; the HTML shows rounds x faults with each round's verdict",
        "ledgerdiff chaos --range 2:3001 --workers 4 --seed 7 --junit chaos.xml --report chaos/"}},
      {"sweep",
       {"ledgerdiff sweep --range 2:20001 --workers 1,2,4 --job-size 100,500,2000 --report sweep/ --csv sweep.csv",
        "# your own ingester; a cell whose ingester fails records the failure and the sweep goes on",
        "ledgerdiff sweep --range 2:20001 --workers 1,2,4,8 --job-size 250,1000 --repeat 3 \\",
        "    --ingest-cmd 'stellar-horizon db reingest range {from} {to}' --format json > sweep.json"}},
      {"manifest",
       {"# one shard per pod (K from JOB_COMPLETION_INDEX), then merge: roots equal one digest's",
        "# ledgerdiff manifest merge --out full.ldm part-0.ldm part-1.ldm part-2.ldm part-3.ldm",
        "ledgerdiff manifest show full.ldm --format json"}},
      {"follow-status",
       {"# where a follower stands, without touching the databases; exit 1 while a divergence is open",
        "ledgerdiff follow-status --state /var/lib/ledgerdiff/follow --format json"}},
      {"plan", {"ledgerdiff plan --range 2:100001 --schema horizon --job-size 500 --db \"$DB\" | tail -n 1"}},
      {"worker", {"# on any machine that reaches the database", "ledgerdiff worker --run \"$RUN_ID\" --db \"$DB\""}},
      {"wait", {"ledgerdiff wait --run \"$RUN_ID\" --timeout 86400 --db \"$DB\""}},
      {"runs", {"ledgerdiff runs --db \"$DB\" --format json"}},
      {"cancel",
       {"# give a run up: its workers stop and exit 1; the schema stays ledgerdiff's (reuse it with --fresh)",
        "ledgerdiff cancel --run \"$RUN_ID\" --db \"$DB\""}},
      {"drop",
       {"# the schemas an interrupted verify left (the command its Ctrl-C message prints)",
        "ledgerdiff drop --cancel --db \"$DB\" --schema ld_RUN_serial --schema ld_RUN_parallel"}},
      {"",
       {"ledgerdiff verify --range 2:5001 --workers 4", "ledgerdiff selftest",
        "ledgerdiff verify-range --range 2:5001 --left \"$OLD_DB\" --right \"$NEW_DB\"", "ledgerdiff COMMAND --help"}},
  };
  static const std::vector<std::string> none;
  auto it = examples.find(command);
  return it == examples.end() ? none : it->second;
}

const std::vector<HelpEntry>& ExitCodes() {
  static const std::vector<HelpEntry> codes = {
      {"0", "identical / success"},
      {"1",
       "divergent / incomplete / a run failed / anomalies found (the first divergent ledger and its rows are printed)"},
      {"2",
       "usage error or bad input: one line on stderr naming the problem; nothing was done, retrying will not help"},
      {"3",
       "runtime failure (connection refused or lost, server or I/O error): nothing is half-written; a retry may help"},
      {"128+N", "interrupted by signal N (Ctrl-C: 130) after stopping workers and the embedded server"},
  };
  return codes;
}

const std::vector<HelpEntry>& EnvironmentVariables() {
  static const std::vector<HelpEntry> vars = {
      {"LEDGERDIFF_DB", "conninfo used when --db is not given"},
      {"PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGSERVICE, PGSSLMODE, PGOPTIONS",
       "libpq's variables, read by the commands that only read (digest, diff, dump, wait, runs) when neither "
       "--db nor LEDGERDIFF_DB is set and one of PGHOST, PGPORT, PGDATABASE, PGSERVICE is; empty values count as "
       "unset. Commands that write (ingest, verify, selftest, chaos, sweep, plan, worker, cancel, drop) ignore them "
       "(and say so): they write only where --db or LEDGERDIFF_DB says. Without a database, an embedded "
       "throwaway server is started (worker, wait, runs, cancel and drop need one named)"},
      {"TMPDIR", "where the embedded server's cluster is created (default /tmp)"},
      {"LEDGERDIFF_PG_BINDIR",
       "directory holding initdb and postgres for the embedded server (default: the newest "
       "/usr/lib/postgresql/*/bin, then PATH)"},
      {"LEDGERDIFF_PG_USER", "as root, the user the embedded server runs as (default postgres, then nobody)"},
      {"GITHUB_ACTIONS", "when true, failures are also printed as GitHub annotations (::error ...)"},
      {"GITHUB_STEP_SUMMARY", "when set, the Markdown summary of a gate is appended to this file"},
  };
  return vars;
}

void ApplyHelpConventions(CLI::App& app) {
  // CLI11 reads "-5" into an unsigned 64-bit option as 2^64 - 5 (strtoull): every unsigned option
  // refuses a sign itself, in the words of a conversion error (DescribeParseError).
  auto show_enums = [](CLI::App* a) {
    for (CLI::Option* opt : a->get_options([](const CLI::Option*) { return true; })) {
      std::vector<std::string> choices = EnumChoices(*opt);
      if (!choices.empty()) FormatEnumOption(opt, choices);
      if (opt->get_type_name() != "UINT" || opt->get_lnames().empty()) continue;
      const std::string flag = "--" + opt->get_lnames().front();
      opt->check(CLI::Validator(
          [flag](std::string& text) {
            return text.find('-') == std::string::npos
                       ? std::string()
                       : fmt::format("{} takes a whole number of 0 or more, not '{}'", flag, text);
          },
          ""));
    }
  };
  std::string exit_codes = "Exit codes:\n";
  for (const auto& e : ExitCodes()) exit_codes += fmt::format("  {:<6} {}\n", e.name, e.meaning);
  std::string environment = "Environment:\n";
  for (const auto& e : EnvironmentVariables()) environment += fmt::format("  {}\n", e.name);
  environment += "  (man ledgerdiff for what each one does)\n";

  show_enums(&app);
  app.footer(ExamplesSection(CommandExamples("")) + "\n" + exit_codes + "\n" + environment);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    show_enums(sub);
    if (!IsVisible(sub)) continue;
    const auto& examples = CommandExamples(sub->get_name());
    sub->footer(examples.empty() ? exit_codes : ExamplesSection(examples) + "\n" + exit_codes);
  }
}

std::string OptionMissingItsValue(const CLI::App& app, int argc, const char* const* argv) {
  const char* command = CommandArgument(argc, argv);
  if (command == nullptr) return "";
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (s->get_name() == command) sub = s;
  if (sub == nullptr) return "";
  auto option = [&](std::string_view arg) -> const CLI::Option* {
    if (arg.size() < 3 || arg.substr(0, 2) != "--" || arg.find('=') != std::string_view::npos) return nullptr;
    return sub->get_option_no_throw(std::string(arg));
  };
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string_view(argv[i]) == "--") break;  // what follows is positional
    const CLI::Option* opt = option(argv[i]);
    if (opt == nullptr || opt->get_expected_min() == 0) continue;  // not an option, or a flag (or its value optional)
    if (option(argv[i + 1]) != nullptr)
      return fmt::format("{}: {} needs a value, but the next argument is the option {} (ledgerdiff {} --help)", command,
                         argv[i], argv[i + 1], command);
  }
  return "";
}

std::string UnknownOption(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // what follows is positional
    if (arg.size() > 2 && arg.substr(0, 2) == "--") {
      if (level == &app) return "";  // before the command: DescribeParseError says a command comes first
      const std::string name(arg.substr(0, arg.find('=')));
      const CLI::Option* opt = FindOption(*level, name);
      if (opt == nullptr) {
        const std::string command = CommandPath(*level);
        const std::string suggestion = SuggestCommand(name, SuggestableFlags(*level));
        return suggestion.empty()
                   ? fmt::format("{}: unknown option {} (ledgerdiff {} --help)", command, name, command)
                   : fmt::format("{}: unknown option {}; did you mean {}?", command, name, suggestion);
      }
      // CLI11 takes an option's required values whatever they look like.
      if (arg.find('=') == std::string_view::npos && opt->get_expected_min() > 0) i += opt->get_expected_min();
      continue;
    }
    if (!arg.empty() && arg.front() == '-') continue;  // a short option, or a negative number
    // A word: a command (or a nested one) descends; else a positional or a value.
    const CLI::App* next = nullptr;
    for (const CLI::App* s : level->get_subcommands([](const CLI::App*) { return true; }))
      if (s->get_name() == arg) next = s;
    if (next != nullptr) level = next;
    else if (level == &app) return "";  // an unknown command: DescribeParseError names it
  }
  return "";
}

std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error, int argc, const char* const* argv) {
  const std::vector<std::string> commands = VisibleCommandNames(app);
  const char* command = CommandArgument(argc, argv);
  if (command == nullptr) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg != "--help" && arg != "-h" && arg != "--version")
        return fmt::format("unknown option {}; a command comes first: {} (ledgerdiff --help)", arg,
                           Join(commands, ", "));
    }
    return fmt::format("a command is required: {} (ledgerdiff --help)", Join(commands, ", "));
  }
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (s->get_name() == command) sub = s;
  if (sub == nullptr) {
    std::string suggestion = SuggestCommand(command, commands);
    return suggestion.empty() ? fmt::format("unknown command '{}'; the commands are: {}", command, Join(commands, ", "))
                              : fmt::format("unknown command '{}'; did you mean {}?", command, suggestion);
  }
  // An unknown option never gets here: UnknownOption names it before the parse.
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr) {
    std::string message = error.what();
    // An unsigned option given a sign (ApplyHelpConventions): said like a conversion error.
    if (const size_t says = message.find(" takes a whole number of 0 or more, not '"); says != std::string::npos) {
      const size_t flag = message.rfind("--", says);
      if (flag != std::string::npos) return fmt::format("{}: {}", command, message.substr(flag));
    }
    // CLI11 says "--format: Check xml value in {...} FAILED": name the choices instead.
    std::string name = message.substr(0, message.find(':'));
    const CLI::Option* opt = sub->get_option_no_throw(name);
    std::vector<std::string> choices = opt ? EnumChoices(*opt) : std::vector<std::string>{};
    if (!choices.empty()) {
      std::string given;
      for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == name && i + 1 < argc) given = argv[i + 1];
        if (arg.substr(0, name.size() + 1) == name + "=") given = arg.substr(name.size() + 1);
      }
      return given.empty()
                 ? fmt::format("{}: {} must be one of {}", command, name, Join(choices, "|"))
                 : fmt::format("{}: {} must be one of {}, not '{}'", command, name, Join(choices, "|"), given);
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    // CLI11 says "--left is required": name the command and where its options are listed.
    return fmt::format("{}: {} (ledgerdiff {} --help)", command, error.what(), command);
  }
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // CLI11 says "Could not convert: --workers = -3": name what the flag takes instead.
    static const std::regex kConversion("Could not convert: (\\S+) = (.*)");
    std::smatch m;
    const std::string message = error.what();
    if (std::regex_match(message, m, kConversion)) {
      const std::string name = m[1], given = m[2];
      const CLI::Option* opt = sub->get_option_no_throw(name);
      const std::string type = opt ? opt->get_type_name() : "";
      std::string wants = "a valid value";
      if (type == "UINT") wants = "a whole number of 0 or more";
      else if (type == "INT") wants = "a whole number";
      else if (type == "FLOAT") wants = "a number";
      return fmt::format("{}: {} takes {}, not '{}'", command, name, wants, given);
    }
  }
  return error.what();
}

}  // namespace ledgerdiff::cli
