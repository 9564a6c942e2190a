#include "ingest/distributed.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/database.h"
#include "ingest/schema_guard.h"
#include "ingest/worker.h"

namespace ledgerdiff::ingest {

namespace {

std::string T(const char* table) { return pg::Qualified(kControlSchema, table); }

RunStatus RowToStatus(const pg::Rows& rows, int i) {
  RunStatus s;
  s.run_id = std::string(rows.Get(i, 0));
  s.schema = std::string(rows.Get(i, 1));
  s.state = std::string(rows.Get(i, 2));
  s.range = {static_cast<Ledger>(rows.GetInt(i, 3)), static_cast<Ledger>(rows.GetInt(i, 4))};
  s.job_size = static_cast<uint32_t>(rows.GetInt(i, 5));
  s.created_at = std::string(rows.Get(i, 6));
  return s;
}

const char* kRunColumns =
    "run_id, schema_name, state, range_from, range_to, job_size, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

Status FillDetails(pg::Connection& conn, RunStatus& s) {
  LD_ASSIGN_OR_RETURN(s.counts, CountJobs(conn, s.run_id));
  LD_ASSIGN_OR_RETURN(pg::Rows w, conn.Exec(fmt::format("SELECT DISTINCT worker FROM {} WHERE run_id = $1 ORDER BY 1",
                                                         T("attempts")),
                                             {s.run_id}));
  for (int i = 0; i < w.size(); ++i) s.workers.emplace_back(w.Get(i, 0));
  return Status::Ok();
}

}  // namespace

std::string UniqueWorkerId() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) std::snprintf(host, sizeof host, "host");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return fmt::format("{}-{}-{}", host, getpid(), ms);
}

Status RequireRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {T("runs")}));
  if (exists.Get(0, 0) != "t")
    return Status::Usagef("no such run \"{}\": this database has no job table ({}); plan prints the run id", run_id,
                          kControlSchema);
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT 1 FROM {} WHERE run_id = $1", T("runs")), {run_id}));
  if (rows.size() != 1)
    return Status::Usagef("no such run \"{}\" in this database's job table (`ledgerdiff runs` lists them)", run_id);
  return Status::Ok();
}

Result<RunSpec> PlanRun(pg::Connection& conn, const IngestOptions& options) {
  LD_RETURN_IF_ERROR(ValidateIngestOptions(options));
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, options.schema));
  if (state == SchemaState::kForeign && !options.force)
    return Status::Usagef(
        "schema \"{}\" exists and was not created by ledgerdiff; refusing to plan into it (use "
        "another --schema, or --force)",
        options.schema);
  return RegisterRun(conn, options);
}

Result<RunStatus> GetRunStatus(pg::Connection& conn, const std::string& run_id) {
  LD_RETURN_IF_ERROR(RequireRun(conn, run_id));
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT {} FROM {} WHERE run_id = $1", kRunColumns, T("runs")), {run_id}));
  if (rows.size() != 1) return Status::Usagef("no such run \"{}\" in this database's job table", run_id);
  RunStatus s = RowToStatus(rows, 0);
  LD_RETURN_IF_ERROR(FillDetails(conn, s));
  return s;
}

Result<std::vector<RunStatus>> ListRuns(pg::Connection& conn) {
  std::vector<RunStatus> out;
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {T("runs")}));
  if (exists.Get(0, 0) != "t") return out;
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT {} FROM {} ORDER BY created_at DESC, run_id",
                                                            kRunColumns, T("runs"))));
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back(RowToStatus(rows, i));
    LD_RETURN_IF_ERROR(FillDetails(conn, out.back()));
  }
  return out;
}

Result<std::string> SettleRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec(fmt::format(
                    "UPDATE {runs} r SET state = CASE WHEN EXISTS (SELECT 1 FROM {jobs} j WHERE j.run_id = r.run_id "
                    "AND j.state = 'failed') THEN 'failed' ELSE 'done' END, finished_at = now() "
                    "WHERE r.run_id = $1 AND r.state = 'running' AND NOT EXISTS (SELECT 1 FROM {jobs} j "
                    "WHERE j.run_id = r.run_id AND j.state IN ('pending', 'running') AND NOT EXISTS "
                    "(SELECT 1 FROM {jobs} f WHERE f.run_id = r.run_id AND f.state = 'failed'))",
                    fmt::arg("runs", T("runs")), fmt::arg("jobs", T("jobs"))),
                {run_id}));
  (void)rows;
  LD_ASSIGN_OR_RETURN(pg::Rows state, conn.Exec(fmt::format("SELECT state FROM {} WHERE run_id = $1", T("runs")), {run_id}));
  if (state.size() != 1) return Status::Usagef("no run {} in the job table", run_id);
  return std::string(state.Get(0, 0));
}

