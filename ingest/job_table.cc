#include "ingest/job_table.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace ledgerdiff::ingest {

std::string ControlTable(const char* table) { return pg::Qualified(kControlSchema, table); }

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// Rows of (job_id, range_from, range_to, state, attempt, worker, worker_pid, backend_pid, error,
// rows, stage[, heartbeat age in s or -1, session alive]), in that column order.
Result<std::vector<JobRow>> JobRows(const pg::Rows& rows) {
  std::vector<JobRow> out;
  for (int i = 0; i < rows.size(); ++i) {
    const std::optional<JobState> state = ParseJobState(rows.Get(i, 3));
    if (!state) return Status::Runtimef("job {} has an unknown state \"{}\"", rows.Get(i, 0), rows.Get(i, 3));
    JobRow j{static_cast<uint32_t>(rows.GetInt(i, 0)),
             {static_cast<Ledger>(rows.GetInt(i, 1)), static_cast<Ledger>(rows.GetInt(i, 2))},
             *state,
             static_cast<uint32_t>(rows.GetInt(i, 4)),
             std::string(rows.Get(i, 5)),
             static_cast<int>(rows.GetInt(i, 6)),
             static_cast<int>(rows.GetInt(i, 7)),
             std::string(rows.Get(i, 8)),
             rows.GetInt(i, 9),
             std::string(rows.Get(i, 10)),
             -1,
             true,
             std::nullopt};
    if (rows.columns() > 12) {
      j.heartbeat_age_s = std::stod(std::string(rows.Get(i, 11)));
      j.session_alive = rows.GetBool(i, 12);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

nlohmann::json RunSpec::ToJson() const {
  nlohmann::json j = plan.ToJson();
  j["run_id"] = run_id;
  if (!schema_mark.empty()) j["schema_mark"] = schema_mark;
  j["heartbeat_s"] = plan.heartbeat_s();  // informational: workers derive it from job_timeout_s
  if (hooks.active()) {
    j["test_run"] = true;
    j["test_hooks"] = hooks.ToJson();
  }
  return j;
}

Result<RunSpec> RunSpec::FromJson(const nlohmann::json& j) {
  RunSpec s;
  LD_ASSIGN_OR_RETURN(s.plan, IngestPlan::FromJson(j));
  LD_ASSIGN_OR_RETURN(s.hooks, TestHooks::FromRunSpec(j));
  try {
    s.run_id = j.at("run_id").get<std::string>();
    s.schema_mark = j.value("schema_mark", std::string());
  } catch (const std::exception& e) {
    return Status::Runtimef("run spec is unreadable: {}", e.what());
  }
  return s;
}

namespace {

// The states a run and a job may take, as SQL literals (the CHECK constraints of runs.state and
// jobs.state).
template <typename Enum, size_t N>
std::string StateLiterals(const std::array<Enum, N>& all) {
  std::string out;
  for (Enum e : all) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", ToString(e));
  return out;
}
const std::string kRunStateLiterals = StateLiterals(kRunStates);
const std::string kJobStateLiterals = StateLiterals(kJobStates);

// The worker registry, added after the first release: created by every EnsureControlSchema.
std::string WorkersTableDdl() {
  return fmt::format(R"(
CREATE TABLE IF NOT EXISTS {workers} (
  run_id text NOT NULL REFERENCES {runs} ON DELETE CASCADE,
  worker text NOT NULL,
  host text,
  pid integer,
  slot integer,
  backend_pid integer,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_seen timestamptz NOT NULL DEFAULT now(),
  exited_at timestamptz,
  exit_code integer,
  error text,
  PRIMARY KEY (run_id, worker)
);)",
                     fmt::arg("workers", ControlTable("workers")), fmt::arg("runs", ControlTable("runs")));
}

// Brings a control schema made by an older release up to date. Each change is made only when
// it is missing: an ALTER TABLE takes an ACCESS EXCLUSIVE lock, which would queue behind the
// job transactions of live workers (and every heartbeat behind it) on every `plan`.
// REQUIRES: inside EnsureControlSchema's transaction (serialized by its advisory lock).
Status MigrateControlSchema(pg::Connection& conn) {
  auto has_column = [&](const char* table, const char* column) -> Result<bool> {
    LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND "
                                                 "attname = $2 AND NOT attisdropped",
                                                 {ControlTable(table), std::string(column)}));
    return rows.size() == 1;
  };
  struct Column {
    const char* table;
    const char* name;
    const char* type;
  };
  for (const Column& c :
       {Column{"jobs", "stage", "text"}, Column{"attempts", "slot", "integer"},
        Column{"runs", "mode", "text NOT NULL DEFAULT 'orchestrated'"}, Column{"runs", "error", "text"},
        Column{"attempts", "detector", "text"}, Column{"runs", "resumes", "integer NOT NULL DEFAULT 0"}}) {
    LD_ASSIGN_OR_RETURN(bool present, has_column(c.table, c.name));
    if (!present)
      LD_RETURN_IF_ERROR(conn.Run(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", ControlTable(c.table), c.name, c.type)));
  }
  // The state checks learnt 'cancelled'.
  for (const auto& [table, states] :
       {std::pair<const char*, const std::string&>{"runs", kRunStateLiterals}, {"jobs", kJobStateLiterals}}) {
    LD_ASSIGN_OR_RETURN(pg::Rows checks,
                        conn.Exec("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                                  "to_regclass($1) AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%state%'",
                                  {ControlTable(table)}));
    const bool current = checks.size() == 1 && checks.Get(0, 1).find("cancelled") != std::string_view::npos;
    if (!current) {
      std::string drops;
      for (int i = 0; i < checks.size(); ++i)
        drops += fmt::format("DROP CONSTRAINT {}, ", pg::QuoteIdent(std::string(checks.Get(i, 0))));
      LD_RETURN_IF_ERROR(conn.Run(fmt::format("ALTER TABLE {} {}ADD CONSTRAINT {} CHECK (state IN ({}))", ControlTable(table), drops,
                                              pg::QuoteIdent(std::string(table) + "_state_check"), states)));
    }
  }
  LD_ASSIGN_OR_RETURN(pg::Rows workers, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {ControlTable("workers")}));
  if (!workers.GetBool(0, 0)) LD_RETURN_IF_ERROR(conn.Run(WorkersTableDdl()));
  return Status::Ok();
}

}  // namespace

Status ValidateRunId(const std::string& run_id) {
  const bool charset_ok = std::all_of(run_id.begin(), run_id.end(), [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (run_id.empty() || run_id.size() > kMaxRunIdLength || !charset_ok) {
    std::string shown;
    for (unsigned char c : run_id.substr(0, 60))
      shown += c < 0x20 || c >= 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
    return Status::Usagef("--run-id \"{}\": a run id is 1 to {} characters of A-Z, a-z, 0-9 and _ (like the ids "
                          "ledgerdiff makes, e.g. 20261130_142501_3f9a)",
                          shown, kMaxRunIdLength);
  }
  return Status::Ok();
}

Status EnsureControlSchema(pg::Connection& conn) {
  // Serialize concurrent creators with a transaction-level advisory lock.
  LD_ASSIGN_OR_RETURN(auto tx, pg::Transaction::Begin(conn));
  LD_RETURN_IF_ERROR(conn.Run("SELECT pg_advisory_xact_lock(7415290331)"));
  LD_ASSIGN_OR_RETURN(pg::Rows owner,
                      conn.Exec("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
                                {std::string(kControlSchema)}));
  if (owner.size() == 1) {
    if (owner.IsNull(0, 0) || owner.Get(0, 0).rfind("ledgerdiff:owned", 0) != 0)
      return Status::Usagef("schema \"{}\" exists and was not created by ledgerdiff; refusing to use it", kControlSchema);
    LD_RETURN_IF_ERROR(MigrateControlSchema(conn));
    return tx.Commit();
  }
  std::string sql = fmt::format(R"(
CREATE SCHEMA {s};
COMMENT ON SCHEMA {s} IS 'ledgerdiff:owned run=control';
CREATE TABLE {runs} (
  run_id text PRIMARY KEY,
  schema_name text NOT NULL,
  range_from integer NOT NULL,
  range_to integer NOT NULL,
  job_size integer NOT NULL,
  workers integer NOT NULL,
  spec jsonb NOT NULL,
  state text NOT NULL DEFAULT 'running' CONSTRAINT runs_state_check CHECK (state IN ({run_states})),
  mode text NOT NULL DEFAULT 'orchestrated',
  error text,
  resumes integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX ON {runs} (schema_name, state);
CREATE TABLE {jobs} (
  run_id text NOT NULL REFERENCES {runs} ON DELETE CASCADE,
  job_id integer NOT NULL,
  range_from integer NOT NULL,
  range_to integer NOT NULL,
  state text NOT NULL DEFAULT 'pending' CONSTRAINT jobs_state_check CHECK (state IN ({job_states})),
  attempt integer NOT NULL DEFAULT 0,
  worker text,
  worker_pid integer,
  backend_pid integer,
  heartbeat timestamptz,
  not_before timestamptz NOT NULL DEFAULT '-infinity',
  started_at timestamptz,
  finished_at timestamptz,
  error text,
  rows bigint,
  stage text,
  PRIMARY KEY (run_id, job_id)
);
CREATE INDEX ON {jobs} (run_id, state, job_id);
CREATE TABLE {attempts} (
  run_id text NOT NULL REFERENCES {runs} ON DELETE CASCADE,
  job_id integer NOT NULL,
  attempt integer NOT NULL,
  worker text NOT NULL,
  slot integer,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  outcome text NOT NULL DEFAULT 'running',
  error text,
  detector text,
  PRIMARY KEY (run_id, job_id, attempt)
);)",
                                fmt::arg("s", pg::QuoteIdent(kControlSchema)), fmt::arg("runs", ControlTable("runs")),
                                fmt::arg("jobs", ControlTable("jobs")), fmt::arg("attempts", ControlTable("attempts")),
                                fmt::arg("run_states", kRunStateLiterals), fmt::arg("job_states", kJobStateLiterals));
  LD_RETURN_IF_ERROR(conn.Run(sql + WorkersTableDdl()).With("create the control schema"));
  return tx.Commit();
}

Status CreateRun(pg::Connection& conn, const RunSpec& spec, const std::vector<LedgerRange>& jobs,
                 const std::string& mode) {
  LD_ASSIGN_OR_RETURN(auto tx, pg::Transaction::Begin(conn));
  LD_RETURN_IF_ERROR(
      conn.Exec(fmt::format("INSERT INTO {} (run_id, schema_name, range_from, range_to, job_size, workers, spec, mode) "
                            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                            ControlTable("runs")),
                {spec.run_id, spec.plan.schema, Str(spec.plan.range.from), Str(spec.plan.range.to), Str(spec.plan.job_size),
                 Str(spec.plan.workers), spec.ToJson().dump(), mode})
          .status());
  std::string froms = "{", tos = "{";
  for (size_t i = 0; i < jobs.size(); ++i) {
    froms += (i ? "," : "") + Str(jobs[i].from);
    tos += (i ? "," : "") + Str(jobs[i].to);
  }
  froms += "}";
  tos += "}";
  LD_RETURN_IF_ERROR(conn.Exec(fmt::format("INSERT INTO {} (run_id, job_id, range_from, range_to) "
                                           "SELECT $1, n, f, t FROM unnest($2::int[], $3::int[]) WITH ORDINALITY AS "
                                           "u(f, t, n)",
                                           ControlTable("jobs")),
                               {spec.run_id, froms, tos})
                         .status());
  return tx.Commit();
}

Result<RunSpec> LoadRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT spec::text FROM {} WHERE run_id = $1", ControlTable("runs")), {run_id}));
  if (rows.size() == 0) return Status::Usagef("run \"{}\" does not exist in this database", run_id);
  nlohmann::json j = nlohmann::json::parse(rows.Get(0, 0), nullptr, false);
  if (j.is_discarded()) return Status::Runtimef("run \"{}\": spec is not JSON", run_id);
  return RunSpec::FromJson(j);
}

Result<std::optional<RunRow>> FindRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {ControlTable("runs")}));
  if (!exists.GetBool(0, 0)) return std::optional<RunRow>();
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT run_id, schema_name, state, coalesce(to_jsonb(r) "
                                            "->> 'mode', 'orchestrated'), coalesce(to_jsonb(r) ->> "
                                            "'error', ''), coalesce((to_jsonb(r) ->> 'resumes')::int, 0) "
                                            "FROM {} r WHERE run_id = $1",
                                            ControlTable("runs")),
                                {run_id}));
  if (rows.size() == 0) return std::optional<RunRow>();
  const std::optional<RunState> state = ParseRunState(rows.Get(0, 2));
  if (!state) return Status::Runtimef("run {} has an unknown state \"{}\"", run_id, rows.Get(0, 2));
  return std::optional<RunRow>(RunRow{std::string(rows.Get(0, 0)), std::string(rows.Get(0, 1)), *state,
                                      std::string(rows.Get(0, 3)), std::string(rows.Get(0, 4)),
                                      static_cast<uint32_t>(rows.GetInt(0, 5))});
}

