#include "ingest/distributed.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/report.h"
#include "core/stage_timer.h"
#include "core/database.h"
#include "ingest/schema_guard.h"
#include "ingest/worker.h"

namespace ledgerdiff::ingest {

namespace {

// The run's state as stored, a Runtime error naming it when no release wrote it.
Result<RunState> StoredRunState(std::string_view text, std::string_view run_id) {
  std::optional<RunState> state = ParseRunState(text);
  if (!state) return Status::Runtimef("run {} has an unknown state \"{}\"", run_id, text);
  return *state;
}

Result<RunStatus> RowToStatus(const pg::Rows& rows, int i) {
  RunStatus s;
  s.run_id = std::string(rows.Get(i, 0));
  s.schema = std::string(rows.Get(i, 1));
  LD_ASSIGN_OR_RETURN(s.state, StoredRunState(rows.Get(i, 2), s.run_id));
  s.range = {static_cast<Ledger>(rows.GetInt(i, 3)), static_cast<Ledger>(rows.GetInt(i, 4))};
  s.job_size = static_cast<uint32_t>(rows.GetInt(i, 5));
  s.created_at = std::string(rows.Get(i, 6));
  s.mode = std::string(rows.Get(i, 7));
  s.error = std::string(rows.Get(i, 8));
  s.job_timeout_s = std::stod(std::string(rows.Get(i, 9)));
  return s;
}

// Read-only, also on a job table made by an older release (no mode or error column yet).
const char* kRunColumns =
    "run_id, schema_name, state, range_from, range_to, job_size, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "coalesce(to_jsonb(r) ->> 'mode', 'orchestrated'), coalesce(to_jsonb(r) ->> 'error', ''), "
    "coalesce((spec->>'job_timeout_s')::float8, 30)";

Status FillDetails(pg::Connection& conn, RunStatus& s) {
  LD_ASSIGN_OR_RETURN(s.counts, CountJobs(conn, s.run_id));
  LD_ASSIGN_OR_RETURN(pg::Rows w, conn.Exec(fmt::format("SELECT DISTINCT worker FROM {} WHERE run_id = $1 ORDER BY 1",
                                                         ControlTable("attempts")),
                                             {s.run_id}));
  for (int i = 0; i < w.size(); ++i) s.workers.emplace_back(w.Get(i, 0));
  LD_ASSIGN_OR_RETURN(s.worker_counts, CountWorkers(conn, s.run_id, s.job_timeout_s));
  bool fresh_job = false;  // a running job with a recent heartbeat from a live session
  if (s.counts.running + s.counts.failed > 0) {
    LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(conn, s.run_id));
    for (auto& j : jobs) {
      if (j.state == JobState::kFailed) s.failed_jobs.push_back(j);
      if (j.state != JobState::kRunning) continue;
      if (j.heartbeat_age_s > s.job_timeout_s || !j.session_alive)
        s.stale_jobs.push_back(j);
      else
        fresh_job = true;
    }
  }
  if (s.state != RunState::kRunning) {
    s.liveness = Liveness::kNotRunning;
  } else if (s.worker_counts.joined == 0 && s.workers.empty()) {
    s.liveness = Liveness::kNeverHadWorker;
  } else if (s.worker_counts.alive == 0 && !fresh_job && s.counts.pending + s.counts.running > 0) {
    s.liveness = s.worker_counts.reconnecting > 0 ? Liveness::kWorkersReconnecting : Liveness::kNoWorkerAlive;
  } else {
    s.liveness = Liveness::kWorkersAlive;
  }
  return Status::Ok();
}

// Why a run with failed jobs failed: the first failed job, its attempts and its last error.
std::string FailedJobsReason(const std::vector<JobRow>& failed) {
  if (failed.empty()) return "a job ran out of retries";
  const JobRow& j = failed.front();
  std::string more = failed.size() > 1 ? fmt::format(" (and {} more failed jobs)", failed.size() - 1) : "";
  return fmt::format("job {} [{}] ran out of retries after {} attempts{}: {}", j.job_id, j.range.str(), j.attempt, more,
                     j.error.empty() ? "no error recorded" : j.error);
}

// The message of a run that is not done.
std::string NotDoneMessage(const std::string& run_id, RunState state, const std::string& error) {
  if (state == RunState::kCancelled)
    return fmt::format("run {} was cancelled{}", run_id, error.empty() ? "" : " (" + error + ")");
  return fmt::format("run {} {}{}", run_id, ToString(state), error.empty() ? "" : ": " + error);
}

}  // namespace

