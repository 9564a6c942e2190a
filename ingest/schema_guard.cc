#include "ingest/schema_guard.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/database.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff::ingest {

Status ValidateTargetSchema(const std::string& schema, bool force) {
  LD_RETURN_IF_ERROR(ValidateSchemaName(schema));
  // A name the tool creates is printed on one line (plan's output, errors, logs).
  if (std::any_of(schema.begin(), schema.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    std::string shown;
    for (unsigned char c : schema) shown += c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
    return Status::Usagef("--schema \"{}\": a control character in a schema name is refused", shown);
  }
  if (schema == kControlSchema)
    return Status::Usagef("--schema {}: that is ledgerdiff's job table, never an ingestion target", schema);
  if (schema == "information_schema")
    return Status::Usagef("--schema {}: a system schema is never an ingestion target", schema);
  if (schema == "public" && !force)
    return Status::Usage("--schema public: refusing the database's default schema (use another --schema, or --force)");
  return Status::Ok();
}

namespace {

Result<bool> TryLock(pg::Connection& conn, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT pg_try_advisory_lock({}, hashtext($1))",
                                                           kSchemaLockSpace),
                                               {schema}));
  return rows.GetBool(0, 0);
}

// Who holds the schema's lock: "run R (backend pid P)" as far as it can be told.
std::string LiveRunOf(pg::Connection& conn, const std::string& schema) {
  std::string holder;
  auto pid = conn.Exec(fmt::format("SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
                                   "AND l.classid = {}::oid AND l.objid = hashtext($1)::oid AND l.objsubid = 2",
                                   kSchemaLockSpace),
                       {schema});
  if (pid.ok() && pid->size() > 0) holder = fmt::format("backend pid {}", pid->Get(0, 0));
  auto run = conn.Exec(fmt::format("SELECT run_id FROM {} WHERE schema_name = $1 AND state = 'running' "
                                   "ORDER BY created_at DESC LIMIT 1",
                                   pg::Qualified(kControlSchema, "runs")),
                       {schema});
  std::string run_id = run.ok() && run->size() > 0 ? std::string(run->Get(0, 0)) : "";
  if (run_id.empty()) return holder.empty() ? "another run" : "another run (" + holder + ")";
  return fmt::format("run {}{}", run_id, holder.empty() ? "" : " (" + holder + ")");
}

}  // namespace

Status WithSchemaGuard(pg::Connection& conn, const std::string& schema, const std::function<Status()>& body,
                       double wait_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT pg_try_advisory_lock({}, hashtext($1))",
                                                             kSchemaGuardSpace),
                                                 {schema}));
    if (rows.GetBool(0, 0)) break;
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::Runtimef("schema \"{}\": another ledgerdiff process has been registering or changing a run on it "
                              "for {} s; try again",
                              schema, wait_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Status result = body();
  Status unlocked =
      conn.Exec(fmt::format("SELECT pg_advisory_unlock({}, hashtext($1))", kSchemaGuardSpace), {schema}).status();
  LD_RETURN_IF_ERROR(result);
  return unlocked;
}