Status SetRunState(pg::Connection& conn, const std::string& run_id, RunState state, const std::string& error) {
  const bool running = state == RunState::kRunning;
  return conn
      .Exec(fmt::format("UPDATE {} SET state = $2, finished_at = CASE WHEN $2 = 'running' THEN NULL ELSE now() END, "
                        "error = nullif($3, '') WHERE run_id = $1 AND state <> 'cancelled'",
                        ControlTable("runs")),
            {run_id, std::string(ToString(state)), running ? std::string() : error})
      .status();
}

Status DeleteRun(pg::Connection& conn, const std::string& run_id) {
  return conn.Exec(fmt::format("DELETE FROM {} WHERE run_id = $1", ControlTable("runs")), {run_id}).status();
}

Result<std::optional<ClaimedJob>> ClaimJob(pg::Connection& conn, const std::string& run_id, const std::string& worker,
                                           int worker_pid, int slot) {
  std::string sql = fmt::format(R"(
WITH next AS (
  SELECT j.job_id FROM {jobs} j JOIN {runs} r USING (run_id)
  WHERE j.run_id = $1 AND j.state = 'pending' AND j.not_before <= now() AND r.state = 'running'
  ORDER BY j.job_id LIMIT 1 FOR UPDATE OF j SKIP LOCKED
), claimed AS (
  UPDATE {jobs} j SET state = 'running', attempt = j.attempt + 1, worker = $2, worker_pid = $3,
    backend_pid = pg_backend_pid(), heartbeat = now(), started_at = now(), finished_at = NULL, error = NULL,
    stage = 'claimed'
  FROM next WHERE j.run_id = $1 AND j.job_id = next.job_id
  RETURNING j.job_id, j.range_from, j.range_to, j.attempt
), logged AS (
  INSERT INTO {attempts} (run_id, job_id, attempt, worker, slot) SELECT $1, job_id, attempt, $2, $4::int FROM claimed
)
SELECT job_id, range_from, range_to, attempt FROM claimed)",
                                fmt::arg("jobs", ControlTable("jobs")), fmt::arg("runs", ControlTable("runs")),
                                fmt::arg("attempts", ControlTable("attempts")));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {run_id, worker, Str(worker_pid), Str(slot)}));
  if (rows.size() == 0) return std::optional<ClaimedJob>();
  return std::optional<ClaimedJob>(ClaimedJob{static_cast<uint32_t>(rows.GetInt(0, 0)),
                                              {static_cast<Ledger>(rows.GetInt(0, 1)), static_cast<Ledger>(rows.GetInt(0, 2))},
                                              static_cast<uint32_t>(rows.GetInt(0, 3))});
}