const char* LivenessName(Liveness liveness) {
  switch (liveness) {
    case Liveness::kNotRunning: return "not_running";
    case Liveness::kNeverHadWorker: return "never_had_worker";
    case Liveness::kNoWorkerAlive: return "no_worker_alive";
    case Liveness::kWorkersReconnecting: return "workers_reconnecting";
    case Liveness::kWorkersAlive: return "workers_alive";
  }
  return "unknown";
}

std::string StaleJobText(const JobRow& job) {
  return fmt::format("stale (no heartbeat for {:.0f} s, worker {}{})", std::max(job.heartbeat_age_s, 0.0), job.worker,
                     job.session_alive ? "" : "; its database session ended");
}

std::string UniqueWorkerId() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) std::snprintf(host, sizeof host, "host");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return fmt::format("{}-{}-{}", host, getpid(), ms);
}

Status RequireRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {ControlTable("runs")}));
  if (!exists.GetBool(0, 0))
    return Status::Usagef("no such run \"{}\": this database has no job table ({}); plan prints the run id", run_id,
                          kControlSchema);
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT 1 FROM {} WHERE run_id = $1", ControlTable("runs")), {run_id}));
  if (rows.size() != 1)
    return Status::Usagef("no such run \"{}\" in this database's job table (`ledgerdiff runs` lists them)", run_id);
  return Status::Ok();
}

Result<RunSpec> PlanRun(pg::Connection& conn, const IngestOptions& options) {
  LD_RETURN_IF_ERROR(ValidateIngestOptions(options));
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, options.plan.schema));
  if (state == SchemaState::kForeign && !options.force)
    return Status::Usagef(
        "schema \"{}\" exists and was not created by ledgerdiff; refusing to plan into it (use "
        "another --schema, or --force)",
        options.plan.schema);
  IngestOptions planned = options;
  planned.planned = true;
  return RegisterRun(conn, planned);
}

Result<RunStatus> GetRunStatus(pg::Connection& conn, const std::string& run_id) {
  LD_RETURN_IF_ERROR(RequireRun(conn, run_id));
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT {} FROM {} r WHERE run_id = $1", kRunColumns, ControlTable("runs")), {run_id}));
  if (rows.size() != 1) return Status::Usagef("no such run \"{}\" in this database's job table", run_id);
  LD_ASSIGN_OR_RETURN(RunStatus s, RowToStatus(rows, 0));
  LD_RETURN_IF_ERROR(FillDetails(conn, s));
  return s;
}

Result<std::vector<RunStatus>> ListRuns(pg::Connection& conn) {
  std::vector<RunStatus> out;
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL", {ControlTable("runs")}));
  if (!exists.GetBool(0, 0)) return out;
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT {} FROM {} r ORDER BY created_at DESC, run_id",
                                                            kRunColumns, ControlTable("runs"))));
  for (int i = 0; i < rows.size(); ++i) {
    LD_ASSIGN_OR_RETURN(RunStatus s, RowToStatus(rows, i));
    out.push_back(std::move(s));
    LD_RETURN_IF_ERROR(FillDetails(conn, out.back()));
  }
  return out;
}

Result<RunState> SettleRun(pg::Connection& conn, const std::string& run_id) {
  LD_ASSIGN_OR_RETURN(auto tx, pg::Transaction::Begin(conn));
  // One settler at a time: the others wait here and then find the run settled.
  LD_ASSIGN_OR_RETURN(pg::Rows run,
                      conn.Exec(fmt::format("SELECT state, spec::text FROM {} WHERE run_id = $1 FOR UPDATE", ControlTable("runs")),
                                {run_id}));
  if (run.size() != 1) return Status::Usagef("no run {} in the job table", run_id);
  LD_ASSIGN_OR_RETURN(RunState state, StoredRunState(run.Get(0, 0), run_id));
  if (state != RunState::kRunning) {
    LD_RETURN_IF_ERROR(tx.Commit());
    return state;
  }
  LD_ASSIGN_OR_RETURN(RunCounts counts, CountJobs(conn, run_id));
  std::string error;
  if (counts.failed > 0) {
    LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(conn, run_id));
    std::vector<JobRow> failed;
    for (const auto& j : jobs)
      if (j.state == JobState::kFailed) failed.push_back(j);
    state = RunState::kFailed;
    error = FailedJobsReason(failed);
  } else if (counts.pending + counts.running > 0 || counts.cancelled > 0) {
    LD_RETURN_IF_ERROR(tx.Commit());
    return state;
  } else {
    // Every job is done: the run's end, checked as an orchestrated run's is.
    nlohmann::json j = nlohmann::json::parse(run.Get(0, 1), nullptr, false);
    if (j.is_discarded()) return Status::Runtimef("run \"{}\": spec is not JSON", run_id);
    LD_ASSIGN_OR_RETURN(RunSpec spec, RunSpec::FromJson(j));
    Status intact = CheckRunOwnsSchema(conn, spec);
    if (intact.ok() && spec.hooks.unsafe_commit_every == 0) intact = CheckRowsMatchJobs(conn, spec);
    state = intact.ok() ? RunState::kDone : RunState::kFailed;
    error = intact.ok() ? "" : intact.message();
  }
  LD_RETURN_IF_ERROR(SetRunState(conn, run_id, state, error));
  LD_RETURN_IF_ERROR(tx.Commit());
  return state;
}

