#include "ingest/worker.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "core/pg.h"
#include "core/process.h"
#include "core/stage_timer.h"
#include "fixtures/ingester.h"
#include "ingest/ingest_command.h"
#include "ingest/job_table.h"
#include "core/concurrency.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff::ingest {

namespace {

// The session settings of a worker's job connection: a frozen worker's transaction is ended by the
// server (its locks released) after 1.5 x the job timeout, so the heartbeat timeout, not the
// server, is what finds a frozen worker (ingest/detector.h), and statements get 10 x.
std::string SessionTimeouts(const RunSpec& spec) {
  const auto ms = static_cast<int64_t>(spec.plan.job_timeout_s * 1000);
  return fmt::format("SET idle_in_transaction_session_timeout = {}; SET statement_timeout = {}", ms * 3 / 2, ms * 10);
}

Result<std::unique_ptr<pg::Connection>> OpenWorkerConnection(const WorkerOptions& o, const RunSpec* spec) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(o.conninfo, "ledgerdiff worker " + o.worker));
  if (spec) LD_RETURN_IF_ERROR(conn->Run(SessionTimeouts(*spec)));
  return conn;
}

// Sends heartbeats for the current job from its own session while the process lives, with the
// stage the worker reports, and refreshes the worker's row in the worker registry
// (`touch_worker`), busy or idle. A frozen process (SIGSTOP) stops them, as it should.
// A session the server ended (pg_terminate_backend, a pooler, a failover, an idle timeout) is
// reopened at once and the beat sent again; a server that stays away is retried with a backoff
// from one period up to kMaxReconnectDelay. SecondsSinceLastBeat() tells the claim loop how long
// the worker has been without a beat.
class HeartbeatThread {
 public:
  static constexpr std::chrono::seconds kMaxReconnectDelay{5};

  HeartbeatThread(const WorkerOptions& o, std::unique_ptr<pg::Connection> conn, double period_s, bool touch_worker)
      : o_(o), conn_(std::move(conn)), period_(period_s), touch_worker_(touch_worker), reconnect_delay_(period_),
        last_beat_ns_(NowNs()),
        beating_(std::chrono::duration<double>(period_s), PeriodicThread::Start::kAfterOnePeriod, [this] { Beat(); }) {}
  void SetJob(std::optional<ClaimedJob> job) {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    stage_ = "claimed";
  }
  // Reports `stage`; with `now`, sends it at once (and waits, at most 5 s, until it is sent).
  void SetStage(const std::string& stage, bool now = false) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stage_ = stage;
    }
    if (now) (void)beating_.TickNow(std::chrono::seconds(5));  // a late beat is the detector's to judge
  }
  // Seconds since a beat last reached the server (since the start before the first).
  double SecondsSinceLastBeat() const { return static_cast<double>(NowNs() - last_beat_ns_.load()) / 1e9; }
  // For the termination handler: stops beating, then requeues the attempt the worker holds, if
  // any, at once and without spending a retry (outcome "interrupted", job_table.h InterruptJob)
  // on the heartbeat's session, so the job does not wait for the job timeout. Returns what it did
  // for the interruption line ("" when the worker held no job).
  std::string StopAndInterrupt(const RunSpec& spec) {
    beating_.Stop();
    std::optional<ClaimedJob> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = job_;
    }
    if (!job) return "";
    reconnect_delay_ = std::chrono::duration<double>(0);
    if (!EnsureSession()) return fmt::format("left job {} to the job timeout (no database session)", job->job_id);
    // The job's own session may hold the job row (its fenced finish) until it commits.
    (void)conn_->Run("SET lock_timeout = '5s'");
    const Status s = InterruptJob(*conn_, spec, *job, fmt::format("worker {} was stopped", o_.worker));
    if (!s.ok()) return fmt::format("left job {} to the job timeout ({})", job->job_id, s.message());
    return fmt::format("requeued job {} (attempt {}) at once", job->job_id, job->attempt);
  }

 private:
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // A usable session: the current one, or a new one when the backoff allows an attempt.
  bool EnsureSession() {
    if (conn_ && conn_->Healthy()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_reconnect_) return false;
    auto reopened = OpenWorkerConnection(o_, nullptr);
    if (reopened.ok()) {
      conn_ = std::move(reopened).value();
      reconnect_delay_ = period_;
      return true;
    }
    next_reconnect_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(reconnect_delay_);
    reconnect_delay_ = std::min<std::chrono::duration<double>>(reconnect_delay_ * 2, kMaxReconnectDelay);
    return false;
  }
  Status Send(const std::optional<ClaimedJob>& job, const std::string& stage) {
    if (job) LD_RETURN_IF_ERROR(Heartbeat(*conn_, o_.run_id, *job, stage).status());
    if (touch_worker_) LD_RETURN_IF_ERROR(TouchWorker(*conn_, o_.run_id, o_.worker));
    return Status::Ok();
  }
  void Beat() {
    std::optional<ClaimedJob> job;
    std::string stage;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = job_;
      stage = stage_;
    }
    if (!EnsureSession()) return;
    Status sent = Send(job, stage);
    // A session the server ended: once more on a new one, in this same beat.
    if (!sent.ok() && !conn_->Healthy() && EnsureSession()) sent = Send(job, stage);
    if (sent.ok()) last_beat_ns_ = NowNs();
  }

  const WorkerOptions& o_;
  std::unique_ptr<pg::Connection> conn_;  // the beating thread's alone (StopAndInterrupt: after Stop)
  const std::chrono::duration<double> period_;
  const bool touch_worker_;
  std::chrono::duration<double> reconnect_delay_;
  std::chrono::steady_clock::time_point next_reconnect_{};
  std::atomic<int64_t> last_beat_ns_;
  std::mutex mu_;  // guards job_ and stage_
  std::optional<ClaimedJob> job_;
  std::string stage_;
  PeriodicThread beating_;  // last: started once the members above exist, stopped before they go
};