Status CheckNoLiveRun(pg::Connection& conn, const std::string& schema, const std::string& except_run) {
  LD_ASSIGN_OR_RETURN(pg::Rows exists,
                      conn.Exec("SELECT to_regclass($1) IS NOT NULL", {pg::Qualified(kControlSchema, "runs")}));
  if (!exists.GetBool(0, 0)) return Status::Ok();
  LD_ASSIGN_OR_RETURN(
      pg::Rows live,
      conn.Exec(fmt::format("SELECT r.run_id, r.mode, (SELECT count(*) FILTER (WHERE j.state = 'done') || ' of ' || "
                            "count(*) FROM {jobs} j WHERE j.run_id = r.run_id) FROM {runs} r WHERE r.schema_name = $1 "
                            "AND r.state = 'running' AND r.run_id <> $2 ORDER BY r.created_at, r.run_id LIMIT 1",
                            fmt::arg("runs", pg::Qualified(kControlSchema, "runs")),
                            fmt::arg("jobs", pg::Qualified(kControlSchema, "jobs"))),
                {schema, except_run}));
  if (live.size() == 0) return Status::Ok();
  const std::string run_id(live.Get(0, 0)), mode(live.Get(0, 1)), done(live.Get(0, 2));
  LD_ASSIGN_OR_RETURN(pg::Rows holder,
                      conn.Exec(fmt::format("SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
                                            "AND l.classid = {}::oid AND l.objid = hashtext($1)::oid AND l.objsubid = 2 "
                                            "AND l.pid <> pg_backend_pid()",
                                            kSchemaLockSpace),
                                {schema}));
  const std::string refusal = "refusing to start another run on it or to drop it";
  if (holder.size() > 0)
    return Status::Usagef("schema \"{}\" has a live run: run {} (orchestrator backend pid {}); {}", schema, run_id,
                          holder.Get(0, 0), refusal);
  if (mode == kModePlanned)
    return Status::Usagef("schema \"{}\" has a live run: run {} (planned, {} jobs done; its workers may run anywhere); "
                          "{}: wait for it (`ledgerdiff wait --run {}`) or cancel it (`ledgerdiff cancel --run {}`)",
                          schema, run_id, done, refusal, run_id, run_id);
  return Status::Usagef("schema \"{}\" has a live run: run {} is marked running ({} jobs done) but no orchestrator "
                        "holds it (killed, or not started yet); {}: continue it with `ledgerdiff ingest --resume {}` or "
                        "give it up with `ledgerdiff cancel --run {}`",
                        schema, run_id, done, refusal, run_id, run_id);
}

Status LockSchemaForRun(pg::Connection& conn, const std::string& schema, double wait_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    LD_ASSIGN_OR_RETURN(bool locked, TryLock(conn, schema));
    if (locked) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string live = LiveRunOf(conn, schema);
  const std::string run_id = live.rfind("run ", 0) == 0 ? live.substr(4, live.find(' ', 4) - 4) : "";
  return Status::Usagef("schema \"{}\" has a live run: {}; refusing to start another run on it or to drop it{}",
                        schema, live,
                        run_id.empty() ? "" : fmt::format(": wait for it, or cancel it (`ledgerdiff cancel --run {}`)",
                                                          run_id));
}

Status UnlockSchema(pg::Connection& conn, const std::string& schema) {
  return conn.Exec(fmt::format("SELECT pg_advisory_unlock({}, hashtext($1))", kSchemaLockSpace), {schema}).status();
}

Result<std::string> SchemaMark(pg::Connection& conn, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec("SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace "
                                "WHERE nspname = $1",
                                {schema}));
  return rows.size() == 0 ? std::string() : std::string(rows.Get(0, 0));
}

Status CheckRunOwnsSchema(pg::Connection& conn, const RunSpec& spec) {
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, spec.plan.schema));
  if (state == SchemaState::kAbsent)
    return Status::Runtimef("run {}: its schema \"{}\" no longer exists", spec.run_id, spec.plan.schema);
  std::string expected = spec.schema_mark.empty() ? fmt::format("{} run={}", kOwnershipMarkPrefix, spec.run_id)
                                                  : spec.schema_mark;
  LD_ASSIGN_OR_RETURN(std::string mark, SchemaMark(conn, spec.plan.schema));
  if (mark != expected)
    return Status::Runtimef("run {}: schema \"{}\" is no longer this run's (its mark is \"{}\", expected \"{}\"); "
                            "another run or someone else took it over",
                            spec.run_id, spec.plan.schema, mark, expected);
  return Status::Ok();
}

Status CheckRowsMatchJobs(pg::Connection& conn, const RunSpec& spec) {
  LD_ASSIGN_OR_RETURN(auto per_table, CountRowsInRange(conn, spec.plan.schema, spec.plan.range));
  uint64_t present = 0;
  for (const auto& [table, n] : per_table) present += n;
  LD_ASSIGN_OR_RETURN(pg::Rows committed,
                      conn.Exec(fmt::format("SELECT coalesce(sum(rows), 0)::bigint FROM {} WHERE run_id = $1",
                                            pg::Qualified(kControlSchema, "jobs")),
                                {spec.run_id}));
  auto expected = static_cast<uint64_t>(committed.GetInt(0, 0));
  if (present != expected)
    return Status::Runtimef("run {}: schema \"{}\" holds {} rows in {} but its jobs committed {}; something else "
                            "wrote into it during the run",
                            spec.run_id, spec.plan.schema, present, spec.plan.range.str(), expected);
  return Status::Ok();
}

}  // namespace ledgerdiff::ingest
