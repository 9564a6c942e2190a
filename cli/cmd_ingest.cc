// ingest: the reference ingester (serial with --workers 1, parallel otherwise), and the hidden
// _worker subcommand that runs one worker process.
#include <cstdlib>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "report/ingest_text_json.h"
#include "verify/ingest_run.h"
#include "verify/worker.h"

namespace ledgerdiff::cli {

namespace {

// Flags shared by ingest, verify and chaos for the ingestion itself.
struct IngestFlags {
  std::string range;
  std::vector<std::string> faults;
  std::vector<std::string> holds;
  verify::IngestOptions options;
  DatabaseOptions db;
  OutputFormat format = OutputFormat::kText;
};

Runner SetupIngest(CLI::App* sub, IngestFlags& f) {
  sub->add_option("--range", f.range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--schema", f.options.schema, "Target schema (created and marked as ledgerdiff's)");
  sub->add_option("--workers", f.options.workers, "Worker processes; 1 is the serial path")->capture_default_str();
  sub->add_option("--job-size", f.options.job_size, "Ledgers per job (the last job may be shorter)")->capture_default_str();
  sub->add_option("--retries", f.options.retries, "Retries of a failed job")->capture_default_str();
  sub->add_option("--retry-backoff", f.options.retry_backoff_s, "First retry delay in seconds, doubled per retry")
      ->capture_default_str();
  sub->add_option("--job-timeout", f.options.job_timeout_s,
                  "Seconds without a heartbeat after which a worker is declared hung, killed and its job requeued")
      ->capture_default_str();
  sub->add_option("--seed", f.options.seed, "Generator seed")->capture_default_str();
  sub->add_option("--profile", f.options.density, "Ledger density: stellar | flat")->capture_default_str();
  sub->add_option("--ingest-cmd", f.options.ingest_cmd,
                  "Run this command per job instead of the built-in ingester; placeholders {from} {to} {schema} {db} "
                  "{worker} {job} (shell-quoted); DATABASE_URL, PG* and PGOPTIONS=search_path are set");
  sub->add_option("--inject-bug", f.options.bug, "Self-test: misbehave at one ledger, KIND@LEDGER");
  sub->add_flag("--force", f.options.force, "Write into a schema ledgerdiff did not create");
  sub->add_flag("--fresh", f.options.replace_schema, "Drop and recreate the schema first (only if ledgerdiff owns it)");
  sub->add_option("--resume", f.options.resume_run, "Continue an interrupted run from the job table");
  sub->add_option("--run-id", f.options.run_id, "Use this run id instead of a new one")->group("");
  sub->add_option("--unsafe-commit-every", f.options.unsafe_commit_every, "Negative control")->group("");
  sub->add_option("--fault", f.faults, "Test fault point JOB:ATTEMPT:STAGE:abort|fail")->group("");
  sub->add_option("--hold", f.holds, "Test hold point JOB:ATTEMPT:STAGE:SECONDS")->group("");
  AddDatabaseFlags(sub, f.db);
  AddFormatFlag(sub, f.format);
  return [&f]() -> int {
    if (f.options.resume_run.empty()) {
      if (f.range.empty()) return Fail(Status::Usage("--range FROM:TO is required"));
      if (f.options.schema.empty()) return Fail(Status::Usage("--schema NAME is required"));
      auto range = ParseLedgerRange(f.range);
      if (!range.ok()) return Fail(range.status());
      f.options.range = *range;
    }
    for (const auto& text : f.faults) {
      auto fault = verify::ParseFaultPoint(text);
      if (!fault.ok()) return Fail(fault.status());
      f.options.crash_points.push_back(*fault);
    }
    for (const auto& text : f.holds) {
      auto hold = verify::ParseHoldPoint(text);
      if (!hold.ok()) return Fail(hold.status());
      f.options.hold_points.push_back(*hold);
    }
    if (Status s = verify::ValidateIngestOptions(f.options); !s.ok()) return Fail(s);
    auto db = Database::Resolve(f.db);
    if (!db.ok()) return Fail(db.status());
    StderrReporter reporter;
    auto report = verify::RunIngest((*db)->conninfo(), f.options, reporter);
    if (!report.ok()) return Fail(report.status());
    if (f.format == OutputFormat::kJson) {
      fmt::print("{}\n", report::IngestReportToJson(*report).dump(2));
    } else {
      fmt::print("{}", report::RenderIngestText(*report));
      if ((*db)->embedded() && !(*db)->embedded_server()->kept())
        fmt::print("  (the embedded database is removed on exit; --keep-db DIR keeps it)\n");
    }
    if (!report->ok) {
      fmt::print(stderr, "ledgerdiff: {}\n", report->error);
      return 2;
    }
    return 0;
  };
}

}  // namespace

std::vector<Command> IngestCommands() {
  static IngestFlags ingest;
  static verify::WorkerOptions worker;
  return {
      {"ingest", "Ingest generated ledgers into a schema, serially (--workers 1) or with N worker processes", false,
       [](CLI::App* sub) { return SetupIngest(sub, ingest); }},
      {"_worker", "Internal: one worker process of an ingestion run", true,
       [](CLI::App* sub) -> Runner {
         sub->add_option("--run", worker.run_id)->required();
         sub->add_option("--worker", worker.worker)->required();
         return []() -> int {
           const char* db = std::getenv(verify::kWorkerDbEnv);
           worker.conninfo = db ? db : "";
           return verify::RunWorker(worker);
         };
       }},
  };
}

}  // namespace ledgerdiff::cli
