#pragma once
// The job table: the single source of truth of an ingestion run.
//
// Lives in the tool-owned control schema "ledgerdiff_control" of the target database:
//   runs(run_id, schema_name, range, job_size, workers, spec, state, mode, error, resumes, ...)
//   jobs(run_id, job_id, range, state, attempt, worker, worker_pid, backend_pid, heartbeat,
//        not_before, started_at, finished_at, error, rows, stage)
//   attempts(run_id, job_id, attempt, worker, slot, started_at, finished_at, outcome, error,
//            detector: what caught a failed attempt, ingest/detector.h)
//   workers(run_id, worker, host, pid, slot, backend_pid, started_at, last_seen, exited_at,
//           exit_code, error): the worker processes that joined a run, for liveness reports
//
// Run states, job states and attempt outcomes: ingest/job_rows.h (RunState, JobState,
// AttemptOutcome).
//
// Protocol (all times from the database clock, never a worker's):
// - Claim: the lowest pending job whose not_before has passed, FOR UPDATE SKIP LOCKED; state
//   -> running, attempt += 1, heartbeat = now(). A worker only claims while the run is running.
// - Heartbeat: a worker's second connection refreshes heartbeat while the process lives.
// - Finish: inside the job's data transaction, "running -> done" fenced by (job, attempt): if
//   the job was handed to someone else meanwhile, the update matches no row, the worker's data
//   transaction rolls back and nothing of the stale attempt is committed.
// - Requeue: a failed attempt (error, dead worker, stale heartbeat, vanished backend) goes back
//   to pending with exponential backoff, or to failed once attempts exceed 1 + retries.
// - Cancel: the run's pending and running jobs become cancelled; a running attempt's fenced
//   finish then matches no row and its data transaction rolls back.
// Any process that can reach the database can take part: claiming, fencing and timeouts do not
// depend on the orchestrator's memory (Kubernetes Indexed Jobs / Batch arrays can run workers).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "ingest/detector.h"
#include "ingest/job_rows.h"
#include "ingest/plan.h"

namespace ledgerdiff::ingest {

inline constexpr const char* kControlSchema = "ledgerdiff_control";

// The quoted name of one of the control schema's tables ("runs", "jobs", "attempts", ...).
std::string ControlTable(const char* table);

// Run ids are what NewRunId makes ("20261130_142501_3f9a") and the ids derived from one
// ("<id>_p", "<id>_r3", "<id>_w4_j250_r1"): ASCII letters, digits and '_', 1 to 40 characters
// (so that derived ids and schema names such as "ld_<id>_parallel" stay within 63 bytes).
inline constexpr size_t kMaxRunIdLength = 40;
// Usage error naming --run-id unless `run_id` is made of those characters.
Status ValidateRunId(const std::string& run_id);

// How a run is carried out: by an orchestrator process (ingest, verify, chaos, sweep; its
// liveness is the schema's session lock, schema_guard.h) or by `worker` processes anywhere
// after `plan` (its liveness is the job table alone). Stored as runs.mode.
inline constexpr const char* kModeOrchestrated = "orchestrated";
inline constexpr const char* kModePlanned = "planned";

// A run: its id and the plan every worker carries out; stored as runs.spec (the plan's JSON
// plus "run_id", the derived "heartbeat_s" and, for a test run only, "test_run": true and
// "test_hooks").
struct RunSpec {
  std::string run_id;
  IngestPlan plan;
  TestHooks hooks;  // a test run's; inactive for every production run
  // The schema's ownership comment when the run was registered ("ledgerdiff:owned run=<run_id>",
  // or a foreign schema's own comment under --force); re-checked on resume and at the run's end.
  // Empty for runs stored before it existed.
  std::string schema_mark;