WorkerOutcome RunDistributedWorker(const std::string& conninfo, const std::string& run_id, std::string worker,
                                   Reporter& reporter) {
  if (worker.empty()) worker = UniqueWorkerId();
  auto fail = [&](const Status& s) {
    return WorkerOutcome{static_cast<int>(s.exit_code()), fmt::format("worker {}: {}", worker, s.message())};
  };
  auto control = pg::Connection::Open(conninfo, "ledgerdiff worker " + worker);
  if (!control.ok()) return fail(control.status());
  if (Status known = RequireRun(**control, run_id); !known.ok()) return fail(known);
  // A job table made by an older release learns the columns and tables this one uses.
  if (Status current = EnsureControlSchema(**control); !current.ok()) return fail(current);
  auto spec = LoadRun(**control, run_id);
  if (!spec.ok()) return fail(spec.status());
  reporter.Note(fmt::format("worker {} joins run {} (schema \"{}\", ledgers {})", worker, run_id, spec->plan.schema,
                            spec->plan.range.str()));

  // The lease keeper: requeues jobs of dead or frozen workers anywhere, settles the run. Its
  // control session, ended by the server, is reopened with backoff (ingest/worker.h).
  std::atomic<bool> stop{false};
  std::thread keeper([&] {
    auto pause = std::chrono::milliseconds(500);
    while (!stop.load()) {
      if (!(*control)->Healthy()) {
        auto reopened = pg::Connection::Open(conninfo, "ledgerdiff worker " + worker);
        if (!reopened.ok()) {
          std::this_thread::sleep_for(pause);
          pause = std::min(pause * 2, std::chrono::milliseconds(5000));
          continue;
        }
        *control = std::move(reopened).value();
        pause = std::chrono::milliseconds(500);
      }
      auto lost = RequeueLost(**control, *spec, std::nullopt, "");
      if (lost.ok()) {
        for (const auto& j : *lost)
          reporter.Note(fmt::format("job {} [{}] of {} lost: {}; {}", j.job_id, j.range.str(), j.worker, j.error,
                                    j.state == JobState::kFailed ? "out of retries" : "requeued"));
      }
      (void)SettleRun(**control, run_id);  // a job out of retries stops every worker's claims
      std::this_thread::sleep_for(pause);
    }
  });
  WorkerOptions wo;
  wo.conninfo = conninfo;
  wo.run_id = run_id;
  wo.worker = worker;
  const int rc = RunWorker(wo);
  stop = true;
  keeper.join();
  if (rc != 0) return {rc, ""};  // RunWorker printed why
  if (!(*control)->Healthy()) {
    auto c = pg::Connection::Open(conninfo, "ledgerdiff worker " + worker);
    if (!c.ok()) return fail(c.status());
    *control = std::move(c).value();
  }
  auto state = SettleRun(**control, run_id);
  if (!state.ok()) return fail(state.status());
  if (*state == RunState::kDone) return {0, ""};
  if (*state == RunState::kRunning) return fail(Status::Runtimef("run {} still has unfinished jobs", run_id));
  auto row = FindRun(**control, run_id);
  return {1, NotDoneMessage(run_id, *state, row.ok() && *row ? (*row)->error : "")};
}

