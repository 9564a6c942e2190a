#pragma once
// Runs that cannot hurt each other: which schemas may be a run's target, and the one-live-run
// guard of a schema.
//
// INVARIANT: a schema has at most one live run, from its registration (`plan`, or an
// orchestrator's RegisterRun) until it is done, failed or cancelled; no schema is dropped,
// re-marked or written by a new run meanwhile. Two locks and the job table keep it:
// - The run's row is the truth: a row of ledgerdiff_control.runs in state `running` is a live
//   run of its schema, whatever process carries it out (an orchestrator, or `worker`s anywhere).
//   Every change of a schema's runs (RegisterRun, a resume, `cancel`) checks the rows and
//   changes them under the schema guard, a session advisory lock
//   pg_advisory_lock(kSchemaGuardSpace, hashtext(schema)) held only for that check-and-change
//   (WithSchemaGuard), so two `plan`s racing for one schema cannot both pass the check.
// - An orchestrator also holds the schema's run lock, a session advisory lock
//   (kSchemaLockSpace, hashtext(schema)) on its own connection for the run's life; the lock
//   dies with that session. It tells a live orchestrated run from a crashed one: a `running`
//   row of an orchestrated run whose run lock no session holds is an orchestrator that was
//   killed (or a run registered for an orchestrator that has not started yet). That row still
//   owns the schema: a new run is refused with the hint to continue it (`ingest --resume RUN`,
//   which takes over the lock) or give it up (`ledgerdiff cancel --run RUN`). Nothing expires
//   on its own, because a run's data must never be dropped under a worker that still writes.
// A run also records its schema's ownership mark at registration (RunSpec::schema_mark) and
// re-checks it on resume and at its end (CheckRunOwnsSchema, CheckRowsMatchJobs).

#include <functional>
#include <string>

#include "core/pg.h"
#include "core/status.h"
#include "ingest/job_table.h"

namespace ledgerdiff::ingest {

inline constexpr int kSchemaLockSpace = 0x6c644c4b;   // "ldLK": an orchestrator's run lock
inline constexpr int kSchemaGuardSpace = 0x6c644753;  // "ldGS": the check-and-change guard

// Runs `body` holding the schema guard of `schema` on `conn` (see above); waits up to `wait_s`
// for another process's check-and-change to end, then fails (Runtime). The guard is released
// when `body` returns (or the session ends). Not re-entrant across schemas' bodies: `body` must
// not take the guard of another schema.
Status WithSchemaGuard(pg::Connection& conn, const std::string& schema, const std::function<Status()>& body,
                       double wait_s = 60);

// Usage error naming the live run (and what to do about it) when `schema` has a run in state
// running other than `except_run`: an orchestrated run whose orchestrator holds the run lock, a
// planned run (`plan`; its workers may be anywhere), or an orchestrated run whose orchestrator
// is gone. Ok when there is no job table. Call under WithSchemaGuard.
Status CheckNoLiveRun(pg::Connection& conn, const std::string& schema, const std::string& except_run = "");

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
