#include "ingest/orchestrator.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "core/database.h"
#include "core/process.h"
#include "core/stage_timer.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "fixtures/schema.h"
#include "core/history_tables.h"
#include "ingest/ingest_command.h"
#include "ingest/schema_guard.h"
#include "ingest/worker.h"

namespace ledgerdiff::ingest {

namespace {

using Clock = std::chrono::steady_clock;

// A live worker as the orchestrator sees it.
struct WorkerProcess {
  int slot = 0;       // lane 1..N
  std::string name;   // "w2@host:pid:start", "w2.1@..." for its first replacement: unique per run
  int pid = 0;        // leader of its process group
};

// Owns the worker processes; kills them all when it goes away (or on Ctrl-C).
class WorkerPool {
 public:
  WorkerPool(std::string binary, std::string conninfo, std::string run_id, std::string log_dir)
      : binary_(std::move(binary)), conninfo_(std::move(conninfo)), run_id_(std::move(run_id)),
        log_dir_(std::move(log_dir)) {
    cleanup_ = RegisterDescribedCleanup([this] {
      const size_t n = KillAll(SIGKILL);
      return n ? fmt::format("stopped {} worker{} of run {}", n, n == 1 ? "" : "s", run_id_) : std::string();
    });
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    auto start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    instance_ = fmt::format("{}:{}:{:x}", host, getpid(), start_ms);
  }
  ~WorkerPool() {
    KillAll(SIGKILL);
    UnregisterCleanup(cleanup_);
  }

  Status Start(int slot) {
    int gen = generation_[slot]++;
    // INVARIANT: names are unique per orchestrator instance (host:pid:start), so a resumed
    // orchestrator never mistakes a job of a previous instance's worker for one of its own.
    std::string name = gen == 0 ? fmt::format("w{}@{}", slot, instance_) : fmt::format("w{}.{}@{}", slot, gen, instance_);
    SpawnOptions so;
    so.new_process_group = true;
    so.parent_death_signal = SIGKILL;  // workers die with the orchestrator; the job table survives
    so.env[kWorkerDbEnv] = conninfo_;
    if (!log_dir_.empty()) so.env[kWorkerLogDirEnv] = log_dir_;
    LD_ASSIGN_OR_RETURN(pid_t pid,
                        Spawn({binary_, "_worker", "--run", run_id_, "--worker", name, "--slot", std::to_string(slot)}, so));
    std::lock_guard<std::recursive_mutex> lock(mu_);
    workers_.push_back({slot, name, pid});
    return Status::Ok();
  }

