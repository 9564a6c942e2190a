#include "ingest/job_table.h"

#include <cmath>

namespace ledgerdiff::ingest {

namespace {

std::string T(const char* table) { return pg::Qualified(kControlSchema, table); }

std::string Str(int64_t v) { return std::to_string(v); }

// Rows of (job_id, range_from, range_to, state, attempt, worker, worker_pid, backend_pid, error,
// rows, stage), in that column order.
std::vector<JobRow> JobRows(const pg::Rows& rows) {
  std::vector<JobRow> out;
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back({static_cast<uint32_t>(rows.GetInt(i, 0)),
                   {static_cast<Ledger>(rows.GetInt(i, 1)), static_cast<Ledger>(rows.GetInt(i, 2))},
                   std::string(rows.Get(i, 3)), static_cast<uint32_t>(rows.GetInt(i, 4)), std::string(rows.Get(i, 5)),
                   static_cast<int>(rows.GetInt(i, 6)), static_cast<int>(rows.GetInt(i, 7)),
                   std::string(rows.Get(i, 8)), rows.GetInt(i, 9), std::string(rows.Get(i, 10))});
  }
  return out;
}

}  // namespace

nlohmann::json RunSpec::ToJson() const {
  nlohmann::json j = IngestPlan::ToJson();
  j["run_id"] = run_id;
  if (!schema_mark.empty()) j["schema_mark"] = schema_mark;
  j["heartbeat_s"] = heartbeat_s();  // informational: workers derive it from job_timeout_s
  return j;
}

Result<RunSpec> RunSpec::FromJson(const nlohmann::json& j) {
  RunSpec s;
  LD_ASSIGN_OR_RETURN(static_cast<IngestPlan&>(s), IngestPlan::FromJson(j));
  try {
    s.run_id = j.at("run_id").get<std::string>();
    s.schema_mark = j.value("schema_mark", std::string());
  } catch (const std::exception& e) {
    return Status::Runtimef("run spec is unreadable: {}", e.what());
  }
  return s;
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
    // Columns added since the first release of the control schema.
    LD_RETURN_IF_ERROR(conn.Run(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS stage text", T("jobs"))));
    LD_RETURN_IF_ERROR(conn.Run(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS slot integer", T("attempts"))));
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
  state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'failed', 'aborted')),
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE TABLE {jobs} (
  run_id text NOT NULL REFERENCES {runs} ON DELETE CASCADE,
  job_id integer NOT NULL,
  range_from integer NOT NULL,
  range_to integer NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
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
  PRIMARY KEY (run_id, job_id, attempt)
);)",
                                fmt::arg("s", pg::QuoteIdent(kControlSchema)), fmt::arg("runs", T("runs")),
                                fmt::arg("jobs", T("jobs")), fmt::arg("attempts", T("attempts")));
  LD_RETURN_IF_ERROR(conn.Run(sql).With("create the control schema"));
  return tx.Commit();
}

Status CreateRun(pg::Connection& conn, const RunSpec& spec, const std::vector<LedgerRange>& jobs) {
  LD_ASSIGN_OR_RETURN(auto tx, pg::Transaction::Begin(conn));
  LD_RETURN_IF_ERROR(
      conn.Exec(fmt::format("INSERT INTO {} (run_id, schema_name, range_from, range_to, job_size, workers, spec) "
                            "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                            T("runs")),
                {spec.run_id, spec.schema, Str(spec.range.from), Str(spec.range.to), Str(spec.job_size),
                 Str(spec.workers), spec.ToJson().dump()})
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
                                           T("jobs")),
                               {spec.run_id, froms, tos})
                         .status());
  return tx.Commit();
}

Result<RunSpec> LoadRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT spec::text FROM {} WHERE run_id = $1", T("runs")), {run_id}));
  if (rows.size() == 0) return Status::Usagef("run \"{}\" does not exist in this database", run_id);
  nlohmann::json j = nlohmann::json::parse(rows.Get(0, 0), nullptr, false);
  if (j.is_discarded()) return Status::Runtimef("run \"{}\": spec is not JSON", run_id);
  return RunSpec::FromJson(j);
}