Result<bool> Heartbeat(pg::Connection& conn, const std::string& run_id, const ClaimedJob& job,
                       const std::string& stage) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("UPDATE {} SET heartbeat = now(), stage = $4 WHERE run_id = $1 AND "
                                            "job_id = $2 AND attempt = $3 AND state = 'running'",
                                            ControlTable("jobs")),
                                {run_id, Str(job.job_id), Str(job.attempt), stage}));
  return rows.AffectedRows() == 1;
}

Status FinishJob(pg::Connection& conn, const std::string& run_id, const ClaimedJob& job, int64_t rows_written) {
  std::string sql = fmt::format(R"(
WITH done AS (
  UPDATE {jobs} SET state = 'done', finished_at = now(), rows = $4
  WHERE run_id = $1 AND job_id = $2 AND attempt = $3 AND state = 'running'
  RETURNING job_id
)
UPDATE {attempts} a SET finished_at = now(), outcome = 'done'
FROM done WHERE a.run_id = $1 AND a.job_id = done.job_id AND a.attempt = $3)",
                                fmt::arg("jobs", ControlTable("jobs")), fmt::arg("attempts", ControlTable("attempts")));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {run_id, Str(job.job_id), Str(job.attempt), Str(rows_written)}));
  if (rows.AffectedRows() != 1)
    return Status::Runtimef("job {} attempt {} was handed to another worker or its run was cancelled; this attempt "
                            "must not commit (fenced)",
                            job.job_id, job.attempt);
  return Status::Ok();
}