  // Reaps exited workers; returns them with how they ended.
  std::vector<std::pair<WorkerProcess, ExitInfo>> Reap() {
    std::vector<std::pair<WorkerProcess, ExitInfo>> out;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      int ws = 0;
      if (waitpid(it->pid, &ws, WNOHANG) == it->pid) {
        out.emplace_back(*it, DecodeWaitStatus(ws));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  void Kill(int pid, int sig) { kill(-pid, sig); }

  // Waits up to `timeout` for the worker `pid` to exit, without reaping it (Reap does): true
  // when it has exited.
  bool AwaitExit(int pid, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;  // gone
      if (info.si_pid == pid) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // Returns how many workers it signalled.
  size_t KillAll(int sig) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    const size_t n = workers_.size();
    for (auto& w : workers_) {
      kill(-w.pid, sig);
      if (sig == SIGKILL) {
        waitpid(w.pid, nullptr, 0);
      }
    }
    if (sig == SIGKILL) workers_.clear();
    return n;
  }

  // Asks workers to stop (SIGTERM, also resumes frozen ones), then SIGKILL after `grace`.
  void StopAll(std::chrono::milliseconds grace) {
    std::unique_lock<std::recursive_mutex> lock(mu_);
    for (auto& w : workers_) {
      kill(-w.pid, SIGTERM);
      kill(-w.pid, SIGCONT);
    }
    lock.unlock();
    auto deadline = Clock::now() + grace;
    while (!empty() && Clock::now() < deadline) {
      Reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    KillAll(SIGKILL);
  }

  bool empty() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return workers_.empty();
  }
  // "host:pid:start": this orchestrator instance, the suffix of its workers' names.
  const std::string& instance() const { return instance_; }
  const WorkerProcess* Find(const std::string& name) const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (auto& w : workers_)
      if (w.name == name) return &w;
    return nullptr;
  }

 private:
  std::string binary_;
  std::string conninfo_;
  std::string run_id_;
  std::string log_dir_;
  // Guards workers_: the Ctrl-C cleanup (KillAll on the signal thread, core/process.h) reads it
  // while the orchestrator's loop changes it.
  mutable std::recursive_mutex mu_;
  std::vector<WorkerProcess> workers_;
  std::map<int, int> generation_;
  std::string instance_;
  int cleanup_ = 0;
};

}  // namespace

Status ValidateIngestOptions(const IngestOptions& o) {
  LD_RETURN_IF_ERROR(o.plan.Validate(/*check_schema=*/o.resume_run.empty()));
  LD_RETURN_IF_ERROR(o.hooks.Validate(o.plan));
  if (!o.run_id.empty()) LD_RETURN_IF_ERROR(ValidateRunId(o.run_id));
  if (o.resume_run.empty()) LD_RETURN_IF_ERROR(ValidateTargetSchema(o.plan.schema, o.force));
  return Status::Ok();
}

Result<std::map<std::string, uint64_t>> CountRowsInRange(pg::Connection& conn, const std::string& schema,
                                                         const LedgerRange& range) {
  std::string sql;
  for (const auto& t : fixtures::HistoryTables()) {
    const std::optional<HistoryTable> mapping = FindHistoryTable(t);
    if (!mapping) return Status::Runtimef("{} is not a Horizon history table", t);
    if (!sql.empty()) sql += " UNION ALL ";
    sql += fmt::format("SELECT {}, count(*) FROM {} WHERE {}", pg::QuoteLiteral(t), pg::Qualified(schema, t),
                       LedgerRangePredicate(*mapping, range));
  }
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(sql));
  std::map<std::string, uint64_t> out;
  for (int i = 0; i < rows.size(); ++i) out[std::string(rows.Get(i, 0))] = static_cast<uint64_t>(rows.GetInt(i, 1));
  return out;
}

Result<ConnectionBudget> ReadConnectionBudget(pg::Connection& conn, bool external_ingester) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec("SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int, "
                "coalesce((SELECT setting::int FROM pg_settings WHERE name = 'reserved_connections'), 0), "
                "(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int"));
  ConnectionBudget b;
  b.max_connections = static_cast<int>(rows.GetInt(0, 0));
  b.superuser_reserved = static_cast<int>(rows.GetInt(0, 1));
  b.reserved = static_cast<int>(rows.GetInt(0, 2));
  b.in_use = static_cast<int>(rows.GetInt(0, 3));
  b.free = std::max(0, b.max_connections - b.superuser_reserved - b.reserved - b.in_use);
  b.per_worker = kSessionsPerWorker + (external_ingester ? 1 : 0);
  b.fits = b.free / b.per_worker;
  return b;
}

Status CheckConnectionBudget(pg::Connection& conn, uint32_t workers, bool external_ingester, double wait_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    LD_ASSIGN_OR_RETURN(ConnectionBudget b, ReadConnectionBudget(conn, external_ingester));
    const uint64_t needed = static_cast<uint64_t>(workers) * static_cast<uint64_t>(b.per_worker);
    if (needed <= static_cast<uint64_t>(b.free)) return Status::Ok();
    if (Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    const std::string per = external_ingester
                                ? fmt::format("{} per worker: its jobs, its heartbeat and at least one of the ingest "
                                              "command's own",
                                              b.per_worker)
                                : fmt::format("{} per worker: its jobs and its heartbeat", b.per_worker);
    const std::string reserved = b.reserved > 0 ? fmt::format(" - reserved_connections {}", b.reserved) : "";
    return Status::Usagef(
        "--workers {} needs {} connections ({}) but the server has {} free (max_connections {} - "
        "superuser_reserved_connections {}{} - {} in use, this one included); {}",
        workers, needed, per, b.free, b.max_connections, b.superuser_reserved, reserved, b.in_use,
        b.fits > 0 ? fmt::format("at most {} workers fit: use --workers {}, or raise max_connections", b.fits, b.fits)
                   : std::string("no worker fits: close other sessions or raise max_connections"));
  }
}

