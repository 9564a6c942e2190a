// ledgerdiff: prove that a parallel ingestion of ledger history wrote exactly what a serial one
// writes. This file is the table of subcommands and the one path every command takes:
//   parse flags -> check them (no database yet) -> run (database resolved on first use,
//   progress on stderr) -> print the outcome as text or JSON -> exit 0 (pass) / 1 (a finding) /
//   2 (bad input) / 3 (runtime failure) / 128+N (ended by signal N).

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cli/command.h"
#include "cli/help.h"
#include "core/atomic_file.h"
#include "core/pg.h"
#include "core/process.h"
#include "core/text.h"
#include "fixtures/ingester.h"
#include "ledgerdiff/version.h"
#include "report/gate.h"

namespace ledgerdiff::cli {

Result<Database*> Context::database(int workers) {
  if (!db_) {
    DatabaseOptions options = db_options_;
    if (options.max_connections <= 0 && workers > 0) options.max_connections = EmbeddedMaxConnectionsFor(workers);
    LD_ASSIGN_OR_RETURN(db_, Database::Resolve(options));
    if (!db_->note().empty()) reporter_.Note(db_->note());
  }
  return db_.get();
}

void TargetFirstReporter::SetPending(std::string line) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(line);
  pending_set_ = true;
}

void TargetFirstReporter::Flush() {
  if (!pending_set_) return;
  std::lock_guard<std::mutex> lock(mu_);
  // Under the lock: a note of another thread waits until the target line is out.
  if (!pending_set_) return;
  inner_.Note(pending_);
  pending_.clear();
  pending_set_ = false;
}

void TargetFirstReporter::Note(std::string_view line) {
  Flush();
  inner_.Note(line);
}

void TargetFirstReporter::Update(const Progress& progress) {
  Flush();
  inner_.Update(progress);
}

void TargetFirstReporter::Event(std::string_view line) {
  Flush();
  inner_.Event(line);
}

int EmbeddedWorkersFor(const ingest::IngestPlan& plan, uint32_t workers) {
  const uint64_t w = workers;
  return static_cast<int>(std::min<uint64_t>(w + (plan.ingest_cmd.empty() ? 0 : (w + 1) / 2), 5000));
}

void AddPlanFlags(CLI::App* sub, ingest::IngestPlan& p, PlanFlags which) {
  if (which == PlanFlags::kAll) {
    sub->add_option("--workers", p.workers, "Worker processes of a parallel ingestion (1 is the serial path)")
        ->capture_default_str();
    sub->add_option("--job-size", p.job_size, fmt::format("Ledgers per job (the last job may be shorter; a run holds at most {} jobs)",
                                                   FormatCount(ingest::kMaxJobsPerRun)))->capture_default_str();
  }
  sub->add_option("--retries", p.retries, "Retries of a failed job")->capture_default_str();
  sub->add_option("--retry-backoff", p.retry_backoff_s, "First retry delay in seconds, doubled per retry")
      ->capture_default_str();
  sub->add_option("--job-timeout", p.job_timeout_s,
                  "Seconds without a heartbeat after which a worker is declared hung, killed and its job requeued")
      ->capture_default_str();
  sub->add_option("--seed", p.seed, "Seed of the generator (and of chaos's fault schedule)")->capture_default_str();
  sub->add_option_function<std::string>(
         "--density", [&p](const std::string& text) { p.density = *fixtures::ParseDensity(text); },
         "Generated ledger density: stellar | flat")
      ->check(CLI::Validator(
          [](std::string& text) {
            const auto density = fixtures::ParseDensity(text);
            return density.ok() ? std::string() : density.status().message();
          },
          ""))
      ->default_str(std::string(fixtures::ToString(p.density)));
}

Status WriteFile(const std::string& path, const std::string& content) { return WriteFileAtomic(path, content); }

std::string ReconnectFlags(Database& db) {
  if (db.embedded()) return "--keep-db " + ShellQuote(db.embedded_server()->dir(), ShellQuoting::kWhenNeeded);
  return db.conninfo().empty() ? "" : "--db " + ShellQuote(pg::RedactConninfo(db.conninfo()), ShellQuoting::kAlways);
}

void KeepClusterOfKeptSchemas(Database& db, bool kept_schemas, Outcome& out) {
  if (!kept_schemas || !db.ephemeral()) return;
  const report::KeptClusterLines lines = report::RenderKeptCluster(db.Keeper()());
  out.text += lines.text;
  if (out.json.is_object()) out.json.update(lines.json);
  else out.json = lines.json;
}

