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

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/report.h"
#include "core/status.h"
#include "ingest/ingest_report.h"
#include "ingest/job_table.h"
#include "ingest/plan.h"

namespace ledgerdiff::ingest {

// An ingestion: the plan plus how this invocation treats the schema and the run.
struct IngestOptions : IngestPlan {
  bool force = false;           // allow writing into a schema ledgerdiff did not create
  bool replace_schema = false;  // drop and recreate the (owned) schema first
  std::string run_id;           // empty: a new id
  std::string resume_run;       // continue this run from the job table (the plan comes from there)
  std::string worker_binary;    // the ledgerdiff executable for workers; empty: this executable
  // External ingester: the root of the runs' log directories (each job's stdout and stderr go to
  // ROOT/RUN_ID/job-N.{stdout,stderr}.log); empty: $TMPDIR/ledgerdiff-logs (RunLogDir).
  std::string log_root;
};

// Checks flags before any database is touched. Errors are Usage errors naming the flag.
Status ValidateIngestOptions(const IngestOptions& options);

// Creates the target schema (owned) with its history tables and registers the run with its
// jobs in the job table, without starting workers. Returns the run as stored.
// REQUIRES: options.resume_run is empty.
Result<RunSpec> RegisterRun(pg::Connection& conn, const IngestOptions& options);

// Runs (or resumes) an ingestion into options.schema of the database at `conninfo`.
// A run that fails because jobs ran out of retries returns a report with ok == false.
Result<IngestReport> RunIngest(const std::string& conninfo, const IngestOptions& options, Reporter& reporter);

// Rows per per-ledger history table of our schema within `range`.
Result<std::map<std::string, uint64_t>> CountRowsInRange(pg::Connection& conn, const std::string& schema,
                                                         const LedgerRange& range);

}  // namespace ledgerdiff::ingest