Result<RunSpec> RegisterRun(pg::Connection& conn, const IngestOptions& options) {
  if (!options.resume_run.empty()) return Status::Usage("RegisterRun: a resumed run is registered already");
  LD_RETURN_IF_ERROR(EnsureControlSchema(conn));
  RunSpec spec;
  spec.plan = options.plan;
  spec.hooks = options.hooks;
  spec.run_id = options.run_id.empty() ? NewRunId() : options.run_id;
  // Checked and changed under the schema guard (schema_guard.h): the run id is free, no
  // orchestrator holds the schema (its run lock; re-entrant: RunIngest holds it already and
  // keeps it for the run's life), and no run of any kind is live on it. Only then is anything
  // dropped, created or re-marked.
  Status registered = WithSchemaGuard(conn, spec.plan.schema, [&]() -> Status {
    LD_ASSIGN_OR_RETURN(std::optional<RunRow> taken, FindRun(conn, spec.run_id));
    if (taken)
      return Status::Usagef("--run-id {}: a run with that id exists already (schema \"{}\", {}); choose another id or "
                            "leave --run-id out",
                            spec.run_id, taken->schema, ToString(taken->state));
    LD_RETURN_IF_ERROR(LockSchemaForRun(conn, spec.plan.schema));
    Status s = [&]() -> Status {
      LD_RETURN_IF_ERROR(CheckNoLiveRun(conn, spec.plan.schema));
      LD_ASSIGN_OR_RETURN(bool fresh,
                          CreateOwnedSchema(conn, spec.plan.schema, spec.run_id,
                                            options.replace_schema ? IfOwned::kReplace : IfOwned::kKeep,
                                            options.force ? IfForeign::kUse : IfForeign::kRefuse));
      LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, spec.plan.schema));
      if (!fresh && state == SchemaState::kOwned)  // an owned schema reused: it is this run's now
        LD_RETURN_IF_ERROR(conn.Run(fmt::format("COMMENT ON SCHEMA {} IS {}", pg::QuoteIdent(spec.plan.schema),
                                                pg::QuoteLiteral(fmt::format("{} run={}", kOwnershipMarkPrefix,
                                                                             spec.run_id)))));
      LD_ASSIGN_OR_RETURN(spec.schema_mark, SchemaMark(conn, spec.plan.schema));
      LD_ASSIGN_OR_RETURN(bool has_tables, fixtures::HasHistorySchema(conn, spec.plan.schema));
      if (!has_tables) LD_RETURN_IF_ERROR(fixtures::CreateHistorySchema(conn, spec.plan.schema));
      return CreateRun(conn, spec, SplitJobs(spec.plan.range, spec.plan.job_size),
                       options.planned ? kModePlanned : kModeOrchestrated);
    }();
    Status unlocked = UnlockSchema(conn, spec.plan.schema);
    LD_RETURN_IF_ERROR(s);
    return unlocked;
  });
  LD_RETURN_IF_ERROR(registered);
  return spec;
}

Result<RunSpec> ReopenRun(pg::Connection& conn, const std::string& run_id, Reporter& reporter, bool orchestrated) {
  LD_ASSIGN_OR_RETURN(RunSpec spec, LoadRun(conn, run_id));
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, spec.plan.schema));
  if (state == SchemaState::kAbsent)
    return Status::Usagef("--resume {}: its schema \"{}\" no longer exists", spec.run_id, spec.plan.schema);
  Status reopened = WithSchemaGuard(conn, spec.plan.schema, [&]() -> Status {
    LD_ASSIGN_OR_RETURN(std::optional<RunRow> row, FindRun(conn, run_id));
    if (row && row->state == RunState::kCancelled)
      return Status::Usagef("--resume {}: the run was cancelled; a cancelled run is never continued (start a new "
                            "one, e.g. with --fresh into schema \"{}\")",
                            spec.run_id, spec.plan.schema);
    // Another run took the schema meanwhile (this one was done or failed then): never two live runs.
    LD_RETURN_IF_ERROR(CheckNoLiveRun(conn, spec.plan.schema, spec.run_id));
    // A killed orchestrator's session may take a moment to go away with its lock.
    if (orchestrated) LD_RETURN_IF_ERROR(LockSchemaForRun(conn, spec.plan.schema, std::max(10.0, spec.plan.job_timeout_s)));
    Status owned = CheckRunOwnsSchema(conn, spec);
    if (!owned.ok()) return Status::Usagef("--resume {}: {}", spec.run_id, owned.message());
    LD_RETURN_IF_ERROR(conn.Exec(fmt::format("UPDATE {} SET state = 'pending', not_before = '-infinity' "
                                             "WHERE run_id = $1 AND state = 'failed'",
                                             pg::Qualified(kControlSchema, "jobs")),
                                 {spec.run_id})
                           .status());
    // The record that the run was resumed (chaos: a restarted orchestrator caught its kill).
    LD_RETURN_IF_ERROR(conn.Exec(fmt::format("UPDATE {} SET resumes = resumes + 1 WHERE run_id = $1",
                                             pg::Qualified(kControlSchema, "runs")),
                                 {spec.run_id})
                           .status());
    return SetRunState(conn, spec.run_id, RunState::kRunning);
  });
  LD_RETURN_IF_ERROR(reopened);
  reporter.Note(fmt::format("resuming run {} into schema \"{}\"", spec.run_id, spec.plan.schema));
  return spec;
}

