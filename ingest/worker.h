#pragma once
// A worker process: claims jobs of one run from the job table until none is left.
//
// Started by the orchestrator as `ledgerdiff _worker --run RUN --worker NAME --slot N` with the
// database conninfo in LEDGERDIFF_WORKER_DB (never on the command line), but anything that can
// reach the database can run one: the job table is the only coordination.
//
// Per job: built-in ingester (fixtures::IngestJob, the fenced FinishJob inside its data
// transaction) or the run's external command (ingest/ingest_command.h) followed by a fenced
// FinishJob. FinishJob records the rows the job committed.
// A failed job is recorded with FailJob (requeued with backoff, or failed when out of retries).
// A second connection sends heartbeats while the process lives; a frozen process stops them.
// Stopped by SIGTERM/SIGINT/SIGHUP, the worker requeues the attempt it holds at once (outcome
// "interrupted", no retry spent) before it exits, so the job does not wait for the job timeout.
// Sessions set idle_in_transaction_session_timeout (= 1.5 x job timeout: after the heartbeat
// timeout has caught a frozen worker) and statement_timeout (= 10 x job timeout) so a frozen
// worker's locks are released by the server. A failed attempt is recorded with its detector:
// lost_connection when the job session broke, attempt_error otherwise (ingest/detector.h).

#include <string>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::ingest {

inline constexpr const char* kWorkerDbEnv = "LEDGERDIFF_WORKER_DB";
// The run's log directory for external ingesters' output, set by the orchestrator; a worker
// started without it uses RunLogDir(run_id) (ingest/ingest_command.h).
inline constexpr const char* kWorkerLogDirEnv = "LEDGERDIFF_WORKER_LOG_DIR";

// Database sessions a worker process holds at once: its jobs' and its heartbeat's.
inline constexpr int kSessionsPerWorker = 2;

// A session the server ends (pg_terminate_backend, a pooler, a failover, an idle timeout) is
// reopened with backoff: the heartbeat's at once, the job session's before the next claim. While
// the worker cannot beat it claims nothing. Only when it has been without a session for
// max(kMinSessionLossBoundS, 2 x the job timeout) does it give up (exit 3).
inline constexpr double kMinSessionLossBoundS = 60;

struct WorkerOptions {
  std::string conninfo;
  std::string run_id;
  std::string worker;  // name shown in the job table, e.g. "w3" or "w3.1"
  int slot = 0;        // lane 1..N recorded with every attempt (0: none, e.g. a worker elsewhere)
  std::string log_dir;  // external ingester: where each job's stdout/stderr go; empty: RunLogDir(run_id)
};

// Runs until the run has no pending or running job, or the run stops. Returns the exit code:
// 0 when it ran out of work; on an error that prevents it from working at all (printed on
// stderr), the error's exit code: 2 bad input (e.g. an unreadable run), 3 runtime (e.g. a refused
// connection; core/status.h). The worker records itself in the worker registry (job_table.h)
// while it runs, when the job table has one.
int RunWorker(const WorkerOptions& options);

}  // namespace ledgerdiff::ingest