// Rows the job's range holds in the run's schema (an external ingester's work, counted on the
// connection that then marks the job done).
Result<int64_t> RowsInJob(pg::Connection& conn, const RunSpec& spec, const ClaimedJob& job) {
  LD_ASSIGN_OR_RETURN(auto counts, CountRowsInRange(conn, spec.plan.schema, job.range));
  int64_t rows = 0;
  for (const auto& [table, n] : counts) rows += static_cast<int64_t>(n);
  return rows;
}

// A worker process as it lives: its job connection (reopened when the server ends its session)
// and whether it is in the worker registry, where how it ends is recorded.
struct WorkerLife {
  explicit WorkerLife(const WorkerOptions& options) : o(options) {}
  const WorkerOptions& o;
  std::unique_ptr<pg::Connection> conn = nullptr;
  bool registered = false;
  // Since when the job session is gone and could not be reopened (none: it is open).
  std::optional<Stopwatch> job_session_lost;

  double lost_job_session_s() const {
    return job_session_lost ? job_session_lost->Seconds() : 0;
  }

  // Records how the worker ends (when registered) and returns its exit code.
  int Finish(int code, const std::string& error) {
    if (registered && conn && conn->Healthy()) (void)RecordWorkerExit(*conn, o.run_id, o.worker, code, error);
    return code;
  }
  // An error that stops the worker: printed on stderr, its exit code the worker's.
  int Fail(const Status& s) {
    fmt::print(stderr, "ledgerdiff worker {}: {}\n", o.worker, s.message());
    return Finish(static_cast<int>(s.exit_code()), s.message());
  }
};

// What every attempt of the worker runs with, fixed once it has started.
struct WorkerJobSetup {
  const RunSpec& spec;
  HeartbeatThread& heartbeat;
  fixtures::IngestJobOptions ingest;  // the built-in ingester's, without the per-job hooks
  std::string log_dir;                // an external ingester's per-job logs
};

