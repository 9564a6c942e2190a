#pragma once
// Distributed runs without an orchestrator process: `plan` registers a run (RegisterRun), any
// number of `worker` processes on any machines carry it out, `wait` watches it from anywhere.
//
// A worker here is RunWorker (worker.h) plus the orchestrator's remaining duties, so that no
// process has to survive: it requeues lost jobs of any worker (RequeueLost: a vanished backend,
// a heartbeat older than the job timeout; the lease pattern) and it settles the run's state
// (done when every job is done and the end-of-run checks pass; failed as soon as a job is out of
// retries, which stops every worker's claims, or when a check fails).
// A planned run owns its schema from `plan` until it is done, failed or cancelled: its
// `running` row in the job table is its live-run guard (schema_guard.h), so `plan`, `plan
// --fresh`, `ingest [--fresh]`, verify and chaos into that schema are refused meanwhile.
// INVARIANT: a planned run's state moves running -> done | failed only through SettleRun (under
// a row lock of the run, with the reason of a failure stored), and running -> cancelled only
// through CancelRun.

#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/report.h"
#include "core/status.h"
#include "ingest/ingest_report.h"
#include "ingest/job_table.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff::ingest {

// "<host>-<pid>-<start ms since the epoch>": unique per run and per machine.
std::string UniqueWorkerId();

// How a run is carried out right now, as `wait` and `runs` say it.
enum class Liveness {
  kNotRunning,      // done, failed or cancelled
  kNeverHadWorker,  // running, but no worker ever joined (none registered, no attempt made)
  // Running with pending or running jobs, but no worker is alive (job_table.h: it recorded no
  // exit, its last_seen is younger than the job timeout and its heartbeat session exists) and
  // no running job has a heartbeat younger than the job timeout from a live session.
  kNoWorkerAlive,
  // As kNoWorkerAlive, except that a worker seen within the job timeout lost its heartbeat
  // session and is reconnecting (WorkerCounts::reconnecting): not a reason to start another.
  kWorkersReconnecting,
  kWorkersAlive,
};
// "not_running", "never_had_worker", "no_worker_alive", "workers_reconnecting", "workers_alive"
// (JSON).
const char* LivenessName(Liveness liveness);

struct RunStatus {
  std::string run_id, schema;
  RunState state = RunState::kRunning;
  std::string mode;                   // planned | orchestrated
  std::string error;                  // why the run failed or was cancelled ("" otherwise)
  LedgerRange range;
  uint32_t job_size = 0;
  double job_timeout_s = 0;
  std::string created_at;  // ISO 8601, UTC
  RunCounts counts;
  std::vector<std::string> workers;  // distinct workers that made an attempt
  WorkerCounts worker_counts;        // the worker registry: joined, alive
  Liveness liveness = Liveness::kNotRunning;
  // Running jobs without a heartbeat for longer than the job timeout, or whose session ended
  // (StaleJobText), and failed jobs (their last attempt's error in JobRow::error).
  std::vector<JobRow> stale_jobs, failed_jobs;
};

// "stale (no heartbeat for N s, worker W)" (plus "; its database session ended" when it did).
std::string StaleJobText(const JobRow& job);

// Usage error "no such run ..." (exit 2, one line) unless the job table holds `run_id`.
Status RequireRun(pg::Connection& conn, const std::string& run_id);

// `plan`: registers a planned run (orchestrator.h RegisterRun) after checking the options and
// that the target schema is absent, or ledgerdiff's, or --force: a refusal creates nothing, not
// even the job table. Refused (Usage, nothing re-marked or dropped) when --run-id is taken or
// the schema has a live run of any kind.
Result<RunSpec> PlanRun(pg::Connection& conn, const IngestOptions& options);

Result<RunStatus> GetRunStatus(pg::Connection& conn, const std::string& run_id);
// Every run in the job table, newest first (empty when there is no control schema).
Result<std::vector<RunStatus>> ListRuns(pg::Connection& conn);

// A running run with a job failed for good -> failed (the reason names the job and its last
// error); with every job done -> the end-of-run checks an orchestrated run gets
// (CheckRunOwnsSchema, and CheckRowsMatchJobs unless unsafe commits are planned), then done, or
// failed with the check's message. Under a row lock of the run: concurrent settlers check once.
// Returns the state afterwards.
Result<RunState> SettleRun(pg::Connection& conn, const std::string& run_id);

struct WorkerOutcome {
  // 0 the run is complete; 1 it failed or was cancelled (`message` says why, with the failed
  // job's last error); 2 bad input (e.g. no such run); 3 runtime error (core/status.h).
  int exit_code = 0;
  std::string message;  // "" when exit_code is 0 or RunWorker printed the error itself
};
// Claims jobs of `run_id` until none remain (the lease keeper requeues lost jobs of any worker
// and settles the run meanwhile). `worker` empty: UniqueWorkerId().
WorkerOutcome RunDistributedWorker(const std::string& conninfo, const std::string& run_id, std::string worker,
                                   Reporter& reporter);

// `ledgerdiff cancel`: a running run becomes cancelled with its pending and running jobs (a
// running attempt's fenced finish then fails and its data transaction rolls back; workers stop
// claiming). The schema keeps its ownership mark and what done jobs committed; no run holds it
// any more. Usage error when the run does not exist or is not running (already done, failed or
// cancelled).
struct CancelReport {
  std::string run_id, schema, mode, schema_mark;
  uint32_t pending = 0, running = 0, done = 0;  // jobs fenced (pending, running) and kept (done)
};
Result<CancelReport> CancelRun(pg::Connection& conn, const std::string& run_id);

// Blocks until the run is done, failed or cancelled, reporting progress (with stale jobs and
// liveness). timeout_s <= 0: no limit. Runtime error on timeout, Usage error for an unknown run;
// `last` (optional) receives the last status read, also on timeout.
Result<RunStatus> WaitForRun(pg::Connection& conn, const std::string& run_id, double timeout_s, Reporter& reporter,
                             RunStatus* last = nullptr);

// verify --workers-external: registers the run (PlanRun; or continues options.resume_run with
// ReopenRun) and waits (WaitForRun, timeout_s <= 0: no limit) for workers started elsewhere
// (`ledgerdiff worker --run ID`, printed as a note) to finish it; starts no worker itself. The
// run is settled with RunIngest's end-of-run checks (SettleRun); a failed or cancelled run or a
// failed check is a report with `ok` false and `error` set to the run's stored reason.
// `reach_flags` ("--db '...'" / "--keep-db DIR" / "") go into the printed worker command.
Result<IngestReport> RunWithExternalWorkers(const std::string& conninfo, const IngestOptions& options, double timeout_s,
                                            const std::string& reach_flags, Reporter& reporter);

}  // namespace ledgerdiff::ingest
