#pragma once
// The ingestion orchestrator: registers a run in the job table, keeps N worker processes alive
// until every job is done, requeues the jobs of dead or frozen workers, and reports.
//
// Workers are real OS processes (`ledgerdiff _worker --slot N`), each with its own connections, each the
// leader of its own process group (a signal to the group reaches an external ingester too), and
// each dies with the orchestrator (parent-death signal). Workers pull jobs; a worker that
// finishes early takes the next job: there is no static split.
//
// Failure policy: a failed attempt is retried with exponential backoff (retry_backoff_s * 2^k)
// up to `retries` times; a worker that dies or stops sending heartbeats for job_timeout_s is
// killed, its job requeued and the worker replaced. When a job runs out of retries the run
// stops the other workers, names the failed ranges and a restart range, and fails (exit 2).
// A run interrupted in any way can be resumed from the job table (`--resume RUN`): the plan is
// stored there, so resuming needs nothing but the run id (`ledgerdiff _orchestrate --run RUN`).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/report.h"
#include "core/status.h"
#include "ingest/ingest_report.h"
#include "ingest/job_table.h"
#include "ingest/plan.h"

namespace ledgerdiff::ingest {

// An ingestion: the plan (and a test run's hooks) plus how this invocation treats the schema and
// the run.
struct IngestOptions {
  IngestPlan plan;
  TestHooks hooks;
  bool force = false;           // allow writing into a schema ledgerdiff did not create
  bool replace_schema = false;  // drop and recreate the (owned) schema first
  std::string run_id;           // empty: a new id
  std::string resume_run;       // continue this run from the job table (the plan comes from there)
  // External ingester: the root of the runs' log directories (each job's stdout and stderr go to
  // ROOT/RUN_ID/job-N.{stdout,stderr}.log); empty: $TMPDIR/ledgerdiff-logs (RunLogDir).
  std::string log_root;
  // Registered as a planned run (`plan`, verify --workers-external): carried out by `worker`
  // processes anywhere, with no orchestrator (runs.mode "planned"; see schema_guard.h).
  bool planned = false;
  // Set for an embedded cluster (Database::Keeper; the default one dies with this process): called when the run
  // fails in a way `--resume` could continue, to keep the database for it (the hint then names
  // its --keep-db DIR and how to remove it). When it fails, the error gives no resume hint.
  KeepDatabaseFn keep_database;
};

// "; restart with --resume RUN or --range RANGE" for a failed run, with the flags that reach a
// kept embedded database (options.keep_database, called here), or why it cannot be resumed.
std::string ResumeHint(const IngestOptions& options, const std::string& run_id, const std::string& range);

// Checks flags before any database is touched. Errors are Usage errors naming the flag.
Status ValidateIngestOptions(const IngestOptions& options);

// Creates the target schema (owned) with its history tables and registers the run with its
// jobs in the job table, without starting workers. Returns the run as stored.
// Under the schema guard (schema_guard.h), before anything is created, dropped or re-marked:
// a Usage error when the run id is taken, when an orchestrator holds the schema, or when the
// schema has any live run (CheckNoLiveRun).
// REQUIRES: options.resume_run is empty; options passed ValidateIngestOptions (RunIngest and
// PlanRun check them at their entry; chaos's rounds derive from its checked plan).
Result<RunSpec> RegisterRun(pg::Connection& conn, const IngestOptions& options);

// Reopens a registered run to continue it: Usage error when it was cancelled, when another run
// is live on its schema, or when its schema is no longer its own; failed jobs get another
// chance and the run is running again. `orchestrated`: also takes the schema's run lock on
// `conn` (waiting up to max(10 s, job timeout) for a killed orchestrator's session to go), which
// the caller keeps for the run's life. Jobs still marked running are left to the lost-job
// check (dead backend or stale heartbeat), so a live worker elsewhere is not disturbed.
Result<RunSpec> ReopenRun(pg::Connection& conn, const std::string& run_id, Reporter& reporter, bool orchestrated);

// The connection budget of a server for local workers (RunIngest checks it before it starts
// any): free = max_connections - superuser_reserved_connections - reserved_connections (from
// PostgreSQL 16) - client sessions in use (pg_stat_activity, the caller's own included). A
// worker process holds kSessionsPerWorker sessions (its jobs, its heartbeat), plus at least one
// of an external ingester's own; the orchestrator's one session is already in use when checked.
struct ConnectionBudget {
  int max_connections = 0, superuser_reserved = 0, reserved = 0, in_use = 0;
  int free = 0;        // sessions still available to a non-superuser
  int per_worker = 0;  // sessions one local worker needs
  int fits = 0;        // the most workers that fit
};
Result<ConnectionBudget> ReadConnectionBudget(pg::Connection& conn, bool external_ingester);
// Usage error (exit 2, before anything is written) when `workers` local workers do not fit,
// naming the figures and the largest --workers that fits. Re-reads for up to `wait_s` seconds
// first (a resumed run: its killed predecessor's sessions may still be closing).
Status CheckConnectionBudget(pg::Connection& conn, uint32_t workers, bool external_ingester, double wait_s = 0);

// Runs (or resumes) an ingestion into options.schema of the database at `conninfo`: checks the
// connection budget, registers (or reopens) the run, keeps its workers going and checks its end.
// A run that fails because jobs ran out of retries, fails its end-of-run checks or is cancelled
// returns a report with ok == false (and the run's state and reason in the job table). A worker
// that ends with an error (e.g. a refused connection) or a signal counts in workers_failed and
// is replaced (after a backoff when it exited with an error) while work remains.
Result<IngestReport> RunIngest(const std::string& conninfo, const IngestOptions& options, Reporter& reporter);

// Rows per per-ledger history table of our schema within `range`.
Result<std::map<std::string, uint64_t>> CountRowsInRange(pg::Connection& conn, const std::string& schema,
                                                         const LedgerRange& range);

}  // namespace ledgerdiff::ingest