// Opens the job connection and reads the run's plan; the connection then gets the plan's
// session timeouts.
Result<RunSpec> OpenWorkerRun(WorkerLife& w) {
  LD_ASSIGN_OR_RETURN(w.conn, OpenWorkerConnection(w.o, nullptr));
  LD_ASSIGN_OR_RETURN(RunSpec spec, LoadRun(*w.conn, w.o.run_id));
  LD_RETURN_IF_ERROR(w.conn->Run(SessionTimeouts(spec)));
  return spec;
}

// The built-in ingester's options from the plan: its content, the planted bug, unsafe commits.
Result<fixtures::IngestJobOptions> BuiltInIngestOptions(const RunSpec& spec) {
  fixtures::IngestJobOptions ingest;
  ingest.generator = {spec.plan.seed, spec.plan.density};
  if (!spec.hooks.bug.empty()) {
    LD_ASSIGN_OR_RETURN(ingest.bug, fixtures::ParseBugInjection(spec.hooks.bug));
  }
  ingest.unsafe_commit_every = spec.hooks.unsafe_commit_every;
  return ingest;
}

// An external ingester's output goes to per-job logs here, never to our stdout/stderr.
Result<std::string> WorkerLogDir(const WorkerOptions& o, const RunSpec& spec) {
  if (spec.plan.ingest_cmd.empty() || !o.log_dir.empty()) return o.log_dir;
  return RunLogDir(o.run_id);
}

// A new job session for one the server ended; the old one stays (unhealthy) when it fails.
Status ReopenWorkerConnection(WorkerLife& w, const RunSpec& spec) {
  if (!w.job_session_lost) w.job_session_lost.emplace();
  LD_ASSIGN_OR_RETURN(w.conn, OpenWorkerConnection(w.o, &spec));
  w.job_session_lost.reset();
  return Status::Ok();
}

// Nothing claimable now: true when the run is finished or stopped, false when the worker waits
// for backoff or other workers.
Result<bool> WorkerRunIsOver(WorkerLife& w) {
  LD_ASSIGN_OR_RETURN(RunCounts counts, CountJobs(*w.conn, w.o.run_id));
  if (counts.pending == 0 && counts.running == 0) return true;
  auto state = w.conn->Exec(fmt::format("SELECT state FROM {} WHERE run_id = $1", pg::Qualified(kControlSchema, "runs")),
                            {w.o.run_id});
  return state.ok() && state->size() == 1 && ParseRunState(state->Get(0, 0)) != RunState::kRunning;
}

// Test hook: the crash points at stage "start" of this attempt. An abort dies at once; a fail
// fails the attempt before anything is written.
Status InjectedStartFailure(const RunSpec& spec, const ClaimedJob& job) {
  Status result;
  for (const auto& cp : spec.hooks.crash_points) {
    if (cp.job_id == job.job_id && cp.attempt == job.attempt && cp.stage == kStartStage) {
      switch (cp.action) {
        case ingest::CrashAction::kAbort: std::abort();
        case ingest::CrashAction::kFail:
          result = Status::Runtimef("injected failure of job {} attempt {}", job.job_id, job.attempt);
          break;
      }
    }
  }
  return result;
}

// Test hook: a chaos "crash": die inside the open data transaction, as a segfault would.
void AbortAtCrashPoint(const RunSpec& spec, const ClaimedJob& job, const std::string& stage) {
  for (const auto& cp : spec.hooks.crash_points) {
    if (cp.job_id == job.job_id && cp.attempt == job.attempt && cp.stage == stage &&
        cp.action == ingest::CrashAction::kAbort)
      std::abort();
  }
}

