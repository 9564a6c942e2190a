#pragma once
// The CLI is a thin shell: each subcommand parses its flags (CLI11), checks them, calls one
// library function and hands back what to print. main.cc holds the table of commands (like
// ninja's kTools) and does the rest once for all: --db / --keep-db and --format flags, resolving
// the database, the progress reporter, rendering and the exit code.

#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/database.h"
#include "core/report.h"
#include "core/report.h"
#include "core/status.h"
#include "dump/canonical.h"
#include "ingest/plan.h"

namespace ledgerdiff::cli {

// A Reporter that puts one pending note (the target line) before whatever comes first: the
// next note or progress update, or Flush().
class TargetFirstReporter : public Reporter {
 public:
  explicit TargetFirstReporter(Reporter& inner) : inner_(inner) {}
  void SetPending(std::string line);
  void Flush();  // notes the pending line, if any, now
  void Note(std::string_view line) override;
  void Update(const Progress& progress) override;
  void Event(std::string_view line) override;
  void Plan(std::string_view command, const CommandPlan& plan) override { inner_.Plan(command, plan); }
  void Done() override { inner_.Done(); }
  bool live() const override { return inner_.live(); }

 private:
  Reporter& inner_;
  std::mutex mu_;
  std::atomic<bool> pending_set_{false};
  std::string pending_;
};

// What main hands a running command.
class Context {
 public:
  Context(const DatabaseOptions& db_options, Reporter& reporter)
      : db_options_(db_options), reporter_(reporter), progress_(reporter) {}
  // The database of --db / LEDGERDIFF_DB / PG* / the embedded default, resolved on first use
  // (a command that turns out not to need one never starts the embedded server).
  // `workers`: the most worker processes the command runs at once; an embedded server is sized
  // for them (EmbeddedMaxConnectionsFor) unless the database is resolved already.
  // REQUIRES: the command's DatabaseUse is not kNone.
  Result<Database*> database(int workers = 0);
  // Names what the command works on (issue 22). Its line, "target: ..." (Target::Line), is the
  // first line of the command's progress on stderr: printed before its first note or progress
  // update (so before any long work), or by main once the command succeeded without any. A
  // command that fails before making progress prints only its one error line, as before.
  // A command announces once, right after resolving its database(s).
  void Announce(const Target& target) { progress_.SetPending(target.Line()); }
  void Announce(const TargetPair& targets) { progress_.SetPending(targets.Line()); }
  // Prints the target line if nothing has yet (main, after a successful run).
  void FlushAnnouncement() { progress_.Flush(); }
  Reporter& reporter() { return progress_; }
  // The output main prints the outcome in (--format, --json FILE): for a command that prints on
  // its own before main would (verify-range --follow stopped by a signal).
  void SetOutput(OutputFormat format, std::string json_file) {
    format_ = format;
    json_file_ = std::move(json_file);
  }
  OutputFormat format() const { return format_; }
  const std::string& json_file() const { return json_file_; }

