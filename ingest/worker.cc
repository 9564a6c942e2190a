#include "ingest/worker.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "core/pg.h"
#include "core/process.h"
#include "fixtures/ingester.h"
#include "ingest/ingest_command.h"
#include "ingest/job_table.h"
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
      : conn_(std::move(conn)), run_id_(std::move(run_id)), period_(period_s), worker_(std::move(worker)),
        touch_worker_(touch_worker) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~HeartbeatThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void SetJob(std::optional<ClaimedJob> job) {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    stage_ = "claimed";
  }
  // Reports `stage`; with `now`, sends it at once (and waits until it is sent).
  void SetStage(const std::string& stage, bool now = false) {
    std::unique_lock<std::mutex> lock(mu_);
    stage_ = stage;
    if (!now) return;
    uint64_t want = ++requested_;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return sent_ >= want || stop_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::duration<double>(period_), [&] { return stop_ || requested_ > sent_; });
      if (stop_) break;
      uint64_t serving = requested_;
      std::optional<ClaimedJob> job = job_;
      std::string stage = stage_;
      lock.unlock();
      if (job) (void)Heartbeat(*conn_, run_id_, *job, stage);
      if (touch_worker_) (void)TouchWorker(*conn_, run_id_, worker_);
      lock.lock();
      sent_ = serving;
      cv_.notify_all();
    }
  }
  std::unique_ptr<pg::Connection> conn_;
  std::string run_id_;
  double period_;
  std::string worker_;
  bool touch_worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<ClaimedJob> job_;
  std::string stage_;
  uint64_t requested_ = 0, sent_ = 0;
  std::thread thread_;
};

// The session settings of a worker's job connection: a frozen worker's transaction is ended by the
// server (its locks released) after 1.5 x the job timeout, so the heartbeat timeout, not the
// server, is what finds a frozen worker (ingest/detector.h), and statements get 10 x.
std::string SessionTimeouts(const RunSpec& spec) {
  const auto ms = static_cast<int64_t>(spec.job_timeout_s * 1000);
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
  LD_ASSIGN_OR_RETURN(auto counts, CountRowsInRange(conn, spec.schema, job.range));
  int64_t rows = 0;
  for (const auto& [table, n] : counts) rows += static_cast<int64_t>(n);
  return rows;
}

}  // namespace