// Test hook: the hold points of this attempt at `stage`: the stage "hold:STAGE" is reported at
// once, then the worker sleeps for the point's seconds.
void HoldAtHoldPoints(const WorkerJobSetup& setup, const ClaimedJob& job, const std::string& stage) {
  for (const auto& hp : setup.spec.hooks.hold_points) {
    if (hp.job_id == job.job_id && hp.attempt == job.attempt && hp.stage == stage) {
      setup.heartbeat.SetStage("hold:" + stage, /*now=*/true);
      std::this_thread::sleep_for(std::chrono::duration<double>(hp.seconds));
    }
  }
}

// The built-in ingester's attempt: done by the fenced finish inside its data transaction.
Status RunBuiltInAttempt(WorkerLife& w, const WorkerJobSetup& setup, const ClaimedJob& job) {
  fixtures::IngestJobOptions ingest = setup.ingest;
  ingest.before_commit = [&](pg::Connection& c, const fixtures::JobStats& written) {
    return FinishJob(c, w.o.run_id, job, static_cast<int64_t>(written.rows));
  };
  ingest.on_stage = [&](const std::string& stage) {
    AbortAtCrashPoint(setup.spec, job, stage);
    HoldAtHoldPoints(setup, job, stage);
    setup.heartbeat.SetStage(stage);
  };
  return fixtures::IngestJob(*w.conn, setup.spec.plan.schema, job.range, ingest).status();
}

// An external ingester's attempt: its command, then the rows it wrote counted and the job
// finished on the job connection.
Status RunExternalAttempt(WorkerLife& w, const WorkerJobSetup& setup, const ClaimedJob& job) {
  LD_RETURN_IF_ERROR(RunIngestCommand(setup.spec.plan.ingest_cmd, {w.o.conninfo, setup.spec.plan.schema, w.o.worker, job.job_id,
                                                              job.attempt, job.range, setup.log_dir}));
  LD_ASSIGN_OR_RETURN(int64_t rows, RowsInJob(*w.conn, setup.spec, job));
  return FinishJob(*w.conn, w.o.run_id, job, rows);
}

Status RunWorkerAttempt(WorkerLife& w, const WorkerJobSetup& setup, const ClaimedJob& job) {
  // An injected failure: nothing written.
  LD_RETURN_IF_ERROR(InjectedStartFailure(setup.spec, job));
  if (setup.spec.plan.ingest_cmd.empty()) return RunBuiltInAttempt(w, setup, job);
  return RunExternalAttempt(w, setup, job);
}

// Fails the attempt in the job table, on a new connection when the job's session broke.
// A server that stays away: the attempt is left to the keepers (its backend is gone: lost_connection)
// and the claim loop reconnects within its bound.
void RecordFailedAttempt(WorkerLife& w, const RunSpec& spec, const ClaimedJob& job, const Status& result) {
  // A broken job session is what failed the attempt (e.g. it was terminated), not the job.
  const Detector detector = w.conn->Healthy() ? Detector::kAttemptError : Detector::kLostConnection;
  if (!w.conn->Healthy() && !ReopenWorkerConnection(w, spec).ok()) return;
  // Fenced: a no-op when the attempt was already taken from us.
  (void)FailJob(*w.conn, spec, job, result.message(), detector);
}

// How long the worker may be without a session before it gives up (exit 3): the server stays
// away, it is not a glitch. Until then it reconnects with backoff and claims nothing.
double SessionLossBoundS(const RunSpec& spec) { return std::max(kMinSessionLossBoundS, 2 * spec.plan.job_timeout_s); }