namespace {

// A restart of a worker lane that is due at `at` (a worker that exited with an error is
// replaced after a backoff, so that a full server is not hammered with connection attempts).
struct Restart {
  int slot;
  Clock::time_point at;
};

}  // namespace

std::string ResumeHint(const IngestOptions& options, const std::string& run_id, const std::string& range) {
  if (!options.keep_database) return fmt::format("; restart with --resume {} or --range {}", run_id, range);
  auto kept = options.keep_database();
  if (!kept.ok())
    return fmt::format("; it cannot be resumed: the embedded database is removed on exit ({}); rerun with --keep-db DIR",
                       kept.status().message());
  return fmt::format("; restart with --resume {} {} or --range {} {} (the embedded cluster is kept in {} for it; remove "
                     "it when done: {})",
                     run_id, kept->reconnect_flags, range, kept->reconnect_flags, kept->dir, kept->remove_command);
}

namespace {

// The content the built-in ingester writes for `spec`; nullopt for an external ingester.
std::optional<fixtures::GeneratorConfig> PlannedContent(const RunSpec& spec) {
  if (!spec.plan.ingest_cmd.empty()) return std::nullopt;
  return fixtures::GeneratorConfig{spec.plan.seed, spec.plan.density};
}

// The report's heading: which run, into which schema, over which range, with how many workers
// and what job size.
IngestReport SupervisedReportHeading(const RunSpec& spec) {
  IngestReport report;
  report.run_id = spec.run_id;
  report.schema = spec.plan.schema;
  report.range = spec.plan.range;
  report.workers = spec.plan.workers;
  report.job_size = spec.plan.job_size;
  return report;
}

// What Supervise's stages share: the run, its workers, the report being filled, and the
// progress and restart bookkeeping of the supervision loop.
struct SupervisedRun {
  SupervisedRun(pg::Connection& conn, const RunSpec& spec, const IngestOptions& options, Reporter& reporter,
                WorkerPool& pool, IngestReport& report)
      : conn(conn), spec(spec), options(options), reporter(reporter), pool(pool), report(report),
        total_ledgers(spec.plan.range.size()), generated(PlannedContent(spec)),
        rows_planned(generated ? fixtures::EstimatedRowCount(*generated, spec.plan.range) : 0) {}

  pg::Connection& conn;
  const RunSpec& spec;
  const IngestOptions& options;
  Reporter& reporter;
  WorkerPool& pool;
  IngestReport& report;