Result<CancelReport> CancelRun(pg::Connection& conn, const std::string& run_id) {
  LD_RETURN_IF_ERROR(RequireRun(conn, run_id));
  LD_RETURN_IF_ERROR(EnsureControlSchema(conn));
  LD_ASSIGN_OR_RETURN(std::optional<RunRow> row, FindRun(conn, run_id));
  if (!row) return Status::Usagef("no such run \"{}\" in this database's job table", run_id);
  CancelReport report;
  report.run_id = run_id;
  report.schema = row->schema;
  report.mode = row->mode;
  // Under the schema guard: no run is registered or resumed on the schema meanwhile.
  LD_RETURN_IF_ERROR(WithSchemaGuard(conn, row->schema, [&]() -> Status {
    LD_ASSIGN_OR_RETURN(auto tx, pg::Transaction::Begin(conn));
    LD_ASSIGN_OR_RETURN(pg::Rows run,
                        conn.Exec(fmt::format("SELECT state, coalesce(error, '') FROM {} WHERE run_id = $1 FOR UPDATE",
                                              ControlTable("runs")),
                                  {run_id}));
    if (run.size() != 1) return Status::Usagef("no such run \"{}\" in this database's job table", run_id);
    const std::string error(run.Get(0, 1));
    LD_ASSIGN_OR_RETURN(const RunState state, StoredRunState(run.Get(0, 0), run_id));
    if (state != RunState::kRunning)
      return Status::Usagef("run {} is already {}{}; there is nothing to cancel", run_id, ToString(state),
                            error.empty() ? "" : " (" + error + ")");
    LD_RETURN_IF_ERROR(SetRunState(conn, run_id, RunState::kCancelled, "cancelled by `ledgerdiff cancel`"));
    // The fence: a running attempt's FinishJob requires its job to be running.
    LD_ASSIGN_OR_RETURN(
        pg::Rows fenced,
        conn.Exec(fmt::format(R"(
WITH old AS (
  SELECT job_id, attempt, state FROM {jobs} WHERE run_id = $1 AND state IN ('pending', 'running') FOR UPDATE
), cancelled AS (
  UPDATE {jobs} j SET state = 'cancelled', finished_at = now(), error = 'run cancelled'
  FROM old WHERE j.run_id = $1 AND j.job_id = old.job_id
), logged AS (
  UPDATE {attempts} a SET outcome = 'cancelled', finished_at = now(), error = 'run cancelled'
  FROM old WHERE old.state = 'running' AND a.run_id = $1 AND a.job_id = old.job_id AND a.attempt = old.attempt
)
SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'running') FROM old)",
                              fmt::arg("jobs", ControlTable("jobs")), fmt::arg("attempts", ControlTable("attempts"))),
                  {run_id}));
    report.pending = static_cast<uint32_t>(fenced.GetInt(0, 0));
    report.running = static_cast<uint32_t>(fenced.GetInt(0, 1));
    LD_ASSIGN_OR_RETURN(RunCounts counts, CountJobs(conn, run_id));
    report.done = counts.done;
    return tx.Commit();
  }));
  LD_ASSIGN_OR_RETURN(report.schema_mark, SchemaMark(conn, report.schema));
  return report;
}