// Whether the worker may claim now. A worker without a heartbeat for two beats claims nothing
// (a job it took would be requeued as lost by any keeper); past the bound it gives up.
Status ReadyToClaim(WorkerLife& w, const WorkerJobSetup& setup) {
  const double period = setup.spec.plan.heartbeat_s();
  const double bound = SessionLossBoundS(setup.spec);
  auto without_beat = [&] { return setup.heartbeat.SecondsSinceLastBeat(); };
  auto backoff = period;
  while (!w.conn->Healthy() || without_beat() > 2 * period + 0.5) {
    if (TerminationInProgress()) return Status::Ok();
    if (!w.conn->Healthy()) (void)ReopenWorkerConnection(w, setup.spec);
    if (w.conn->Healthy() && without_beat() <= 2 * period + 0.5) break;
    const double lost = std::max(without_beat(), w.lost_job_session_s());
    if (lost > bound)
      return Status::Runtimef("lost its database sessions for {:.0f} s (the server did not come back within {:.0f} s)",
                              lost, bound);
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 5.0);
  }
  return Status::Ok();
}

// Claims and runs jobs until the run has none left or stops, or the process is being stopped;
// returns the exit code.
int WorkerClaimLoop(WorkerLife& w, const WorkerJobSetup& setup) {
  const RunSpec& spec = setup.spec;
  int idle_polls = 0;
  for (;;) {
    if (TerminationInProgress()) return 0;  // the handler ends the process (RunWorker parks)
    if (Status s = ReadyToClaim(w, setup); !s.ok()) return w.Fail(s);
    if (TerminationInProgress()) return 0;
    auto claimed = ClaimJob(*w.conn, w.o.run_id, w.o.worker, getpid(), w.o.slot);
    if (!claimed.ok()) {
      if (!w.conn->Healthy()) continue;  // the session was terminated: reconnect and retry
      return w.Fail(claimed.status());
    }
    if (!claimed->has_value()) {
      auto over = WorkerRunIsOver(w);
      if (!over.ok()) {
        if (!w.conn->Healthy()) continue;
        return w.Fail(over.status());
      }
      if (*over) return w.Finish(0, "");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50 * ++idle_polls, 300)));
      continue;
    }
    idle_polls = 0;
    const ClaimedJob job = **claimed;
    setup.heartbeat.SetJob(job);
    const Status result = RunWorkerAttempt(w, setup, job);
    if (TerminationInProgress()) return 0;  // the attempt is the handler's to requeue
    setup.heartbeat.SetJob(std::nullopt);
    if (!result.ok()) RecordFailedAttempt(w, spec, job, result);
  }
}

}  // namespace

int RunWorker(const WorkerOptions& o) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // injected crashes leave no core files behind
  // kSessionsPerWorker: its jobs and its heartbeat (EmbeddedMaxConnectionsFor and the
  // orchestrator's connection budget count on it).
  WorkerLife w(o);
  auto spec_r = OpenWorkerRun(w);
  if (!spec_r.ok()) return w.Fail(spec_r.status());
  const RunSpec spec = std::move(spec_r).value();
  auto hb_conn = OpenWorkerConnection(o, nullptr);
  if (!hb_conn.ok()) return w.Fail(hb_conn.status());
  // Best effort: a job table made by an older release has no worker registry.
  w.registered = RegisterWorker(*w.conn, o.run_id, o.worker, getpid(), o.slot).ok();
  HeartbeatThread heartbeat(o, std::move(hb_conn).value(), spec.plan.heartbeat_s(), w.registered);
  // Stopped (SIGTERM/SIGINT/SIGHUP), the worker hands its job back at once (InterruptJob).
  const ScopedCleanup hand_back([&heartbeat, &spec] { return heartbeat.StopAndInterrupt(spec); });

  auto ingest = BuiltInIngestOptions(spec);
  if (!ingest.ok()) return w.Fail(ingest.status());
  auto log_dir = WorkerLogDir(o, spec);
  if (!log_dir.ok()) return w.Fail(log_dir.status());
  const WorkerJobSetup setup{spec, heartbeat, std::move(ingest).value(), std::move(log_dir).value()};
  const int code = WorkerClaimLoop(w, setup);
  // Being stopped: the handler still uses the heartbeat (hand_back) and then ends the process.
  AwaitTerminationIfInProgress();
  return code;
}

}  // namespace ledgerdiff::ingest