Status SetRunState(pg::Connection& conn, const std::string& run_id, const std::string& state) {
  return conn
      .Exec(fmt::format("UPDATE {} SET state = $2, finished_at = CASE WHEN $2 = 'running' THEN NULL ELSE now() END "
                        "WHERE run_id = $1",
                        T("runs")),
            {run_id, state})
      .status();
}

Status DeleteRun(pg::Connection& conn, const std::string& run_id) {
  return conn.Exec(fmt::format("DELETE FROM {} WHERE run_id = $1", T("runs")), {run_id}).status();
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
                                fmt::arg("jobs", T("jobs")), fmt::arg("runs", T("runs")),
                                fmt::arg("attempts", T("attempts")));
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
                                            T("jobs")),
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
                                fmt::arg("jobs", T("jobs")), fmt::arg("attempts", T("attempts")));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {run_id, Str(job.job_id), Str(job.attempt), Str(rows_written)}));
  if (rows.AffectedRows() != 1)
    return Status::Runtimef("job {} attempt {} was handed to another worker; this attempt must not commit (fenced)",
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
      fmt::arg("retries", spec.retries), fmt::arg("backoff", spec.retry_backoff_s));
}

}  // namespace

Status FailJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job, const std::string& error) {
  std::string sql = fmt::format(R"(
WITH failed AS (
  UPDATE {jobs} j SET {set}, error = $4
  WHERE j.run_id = $1 AND j.job_id = $2 AND j.attempt = $3 AND j.state = 'running'
  RETURNING j.job_id
)
UPDATE {attempts} a SET finished_at = now(), outcome = 'failed', error = $4
FROM failed WHERE a.run_id = $1 AND a.job_id = failed.job_id AND a.attempt = $3)",
                                fmt::arg("jobs", T("jobs")), fmt::arg("attempts", T("attempts")),
                                fmt::arg("set", RequeueSet(spec)));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {spec.run_id, Str(job.job_id), Str(job.attempt), error}));
  if (rows.AffectedRows() == 0) {
    // The attempt had already been taken from this worker: record that it was fenced off.
    LD_RETURN_IF_ERROR(conn.Exec(fmt::format("UPDATE {} SET outcome = 'fenced', error = $4, finished_at = "
                                             "coalesce(finished_at, now()) WHERE run_id = $1 AND job_id = $2 AND "
                                             "attempt = $3",
                                             T("attempts")),
                                 {spec.run_id, Str(job.job_id), Str(job.attempt), error})
                           .status());
  }
  return Status::Ok();
}

Result<std::vector<JobRow>> RequeueLost(pg::Connection& conn, const RunSpec& spec,
                                        const std::optional<std::string>& dead_worker, const std::string& why) {
  // A job is lost when its worker died, its heartbeat is stale, or its backend vanished.
  std::string sql = fmt::format(R"(
WITH lost AS (
  SELECT j.job_id, j.attempt,
    CASE WHEN j.worker = $2 THEN $3
         WHEN j.heartbeat < now() - make_interval(secs => {timeout}) THEN 'no heartbeat for {timeout} s'
         ELSE 'its database session ended' END AS why
  FROM {jobs} j
  WHERE j.run_id = $1 AND j.state = 'running'
    AND (j.worker = $2
         OR j.heartbeat < now() - make_interval(secs => {timeout})
         OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = j.backend_pid))
  FOR UPDATE OF j SKIP LOCKED
), requeued AS (
  UPDATE {jobs} j SET {set}, error = lost.why
  FROM lost WHERE j.run_id = $1 AND j.job_id = lost.job_id
  RETURNING j.job_id, j.range_from, j.range_to, j.state, j.attempt, j.worker, j.worker_pid, j.backend_pid, lost.why
), logged AS (
  UPDATE {attempts} a SET finished_at = now(), outcome = 'lost', error = r.why
  FROM requeued r WHERE a.run_id = $1 AND a.job_id = r.job_id AND a.attempt = r.attempt
)
SELECT job_id, range_from, range_to, state, attempt, coalesce(worker, ''), coalesce(worker_pid, 0),
       coalesce(backend_pid, 0), why, 0, '' FROM requeued ORDER BY job_id)",
                                fmt::arg("jobs", T("jobs")), fmt::arg("attempts", T("attempts")),
                                fmt::arg("set", RequeueSet(spec)), fmt::arg("timeout", spec.job_timeout_s));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql, {spec.run_id, dead_worker, why}));
  return JobRows(rows);
}

