// Help conventions (cli/help.h): "did you mean", enum choices, and every command's --help with
// examples whose flags exist. End-to-end through the built binary where the user sees it.
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/help.h"
#include "tests/harness.h"

namespace ledgerdiff::testing {
namespace {

const std::vector<std::string> kCommands = {"ingest", "digest", "diff", "dump", "verify", "verify-range", "follow-status", "selftest",
                                            "chaos", "sweep", "manifest", "plan", "worker", "wait", "runs",
                                            "cancel",       "drop"};

TEST(SuggestCommand, NamesTheCommandATypoMeant) {
  EXPECT_EQ(cli::SuggestCommand("verfy", kCommands), "verify");
  EXPECT_EQ(cli::SuggestCommand("verifiy", kCommands), "verify");
  EXPECT_EQ(cli::SuggestCommand("selftset", kCommands), "selftest");  // adjacent swap counts once
  EXPECT_EQ(cli::SuggestCommand("verify-rnage", kCommands), "verify-range");
  EXPECT_EQ(cli::SuggestCommand("dif", kCommands), "diff");
  EXPECT_EQ(cli::SuggestCommand("chaoss", kCommands), "chaos");
  EXPECT_EQ(cli::SuggestCommand("Dump", kCommands), "dump");
}

TEST(SuggestCommand, FallsBackToTheShortestPrefixMatch) {
  EXPECT_EQ(cli::SuggestCommand("verify-r", kCommands), "verify-range");
  EXPECT_EQ(cli::SuggestCommand("sel", kCommands), "selftest");
  EXPECT_EQ(cli::SuggestCommand("ver", kCommands), "verify");  // a prefix of two: the shorter
}

TEST(SuggestCommand, SuggestsNothingForUnrelatedWords) {
  EXPECT_EQ(cli::SuggestCommand("xyz", kCommands), "");
  EXPECT_EQ(cli::SuggestCommand("db", kCommands), "");
  EXPECT_EQ(cli::SuggestCommand("", kCommands), "");
  EXPECT_EQ(cli::SuggestCommand("verify", {}), "");
  EXPECT_EQ(cli::SuggestCommand("report", kCommands), "");
  EXPECT_EQ(cli::SuggestCommand("reingest", kCommands), "ingest");  // 8 letters allow 2 edits
}

TEST(SuggestCommand, PrefersTheCloserAndThenTheEarlierCandidate) {
  EXPECT_EQ(cli::SuggestCommand("--wrkers", {"--range", "--workers", "--seed"}), "--workers");
  EXPECT_EQ(cli::SuggestCommand("ab", {"ax", "ay"}), "ax");
  EXPECT_EQ(cli::SuggestCommand("dumb", {"diff", "dump"}), "dump");
}

enum class Color { kRed, kGreen, kBlue };

TEST(EnumOptions, ShowChoicesInDeclarationOrderAsAlternatives) {
  CLI::App app;
  Color color = Color::kRed;
  std::string kind;
  CLI::Option* c = app.add_option("--color", color)
                       ->transform(CLI::CheckedTransformer(
                           std::map<std::string, Color>{{"red", Color::kRed}, {"green", Color::kGreen}, {"blue", Color::kBlue}}));
  CLI::Option* k = app.add_option("--kind", kind)->check(CLI::IsMember({"jsonl", "csv"}));
  CLI::Option* plain = app.add_option("--name", kind, "Name: a | b");
  EXPECT_EQ(cli::EnumChoices(*c), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(cli::EnumChoices(*k), (std::vector<std::string>{"jsonl", "csv"}));
  EXPECT_TRUE(cli::EnumChoices(*plain).empty());
  cli::FormatEnumOption(c, cli::EnumChoices(*c));
  EXPECT_EQ(c->get_type_name(), "red|green|blue");
  EXPECT_EQ(cli::EnumChoices(*c), (std::vector<std::string>{"red", "green", "blue"}));
  // Parsing is unchanged by the display.
  app.parse("--color blue", false);
  EXPECT_EQ(color, Color::kBlue);
}

// The flags listed in a --help's option and positional sections.
std::set<std::string> HelpFlags(const std::string& help) {
  std::set<std::string> flags;
  std::regex flag(R"(^  (?:-\w,)?(--[\w-]+))");
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("Examples:", 0) == 0) break;
    if (std::regex_search(line, m, flag)) flags.insert(m[1]);
  }
  return flags;
}

std::vector<std::string> ExampleLines(const std::string& help) {
  std::vector<std::string> lines;
  size_t at = help.find("\nExamples:\n");
  if (at == std::string::npos) return lines;
  std::istringstream in(help.substr(at + 11));
  for (std::string line; std::getline(in, line) && !line.empty();) lines.push_back(line);
  return lines;
}

TEST(Help, EveryCommandListedByHelpHasExamplesThatUseItsOwnFlags) {
  CliResult top = RunCli({"--help"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // The commands come from the binary's own list, so a new command without examples fails here.
  std::vector<std::string> commands;
  std::istringstream in(top.out.substr(top.out.find("Subcommands:")));
  std::regex row(R"(^  ([a-z][a-z-]*)\s)");
  for (std::string line; std::getline(in, line) && !(line.empty() && !commands.empty());) {
    std::smatch m;
    if (std::regex_search(line, m, row)) commands.push_back(m[1]);
  }
  EXPECT_EQ(commands, kCommands);
  EXPECT_NE(top.out.find("Examples:"), std::string::npos);
  EXPECT_NE(top.out.find("Environment:\n  LEDGERDIFF_DB"), std::string::npos) << top.out;
  for (const auto& command : commands) {
    SCOPED_TRACE(command);
    CliResult help = RunCli({command, "--help"});
    ASSERT_EQ(help.exit_code, 0) << help.err;
    std::vector<std::string> examples = ExampleLines(help.out);
    ASSERT_FALSE(examples.empty()) << help.out;
    std::set<std::string> flags = HelpFlags(help.out);
    bool runs_itself = false;
    for (const auto& line : examples) {
      if (line.find("  #") == 0) continue;
      if (line.find("  ledgerdiff " + command + " ") == 0 || line == "  ledgerdiff " + command) runs_itself = true;
      std::regex used(R"((?:^|\s)(--[a-z][\w-]*))");
      for (std::sregex_iterator it(line.begin(), line.end(), used), end; it != end; ++it)
        EXPECT_TRUE(flags.count((*it)[1])) << "example uses " << (*it)[1] << " which --help does not list: " << line;
    }
    EXPECT_TRUE(runs_itself) << "no example runs `ledgerdiff " << command << "`";
    EXPECT_NE(help.out.find("Exit codes:"), std::string::npos);
    EXPECT_EQ(help.out.find("ENUM:"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("value in {"), std::string::npos) << help.out;
  }
}

TEST(Help, FormatFlagsShowTheirChoices) {
  CliResult verify = RunCli({"verify", "--help"});
  EXPECT_NE(verify.out.find("--format text|json"), std::string::npos) << verify.out;
  CliResult dump = RunCli({"dump", "--help"});
  EXPECT_NE(dump.out.find("--format jsonl|csv"), std::string::npos) << dump.out;
}

// Every --inject-bug lists every bug kind the self-test plans (split-lookup and row-past-end
// included), each of which the ingester accepts.
TEST(Help, InjectBugListsEveryKind) {
  const std::vector<std::string> kinds = {"skip-ledger",  "duplicate-row",  "drop-row",     "mutate-row",
                                          "swap-order",   "stale-surrogate", "boundary-gap", "partial-commit",
                                          "split-lookup", "row-past-end"};
  for (const char* command : {"ingest", "verify", "sweep"}) {
    CliResult help = RunCli({command, "--help"});
    ASSERT_EQ(help.exit_code, 0) << command;
    std::string flat = std::regex_replace(help.out, std::regex("\\s+"), " ");
    const auto at = flat.find("--inject-bug");
    ASSERT_NE(at, std::string::npos) << command << ": " << help.out;
    for (const auto& kind : kinds)
      EXPECT_NE(flat.find(kind, at), std::string::npos) << command << " --help lacks " << kind << ": " << help.out;
  }
  CliResult bad = RunCli({"ingest", "--range", "2:101", "--schema", "x", "--inject-bug", "row-past-the-end@50"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("split-lookup, row-past-end"), std::string::npos) << bad.err;
}

TEST(Help, UsageErrorsSayWhatWasMeant) {
  CliResult typo = RunCli({"verfy", "--range", "2:101"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err, "ledgerdiff: unknown command 'verfy'; did you mean verify?\n");
  EXPECT_EQ(typo.out, "");

  CliResult unknown = RunCli({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'frobnicate'; the commands are: ingest, digest"), std::string::npos)
      << unknown.err;

  CliResult none = RunCli({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("a command is required: ingest, digest, diff, dump, verify"), std::string::npos) << none.err;

  CliResult flag = RunCli({"verify", "--range", "2:101", "--wrkers", "3"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.err, "ledgerdiff: verify: unknown option --wrkers; did you mean --workers?\n");

  CliResult format = RunCli({"diff", "a", "b", "--format", "xml"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_EQ(format.err, "ledgerdiff: diff: --format must be one of text|json, not 'xml'\n");

  // The enum display did not change parsing: names are still accepted case-insensitively.
  CliResult upper = RunCli({"selftest", "--format", "JSON", "--workers", "0"});
  EXPECT_EQ(upper.exit_code, 2);
  EXPECT_EQ(upper.err, "ledgerdiff: --workers must be at least 1\n");

  // A number out of its type names what the flag takes.
  CliResult negative = RunCli({"diff", "a", "b", "--max-rows", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_EQ(negative.err, "ledgerdiff: diff: --max-rows takes a whole number of 0 or more, not '-1'\n");
  // 64-bit counts too: CLI11 read "-3" as 2^64 - 3 and accepted it (a follower's --cycles, ingest's
  // --state-rows), hidden options included.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"verify-range", "--left", "a", "--right", "b", "--follow", "--from", "2", "--state",
                                 "s", "--cycles", "-3"},
        std::vector<std::string>{"ingest", "--range", "2:9", "--schema", "s", "--state-rows", "-3"}}) {
    CliResult wrapped = RunCli(args);
    EXPECT_EQ(wrapped.exit_code, 2) << wrapped.err;
    EXPECT_EQ(wrapped.err, fmt::format("ledgerdiff: {}: {} takes a whole number of 0 or more, not '-3'\n", args[0],
                                       args[args.size() - 2]));
  }
  CliResult word = RunCli({"verify", "--workers", "many"});
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_EQ(word.err, "ledgerdiff: verify: --workers takes a whole number of 0 or more, not 'many'\n");

  // An option's value forgotten: the next option is not taken as the value.
  CliResult swallowed = RunCli({"digest", "--schema", "--range", "2:9"});
  EXPECT_EQ(swallowed.exit_code, 2);
  EXPECT_EQ(swallowed.err,
            "ledgerdiff: digest: --schema needs a value, but the next argument is the option --range (ledgerdiff "
            "digest --help)\n");
  CliResult last = RunCli({"verify-range", "--left", "a", "--right", "b", "--range", "2:9", "--left-schema"});
  EXPECT_EQ(last.exit_code, 2);
  EXPECT_NE(last.err.find("--left-schema"), std::string::npos) << last.err;
}

// The commands a --help lists under "Subcommands:" (the root's, or a command's own: manifest's).
std::vector<std::string> ListedSubcommands(const std::string& help) {
  std::vector<std::string> commands;
  const size_t at = help.find("Subcommands:");
  if (at == std::string::npos) return commands;
  std::istringstream in(help.substr(at));
  std::regex row(R"(^  ([a-z][a-z-]*)\s)");
  for (std::string line; std::getline(in, line) && !(line.empty() && !commands.empty());) {
    std::smatch m;
    if (std::regex_search(line, m, row)) commands.push_back(m[1]);
  }
  return commands;
}

// Issue 46: every command, nested ones and the internal ones included, names an unknown option
// and the option it nearly spells before anything else (a missing required option, a missing
// database): one line, exit 2. Each command gets a typo of its longest option and nothing else.
TEST(Help, EveryCommandNamesAnUnknownOptionAndWhatItMeantBeforeAnythingRequired) {
  std::vector<std::vector<std::string>> paths;
  for (const auto& command : ListedSubcommands(RunCli({"--help"}).out)) {
    paths.push_back({command});
    for (const auto& nested : ListedSubcommands(RunCli({command, "--help"}).out)) paths.push_back({command, nested});
  }
  for (const char* internal : {"_worker", "_orchestrate", "_docs"}) paths.push_back({internal});
  ASSERT_GE(paths.size(), kCommands.size() + 2) << "manifest merge and show are walked too";
  for (const auto& path : paths) {
    std::vector<std::string> args = path;
    args.push_back("--help");
    CliResult help = RunCli(args);
    ASSERT_EQ(help.exit_code, 0) << help.err;
    std::string flag;
    for (const auto& f : HelpFlags(help.out))
      if (f.size() > flag.size()) flag = f;
    std::string name;
    for (const auto& p : path) name += (name.empty() ? "" : " ") + p;
    SCOPED_TRACE(name + " " + flag);
    ASSERT_GE(flag.size(), 5u) << help.out;
    std::string typo = flag;
    typo.insert(typo.size() / 2 + 1, 1, typo[typo.size() / 2 + 1]);  // "--left" -> "--lefft"
    args = path;
    args.push_back(typo);
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "ledgerdiff: " + name + ": unknown option " + typo + "; did you mean " + flag + "?\n");
    EXPECT_EQ(r.out, "");
  }
  // A missing required option names its command and its --help.
  CliResult missing = RunCli({"verify-range", "--right", "Y", "--range", "2:9"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "ledgerdiff: verify-range: --left is required (ledgerdiff verify-range --help)\n");
  // The issue's case: the typo is named, not the required option it left out.
  CliResult lefft = RunCli({"verify-range", "--lefft", "X", "--right", "Y", "--range", "2:9"});
  EXPECT_EQ(lefft.exit_code, 2);
  EXPECT_EQ(lefft.err, "ledgerdiff: verify-range: unknown option --lefft; did you mean --left?\n");
  CliResult nested = RunCli({"manifest", "merge", "--outt", "m.ldm", "a.ldm", "--format", "json"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_EQ(nested.err, "ledgerdiff: manifest merge: unknown option --outt; did you mean --out?\n");
  // An option's value is not an option, whatever it looks like (CLI11 takes it as the value);
  // an option the command falls through to is known.
  CliResult value = RunCli({"ingest", "--ingest-cmd", "--not-a-flag", "--rnage", "2:9"});
  EXPECT_EQ(value.err, "ledgerdiff: ingest: unknown option --rnage; did you mean --range?\n");
  CliResult inherited = RunCli({"manifest", "show", "--format", "json", "/nonexistent/m.ldm"});
  EXPECT_EQ(inherited.err.find("unknown option"), std::string::npos) << inherited.err;
  CliResult unrelated = RunCli({"runs", "--zzzzzz"});
  EXPECT_EQ(unrelated.exit_code, 2);
  EXPECT_EQ(unrelated.err, "ledgerdiff: runs: unknown option --zzzzzz (ledgerdiff runs --help)\n");
}

// --format json: a failure past the flags still prints a JSON document (verdict "error", the
// message stderr prints, the exit code), for a usage error and a runtime one alike.
TEST(Json, AFailureStillPrintsADocumentWithTheVerdictError) {
  CliResult usage = RunCli({"selftest", "--format", "json", "--workers", "0"});
  EXPECT_EQ(usage.exit_code, 2);
  const auto u = nlohmann::json::parse(usage.out);
  EXPECT_EQ(u["verdict"], "error");
  EXPECT_EQ(u["exit_code"], 2);
  EXPECT_EQ("ledgerdiff: " + u["error"].get<std::string>() + "\n", usage.err);

  const std::string nowhere = "host=/nonexistent-ledgerdiff-socket-dir port=1 dbname=x user=x connect_timeout=2";
  CliResult refused = RunCli({"verify-range", "--range", "2:11", "--left", nowhere, "--right", nowhere, "--format",
                              "json"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  const auto r = nlohmann::json::parse(refused.out);
  EXPECT_EQ(r["verdict"], "error");
  EXPECT_EQ(r["exit_code"], 3);
  EXPECT_NE(refused.err.find(r["error"].get<std::string>()), std::string::npos) << refused.err;
}

// Issue 44: wait --timeout's help (and so the man page, generated from the same text) names the
// exit code a timed-out wait really ends with.
TEST(Help, WaitTimeoutNamesTheExitCodeItEndsWith) {
  CliResult plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:51", "--schema", UniqueName("help_wait")});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run = plan.out.substr(plan.out.find_last_of('\n', plan.out.size() - 2) + 1);
  CliResult waited =
      RunCli({"wait", "--db", TestConninfo(), "--run", run.substr(0, run.size() - 1), "--timeout", "1"});
  ASSERT_NE(waited.err.find("not finished after 1 s"), std::string::npos) << waited.err;
  CliResult help = RunCli({"wait", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  std::string flat = std::regex_replace(help.out, std::regex("\\s+"), " ");
  EXPECT_NE(flat.find("exit " + std::to_string(waited.exit_code) + ", a runtime error"), std::string::npos) << flat;
  CliResult man = RunCli({"_docs", "man"});
  ASSERT_EQ(man.exit_code, 0);
  flat = std::regex_replace(man.out, std::regex("\\s+"), " ");
  EXPECT_NE(flat.find("exit " + std::to_string(waited.exit_code) + ", a runtime error"), std::string::npos);
  RunCli({"cancel", "--db", TestConninfo(), "--run", run.substr(0, run.size() - 1)});
}

}  // namespace
}  // namespace ledgerdiff::testing