namespace {

// SQL fragment: the state a requeued job gets, given its attempt and the run's retries.
std::string RequeueSet(const RunSpec& spec) {
  return fmt::format(
      "state = CASE WHEN j.attempt > {retries} THEN 'failed' ELSE 'pending' END, "
      "not_before = now() + make_interval(secs => {backoff} * power(2, greatest(j.attempt - 1, 0))), "
      "finished_at = now()",
      fmt::arg("retries", spec.plan.retries), fmt::arg("backoff", spec.plan.retry_backoff_s));
}

}  // namespace

Status FailJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job, const std::string& error,
               Detector detector) {
  std::string sql =
      fmt::format(R"(
WITH failed AS (
  UPDATE {jobs} j SET {set}, error = $4
  WHERE j.run_id = $1 AND j.job_id = $2 AND j.attempt = $3 AND j.state = 'running'
  RETURNING j.job_id
)
UPDATE {attempts} a SET finished_at = now(), outcome = 'failed', error = $4, detector = $5
FROM failed WHERE a.run_id = $1 AND a.job_id = failed.job_id AND a.attempt = $3)",
                  fmt::arg("jobs", ControlTable("jobs")), fmt::arg("attempts", ControlTable("attempts")), fmt::arg("set", RequeueSet(spec)));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {spec.run_id, Str(job.job_id), Str(job.attempt), error,
                                                     std::string(ToString(detector))}));
  if (rows.AffectedRows() == 0) {
    // The attempt had already been taken from this worker: record that it was fenced off (its
    // detector stays the one that caught it).
    LD_RETURN_IF_ERROR(conn.Exec(fmt::format("UPDATE {} SET outcome = 'fenced', error = $4, finished_at = "
                                             "coalesce(finished_at, now()) WHERE run_id = $1 AND job_id = $2 AND "
                                             "attempt = $3",
                                             ControlTable("attempts")),
                                 {spec.run_id, Str(job.job_id), Str(job.attempt), error})
                           .status());
  }
  return Status::Ok();
}

