#pragma once
// Runs that cannot hurt each other: which schemas may be a run's target, and the one-live-run
// lock of a schema.
//
// INVARIANT: a schema has at most one live run. The orchestrator holds a session advisory lock
// keyed on the schema name (pg_try_advisory_lock(kSchemaLockSpace, hashtext(schema))) on its own
// connection for the run's life; the lock dies with that session, so a killed orchestrator never
// leaves a stale lock behind. A run also records its schema's ownership mark at registration
// (RunSpec::schema_mark) and re-checks it on resume and at its end.

#include <string>

#include "core/pg.h"
#include "core/status.h"
#include "ingest/job_table.h"

namespace ledgerdiff::ingest {

inline constexpr int kSchemaLockSpace = 0x6c644c4b;  // "ldLK"

// Usage error when `schema` may never be an ingestion target: the control schema,
// information_schema, pg_* (always), public (unless `force`).
Status ValidateTargetSchema(const std::string& schema, bool force);

// Takes the schema's run lock on `conn` (a session lock; re-entrant within the session). When
// another session holds it, retries until `wait_s` has passed, then fails with a Usage error
// naming the live run (from the job table) and the backend holding the lock.
Status LockSchemaForRun(pg::Connection& conn, const std::string& schema, double wait_s = 0);
// Releases one level of the lock taken by LockSchemaForRun on `conn`.
Status UnlockSchema(pg::Connection& conn, const std::string& schema);

// The schema's current ownership comment ("" when absent or without a comment).
Result<std::string> SchemaMark(pg::Connection& conn, const std::string& schema);
// Fails (Runtime error) unless the run's schema still carries the mark recorded when the run
// was registered (for runs stored without one: "ledgerdiff:owned run=<run_id>").
Status CheckRunOwnsSchema(pg::Connection& conn, const RunSpec& spec);
// Fails (Runtime error) unless the rows of the run's range in its schema, per history table
// summed, equal what its done jobs committed (jobs.rows). REQUIRES: every job is done.
Status CheckRowsMatchJobs(pg::Connection& conn, const RunSpec& spec);

}  // namespace ledgerdiff::ingest