  std::set<uint32_t> reported_done;
  Clock::time_point last_lost_check = Clock::now();
  Stopwatch phase;  // started with the supervision: the progress rate is ledgers done per its seconds
  uint64_t total_ledgers;
  std::optional<uint64_t> ledgers_at_start;
  // What the ETA weighs ledgers by (Progress::work_*): the rows the built-in ingester writes,
  // estimated from the plan (its density); both totals alike, the done jobs' and the range's.
  // An external ingester writes what it finds, which the plan does not describe: ledgers then.
  const std::optional<fixtures::GeneratorConfig> generated;
  const uint64_t rows_planned;
  uint64_t rows_planned_done = 0;  // of the jobs in reported_done
  RunCounts counts;
  uint32_t worker_errors = 0;
  std::vector<Restart> restarts;
};

// How the supervision loop ended.
enum class SupervisedOutcome { kAllJobsFinished, kJobOutOfRetries, kCancelled };

// The run's verdict once its workers are stopped.
struct SupervisedVerdict {
  bool aborted = false;
  std::string integrity_error;  // set when the end-of-run checks fail, or the run was cancelled
};

// A worker that ended: a clean exit means no work was left for it; anything else means its job
// (if any) is lost (caught by its process exit) and the worker is replaced. Each counts in the report.
Status SuperviseWorkerEnded(SupervisedRun& run, const WorkerProcess& w, const ExitInfo& how) {
  bool clean = how.exited && how.code == 0;
  if (clean) return Status::Ok();
  ++run.report.workers_failed;
  double backoff_s = 0;
  if (how.exited) {
    // It could not work (a refused connection, an unreachable database, a broken run): it
    // printed why. Replaced after a backoff, and not forever.
    if (++run.worker_errors > 3 * run.spec.plan.workers)
      return Status::Runtimef("workers keep failing to start (last: {} exited with code {}); see its message above",
                              w.name, how.code);
    backoff_s = std::min(0.2 * std::pow(2.0, run.worker_errors - 1), 3.0);
  }
  std::string why = fmt::format("worker {} died ({})", w.name, how.str());
  LD_ASSIGN_OR_RETURN(auto lost, RequeueLost(run.conn, run.spec, w.name, why, run.pool.instance()));
  for (const auto& j : lost)
    run.reporter.Note(fmt::format("job {} [{}] lost: {}; {}", j.job_id, j.range.str(), why,
                                  j.state == JobState::kFailed ? "out of retries" : "requeued"));
  if (lost.empty()) run.reporter.Note(why);
  LD_ASSIGN_OR_RETURN(run.counts, CountJobs(run.conn, run.spec.run_id));
  if (run.counts.pending + run.counts.running > 0 && run.counts.failed == 0)
    run.restarts.push_back({w.slot, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(backoff_s))});
  return Status::Ok();
}

Status SuperviseEndedWorkers(SupervisedRun& run) {
  for (auto& [w, how] : run.pool.Reap()) LD_RETURN_IF_ERROR(SuperviseWorkerEnded(run, w, how));
  return Status::Ok();
}

// Starts the replacements whose backoff has passed.
Status SuperviseDueRestarts(SupervisedRun& run) {
  for (auto it = run.restarts.begin(); it != run.restarts.end();) {
    if (it->at > Clock::now()) {
      ++it;
      continue;
    }
    LD_RETURN_IF_ERROR(run.pool.Start(it->slot));
    ++run.report.workers_replaced;
    it = run.restarts.erase(it);
  }
  return Status::Ok();
}

// A vanished session of one of our workers (its heartbeat fresh) is ours to judge, not the
// general check's: a worker that died a moment ago and is not reaped yet (its process exit
// caught the job: reaped below) or a live one whose session was terminated (lost
// connection). A dying process is gone before its session (the server sees the socket
// close), so a short wait tells them apart.
Status SuperviseVanishedSessions(SupervisedRun& run) {
  LD_ASSIGN_OR_RETURN(auto running, ListJobs(run.conn, run.spec.run_id));
  for (const auto& j : running) {
    if (j.state != JobState::kRunning || j.session_alive || j.heartbeat_age_s >= run.spec.plan.job_timeout_s) continue;
    if (!j.worker.ends_with("@" + run.pool.instance())) continue;  // not ours: the general check below
    const WorkerProcess* w = run.pool.Find(j.worker);
    if (w && run.pool.AwaitExit(w->pid, std::chrono::milliseconds(50))) continue;  // died: reaped below
    const std::string why = "its database session ended";
    LD_ASSIGN_OR_RETURN(auto lost, RequeueLost(run.conn, run.spec, j.worker, why, run.pool.instance(),
                                               Detector::kLostConnection));
    for (const auto& l : lost)
      run.reporter.Note(fmt::format("job {} [{}] on {} lost: {}; {}", l.job_id, l.range.str(), l.worker, why,
                                    l.state == JobState::kFailed ? "out of retries" : "requeued"));
    if (w) run.pool.Kill(w->pid, SIGKILL);  // reaped next tick
  }
  return Status::Ok();
}