void AddWriteFailure(Outcome& out, const Status& written) {
  if (written.ok()) return;
  out.error += (out.error.empty() ? "" : "; ") + written.message();
  out.exit_code = static_cast<int>(ExitCode::kRuntime);
}

CLI::Validator WritableFile() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path == "-") return "";
        std::error_code ec;
        if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
          std::filesystem::create_directories(parent, ec);
        const Status s = CheckWriteTarget(path);
        return s.ok() ? std::string() : s.message();
      },
      "");
}

CLI::Validator WritableDirectory(std::vector<std::string> files) {
  return CLI::Validator(
      [files](std::string& path) -> std::string {
        if (path == "-") return "";
        namespace fs = std::filesystem;
        std::error_code ec;
        std::string dir = path;
        while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
        // Written through, a link would put the files wherever it points.
        if (fs::is_symlink(dir, ec)) return "refusing to write into " + path + ": it is a symbolic link";
        if (const auto parent = fs::path(dir).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
        if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) return path + ": exists and is not a directory";
        const std::string parent = fs::path(dir).parent_path().empty() ? "." : fs::path(dir).parent_path().string();
        if (!fs::is_directory(parent, ec)) return "cannot create " + path + ": " + parent + " is not a directory";
        // Every file the command will write there, as WritableFile checks one (a link, a FIFO).
        if (fs::is_directory(dir, ec))
          for (const auto& name : files)
            if (const Status s = CheckWriteTarget((fs::path(dir) / name).string()); !s.ok()) return s.message();
        return "";
      },
      "");
}

void AddDigestProfileFlag(CLI::App* sub, std::string& profile) {
  sub->add_option("--profile", profile, "Digest profile: horizon | auto | FILE.json (see dump/README.md)")
      ->capture_default_str();
}

std::function<std::optional<dump::DigestEngine>()> AddDigestEngineFlag(CLI::App* sub) {
  auto text = std::make_shared<std::string>();
  CLI::Option* opt =
      sub->add_option("--engine", *text,
                      "How digests are computed: text (the client hashes each row's canonical text; the reference) "
                      "or server-hash (the server hashes native values; PostgreSQL 14+). Default: text")
          ->check(CLI::IsMember({"text", "server-hash"}));
  return [text, opt]() -> std::optional<dump::DigestEngine> {
    if (opt->count() == 0) return std::nullopt;
    return dump::ParseDigestEngine(*text);
  };
}

std::string InjectBugKinds() {
  std::string kinds;
  for (fixtures::BugKind kind : fixtures::AllBugKinds()) {
    if (!kinds.empty()) kinds += ", ";
    kinds += fixtures::BugKindName(kind);
  }
  return kinds;
}

