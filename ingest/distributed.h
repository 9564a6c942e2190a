#pragma once
// Distributed runs without an orchestrator process: `plan` registers a run (RegisterRun), any
// number of `worker` processes on any machines carry it out, `wait` watches it from anywhere.
//
// A worker here is RunWorker (worker.h) plus the orchestrator's two remaining duties, so that no
// process has to survive: it requeues lost jobs of any worker (RequeueLost: a vanished backend,
// a heartbeat older than the job timeout; the lease pattern) and it settles the run's state
// (done when every job is done; failed as soon as a job is out of retries, which stops every
// worker's claims).
// INVARIANT: a run's state moves running -> done | failed only through SettleRun, which reads
// the job counts in the same statement's snapshot.

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

struct RunStatus {
  std::string run_id, schema, state;  // state: running | done | failed | aborted
  LedgerRange range;
  uint32_t job_size = 0;
  std::string created_at;  // ISO 8601, UTC
  RunCounts counts;
  std::vector<std::string> workers;  // distinct workers that made an attempt
};

// Usage error "no such run ..." (exit 2, one line) unless the job table holds `run_id`.
Status RequireRun(pg::Connection& conn, const std::string& run_id);

// `plan`: registers a run (orchestrator.h RegisterRun) after checking the options and that the
// target schema is absent, or ledgerdiff's, or --force: a refusal creates nothing, not even the
// job table.
Result<RunSpec> PlanRun(pg::Connection& conn, const IngestOptions& options);

Result<RunStatus> GetRunStatus(pg::Connection& conn, const std::string& run_id);
// Every run in the job table, newest first (empty when there is no control schema).
Result<std::vector<RunStatus>> ListRuns(pg::Connection& conn);

// Running run with every job done -> done; with a job failed for good -> failed. Returns the
// state afterwards.
Result<std::string> SettleRun(pg::Connection& conn, const std::string& run_id);

// Claims jobs of `run_id` until none remain. Returns 0 when the run is complete, 1 when a job
// failed for good (or the run was marked failed/aborted), 2 on an error (printed on stderr).
// `worker` empty: UniqueWorkerId().
int RunDistributedWorker(const std::string& conninfo, const std::string& run_id, std::string worker,
                         Reporter& reporter);

// Blocks until the run is done or failed, reporting progress. timeout_s <= 0: no limit.
// Runtime error (exit 2) on timeout or an unknown run.
Result<RunStatus> WaitForRun(pg::Connection& conn, const std::string& run_id, double timeout_s, Reporter& reporter);

// verify --workers-external: registers the run (PlanRun; or continues options.resume_run) and
// waits (WaitForRun, timeout_s <= 0: no limit) for workers started elsewhere (`ledgerdiff worker
// --run ID`, printed as a note) to finish it; starts no worker itself. Then RunIngest's end-of-run
// checks (the schema is still the run's; committed rows match its jobs, unless unsafe commits are
// planned) and its report; a failed run or check is a report with `ok` false and `error` set.
Result<IngestReport> RunWithExternalWorkers(const std::string& conninfo, const IngestOptions& options, double timeout_s,
                                            Reporter& reporter);

}  // namespace ledgerdiff::ingest