Result<std::vector<JobRow>> RequeueLost(pg::Connection& conn, const RunSpec& spec,
                                        const std::optional<std::string>& worker, const std::string& why,
                                        const std::string& orchestrator_instance, Detector worker_detector) {
  // A job is lost when its worker died, its heartbeat is stale, or its backend vanished; what
  // caught it is recorded with the attempt (ingest/detector.h), in the order of the CASEs below.
  std::string sql = fmt::format(
      R"(
WITH lost AS (
  SELECT j.job_id, j.attempt,
    CASE WHEN $2::text IS NOT NULL THEN $3
         WHEN {other_instance} THEN 'its orchestrator was restarted (the worker died with instance ' ||
           substr(j.worker, strpos(j.worker, '@') + 1) || ')'
         WHEN {stale} THEN 'no heartbeat for {timeout} s'
         ELSE 'its database session ended' END AS why,
    CASE WHEN $2::text IS NOT NULL THEN $5
         WHEN {other_instance} THEN '{orchestrator_restart}'
         WHEN {stale} THEN '{heartbeat_timeout}'
         ELSE '{lost_connection}' END AS detector
  FROM {jobs} j
  WHERE j.run_id = $1 AND j.state = 'running'
    AND CASE WHEN $2::text IS NOT NULL THEN j.worker = $2
             ELSE {stale} OR (NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = j.backend_pid)
                              AND NOT coalesce({own_instance}, false)) END
  FOR UPDATE OF j SKIP LOCKED
), requeued AS (
  UPDATE {jobs} j SET {set}, error = lost.why
  FROM lost WHERE j.run_id = $1 AND j.job_id = lost.job_id
  RETURNING j.job_id, j.range_from, j.range_to, j.state, j.attempt, j.worker, j.worker_pid, j.backend_pid, lost.why,
    lost.detector
), logged AS (
  UPDATE {attempts} a SET finished_at = now(), outcome = 'lost', error = r.why, detector = r.detector
  FROM requeued r WHERE a.run_id = $1 AND a.job_id = r.job_id AND a.attempt = r.attempt
)
SELECT job_id, range_from, range_to, state, attempt, coalesce(worker, ''), coalesce(worker_pid, 0),
       coalesce(backend_pid, 0), why, 0, '', detector FROM requeued ORDER BY job_id)",
      fmt::arg("jobs", ControlTable("jobs")), fmt::arg("attempts", ControlTable("attempts")), fmt::arg("set", RequeueSet(spec)),
      fmt::arg("timeout", spec.plan.job_timeout_s),
      fmt::arg("stale", fmt::format("j.heartbeat < now() - make_interval(secs => {})", spec.plan.job_timeout_s)),
      // Workers are named "wN[.G]@host:pid:start" after their orchestrator instance; $4 is the caller's.
      fmt::arg("own_instance",
               "$4 <> '' AND strpos(j.worker, '@') > 0 AND substr(j.worker, strpos(j.worker, '@') + 1) = $4"),
      fmt::arg("other_instance",
               "$4 <> '' AND strpos(j.worker, '@') > 0 AND substr(j.worker, strpos(j.worker, '@') + 1) <> $4"),
      fmt::arg("orchestrator_restart", ToString(Detector::kOrchestratorRestart)),
      fmt::arg("heartbeat_timeout", ToString(Detector::kHeartbeatTimeout)),
      fmt::arg("lost_connection", ToString(Detector::kLostConnection)));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {spec.run_id, worker, why, orchestrator_instance,
                                                     std::string(ToString(worker_detector))}));
  LD_ASSIGN_OR_RETURN(std::vector<JobRow> out, JobRows(rows));
  for (int i = 0; i < rows.size(); ++i) out[static_cast<size_t>(i)].detector = ParseDetector(rows.Get(i, 11));
  return out;
}

