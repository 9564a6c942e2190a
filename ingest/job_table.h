#pragma once
// The job table: the single source of truth of an ingestion run.
//
// Lives in the tool-owned control schema "ledgerdiff_control" of the target database:
//   runs(run_id, schema_name, range, job_size, workers, spec, state, ...)
//   jobs(run_id, job_id, range, state, attempt, worker, worker_pid, backend_pid, heartbeat,
//        not_before, started_at, finished_at, error, rows, stage)
//   attempts(run_id, job_id, attempt, worker, slot, started_at, finished_at, outcome, error)
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
// Any process that can reach the database can take part: claiming, fencing and timeouts do not
// depend on the orchestrator's memory (Kubernetes Indexed Jobs / Batch arrays can run workers).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "ingest/plan.h"

namespace ledgerdiff::ingest {

inline constexpr const char* kControlSchema = "ledgerdiff_control";

// A run: its id and the plan every worker carries out; stored as runs.spec (the plan's JSON
// plus "run_id" and the derived "heartbeat_s").
struct RunSpec : IngestPlan {
  std::string run_id;
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

struct JobRow {
  uint32_t job_id;
  LedgerRange range;
  std::string state;  // pending | running | done | failed
  uint32_t attempt;
  std::string worker;
  int worker_pid;
  int backend_pid;
  std::string error;
  int64_t rows;       // rows the job committed (done jobs), 0 otherwise
  std::string stage;  // last stage the worker reported ("hold:<table>" while held)
};

struct AttemptRow {
  uint32_t job_id;
  uint32_t attempt;
  std::string worker;
  double start_s;  // seconds since the run's creation
  double end_s;    // -1 while running
  std::string outcome;  // running | done | failed | lost | fenced | interrupted
  std::string error;
  LedgerRange range;
  int slot = 0;  // the worker's lane 1..N (a replacement keeps its lane); 0 when not recorded
};

// Creates the control schema and tables when missing (idempotent, concurrency-safe).
Status EnsureControlSchema(pg::Connection& conn);

// Registers a run with its jobs (all pending). REQUIRES: run_id unused.
Status CreateRun(pg::Connection& conn, const RunSpec& spec, const std::vector<LedgerRange>& jobs);
Result<RunSpec> LoadRun(pg::Connection& conn, const std::string& run_id);
// Marks the run's state: running | done | failed | aborted.
Status SetRunState(pg::Connection& conn, const std::string& run_id, const std::string& state);
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
// Records a failed attempt by its own worker (fenced): requeue with backoff or fail.
Status FailJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job, const std::string& error);

// Requeues every running job of `run_id` that matches: held by `worker` (a dead worker), or
// with a heartbeat older than the job timeout, or whose backend no longer exists. Rows locked
// by a live transaction are skipped (retried on the next call). Returns requeued jobs with
// their worker and worker_pid, so the caller can kill local stale processes.
Result<std::vector<JobRow>> RequeueLost(pg::Connection& conn, const RunSpec& spec,
                                        const std::optional<std::string>& dead_worker, const std::string& why);
// Requeues every running job (orchestrator resume / shutdown): outcome "interrupted".
Status RequeueAllRunning(pg::Connection& conn, const RunSpec& spec, const std::string& why);

struct RunCounts {
  uint32_t pending = 0, running = 0, done = 0, failed = 0;
  uint64_t ledgers_done = 0;
  uint32_t total() const { return pending + running + done + failed; }
};
Result<RunCounts> CountJobs(pg::Connection& conn, const std::string& run_id);
Result<std::vector<JobRow>> ListJobs(pg::Connection& conn, const std::string& run_id);
Result<std::vector<AttemptRow>> ListAttempts(pg::Connection& conn, const std::string& run_id);

}  // namespace ledgerdiff::ingest
