#pragma once
// The ingestion orchestrator: registers a run in the job table, keeps N worker processes alive
// until every job is done, requeues the jobs of dead or frozen workers, and reports.
//
// Workers are real OS processes (`ledgerdiff _worker`), each with its own connections, each the
// leader of its own process group (a signal to the group reaches an external ingester too), and
// each dies with the orchestrator (parent-death signal). Workers pull jobs; a worker that
// finishes early takes the next job: there is no static split.
//
// Failure policy: a failed attempt is retried with exponential backoff (retry_backoff_s * 2^k)
// up to `retries` times; a worker that dies or stops sending heartbeats for job_timeout_s is
// killed, its job requeued and the worker replaced. When a job runs out of retries the run
// stops the other workers, names the failed ranges and a restart range, and fails (exit 2).
// A run interrupted in any way can be resumed from the job table (`--resume RUN`).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/report.h"
#include "core/status.h"
#include "verify/job_table.h"

namespace ledgerdiff::verify {

struct IngestOptions {
  LedgerRange range;
  std::string schema;
  uint32_t workers = 1;
  uint32_t job_size = 250;
  uint32_t retries = 3;
  double retry_backoff_s = 0.5;
  double job_timeout_s = 30;
  uint64_t seed = 1;
  std::string density = "stellar";
  std::string ingest_cmd;  // external ingester template (see worker.h)
  std::string bug;         // --inject-bug KIND@LEDGER
  uint32_t unsafe_commit_every = 0;
  std::vector<RunSpec::CrashPoint> crash_points;
  std::vector<RunSpec::HoldPoint> hold_points;
  bool force = false;         // allow writing into a schema ledgerdiff did not create
  bool replace_schema = false;  // drop and recreate the (owned) schema first
  std::string run_id;         // empty: a new id
  std::string resume_run;     // continue this run from the job table
  std::string worker_binary;  // the ledgerdiff executable for workers; empty: this executable
};

// Checks flags before any database is touched. Errors are Usage errors naming the flag.
Status ValidateIngestOptions(const IngestOptions& options);

// A live worker as the orchestrator sees it (for progress and for chaos faults).
struct WorkerProcess {
  int slot = 0;          // lane 1..N
  std::string name;      // "w2", "w2.1" for its first replacement
  int pid = 0;           // leader of its process group
  bool stopped = false;  // SIGSTOPped by a fault
};

// Hooks for fault injection: called on every orchestrator tick (about every 50 ms) with the
// live workers and the orchestrator's connection.
struct OrchestratorHooks {
  std::function<void(std::vector<WorkerProcess>& workers, pg::Connection& conn, const std::string& run_id)> on_tick;
};

struct IngestReport {
  std::string run_id;
  std::string schema;
  LedgerRange range;
  uint32_t workers = 0;
  uint32_t job_size = 0;
  uint32_t jobs = 0;
  bool ok = false;
  double wall_s = 0;
  uint64_t ledgers = 0;
  std::map<std::string, uint64_t> rows_per_table;
  uint64_t rows = 0;
  uint32_t attempts = 0;         // job attempts in all
  uint32_t retried_jobs = 0;     // jobs that needed more than one attempt
  uint32_t workers_replaced = 0;
  std::vector<JobRow> failed_jobs;
  std::optional<LedgerRange> restart_range;
  std::vector<AttemptRow> timeline;  // every attempt, for reports
  std::string error;             // why the run failed

  double ledgers_per_s() const { return wall_s > 0 ? static_cast<double>(ledgers) / wall_s : 0; }
  double rows_per_s() const { return wall_s > 0 ? static_cast<double>(rows) / wall_s : 0; }
};

// Runs (or resumes) an ingestion into options.schema of the database at `conninfo`.
// A run that fails because jobs ran out of retries returns a report with ok == false.
Result<IngestReport> RunIngest(const std::string& conninfo, const IngestOptions& options, Reporter& reporter,
                               const OrchestratorHooks& hooks = {});

// Rows per per-ledger history table of our schema within `range`.
Result<std::map<std::string, uint64_t>> CountRowsInRange(pg::Connection& conn, const std::string& schema,
                                                         const LedgerRange& range);

}  // namespace ledgerdiff::verify