namespace {

// Requeues running attempts matching `which` (a predicate on jobs j, parameters from $3) at once
// and without spending a retry: outcome "interrupted".
Status RequeueRunningAsInterrupted(pg::Connection& conn, const RunSpec& spec, const std::string& why,
                                   const std::string& which, std::vector<pg::Param> params) {
  std::string sql = fmt::format(R"(
WITH requeued AS (
  UPDATE {jobs} j SET state = 'pending', not_before = '-infinity', error = $2
  WHERE j.run_id = $1 AND j.state = 'running' AND {which}
  RETURNING j.job_id, j.attempt
)
UPDATE {attempts} a SET finished_at = now(), outcome = 'interrupted', error = $2
FROM requeued r WHERE a.run_id = $1 AND a.job_id = r.job_id AND a.attempt = r.attempt)",
                                fmt::arg("jobs", ControlTable("jobs")), fmt::arg("attempts", ControlTable("attempts")),
                                fmt::arg("which", which));
  params.insert(params.begin(), {pg::Param(spec.run_id), pg::Param(why)});
  return conn.Exec(sql, params).status();
}

}  // namespace

Status RequeueAllRunning(pg::Connection& conn, const RunSpec& spec, const std::string& why) {
  return RequeueRunningAsInterrupted(conn, spec, why, "true", {});
}