namespace {

// The table of commands: name, summary, what it does with a database, has --format, hidden, reports
// progress, setup.
constexpr Command kCommands[] = {
    {"ingest", "Ingest generated ledgers into a schema, serially (--workers 1) or with N worker processes",
     DatabaseUse::kWrites, kHasFormat | kReportsProgress, SetupIngest},
    {"digest", "Per-table, per-ledger digests of a schema (optionally a manifest file)", DatabaseUse::kReads,
     kHasFormat | kReportsProgress, SetupDigest},
    {"diff", "Compare two schemas or manifests: first divergent ledger and its row diff", DatabaseUse::kReads,
     kHasFormat | kReportsProgress, SetupDiff},
    {"dump", "Canonical rows of a schema (JSON lines or CSV), byte-identical for equal content", DatabaseUse::kReads,
     kPlain, SetupDump},
    {"verify", "Ingest a range serially and in parallel, digest and diff both: the CI gate", DatabaseUse::kWrites,
     kHasFormat | kReportsProgress, SetupVerify},
    {"verify-range", "Read-only cut-over check: digest a range in two databases and diff them", DatabaseUse::kNone,
     kHasFormat | kReportsProgress, SetupVerifyRange},
    {"follow-status", "What a verify-range --follow state holds: frontier, open divergences, scrub, lock (no database)",
     DatabaseUse::kNone, kHasFormat, SetupFollowStatus},
    {"selftest", "Prove the gate catches every injected bug at its ledger", DatabaseUse::kWrites,
     kHasFormat | kReportsProgress, SetupSelftest},
    {"chaos", "Fault-injection rounds: kill, freeze, crash and disconnect workers and the orchestrator",
     DatabaseUse::kWrites, kHasFormat | kReportsProgress, SetupChaos},
    {"sweep", "Choose workers and job size by measurement, each setting proven identical to the serial reference",
     DatabaseUse::kWrites, kHasFormat | kReportsProgress, SetupSweep},
    {"manifest", "Manifest files: merge the parts of a sharded digest (merge), print one (show)", DatabaseUse::kNone,
     kHasFormat, SetupManifest},
    {"plan", "Register a distributed ingestion run and its jobs; prints the run id (no workers start)",
     DatabaseUse::kWritesLasting, kPlain, SetupPlan},
    {"worker", "Join a run from any machine: claim its jobs until none remain", DatabaseUse::kWritesRun, kPlain,
     SetupRunWorker},
    {"wait", "Block until a run is complete or failed, printing progress", DatabaseUse::kReadsRun, kHasFormat,
     SetupWait},
    {"runs", "List the runs of the job table with their states", DatabaseUse::kReadsRun, kHasFormat, SetupRuns},
    {"cancel", "Cancel a live run: fence its jobs, stop its workers; the schema stays ledgerdiff's",
     DatabaseUse::kWritesRun, kHasFormat, SetupCancel},
    {"drop", "Drop schemas ledgerdiff created that no live run holds (refuses any other schema)",
     DatabaseUse::kWritesRun, kHasFormat, SetupDrop},
    {"_orchestrate", "Internal: the orchestrator of a run registered in the job table (JSON report)",
     DatabaseUse::kWrites, kHidden, SetupOrchestrate},
    {"_worker", "Internal: one worker process of an ingestion run", DatabaseUse::kNone, kHidden, SetupWorker},
    {"_docs", "Internal: print the man page or a shell completion script (build step)", DatabaseUse::kNone, kHidden,
     SetupDocs},
};

// Prints "ledgerdiff: <message>" on stderr and returns the status's exit code.
int Fail(const Status& status) {
  // After Ctrl-C, failures are the interruption's echo: the signal thread prints the one line
  // that says what was stopped and removed (core/process.h).
  if (TerminationInProgress()) return 2;
  fmt::print(stderr, "ledgerdiff: {}\n", status.message());
  return static_cast<int>(status.exit_code());
}

// One registered subcommand: its table entry, its flags' storage and what main added.
struct Entry {
  const Command* command;
  CLI::App* sub;
  Action action;
  DatabaseOptions db;
  OutputFormat format = OutputFormat::kText;
  std::string json_file;  // --json FILE: the JSON document also written there, whatever --format prints
  bool quiet = false;     // --quiet: nothing on stderr but the error line
  double progress_interval_s = StderrReporter::kDefaultLogIntervalS;  // --progress-interval
};

int Run(Entry& e) {
  // Internal processes (workers, orchestrators) are stopped by their parent with SIGTERM as a
  // matter of course: only the command a user started says what an interruption did.
  if (!e.command->hidden()) SetTerminationSubject(e.command->name);
  // A reader of --format json gets a document on every failure past the flags' parsing: the
  // error as stderr's one line says it, and the exit code.
  auto fail = [&e](const Status& status) {
    const int code = Fail(status);
    if (TerminationInProgress()) return code;
    const std::string doc =
        nlohmann::json{{"verdict", "error"}, {"error", status.message()}, {"exit_code", code}}.dump(2) + "\n";
    if (e.format == OutputFormat::kJson) fmt::print("{}", doc);
    if (!e.json_file.empty() && e.json_file != "-")
      (void)WriteFileAtomic(e.json_file, doc);  // best effort: stderr already said the failure
    return code;
  };
  if (e.json_file == "-") return fail(Status::Usage("--json takes a FILE; for the document on stdout use --format json"));
  if (e.action.check) {
    if (Status s = e.action.check(); !s.ok()) return fail(s);
  }
  StderrReporter reporter(/*quiet=*/e.quiet || (e.action.quiet && e.action.quiet()), e.progress_interval_s);
  Context context(e.db, reporter);
  context.SetOutput(e.format, e.json_file);
  Result<Outcome> outcome = e.action.run(context);
  if (outcome.ok()) context.FlushAnnouncement();  // a command that made no progress names its target now
  reporter.Done();
  if (!outcome.ok()) return fail(outcome.status());
  if (!e.json_file.empty() && !outcome->json.is_null())
    AddWriteFailure(*outcome, WriteFileAtomic(e.json_file, outcome->json.dump(2) + "\n"));
  if (e.format == OutputFormat::kJson && !outcome->json.is_null())
    fmt::print("{}\n", outcome->json.dump(2));
  else
    fmt::print("{}", outcome->text);
  if (!outcome->error.empty()) fmt::print(stderr, "ledgerdiff: {}\n", outcome->error);
  return outcome->exit_code;
}

}  // namespace