int RunWorker(const WorkerOptions& o) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // injected crashes leave no core files behind
  // kSessionsPerWorker: its jobs and its heartbeat (EmbeddedMaxConnectionsFor and the
  // orchestrator's connection budget count on it).
  std::unique_ptr<pg::Connection> conn;
  bool registered = false;  // in the worker registry: record how it ends
  auto finish = [&](int code, const std::string& error) {
    if (registered && conn && conn->Healthy()) (void)RecordWorkerExit(*conn, o.run_id, o.worker, code, error);
    return code;
  };
  auto fail = [&](const Status& s) {
    fmt::print(stderr, "ledgerdiff worker {}: {}\n", o.worker, s.message());
    return finish(static_cast<int>(s.exit_code()), s.message());
  };
  {
    auto c = OpenWorkerConnection(o, nullptr);
    if (!c.ok()) return fail(c.status());
    conn = std::move(c).value();
  }
  auto spec_r = LoadRun(*conn, o.run_id);
  if (!spec_r.ok()) return fail(spec_r.status());
  const RunSpec spec = std::move(spec_r).value();
  {
    Status timeouts = conn->Run(SessionTimeouts(spec));
    if (!timeouts.ok()) return fail(timeouts);
  }
  auto hb_conn = OpenWorkerConnection(o, nullptr);
  if (!hb_conn.ok()) return fail(hb_conn.status());
  // Best effort: a job table made by an older release has no worker registry.
  registered = RegisterWorker(*conn, o.run_id, o.worker, getpid(), o.slot).ok();
  HeartbeatThread heartbeat(std::move(hb_conn).value(), o.run_id, spec.heartbeat_s(), o.worker, registered);

  fixtures::IngestJobOptions ingest;
  {
    auto density = fixtures::ParseDensity(spec.density);
    if (!density.ok()) return fail(density.status());
    ingest.generator = {spec.seed, *density};
    if (!spec.bug.empty()) {
      auto bug = fixtures::ParseBugInjection(spec.bug);
      if (!bug.ok()) return fail(bug.status());
      ingest.bug = *bug;
    }
    ingest.unsafe_commit_every = spec.unsafe_commit_every;
  }

  // An external ingester's output goes to per-job logs here, never to our stdout/stderr.
  std::string log_dir = o.log_dir;
  if (!spec.ingest_cmd.empty() && log_dir.empty()) {
    auto dir = RunLogDir(o.run_id);
    if (!dir.ok()) return fail(dir.status());
    log_dir = *dir;
  }

  int idle_polls = 0;
  for (;;) {
    if (!conn->Healthy()) {
      auto c = OpenWorkerConnection(o, &spec);
      if (!c.ok()) return fail(c.status());
      conn = std::move(c).value();
    }
    auto claimed = ClaimJob(*conn, o.run_id, o.worker, getpid(), o.slot);
    if (!claimed.ok()) {
      if (!conn->Healthy()) continue;  // the session was terminated: reconnect and retry
      return fail(claimed.status());
    }
    if (!claimed->has_value()) {
      // Nothing claimable now: finished, stopped, or waiting for backoff / other workers.
      auto counts = CountJobs(*conn, o.run_id);
      if (!counts.ok()) return fail(counts.status());
      if (counts->pending == 0 && counts->running == 0) return finish(0, "");
      auto state = conn->Exec(fmt::format("SELECT state FROM {} WHERE run_id = $1", pg::Qualified(kControlSchema, "runs")),
                              {o.run_id});
      if (state.ok() && state->size() == 1 && state->Get(0, 0) != "running") return finish(0, "");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50 * ++idle_polls, 300)));
      continue;
    }
    idle_polls = 0;
    const ClaimedJob job = **claimed;
    heartbeat.SetJob(job);

    Status result;
    for (const auto& cp : spec.crash_points) {
      if (cp.job_id == job.job_id && cp.attempt == job.attempt && cp.stage == "start") {
        switch (cp.action) {
          case ingest::CrashAction::kAbort: std::abort();
          case ingest::CrashAction::kFail:
            result = Status::Runtimef("injected failure of job {} attempt {}", job.job_id, job.attempt);
            break;
        }
      }
    }
    if (!result.ok()) {
      // An injected failure: nothing written.
    } else if (spec.ingest_cmd.empty()) {
      ingest.before_commit = [&](pg::Connection& c, const fixtures::JobStats& written) {
        return FinishJob(c, o.run_id, job, static_cast<int64_t>(written.rows));
      };
      ingest.on_stage = [&](const std::string& stage) {
        for (const auto& cp : spec.crash_points) {
          // A chaos "crash": die inside the open data transaction, as a segfault would.
          if (cp.job_id == job.job_id && cp.attempt == job.attempt && cp.stage == stage &&
              cp.action == ingest::CrashAction::kAbort)
            std::abort();
        }
        for (const auto& hp : spec.hold_points) {
          if (hp.job_id == job.job_id && hp.attempt == job.attempt && hp.stage == stage) {
            heartbeat.SetStage("hold:" + stage, /*now=*/true);
            std::this_thread::sleep_for(std::chrono::duration<double>(hp.seconds));
          }
        }
        heartbeat.SetStage(stage);
      };
      auto stats = fixtures::IngestJob(*conn, spec.schema, job.range, ingest);
      result = stats.status();
    } else {
      result = RunIngestCommand(spec.ingest_cmd,
                                {o.conninfo, spec.schema, o.worker, job.job_id, job.attempt, job.range, log_dir});
      if (result.ok()) {
        auto rows = RowsInJob(*conn, spec, job);
        result = rows.ok() ? FinishJob(*conn, o.run_id, job, *rows) : rows.status();
      }
    }
    heartbeat.SetJob(std::nullopt);
    if (!result.ok()) {
      // A broken job session is what failed the attempt (e.g. it was terminated), not the job.
      const Detector detector = conn->Healthy() ? Detector::kAttemptError : Detector::kLostConnection;
      if (!conn->Healthy()) {
        auto c = OpenWorkerConnection(o, &spec);
        if (!c.ok()) return fail(c.status());
        conn = std::move(c).value();
      }
      // Fenced: a no-op when the attempt was already taken from us.
      (void)FailJob(*conn, spec, job, result.message(), detector);
    }
  }
}

}  // namespace ledgerdiff::ingest