Status InterruptJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job, const std::string& why) {
  return RequeueRunningAsInterrupted(conn, spec, why, "j.job_id = $3 AND j.attempt = $4",
                                     {Str(job.job_id), Str(job.attempt)});
}

Result<RunCounts> CountJobs(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT state, count(*), coalesce(sum(range_to - range_from + 1), 0) "
                                            "FROM {} WHERE run_id = $1 GROUP BY state",
                                            ControlTable("jobs")),
                                {run_id}));
  RunCounts c;
  for (int i = 0; i < rows.size(); ++i) {
    const std::optional<JobState> state = ParseJobState(rows.Get(i, 0));
    if (!state) return Status::Runtimef("run {}: a job has an unknown state \"{}\"", run_id, rows.Get(i, 0));
    const auto n = static_cast<uint32_t>(rows.GetInt(i, 1));
    switch (*state) {
      case JobState::kPending: c.pending = n; break;
      case JobState::kRunning: c.running = n; break;
      case JobState::kDone:
        c.done = n;
        c.ledgers_done = static_cast<uint64_t>(rows.GetInt(i, 2));
        break;
      case JobState::kFailed: c.failed = n; break;
      case JobState::kCancelled: c.cancelled = n; break;
    }
  }
  return c;
}

Result<std::vector<JobRow>> ListJobs(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT job_id, range_from, range_to, state, attempt, coalesce(worker, ''), "
                                            "coalesce(worker_pid, 0), coalesce(backend_pid, 0), coalesce(error, ''), "
                                            "coalesce(rows, 0), coalesce(stage, ''), "
                                            "coalesce(extract(epoch FROM now() - heartbeat)::float8, -1), "
                                            "backend_pid IS NULL OR EXISTS (SELECT 1 FROM pg_stat_activity a WHERE "
                                            "a.pid = backend_pid) FROM {} WHERE run_id = $1 ORDER BY job_id",
                                            ControlTable("jobs")),
                                {run_id}));
  return JobRows(rows);
}