// The general check: jobs of any worker, here or elsewhere, whose heartbeat is too old or whose
// session is gone.
Status SuperviseLostJobs(SupervisedRun& run) {
  LD_ASSIGN_OR_RETURN(auto lost, RequeueLost(run.conn, run.spec, std::nullopt, "", run.pool.instance()));
  for (const auto& j : lost) {
    run.reporter.Note(fmt::format("job {} [{}] on {} lost: {}; {}", j.job_id, j.range.str(), j.worker, j.error,
                                  j.state == JobState::kFailed ? "out of retries" : "requeued"));
    if (const WorkerProcess* w = run.pool.Find(j.worker)) run.pool.Kill(w->pid, SIGKILL);  // reaped next tick
  }
  return Status::Ok();
}

// The running jobs into `p`, and an event per job newly done (unless the progress is live).
Status SuperviseNoteJobs(SupervisedRun& run, Progress& p) {
  LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(run.conn, run.spec.run_id));
  // Each note counts the ledgers done up to its own job: those done before this tick, then
  // the jobs newly done in it one by one (one snapshot: this job list).
  uint64_t done_ledgers = 0;
  for (const auto& j : jobs)
    if (j.state == JobState::kDone && run.reported_done.count(j.job_id)) done_ledgers += j.range.size();
  for (const auto& j : jobs) {
    if (j.state == JobState::kRunning)
      p.workers.push_back(fmt::format("{}: job {} [{}] attempt {}", j.worker, j.job_id, j.range.str(), j.attempt));
    if (j.state == JobState::kDone && run.reported_done.insert(j.job_id).second) {
      done_ledgers += j.range.size();
      if (run.generated) run.rows_planned_done += fixtures::EstimatedRowCount(*run.generated, j.range);
      if (!run.reporter.live())
        run.reporter.Event(fmt::format("job {} [{}] done by {} (attempt {}), {}/{} ledgers", j.job_id, j.range.str(),
                                      j.worker, j.attempt, FormatCount(done_ledgers), FormatCount(run.total_ledgers)));
    }
  }
  return Status::Ok();
}

// Counts the run's jobs (run.counts) and reports the progress.
Status SuperviseProgress(SupervisedRun& run) {
  LD_ASSIGN_OR_RETURN(run.counts, CountJobs(run.conn, run.spec.run_id));
  if (!run.ledgers_at_start) run.ledgers_at_start = run.counts.ledgers_done;
  double elapsed = run.phase.Seconds();
  double rate = elapsed > 0 ? static_cast<double>(run.counts.ledgers_done - *run.ledgers_at_start) / elapsed : 0;
  Progress p;
  p.phase = fmt::format("ingest \"{}\"", run.spec.plan.schema);
  p.done = run.counts.ledgers_done;
  p.total = run.total_ledgers;
  p.rate_per_s = rate;
  bool want_jobs = run.reporter.live() || run.counts.done > run.reported_done.size();
  if (want_jobs) LD_RETURN_IF_ERROR(SuperviseNoteJobs(run, p));
  p.work_done = run.rows_planned_done;
  p.work_total = run.rows_planned;
  run.reporter.Update(p);
  return Status::Ok();
}