Status RequeueAllRunning(pg::Connection& conn, const RunSpec& spec, const std::string& why) {
  std::string sql = fmt::format(R"(
WITH requeued AS (
  UPDATE {jobs} j SET state = 'pending', not_before = '-infinity', error = $2
  WHERE j.run_id = $1 AND j.state = 'running'
  RETURNING j.job_id, j.attempt
)
UPDATE {attempts} a SET finished_at = now(), outcome = 'interrupted', error = $2
FROM requeued r WHERE a.run_id = $1 AND a.job_id = r.job_id AND a.attempt = r.attempt)",
                                fmt::arg("jobs", T("jobs")), fmt::arg("attempts", T("attempts")));
  return conn.Exec(sql, {spec.run_id, why}).status();
}

Result<RunCounts> CountJobs(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT state, count(*), coalesce(sum(range_to - range_from + 1), 0) "
                                            "FROM {} WHERE run_id = $1 GROUP BY state",
                                            T("jobs")),
                                {run_id}));
  RunCounts c;
  for (int i = 0; i < rows.size(); ++i) {
    auto state = rows.Get(i, 0);
    auto n = static_cast<uint32_t>(rows.GetInt(i, 1));
    if (state == "pending") c.pending = n;
    if (state == "running") c.running = n;
    if (state == "done") {
      c.done = n;
      c.ledgers_done = static_cast<uint64_t>(rows.GetInt(i, 2));
    }
    if (state == "failed") c.failed = n;
  }
  return c;
}

Result<std::vector<JobRow>> ListJobs(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT job_id, range_from, range_to, state, attempt, coalesce(worker, ''), "
                                            "coalesce(worker_pid, 0), coalesce(backend_pid, 0), coalesce(error, ''), "
                                            "coalesce(rows, 0), coalesce(stage, '') FROM {} WHERE run_id = $1 ORDER BY job_id",
                                            T("jobs")),
                                {run_id}));
  return JobRows(rows);
}

Result<std::vector<AttemptRow>> ListAttempts(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec(fmt::format(
                    "SELECT a.job_id, a.attempt, a.worker, extract(epoch FROM a.started_at - r.created_at), "
                    "coalesce(extract(epoch FROM a.finished_at - r.created_at), -1), a.outcome, coalesce(a.error, ''), "
                    "j.range_from, j.range_to, coalesce(a.slot, 0) FROM {} a JOIN {} r USING (run_id) JOIN {} j USING (run_id, job_id) "
                    "WHERE a.run_id = $1 ORDER BY a.started_at, a.job_id, a.attempt",
                    T("attempts"), T("runs"), T("jobs")),
                {run_id}));
  std::vector<AttemptRow> out;
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back({static_cast<uint32_t>(rows.GetInt(i, 0)), static_cast<uint32_t>(rows.GetInt(i, 1)),
                   std::string(rows.Get(i, 2)), std::stod(std::string(rows.Get(i, 3))),
                   std::stod(std::string(rows.Get(i, 4))), std::string(rows.Get(i, 5)), std::string(rows.Get(i, 6)),
                   {static_cast<Ledger>(rows.GetInt(i, 7)), static_cast<Ledger>(rows.GetInt(i, 8))},
                   static_cast<int>(rows.GetInt(i, 9))});
  }
  return out;
}

}  // namespace ledgerdiff::ingest