Result<std::vector<AttemptRow>> ListAttempts(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec(fmt::format(
                    "SELECT a.job_id, a.attempt, a.worker, extract(epoch FROM a.started_at - r.created_at), "
                    "coalesce(extract(epoch FROM a.finished_at - r.created_at), -1), a.outcome, coalesce(a.error, ''), "
                    "j.range_from, j.range_to, coalesce(a.slot, 0), coalesce(a.detector, '') "
                    "FROM {} a JOIN {} r USING (run_id) JOIN {} j USING (run_id, job_id) "
                    "WHERE a.run_id = $1 ORDER BY a.started_at, a.job_id, a.attempt",
                    ControlTable("attempts"), ControlTable("runs"), ControlTable("jobs")),
                {run_id}));
  std::vector<AttemptRow> out;
  for (int i = 0; i < rows.size(); ++i) {
    std::optional<Detector> detector;
    if (!rows.Get(i, 10).empty()) {
      detector = ParseDetector(rows.Get(i, 10));
      if (!detector)
        return Status::Runtimef("run {}: job {} attempt {} has an unknown detector \"{}\"", run_id, rows.Get(i, 0),
                                rows.Get(i, 1), rows.Get(i, 10));
    }
    const std::optional<AttemptOutcome> outcome = ParseAttemptOutcome(rows.Get(i, 5));
    if (!outcome)
      return Status::Runtimef("run {}: job {} attempt {} has an unknown outcome \"{}\"", run_id, rows.Get(i, 0),
                              rows.Get(i, 1), rows.Get(i, 5));
    out.push_back({static_cast<uint32_t>(rows.GetInt(i, 0)),
                   static_cast<uint32_t>(rows.GetInt(i, 1)),
                   std::string(rows.Get(i, 2)),
                   std::stod(std::string(rows.Get(i, 3))),
                   std::stod(std::string(rows.Get(i, 4))),
                   *outcome,
                   std::string(rows.Get(i, 6)),
                   {static_cast<Ledger>(rows.GetInt(i, 7)), static_cast<Ledger>(rows.GetInt(i, 8))},
                   static_cast<int>(rows.GetInt(i, 9)),
                   detector});
  }
  return out;
}

Status RegisterWorker(pg::Connection& conn, const std::string& run_id, const std::string& worker, int pid, int slot) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  return conn
      .Exec(fmt::format("INSERT INTO {} (run_id, worker, host, pid, slot, backend_pid) VALUES ($1, $2, $3, $4, $5, "
                        "pg_backend_pid()) ON CONFLICT (run_id, worker) DO UPDATE SET host = excluded.host, pid = "
                        "excluded.pid, slot = excluded.slot, backend_pid = excluded.backend_pid, started_at = now(), "
                        "last_seen = now(), exited_at = NULL, exit_code = NULL, error = NULL",
                        ControlTable("workers")),
            {run_id, worker, std::string(host), Str(pid), Str(slot)})
      .status();
}

Status TouchWorker(pg::Connection& conn, const std::string& run_id, const std::string& worker) {
  return conn
      .Exec(fmt::format("UPDATE {} SET last_seen = now(), backend_pid = pg_backend_pid() WHERE run_id = $1 AND "
                        "worker = $2 AND exited_at IS NULL",
                        ControlTable("workers")),
            {run_id, worker})
      .status();
}

Status RecordWorkerExit(pg::Connection& conn, const std::string& run_id, const std::string& worker, int exit_code,
                        const std::string& error) {
  return conn
      .Exec(fmt::format("UPDATE {} SET exited_at = now(), last_seen = now(), exit_code = $3, error = nullif($4, '') "
                        "WHERE run_id = $1 AND worker = $2",
                        ControlTable("workers")),
            {run_id, worker, Str(exit_code), error})
      .status();
}

Result<WorkerCounts> CountWorkers(pg::Connection& conn, const std::string& run_id, double job_timeout_s) {
  WorkerCounts c;
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {ControlTable("workers")}));
  if (!exists.GetBool(0, 0)) return c;
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec(fmt::format("WITH w AS (SELECT exited_at IS NULL AND last_seen >= now() - make_interval(secs => "
                            "$2::float8) AS recent, EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = "
                            "w.backend_pid) AS session FROM {} w WHERE run_id = $1) "
                            "SELECT count(*), count(*) FILTER (WHERE recent AND session), "
                            "count(*) FILTER (WHERE recent AND NOT session) FROM w",
                            ControlTable("workers")),
                {run_id, fmt::format("{}", job_timeout_s)}));
  c.joined = static_cast<uint32_t>(rows.GetInt(0, 0));
  c.alive = static_cast<uint32_t>(rows.GetInt(0, 1));
  c.reconnecting = static_cast<uint32_t>(rows.GetInt(0, 2));
  return c;
}

}  // namespace ledgerdiff::ingest