DatabaseUse DatabaseUseOf(std::string_view command) {
  for (const Command& cmd : kCommands)
    if (command == cmd.name) return cmd.database;
  return DatabaseUse::kNone;
}

}  // namespace ledgerdiff::cli

int main(int argc, char** argv) {
  using namespace ledgerdiff;
  using namespace ledgerdiff::cli;
  InstallTerminationHandler();

  CLI::App app{"ledgerdiff: prove that a parallel ingestion of ledger history wrote exactly what a serial one writes"};
  app.set_version_flag("--version", std::string("ledgerdiff ") + kVersion);
  app.require_subcommand(1);

  std::vector<std::unique_ptr<Entry>> entries;
  for (const Command& cmd : kCommands) {
    auto e = std::make_unique<Entry>();
    e->command = &cmd;
    e->sub = app.add_subcommand(cmd.name, cmd.summary);
    if (cmd.hidden()) e->sub->group("");
    e->action = cmd.setup(e->sub);
    if (cmd.database != DatabaseUse::kNone) {
      const bool writes = cmd.database == DatabaseUse::kWrites || cmd.database == DatabaseUse::kWritesRun ||
                          cmd.database == DatabaseUse::kWritesLasting;
      const bool existing = cmd.database == DatabaseUse::kReadsRun || cmd.database == DatabaseUse::kWritesRun ||
                            cmd.database == DatabaseUse::kWritesLasting;
      e->db.command = cmd.name;
      e->db.writes = writes;
      e->db.existing_only = existing;
      e->sub->add_option("--db", e->db.conninfo,
                         fmt::format("PostgreSQL conninfo (libpq URI or key=value). Default: $LEDGERDIFF_DB{}{}",
                                     writes ? "" : ", then the PG* environment",
                                     existing ? " (no default: the run's database must be named)"
                                     : writes ? ", then an embedded throwaway server (this command writes: the PG* "
                                                "environment is ignored)"
                                              : ", then an embedded throwaway server"))
          // An empty --db (an unset variable in a script: --db "$DB") would fall back to the
          // defaults silently and write somewhere the user did not name.
          ->check(CLI::Validator(
              [](std::string& conninfo) {
                return conninfo.empty() ? std::string(
                                              "--db is empty: name the database (a libpq URI or key=value "
                                              "conninfo), or leave --db out for the default")
                                        : std::string();
              },
              ""));
      e->sub->add_option("--keep-db", e->db.keep_dir,
                         "Embedded server: keep its cluster in DIR (reused when DIR already holds one)");
    }
    if (cmd.has_format()) {
      e->sub->add_option("--format", e->format, "Output format")
          ->transform(CLI::CheckedTransformer(
              std::map<std::string, OutputFormat>{{"text", OutputFormat::kText}, {"json", OutputFormat::kJson}},
              CLI::ignore_case));
      e->sub->add_option("--json", e->json_file,
                         "Also write the JSON document (what --format json prints) to FILE, replaced atomically")
          ->check(WritableFile());
    }
    if (cmd.progress()) {
      e->sub->add_flag("--quiet", e->quiet,
                       "Print nothing on stderr (no target line, notes nor progress) but the error line of a failure; "
                       "the result still goes to stdout");
      e->sub->add_option("--progress-interval", e->progress_interval_s,
                         "Off a terminal (a log): at most one progress line every S seconds (a terminal's live "
                         "block is redrawn as it goes)")
          ->capture_default_str()
          ->check(CLI::Validator(
              [](std::string& text) {
                double s = -1;
                return CLI::detail::lexical_cast(text, s) && s >= 0 ? std::string()
                                                                     : "must be 0 or more seconds, not '" + text + "'";
              },
              ""));
    }
    entries.push_back(std::move(e));
  }
  ApplyHelpConventions(app);
  // Before CLI11's parse, which names a missing required option before an unknown one.
  if (std::string unknown = UnknownOption(app, argc, argv); !unknown.empty()) {
    fmt::print(stderr, "ledgerdiff: {}\n", unknown);
    return 2;
  }
  if (std::string missing = OptionMissingItsValue(app, argc, argv); !missing.empty()) {
    fmt::print(stderr, "ledgerdiff: {}\n", missing);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 with one line.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "ledgerdiff: {}\n", DescribeParseError(app, e, argc, argv));
    return 2;
  }
  int code = 2;
  for (auto& e : entries) {
    if (e->sub->parsed()) {
      code = Run(*e);
      break;
    }
  }
  // After Ctrl-C the command fails as its database goes away; the signal thread is still
  // stopping servers and removing directories, and ends the process itself (exit 128+signal).
  AwaitTerminationIfInProgress();
  return code;
}
