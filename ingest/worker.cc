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
#include "fixtures/ingester.h"
#include "ingest/ingest_command.h"
#include "ingest/job_table.h"
#include "core/concurrency.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff::ingest {

namespace {

// Sends heartbeats for the current job from its own connection while the process lives, with
// the stage the worker reports. A frozen process (SIGSTOP) stops them, as it should.
// It also refreshes the worker's row in the worker registry (`touch_worker`), busy or idle.
class HeartbeatThread {
 public:
  HeartbeatThread(std::unique_ptr<pg::Connection> conn, std::string run_id, double period_s, std::string worker,
                  bool touch_worker)
      : conn_(std::move(conn)), run_id_(std::move(run_id)), worker_(std::move(worker)), touch_worker_(touch_worker),
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

 private:
  void Beat() {
    std::optional<ClaimedJob> job;
    std::string stage;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = job_;
      stage = stage_;
    }
    if (job) (void)Heartbeat(*conn_, run_id_, *job, stage);
    if (touch_worker_) (void)TouchWorker(*conn_, run_id_, worker_);
  }
  std::unique_ptr<pg::Connection> conn_;
  const std::string run_id_;
  const std::string worker_;
  const bool touch_worker_;
  std::mutex mu_;  // guards job_ and stage_
  std::optional<ClaimedJob> job_;
  std::string stage_;
  PeriodicThread beating_;  // last: started once the members above exist, stopped before they go
};

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
  const WorkerOptions& o;
  std::unique_ptr<pg::Connection> conn = nullptr;
  bool registered = false;

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

Status ReopenWorkerConnection(WorkerLife& w, const RunSpec& spec) {
  LD_ASSIGN_OR_RETURN(w.conn, OpenWorkerConnection(w.o, &spec));
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
Status RecordFailedAttempt(WorkerLife& w, const RunSpec& spec, const ClaimedJob& job, const Status& result) {
  // A broken job session is what failed the attempt (e.g. it was terminated), not the job.
  const Detector detector = w.conn->Healthy() ? Detector::kAttemptError : Detector::kLostConnection;
  if (!w.conn->Healthy()) LD_RETURN_IF_ERROR(ReopenWorkerConnection(w, spec));
  // Fenced: a no-op when the attempt was already taken from us.
  (void)FailJob(*w.conn, spec, job, result.message(), detector);
  return Status::Ok();
}

// Claims and runs jobs until the run has none left or stops; returns the exit code.
int WorkerClaimLoop(WorkerLife& w, const WorkerJobSetup& setup) {
  const RunSpec& spec = setup.spec;
  int idle_polls = 0;
  for (;;) {
    if (!w.conn->Healthy()) {
      if (Status s = ReopenWorkerConnection(w, spec); !s.ok()) return w.Fail(s);
    }
    auto claimed = ClaimJob(*w.conn, w.o.run_id, w.o.worker, getpid(), w.o.slot);
    if (!claimed.ok()) {
      if (!w.conn->Healthy()) continue;  // the session was terminated: reconnect and retry
      return w.Fail(claimed.status());
    }
    if (!claimed->has_value()) {
      auto over = WorkerRunIsOver(w);
      if (!over.ok()) return w.Fail(over.status());
      if (*over) return w.Finish(0, "");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50 * ++idle_polls, 300)));
      continue;
    }
    idle_polls = 0;
    const ClaimedJob job = **claimed;
    setup.heartbeat.SetJob(job);
    const Status result = RunWorkerAttempt(w, setup, job);
    setup.heartbeat.SetJob(std::nullopt);
    if (!result.ok()) {
      if (Status s = RecordFailedAttempt(w, spec, job, result); !s.ok()) return w.Fail(s);
    }
  }
}

}  // namespace

int RunWorker(const WorkerOptions& o) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // injected crashes leave no core files behind
  // kSessionsPerWorker: its jobs and its heartbeat (EmbeddedMaxConnectionsFor and the
  // orchestrator's connection budget count on it).
  WorkerLife w{o};
  auto spec_r = OpenWorkerRun(w);
  if (!spec_r.ok()) return w.Fail(spec_r.status());
  const RunSpec spec = std::move(spec_r).value();
  auto hb_conn = OpenWorkerConnection(o, nullptr);
  if (!hb_conn.ok()) return w.Fail(hb_conn.status());
  // Best effort: a job table made by an older release has no worker registry.
  w.registered = RegisterWorker(*w.conn, o.run_id, o.worker, getpid(), o.slot).ok();
  HeartbeatThread heartbeat(std::move(hb_conn).value(), o.run_id, spec.plan.heartbeat_s(), o.worker, w.registered);

  auto ingest = BuiltInIngestOptions(spec);
  if (!ingest.ok()) return w.Fail(ingest.status());
  auto log_dir = WorkerLogDir(o, spec);
  if (!log_dir.ok()) return w.Fail(log_dir.status());
  const WorkerJobSetup setup{spec, heartbeat, std::move(ingest).value(), std::move(log_dir).value()};
  return WorkerClaimLoop(w, setup);
}

}  // namespace ledgerdiff::ingest