Result<RunStatus> WaitForRun(pg::Connection& conn, const std::string& run_id, double timeout_s, Reporter& reporter,
                             RunStatus* last_status) {
  const Stopwatch waiting;
  std::string last;
  LD_RETURN_IF_ERROR(RequireRun(conn, run_id));
  LD_RETURN_IF_ERROR(EnsureControlSchema(conn));
  for (;;) {
    LD_ASSIGN_OR_RETURN(RunState state, SettleRun(conn, run_id));
    LD_ASSIGN_OR_RETURN(RunStatus s, GetRunStatus(conn, run_id));
    if (last_status) *last_status = s;
    std::string workers;
    switch (s.liveness) {
      case Liveness::kNeverHadWorker: workers = "no worker has joined yet"; break;
      case Liveness::kNoWorkerAlive:
        workers = fmt::format("{} seen, no worker alive",
                              FormatCountOf(std::max<size_t>(s.workers.size(), s.worker_counts.joined), "worker"));
        break;
      case Liveness::kWorkersReconnecting:
        workers = fmt::format("{} seen, {} reconnecting",
                              FormatCountOf(std::max<size_t>(s.workers.size(), s.worker_counts.joined), "worker"),
                              s.worker_counts.reconnecting);
        break;
      default:
        workers = fmt::format("{} seen", FormatCountOf(s.workers.size(), "worker"));
        if (s.worker_counts.joined > 0) workers += fmt::format(", {} alive", s.worker_counts.alive);
    }
    std::string stale;
    for (const auto& j : s.stale_jobs) stale += fmt::format("; job {} stale (worker {})", j.job_id, j.worker);
    const std::string line = fmt::format(
        "run {}: {} of {} done ({}), {} running, {} pending, {} failed{}; {}{}", run_id, FormatCount(s.counts.done),
        FormatCountOf(s.counts.total(), "job"), FormatCountOf(s.counts.ledgers_done, "ledger"), s.counts.running, s.counts.pending, s.counts.failed,
        s.counts.cancelled ? fmt::format(", {} cancelled", s.counts.cancelled) : "", workers, stale);
    if (line != last) reporter.Note(line);
    last = line;
    if (state != RunState::kRunning) return s;
    const double waited = waiting.Seconds();
    if (timeout_s > 0 && waited >= timeout_s)
      return Status::Runtimef("run {} not finished after {} s: {} pending, {} running", run_id, timeout_s,
                              s.counts.pending, s.counts.running);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

Result<IngestReport> RunWithExternalWorkers(const std::string& conninfo, const IngestOptions& options, double timeout_s,
                                            const std::string& reach_flags, Reporter& reporter) {
  const Stopwatch wall;
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff verify"));
  RunSpec spec;
  if (options.resume_run.empty()) {
    LD_ASSIGN_OR_RETURN(spec, PlanRun(*conn, options));
  } else {
    LD_RETURN_IF_ERROR(EnsureControlSchema(*conn));
    LD_ASSIGN_OR_RETURN(spec, ReopenRun(*conn, options.resume_run, reporter, /*orchestrated=*/false));
  }
  reporter.Note(
      fmt::format("run {} waits for external workers: start `ledgerdiff worker --run {}{}{}` on machines that "
                  "reach this database",
                  spec.run_id, spec.run_id, reach_flags.empty() ? "" : " ", reach_flags));
  auto waited = WaitForRun(*conn, spec.run_id, timeout_s, reporter);
  if (!waited.ok()) {
    // Given up on (a timeout): the run must not stay "running" for workers that join later.
    if (!conn->Healthy() || waited.status().kind() != Status::Kind::kRuntime) return waited.status();
    auto cancelled = CancelRun(*conn, spec.run_id);
    if (!cancelled.ok())
      return Status::Runtimef("{}; the run could not be cancelled ({}): cancel it with `ledgerdiff cancel --run {}`",
                              waited.status().message(), cancelled.status().message(), spec.run_id);
    return Status::Runtime(fmt::format("{}; cancelled the run as `ledgerdiff cancel` does ({} pending and {} running jobs "
                              "fenced: a worker that joins or still runs exits 1)",
                              waited.status().message(), cancelled->pending, cancelled->running));
  }
  RunStatus status = std::move(waited).value();
  IngestReport report;
  report.run_id = spec.run_id;
  report.schema = spec.plan.schema;
  report.range = spec.plan.range;
  report.job_size = spec.plan.job_size;
  report.workers = static_cast<uint32_t>(status.workers.size());
  // SettleRun made the end-of-run checks before the run could be done.
  if (status.state != RunState::kDone) {
    report.error = NotDoneMessage(spec.run_id, status.state, status.error);
    if (status.state == RunState::kFailed)
      report.error += options.keep_database ? ResumeHint(options, spec.run_id, spec.plan.range.str())
                                            : " (continue it with --resume)";
  }
  report.wall_s = wall.Seconds();
  LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(*conn, spec.run_id));
  LD_ASSIGN_OR_RETURN(report.timeline, ListAttempts(*conn, spec.run_id));
  report.jobs = static_cast<uint32_t>(jobs.size());
  report.attempts = static_cast<uint32_t>(report.timeline.size());
  report.ledgers = status.counts.ledgers_done;
  for (const auto& j : jobs) {
    if (j.attempt > 1) ++report.retried_jobs;
    if (j.state == JobState::kFailed) report.failed_jobs.push_back(j);
  }
  LD_ASSIGN_OR_RETURN(report.rows_per_table, CountRowsInRange(*conn, spec.plan.schema, spec.plan.range));
  for (const auto& [table, n] : report.rows_per_table) report.rows += n;
  report.ok = report.error.empty();
  return report;
}

}  // namespace ledgerdiff::ingest