 private:
  const DatabaseOptions& db_options_;
  Reporter& reporter_;           // main's (the PG* note goes straight to it)
  TargetFirstReporter progress_;  // what the command reports through
  OutputFormat format_ = OutputFormat::kText;
  std::string json_file_;
  std::unique_ptr<Database> db_;
};

// The worker count to size an embedded server with (Context::database) for `workers` local
// workers of `plan`: an external ingester's own session is the third of each worker's
// (orchestrator.h CheckConnectionBudget), EmbeddedMaxConnectionsFor counts two per worker.
int EmbeddedWorkersFor(const ingest::IngestPlan& plan, uint32_t workers);

// What a command hands back; main prints it in the --format asked for, then `error`.
struct Outcome {
  int exit_code =
      0;  // ExitCode: 0 success / identical, 1 divergent / anomalies / run failed, 2 bad input, 3 runtime failure
  std::string text;     // --format text (and commands without --format)
  nlohmann::json json;  // --format json; null: the command has no JSON form
  std::string error;    // non-empty: "ledgerdiff: <error>" on stderr after the output
};

struct Action {
  // Flags -> options and every check that needs no database: a Usage error exits 2 before any
  // server starts or anything is written. May be empty.
  std::function<Status()> check;
  std::function<Result<Outcome>(Context&)> run;
  // Progress and notes off (the command's own output goes to stdout as it is made).
  std::function<bool()> quiet;
};

// What a command does with a database; main adds --db / --keep-db unless kNone, and
// Context::database() resolves them by it (core/database.h):
enum class DatabaseUse : uint8_t {
  kNone,       // none, or one given to it explicitly (manifest files, internal processes)
  kReads,      // --db, LEDGERDIFF_DB, the PG* environment, else the embedded default
  kWrites,     // --db or LEDGERDIFF_DB only (PG* ignored, and said so), else the embedded default
  kReadsRun,   // a run that must exist: --db, LEDGERDIFF_DB or PG*; none given is an error
  kWritesRun,  // a run that must exist: --db or LEDGERDIFF_DB (PG* ignored); none given is an error
  // Registers a run that outlives the command (plan: workers join later): --db, LEDGERDIFF_DB or
  // a kept --keep-db cluster (PG* ignored); none given is an error, never a throwaway server.
  kWritesLasting,
};

// The DatabaseUse of a command of main.cc's table (kNone for an unknown name); the man page's
// ENVIRONMENT section lists which commands read PG* from it (cmd_docs.cc).
DatabaseUse DatabaseUseOf(std::string_view command);

// What main adds to or does with a command (ninja's kTools idea: a row reads as what it does).
enum CommandTrait : unsigned {
  kPlain = 0,
  kHasFormat = 1u << 0,        // main adds --format text|json
  kHidden = 1u << 1,           // internal (worker and orchestrator processes)
  kReportsProgress = 1u << 2,  // reports progress on stderr: main adds --quiet and --progress-interval
};

struct Command {
  const char* name;
  const char* summary;
  DatabaseUse database;
  unsigned traits;  // CommandTrait bits
  bool has_format() const { return traits & kHasFormat; }
  bool hidden() const { return traits & kHidden; }
  bool progress() const { return traits & kReportsProgress; }
  // Adds the subcommand's own flags to `sub`; the Action runs it after parsing.
  Action (*setup)(CLI::App* sub);
};

// The workload: the ingestion plan's flags with its defaults, the same on ingest, verify,
// selftest and chaos: --workers --job-size --retries --retry-backoff --job-timeout --seed
// --density.
// kWithoutShape leaves out --workers and --job-size (sweep takes lists of them).
enum class PlanFlags { kAll, kWithoutShape };
void AddPlanFlags(CLI::App* sub, ingest::IngestPlan& plan, PlanFlags which = PlanFlags::kAll);
// --profile: the digest profile (verify, selftest, chaos, digest, diff, dump).
void AddDigestProfileFlag(CLI::App* sub, std::string& profile);
// --engine text|server-hash (dump/canonical.h DigestEngine) of every command that digests; the
// flag's value once parsed, nullopt when it was not given (the caller's default applies).
std::function<std::optional<dump::DigestEngine>()> AddDigestEngineFlag(CLI::App* sub);
// The --inject-bug kinds as every --help lists them, "skip-ledger, duplicate-row, ...", from their
// one declaration (fixtures::AllBugKinds, which the self-test plans from too).
std::string InjectBugKinds();

// --junit FILE, --markdown FILE and --report DIR of every gate (verify, verify-range, selftest,
// chaos, sweep); the report sink (core/report.h EmitGateReports) writes them, prints GitHub
// annotations and appends the step summary (cmd_verify.cc).
void AddReportFlags(CLI::App* sub, ReportFiles& files);
Status EmitReports(const GateReports& reports, const ReportFiles& files);

// Writes a report file (--junit, --markdown, --csv ...) through core/atomic_file.h.
Status WriteFile(const std::string& path, const std::string& content);
// The report files are written once the verdict is known: a failure then must not lose it. The
// outcome keeps its verdict (printed first), gets the failure as its error line and exits 3 (the
// paths were checked before any work, so one that fails now changed during the run: an I/O
// failure of the environment, not bad input).
void AddWriteFailure(Outcome& out, const Status& written);
// "kept" must be true after the process: when the report calls schemas kept and they live in the
// embedded default cluster (which dies with the process), the cluster is kept too, and the
// outcome says where, how to reach it and how to remove it (json "kept_cluster"); if it cannot
// be kept, it says that nothing was kept (json "evidence_gone").
void KeepClusterOfKeptSchemas(Database& db, bool kept_schemas, Outcome& out);
// The flags that reach `db` again from another process: "--keep-db DIR" for an embedded cluster,
// "--db '<conninfo without its password>'" for a named one, "" for libpq's defaults (PG*).
std::string ReconnectFlags(Database& db);
// Validators of output paths, run while the flags are parsed, before any work: the parent
// directories are created, and a symbolic link at a file target, a directory or other non-regular
// file in the way, or an unwritable directory is a usage error (exit 2). "-" (stdout) passes.
CLI::Validator WritableFile();
// `files`: the names the command writes in the directory, each checked as WritableFile does.
CLI::Validator WritableDirectory(std::vector<std::string> files = {});

// The commands' flags and actions, one file per family; main.cc holds the table.
Action SetupIngest(CLI::App* sub);  // cmd_ingest.cc
Action SetupOrchestrate(CLI::App* sub);
Action SetupWorker(CLI::App* sub);
Action SetupDigest(CLI::App* sub);  // cmd_digest.cc
Action SetupDiff(CLI::App* sub);
Action SetupDump(CLI::App* sub);
Action SetupManifest(CLI::App* sub);  // cmd_manifest.cc (merge, show)
Action SetupVerify(CLI::App* sub);    // cmd_verify.cc
Action SetupVerifyRange(CLI::App* sub);
Action SetupFollowStatus(CLI::App* sub);
Action SetupSelftest(CLI::App* sub);
Action SetupChaos(CLI::App* sub);  // cmd_chaos.cc
Action SetupSweep(CLI::App* sub);  // cmd_sweep.cc
Action SetupPlan(CLI::App* sub);   // cmd_runs.cc (distributed ingestion)
Action SetupRunWorker(CLI::App* sub);
Action SetupWait(CLI::App* sub);
Action SetupRuns(CLI::App* sub);
Action SetupCancel(CLI::App* sub);
Action SetupDrop(CLI::App* sub);
Action SetupDocs(CLI::App* sub);  // cmd_docs.cc (man page and completions)

}  // namespace ledgerdiff::cli
