#pragma once
// A worker process: claims jobs of one run from the job table until none is left.
//
// Started by the orchestrator as `ledgerdiff _worker --run RUN --worker NAME` with the
// database conninfo in LEDGERDIFF_WORKER_DB (never on the command line), but anything that can
// reach the database can run one: the job table is the only coordination.
//
// Per job: built-in ingester (fixtures::IngestJob, the fenced FinishJob inside its data
// transaction) or the run's external command (--ingest-cmd) followed by a fenced FinishJob.
// A failed job is recorded with FailJob (requeued with backoff, or failed when out of retries).
// A second connection sends heartbeats while the process lives; a frozen process stops them.
// Sessions set idle_in_transaction_session_timeout (= job timeout) and statement_timeout
// (= 10 x job timeout) so a frozen worker's locks are released by the server.

#include <map>
#include <string>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::verify {

inline constexpr const char* kWorkerDbEnv = "LEDGERDIFF_WORKER_DB";

struct WorkerOptions {
  std::string conninfo;
  std::string run_id;
  std::string worker;  // name shown in the job table, e.g. "w3" or "w3.1"
};

// Runs until the run has no pending or running job, or the run stops. Returns the exit code:
// 0 when it ran out of work, 2 on an error that prevents it from working at all.
int RunWorker(const WorkerOptions& options);

// Expands an --ingest-cmd template: {from} {to} {schema} {db} {worker} {job}, each value
// shell-quoted. An unknown {lowercase_word} is an error (a typo of a placeholder); every other
// brace is literal, so shell code such as ${VAR}, { a; b; } or awk '{print $1}' passes
// through; "{{" and "}}" write one brace.
Result<std::string> ExpandIngestCommand(const std::string& tmpl, const std::map<std::string, std::string>& values);

// Environment for an external ingester: DATABASE_URL (the conninfo as given), PGHOST, PGPORT,
// PGUSER, PGDATABASE, PGPASSWORD (from the conninfo) and PGOPTIONS with search_path = schema.
std::map<std::string, std::string> IngesterEnvironment(const std::string& conninfo, const std::string& schema);

}  // namespace ledgerdiff::verify