int RunDistributedWorker(const std::string& conninfo, const std::string& run_id, std::string worker,
                         Reporter& reporter) {
  if (worker.empty()) worker = UniqueWorkerId();
  auto fail = [&](const Status& s) {
    fmt::print(stderr, "ledgerdiff worker {}: {}\n", worker, s.message());
    return 2;
  };
  auto control = pg::Connection::Open(conninfo, "ledgerdiff worker " + worker);
  if (!control.ok()) return fail(control.status());
  pg::Connection& conn = **control;
  if (Status known = RequireRun(conn, run_id); !known.ok()) return fail(known);
  auto spec = LoadRun(conn, run_id);
  if (!spec.ok()) return fail(spec.status());
  reporter.Note(fmt::format("worker {} joins run {} (schema \"{}\", ledgers {})", worker, run_id, spec->schema,
                            spec->range.str()));

  // The lease keeper: requeues jobs of dead or frozen workers anywhere, settles the run.
  std::atomic<bool> stop{false};
  std::thread keeper([&] {
    while (!stop.load()) {
      if (!conn.Healthy()) break;
      auto lost = RequeueLost(conn, *spec, std::nullopt, "");
      if (lost.ok()) {
        for (const auto& j : *lost)
          reporter.Note(fmt::format("job {} [{}] of {} lost: {}; {}", j.job_id, j.range.str(), j.worker, j.error,
                                    j.state == "failed" ? "out of retries" : "requeued"));
      }
      (void)SettleRun(conn, run_id);  // a job out of retries stops every worker's claims
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  WorkerOptions wo;
  wo.conninfo = conninfo;
  wo.run_id = run_id;
  wo.worker = worker;
  const int rc = RunWorker(wo);
  stop = true;
  keeper.join();
  if (rc != 0) return 2;
  if (!conn.Healthy()) {
    auto c = pg::Connection::Open(conninfo, "ledgerdiff worker " + worker);
    if (!c.ok()) return fail(c.status());
    *control = std::move(c).value();
  }
  auto state = SettleRun(**control, run_id);
  if (!state.ok()) return fail(state.status());
  if (*state == "done") return 0;
  if (*state == "running") return fail(Status::Runtimef("run {} still has unfinished jobs", run_id));
  reporter.Note(fmt::format("run {} is {}", run_id, *state));
  return 1;
}

Result<RunStatus> WaitForRun(pg::Connection& conn, const std::string& run_id, double timeout_s, Reporter& reporter) {
  const auto start = std::chrono::steady_clock::now();
  std::string last;
  LD_RETURN_IF_ERROR(RequireRun(conn, run_id));
  for (;;) {
    LD_ASSIGN_OR_RETURN(std::string state, SettleRun(conn, run_id));
    LD_ASSIGN_OR_RETURN(RunStatus s, GetRunStatus(conn, run_id));
    const std::string line = fmt::format("run {}: {} of {} jobs done ({} ledgers), {} running, {} pending, {} failed; "
                                         "{} workers seen",
                                         run_id, s.counts.done, s.counts.total(), s.counts.ledgers_done,
                                         s.counts.running, s.counts.pending, s.counts.failed, s.workers.size());
    if (line != last) reporter.Note(line);
    last = line;
    if (state != "running") return s;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && waited >= timeout_s)
      return Status::Runtimef("run {} not finished after {} s: {} pending, {} running", run_id, timeout_s,
                              s.counts.pending, s.counts.running);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

Result<IngestReport> RunWithExternalWorkers(const std::string& conninfo, const IngestOptions& options, double timeout_s,
                                            Reporter& reporter) {
  const auto started = std::chrono::steady_clock::now();
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff verify"));
  RunSpec spec;
  if (options.resume_run.empty()) {
    LD_ASSIGN_OR_RETURN(spec, PlanRun(*conn, options));
  } else {
    LD_ASSIGN_OR_RETURN(spec, LoadRun(*conn, options.resume_run));
    LD_RETURN_IF_ERROR(SetRunState(*conn, spec.run_id, "running"));
  }
  reporter.Note(
      fmt::format("run {} waits for external workers: start `ledgerdiff worker --run {}` on machines that "
                  "reach this database",
                  spec.run_id, spec.run_id));
  LD_ASSIGN_OR_RETURN(RunStatus status, WaitForRun(*conn, spec.run_id, timeout_s, reporter));
  IngestReport report;
  report.run_id = spec.run_id;
  report.schema = spec.schema;
  report.range = spec.range;
  report.job_size = spec.job_size;
  report.workers = static_cast<uint32_t>(status.workers.size());
  if (status.state == "done") {
    Status intact = CheckRunOwnsSchema(*conn, spec);
    if (intact.ok() && spec.unsafe_commit_every == 0) intact = CheckRowsMatchJobs(*conn, spec);
    if (!intact.ok()) {
      LD_RETURN_IF_ERROR(SetRunState(*conn, spec.run_id, "failed"));
      report.error = intact.message();
    }
  } else {
    report.error =
        fmt::format("run {} is {}: a job ran out of retries (continue it with --resume)", spec.run_id, status.state);
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(*conn, spec.run_id));
  LD_ASSIGN_OR_RETURN(report.timeline, ListAttempts(*conn, spec.run_id));
  report.jobs = static_cast<uint32_t>(jobs.size());
  report.attempts = static_cast<uint32_t>(report.timeline.size());
  report.ledgers = status.counts.ledgers_done;
  for (const auto& j : jobs) {
    if (j.attempt > 1) ++report.retried_jobs;
    if (j.state == "failed") report.failed_jobs.push_back(j);
  }
  LD_ASSIGN_OR_RETURN(report.rows_per_table, CountRowsInRange(*conn, spec.schema, spec.range));
  for (const auto& [table, n] : report.rows_per_table) report.rows += n;
  report.ok = report.error.empty();
  return report;
}

}  // namespace ledgerdiff::ingest