  nlohmann::json ToJson() const;
  static Result<RunSpec> FromJson(const nlohmann::json& j);
};

struct ClaimedJob {
  uint32_t job_id;
  LedgerRange range;
  uint32_t attempt;
};



// Creates the control schema and tables when missing (idempotent, concurrency-safe).
Status EnsureControlSchema(pg::Connection& conn);

// Registers a run with its jobs (all pending), carried out as `mode` (kModeOrchestrated or
// kModePlanned). REQUIRES: run_id unused (RegisterRun checks it under the schema guard).
Status CreateRun(pg::Connection& conn, const RunSpec& spec, const std::vector<LedgerRange>& jobs,
                 const std::string& mode = kModeOrchestrated);
Result<RunSpec> LoadRun(pg::Connection& conn, const std::string& run_id);

// A run's row without its spec.
struct RunRow {
  std::string run_id, schema;
  RunState state;
  std::string mode;
  std::string error;     // why it failed or was cancelled ("" otherwise)
  uint32_t resumes = 0;  // times the run was reopened to be continued (ReopenRun), e.g. by a restarted orchestrator
};
// nullopt when the run (or the whole job table) does not exist.
Result<std::optional<RunRow>> FindRun(pg::Connection& conn, const std::string& run_id);

// Marks the run's state (running, done or failed) with the reason of a failure (`error`; cleared
// when running). A cancelled run is never changed: cancelling is final.
Status SetRunState(pg::Connection& conn, const std::string& run_id, RunState state, const std::string& error = "");
// Removes a run and its jobs (after a successful verify).
Status DeleteRun(pg::Connection& conn, const std::string& run_id);

// Claims the next job for `worker` in lane `slot` (nullopt: none claimable now).
Result<std::optional<ClaimedJob>> ClaimJob(pg::Connection& conn, const std::string& run_id,
                                           const std::string& worker, int worker_pid, int slot = 0);
// Refreshes the heartbeat (and the stage the worker reports); false when the attempt is no
// longer ours.
Result<bool> Heartbeat(pg::Connection& conn, const std::string& run_id, const ClaimedJob& job,
                       const std::string& stage);
// The fenced "done" update with the rows the job wrote; call inside the job's data
// transaction. Error if fenced off.
Status FinishJob(pg::Connection& conn, const std::string& run_id, const ClaimedJob& job, int64_t rows);
// Records a failed attempt by its own worker (fenced): requeue with backoff or fail. `detector`:
// kLostConnection when the worker's job session broke, kAttemptError otherwise. An attempt already
// taken from the worker keeps the detector that caught it (its outcome becomes "fenced").
Status FailJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job, const std::string& error,
               Detector detector);

// Requeues lost running jobs of `run_id` (requeued with backoff, or failed when out of retries)
// and records what caught each with its attempt (ingest/detector.h). With `worker`: the jobs
// that worker holds, caught by `worker_detector` for the reason `why` (a dead worker:
// process_exit). Without: every job whose heartbeat is older than the job timeout or whose
// backend no longer exists, caught by orchestrator_restart when `orchestrator_instance` is given
// and the worker ("wN@INSTANCE") belongs to another orchestrator instance, else heartbeat_timeout
// (stale heartbeat) or lost_connection (backend gone); a vanished backend of the caller's own
// worker (same instance, fresh heartbeat) is left to the caller, who alone knows whether the
// process died (process_exit) or only its session ended (lost_connection). Rows locked by a
// live transaction are skipped (retried on the next call). Returns requeued jobs with their
// worker, worker_pid and detector, so the caller can kill local stale processes.
Result<std::vector<JobRow>> RequeueLost(pg::Connection& conn, const RunSpec& spec,
                                        const std::optional<std::string>& worker, const std::string& why,
                                        const std::string& orchestrator_instance = "",
                                        Detector worker_detector = Detector::kProcessExit);
// Requeues every running job (orchestrator resume / shutdown): outcome "interrupted", at once
// (no backoff) and without spending a retry.
Status RequeueAllRunning(pg::Connection& conn, const RunSpec& spec, const std::string& why);
// The same for one attempt, fenced (a no-op when it is no longer running): a worker being
// stopped hands its job back.
Status InterruptJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job, const std::string& why);

struct RunCounts {
  uint32_t pending = 0, running = 0, done = 0, failed = 0, cancelled = 0;
  uint64_t ledgers_done = 0;
  uint32_t total() const { return pending + running + done + failed + cancelled; }
};
Result<RunCounts> CountJobs(pg::Connection& conn, const std::string& run_id);
Result<std::vector<JobRow>> ListJobs(pg::Connection& conn, const std::string& run_id);
Result<std::vector<AttemptRow>> ListAttempts(pg::Connection& conn, const std::string& run_id);

// The worker registry (table `workers`), for liveness reports only: claiming and fencing never
// depend on it. A worker process records itself when it starts (RegisterWorker), its heartbeat
// connection refreshes last_seen and backend_pid every heartbeat period (TouchWorker), and it
// records how it ended (RecordWorkerExit). A worker is *alive* when it recorded no exit, its
// last_seen is younger than the run's job timeout and its heartbeat session still exists.
Status RegisterWorker(pg::Connection& conn, const std::string& run_id, const std::string& worker, int pid, int slot);
Status TouchWorker(pg::Connection& conn, const std::string& run_id, const std::string& worker);
Status RecordWorkerExit(pg::Connection& conn, const std::string& run_id, const std::string& worker, int exit_code,
                        const std::string& error);

struct WorkerCounts {
  uint32_t joined = 0;  // workers that registered (ever)
  uint32_t alive = 0;   // of those, alive now (see above)
  // Of those, not alive only because their heartbeat session is gone: no exit recorded and seen
  // within the job timeout. A worker whose session the server ended reconnects (worker.h).
  uint32_t reconnecting = 0;
};
Result<WorkerCounts> CountWorkers(pg::Connection& conn, const std::string& run_id, double job_timeout_s);

}  // namespace ledgerdiff::ingest