// Keeps the workers going until no job is pending or running, a job is out of retries, or the
// run is cancelled.
Result<SupervisedOutcome> SuperviseUntilSettled(SupervisedRun& run) {
  for (;;) {
    // 1. Workers that ended.
    LD_RETURN_IF_ERROR(SuperviseEndedWorkers(run));
    LD_RETURN_IF_ERROR(SuperviseDueRestarts(run));
    // 2. Jobs whose worker froze, or whose session vanished (including workers elsewhere).
    if (Clock::now() - run.last_lost_check > std::chrono::milliseconds(250)) {
      run.last_lost_check = Clock::now();
      LD_RETURN_IF_ERROR(SuperviseVanishedSessions(run));
      LD_RETURN_IF_ERROR(SuperviseEndedWorkers(run));
      LD_RETURN_IF_ERROR(SuperviseLostJobs(run));
    }

    // 3. Progress.
    LD_RETURN_IF_ERROR(SuperviseProgress(run));

    if (run.counts.cancelled > 0) return SupervisedOutcome::kCancelled;  // `ledgerdiff cancel` fenced the run's jobs
    if (run.counts.failed > 0) return SupervisedOutcome::kJobOutOfRetries;
    if (run.counts.pending == 0 && run.counts.running == 0) return SupervisedOutcome::kAllJobsFinished;
    if (run.pool.empty() && run.restarts.empty()) {
      // Every worker exited cleanly but work remains (e.g. all jobs in backoff): restart one.
      LD_RETURN_IF_ERROR(run.pool.Start(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Stops the workers and judges the run: a cancelled run and a run with a job out of retries are
// aborted; a run whose jobs all finished must pass the end-of-run checks.
Result<SupervisedVerdict> SuperviseStopAndJudge(SupervisedRun& run, SupervisedOutcome outcome) {
  SupervisedVerdict verdict;
  switch (outcome) {
    case SupervisedOutcome::kCancelled: {
      verdict.aborted = true;
      run.pool.StopAll(std::chrono::seconds(5));
      LD_ASSIGN_OR_RETURN(std::optional<RunRow> row, FindRun(run.conn, run.spec.run_id));
      verdict.integrity_error =
          fmt::format("run {} was cancelled{}; schema \"{}\" keeps what its done jobs committed", run.spec.run_id,
                      row && !row->error.empty() ? " (" + row->error + ")" : "", run.spec.plan.schema);
      break;
    }
    case SupervisedOutcome::kJobOutOfRetries:
      verdict.aborted = true;
      // Stops every worker's claims at once (the reason is completed below).
      LD_RETURN_IF_ERROR(SetRunState(run.conn, run.spec.run_id, RunState::kFailed, "a job ran out of retries"));
      run.pool.StopAll(std::chrono::seconds(5));
      LD_RETURN_IF_ERROR(RequeueAllRunning(run.conn, run.spec, "stopped: another job ran out of retries"));
      break;
    case SupervisedOutcome::kAllJobsFinished: {
      run.pool.StopAll(std::chrono::seconds(5));
      // The run's end: its schema is still its own and holds exactly what its jobs committed
      // (not checked for the negative control, whose unsafe commits are the point).
      Status intact = CheckRunOwnsSchema(run.conn, run.spec);
      if (intact.ok() && run.spec.hooks.unsafe_commit_every == 0) intact = CheckRowsMatchJobs(run.conn, run.spec);
      if (!intact.ok()) {
        verdict.aborted = true;
        verdict.integrity_error = intact.message();
      }
      break;
    }
  }
  return verdict;
}

// The report's account of the jobs: counts, the attempts' timeline, the ledgers done, the failed
// jobs, the range to restart, and the rows in the range (a failure to count them is the run's
// error only when it has no other).
Status SuperviseTallyJobs(SupervisedRun& run, const SupervisedVerdict& verdict) {
  IngestReport& report = run.report;
  LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(run.conn, run.spec.run_id));
  LD_ASSIGN_OR_RETURN(report.timeline, ListAttempts(run.conn, run.spec.run_id));
  report.jobs = static_cast<uint32_t>(jobs.size());
  report.attempts = static_cast<uint32_t>(report.timeline.size());
  Ledger restart_from = 0, restart_to = 0;
  for (const auto& j : jobs) {
    if (j.attempt > 1) ++report.retried_jobs;
    if (j.state == JobState::kDone) {
      report.ledgers += j.range.size();
    } else {
      if (!restart_from || j.range.from < restart_from) restart_from = j.range.from;
      restart_to = std::max(restart_to, j.range.to);
    }
    if (j.state == JobState::kFailed) report.failed_jobs.push_back(j);
  }
  if (restart_from) report.restart_range = LedgerRange{restart_from, restart_to};
  auto counted = CountRowsInRange(run.conn, run.spec.plan.schema, run.spec.plan.range);
  if (counted.ok()) {
    report.rows_per_table = *counted;
  } else if (verdict.integrity_error.empty()) {
    return counted.status();
  }
  for (auto& [t, n] : report.rows_per_table) report.rows += n;
  return Status::Ok();
}

// The report's ok and error: the integrity error, else for an aborted run the jobs out of
// retries with the resume hint.
void SuperviseReportVerdict(SupervisedRun& run, const SupervisedVerdict& verdict) {
  IngestReport& report = run.report;
  report.ok = !verdict.aborted;
  if (!verdict.integrity_error.empty()) {
    report.error = verdict.integrity_error;
  } else if (verdict.aborted) {
    std::string ranges;
    for (const auto& j : report.failed_jobs) ranges += (ranges.empty() ? "" : ", ") + j.range.str();
    report.error = fmt::format("jobs ran out of retries: {} ({}){}", ranges,
                               report.failed_jobs.empty() ? "" : report.failed_jobs.front().error,
                               ResumeHint(run.options, run.spec.run_id,
                                          report.restart_range ? report.restart_range->str() : run.spec.plan.range.str()));
  }
}

// Keeps the run's workers going until every job is done, a job is out of retries, or the run is
// cancelled; then the end-of-run checks and the report. `conn` holds the schema's run lock.
Result<IngestReport> Supervise(pg::Connection& conn, const std::string& conninfo, const RunSpec& spec,
                               const IngestOptions& options, Reporter& reporter, const Stopwatch& wall) {
  IngestReport report = SupervisedReportHeading(spec);
  if (!spec.plan.ingest_cmd.empty()) {
    LD_ASSIGN_OR_RETURN(report.log_dir, RunLogDir(spec.run_id, options.log_root));
  }
  WorkerPool pool(LedgerdiffExecutable(), conninfo, spec.run_id,
                  report.log_dir);
  for (uint32_t slot = 1; slot <= spec.plan.workers; ++slot) LD_RETURN_IF_ERROR(pool.Start(static_cast<int>(slot)));

  SupervisedRun run(conn, spec, options, reporter, pool, report);
  LD_ASSIGN_OR_RETURN(const SupervisedOutcome outcome, SuperviseUntilSettled(run));
  reporter.Done();
  LD_ASSIGN_OR_RETURN(const SupervisedVerdict verdict, SuperviseStopAndJudge(run, outcome));
  report.wall_s = wall.Seconds();
  // Statistics of the rows just written (not part of the ingest's wall time): a digest that
  // follows estimates its work by rows, not by ledgers.
  if (!verdict.aborted) LD_RETURN_IF_ERROR(AnalyzeOwnedSchema(conn, spec.plan.schema));
  LD_RETURN_IF_ERROR(SuperviseTallyJobs(run, verdict));
  SuperviseReportVerdict(run, verdict);
  // A cancelled run stays cancelled (SetRunState never changes it).
  LD_RETURN_IF_ERROR(SetRunState(conn, spec.run_id, verdict.aborted ? RunState::kFailed : RunState::kDone, report.error));
  return report;
}

}  // namespace

Result<IngestReport> RunIngest(const std::string& conninfo, const IngestOptions& options, Reporter& reporter) {
  LD_RETURN_IF_ERROR(ValidateIngestOptions(options));
  const Stopwatch wall;
  // INVARIANT: this connection holds the schema's run lock (schema_guard.h) until it closes.
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff orchestrator"));
  RunSpec spec;
  if (!options.resume_run.empty()) {
    // Nothing is created for a run that does not exist (not even the control schema).
    LD_ASSIGN_OR_RETURN(SchemaState control, InspectSchema(*conn, kControlSchema));
    if (control == SchemaState::kAbsent)
      return Status::Usagef("--resume {}: no such run in this database (it has no ledgerdiff runs)", options.resume_run);
    LD_RETURN_IF_ERROR(EnsureControlSchema(*conn));
    // The workers come from the stored plan; the budget is checked before anything changes,
    // allowing a killed predecessor's worker sessions a moment to go away.
    LD_ASSIGN_OR_RETURN(RunSpec stored, LoadRun(*conn, options.resume_run));
    LD_RETURN_IF_ERROR(CheckConnectionBudget(*conn, stored.plan.workers, !stored.plan.ingest_cmd.empty(), /*wait_s=*/5));
    LD_ASSIGN_OR_RETURN(spec, ReopenRun(*conn, options.resume_run, reporter, /*orchestrated=*/true));
  } else {
    LD_RETURN_IF_ERROR(CheckConnectionBudget(*conn, options.plan.workers, !options.plan.ingest_cmd.empty()));
    LD_RETURN_IF_ERROR(EnsureControlSchema(*conn));
    LD_RETURN_IF_ERROR(LockSchemaForRun(*conn, options.plan.schema));
    LD_ASSIGN_OR_RETURN(spec, RegisterRun(*conn, options));
  }
  auto report = Supervise(*conn, conninfo, spec, options, reporter, wall);
  if (!report.ok() && conn->Healthy()) {
    // This orchestrator gives up on the run: say so in the job table, so that the run does not
    // hold its schema as a crashed orchestrator's would (it can still be resumed).
    (void)SetRunState(*conn, spec.run_id, RunState::kFailed, "orchestrator stopped: " + report.status().message());
  }
  return report;
}

}  // namespace ledgerdiff::ingest
