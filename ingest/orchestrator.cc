#include "ingest/orchestrator.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "core/database.h"
#include "core/process.h"
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
    cleanup_ = RegisterCleanup([this] { KillAll(SIGKILL); });
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
    workers_.push_back({slot, name, pid});
    return Status::Ok();
  }

  // Reaps exited workers; returns them with how they ended.
  std::vector<std::pair<WorkerProcess, ExitInfo>> Reap() {
    std::vector<std::pair<WorkerProcess, ExitInfo>> out;
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

  void KillAll(int sig) {
    for (auto& w : workers_) {
      kill(-w.pid, sig);
      if (sig == SIGKILL) {
        waitpid(w.pid, nullptr, 0);
      }
    }
    if (sig == SIGKILL) workers_.clear();
  }

  // Asks workers to stop (SIGTERM, also resumes frozen ones), then SIGKILL after `grace`.
  void StopAll(std::chrono::milliseconds grace) {
    for (auto& w : workers_) {
      kill(-w.pid, SIGTERM);
      kill(-w.pid, SIGCONT);
    }
    auto deadline = Clock::now() + grace;
    while (!workers_.empty() && Clock::now() < deadline) {
      Reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    KillAll(SIGKILL);
  }

  bool empty() const { return workers_.empty(); }
  const WorkerProcess* Find(const std::string& name) const {
    for (auto& w : workers_)
      if (w.name == name) return &w;
    return nullptr;
  }

 private:
  std::string binary_;
  std::string conninfo_;
  std::string run_id_;
  std::string log_dir_;
  std::vector<WorkerProcess> workers_;
  std::map<int, int> generation_;
  std::string instance_;
  int cleanup_ = 0;
};

}  // namespace

Status ValidateIngestOptions(const IngestOptions& o) {
  LD_RETURN_IF_ERROR(o.Validate(/*check_schema=*/o.resume_run.empty()));
  if (o.resume_run.empty()) LD_RETURN_IF_ERROR(ValidateTargetSchema(o.schema, o.force));
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

Result<RunSpec> RegisterRun(pg::Connection& conn, const IngestOptions& options) {
  LD_RETURN_IF_ERROR(ValidateIngestOptions(options));
  if (!options.resume_run.empty()) return Status::Usage("RegisterRun: a resumed run is registered already");
  LD_RETURN_IF_ERROR(EnsureControlSchema(conn));
  RunSpec spec;
  static_cast<IngestPlan&>(spec) = options;
  spec.run_id = options.run_id.empty() ? NewRunId() : options.run_id;
  // No schema is dropped or re-marked under a live run: the lock is held while registering
  // (re-entrant: RunIngest holds it already and keeps it for the run's life).
  LD_RETURN_IF_ERROR(LockSchemaForRun(conn, spec.schema));
  Status registered = [&]() -> Status {
    LD_ASSIGN_OR_RETURN(bool fresh,
                        CreateOwnedSchema(conn, spec.schema, spec.run_id, options.replace_schema, options.force));
    LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, spec.schema));
    if (!fresh && state == SchemaState::kOwned)  // an owned schema reused: it is this run's now
      LD_RETURN_IF_ERROR(conn.Run(fmt::format("COMMENT ON SCHEMA {} IS {}", pg::QuoteIdent(spec.schema),
                                              pg::QuoteLiteral(fmt::format("{} run={}", kOwnershipMarkPrefix,
                                                                           spec.run_id)))));
    LD_ASSIGN_OR_RETURN(spec.schema_mark, SchemaMark(conn, spec.schema));
    LD_ASSIGN_OR_RETURN(bool has_tables, fixtures::HasHistorySchema(conn, spec.schema));
    if (!has_tables) LD_RETURN_IF_ERROR(fixtures::CreateHistorySchema(conn, spec.schema));
    return CreateRun(conn, spec, SplitJobs(spec.range, spec.job_size));
  }();
  Status unlocked = UnlockSchema(conn, spec.schema);
  LD_RETURN_IF_ERROR(registered);
  LD_RETURN_IF_ERROR(unlocked);
  return spec;
}

namespace {

// Loads a run to continue it: failed jobs get another chance; jobs still marked running are
// left to the lost-job check (dead backend or stale heartbeat), so a live worker elsewhere is
// not disturbed.
Result<RunSpec> ReopenRun(pg::Connection& conn, const std::string& run_id, Reporter& reporter) {
  LD_ASSIGN_OR_RETURN(RunSpec spec, LoadRun(conn, run_id));
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, spec.schema));
  if (state == SchemaState::kAbsent)
    return Status::Usagef("--resume {}: its schema \"{}\" no longer exists", spec.run_id, spec.schema);
  // A killed orchestrator's session may take a moment to go away with its lock.
  LD_RETURN_IF_ERROR(LockSchemaForRun(conn, spec.schema, std::max(10.0, spec.job_timeout_s)));
  Status owned = CheckRunOwnsSchema(conn, spec);
  if (!owned.ok()) return Status::Usagef("--resume {}: {}", spec.run_id, owned.message());
  LD_RETURN_IF_ERROR(conn.Exec(fmt::format("UPDATE {} SET state = 'pending', not_before = '-infinity' "
                                           "WHERE run_id = $1 AND state = 'failed'",
                                           pg::Qualified(kControlSchema, "jobs")),
                               {spec.run_id})
                         .status());
  LD_RETURN_IF_ERROR(SetRunState(conn, spec.run_id, "running"));
  reporter.Note(fmt::format("resuming run {} into schema \"{}\"", spec.run_id, spec.schema));
  return spec;
}

}  // namespace

Result<IngestReport> RunIngest(const std::string& conninfo, const IngestOptions& options, Reporter& reporter) {
  LD_RETURN_IF_ERROR(ValidateIngestOptions(options));
  auto started = Clock::now();
  // INVARIANT: this connection holds the schema's run lock (schema_guard.h) until it closes.
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff orchestrator"));
  RunSpec spec;
  if (!options.resume_run.empty()) {
    // Nothing is created for a run that does not exist (not even the control schema).
    LD_ASSIGN_OR_RETURN(SchemaState control, InspectSchema(*conn, kControlSchema));
    if (control == SchemaState::kAbsent)
      return Status::Usagef("--resume {}: no such run in this database (it has no ledgerdiff runs)", options.resume_run);
    LD_ASSIGN_OR_RETURN(spec, ReopenRun(*conn, options.resume_run, reporter));
  } else {
    LD_RETURN_IF_ERROR(EnsureControlSchema(*conn));
    LD_RETURN_IF_ERROR(LockSchemaForRun(*conn, options.schema));
    LD_ASSIGN_OR_RETURN(spec, RegisterRun(*conn, options));
  }

  IngestReport report;
  report.run_id = spec.run_id;
  report.schema = spec.schema;
  report.range = spec.range;
  report.workers = spec.workers;
  report.job_size = spec.job_size;

  if (!spec.ingest_cmd.empty()) {
    LD_ASSIGN_OR_RETURN(report.log_dir, RunLogDir(spec.run_id, options.log_root));
  }
  WorkerPool pool(options.worker_binary.empty() ? SelfExecutable() : options.worker_binary, conninfo, spec.run_id,
                  report.log_dir);
  for (uint32_t slot = 1; slot <= spec.workers; ++slot) LD_RETURN_IF_ERROR(pool.Start(static_cast<int>(slot)));

  std::set<uint32_t> reported_done;
  auto last_lost_check = Clock::now();
  auto phase_start = Clock::now();
  uint64_t total_ledgers = spec.range.size();
  std::optional<uint64_t> ledgers_at_start;
  RunCounts counts;
  bool aborted = false;
  std::string integrity_error;  // set when the end-of-run checks fail
  uint32_t worker_errors = 0;
  for (;;) {
    // 1. Workers that ended: a clean exit means no work was left for it; anything else means
    //    its job (if any) is lost and the worker is replaced.
    for (auto& [w, how] : pool.Reap()) {
      bool clean = how.exited && how.code == 0;
      if (how.exited && how.code == 2 && ++worker_errors > 3 * spec.workers) {
        // Workers that cannot work at all (unreachable database, broken run) are not respawned forever.
        return Status::Runtimef("workers keep failing to start (last: {} exited with code 2); see its message above", w.name);
      }
      if (!clean) {
        std::string why = fmt::format("worker {} died ({})", w.name, how.str());
        LD_ASSIGN_OR_RETURN(auto lost, RequeueLost(*conn, spec, w.name, why));
        for (const auto& j : lost)
          reporter.Note(fmt::format("job {} [{}] lost: {}; {}", j.job_id, j.range.str(), why,
                                    j.state == "failed" ? "out of retries" : "requeued"));
        if (lost.empty()) reporter.Note(why);
        LD_ASSIGN_OR_RETURN(counts, CountJobs(*conn, spec.run_id));
        if (counts.pending + counts.running > 0 && counts.failed == 0) {
          LD_RETURN_IF_ERROR(pool.Start(w.slot));
          ++report.workers_replaced;
        }
      }
    }
    // 2. Jobs whose worker froze, or whose session vanished (including workers elsewhere).
    if (Clock::now() - last_lost_check > std::chrono::milliseconds(250)) {
      last_lost_check = Clock::now();
      LD_ASSIGN_OR_RETURN(auto lost, RequeueLost(*conn, spec, std::nullopt, ""));
      for (const auto& j : lost) {
        reporter.Note(fmt::format("job {} [{}] on {} lost: {}; {}", j.job_id, j.range.str(), j.worker, j.error,
                                  j.state == "failed" ? "out of retries" : "requeued"));
        if (const WorkerProcess* w = pool.Find(j.worker)) pool.Kill(w->pid, SIGKILL);  // reaped next tick
      }
    }

    // 3. Progress.
    LD_ASSIGN_OR_RETURN(counts, CountJobs(*conn, spec.run_id));
    if (!ledgers_at_start) ledgers_at_start = counts.ledgers_done;
    double elapsed = SecondsSince(phase_start);
    double rate = elapsed > 0 ? static_cast<double>(counts.ledgers_done - *ledgers_at_start) / elapsed : 0;
    Progress p;
    p.phase = fmt::format("ingest \"{}\"", spec.schema);
    p.done = counts.ledgers_done;
    p.total = total_ledgers;
    p.rate_per_s = rate;
    p.eta_s = rate > 0 ? static_cast<double>(total_ledgers - counts.ledgers_done) / rate : -1;
    bool want_jobs = reporter.live() || counts.done > reported_done.size();
    if (want_jobs) {
      LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(*conn, spec.run_id));
      // Each note counts the ledgers done up to its own job: those done before this tick, then
      // the jobs newly done in it one by one (one snapshot: this job list).
      uint64_t done_ledgers = 0;
      for (const auto& j : jobs)
        if (j.state == "done" && reported_done.count(j.job_id)) done_ledgers += j.range.size();
      for (const auto& j : jobs) {
        if (j.state == "running") p.workers.push_back(fmt::format("{}: job {} [{}] attempt {}", j.worker, j.job_id, j.range.str(), j.attempt));
        if (j.state == "done" && reported_done.insert(j.job_id).second) {
          done_ledgers += j.range.size();
          if (!reporter.live())
            reporter.Note(fmt::format("job {} [{}] done by {} (attempt {}), {}/{} ledgers", j.job_id, j.range.str(),
                                      j.worker, j.attempt, FormatCount(done_ledgers), FormatCount(total_ledgers)));
        }
      }
    }
    reporter.Update(p);

    if (counts.failed > 0) {
      aborted = true;
      break;
    }
    if (counts.pending == 0 && counts.running == 0) break;
    if (pool.empty()) {
      // Every worker exited cleanly but work remains (e.g. all jobs in backoff): restart one.
      LD_RETURN_IF_ERROR(pool.Start(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  reporter.Done();

  if (aborted) {
    LD_RETURN_IF_ERROR(SetRunState(*conn, spec.run_id, "failed"));
    pool.StopAll(std::chrono::seconds(5));
    LD_RETURN_IF_ERROR(RequeueAllRunning(*conn, spec, "stopped: another job ran out of retries"));
  } else {
    pool.StopAll(std::chrono::seconds(5));
    // The run's end: its schema is still its own and holds exactly what its jobs committed
    // (not checked for the negative control, whose unsafe commits are the point).
    Status intact = CheckRunOwnsSchema(*conn, spec);
    if (intact.ok() && spec.unsafe_commit_every == 0) intact = CheckRowsMatchJobs(*conn, spec);
    if (!intact.ok()) {
      aborted = true;
      integrity_error = intact.message();
    }
    LD_RETURN_IF_ERROR(SetRunState(*conn, spec.run_id, aborted ? "failed" : "done"));
  }
  report.wall_s = SecondsSince(started);

  LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(*conn, spec.run_id));
  LD_ASSIGN_OR_RETURN(report.timeline, ListAttempts(*conn, spec.run_id));
  report.jobs = static_cast<uint32_t>(jobs.size());
  report.attempts = static_cast<uint32_t>(report.timeline.size());
  Ledger restart_from = 0, restart_to = 0;
  for (const auto& j : jobs) {
    if (j.attempt > 1) ++report.retried_jobs;
    if (j.state == "done") {
      report.ledgers += j.range.size();
    } else {
      if (!restart_from || j.range.from < restart_from) restart_from = j.range.from;
      restart_to = std::max(restart_to, j.range.to);
    }
    if (j.state == "failed") report.failed_jobs.push_back(j);
  }
  if (restart_from) report.restart_range = LedgerRange{restart_from, restart_to};
  auto counted = CountRowsInRange(*conn, spec.schema, spec.range);
  if (counted.ok()) {
    report.rows_per_table = *counted;
  } else if (integrity_error.empty()) {
    return counted.status();
  }
  for (auto& [t, n] : report.rows_per_table) report.rows += n;
  report.ok = !aborted;
  if (!integrity_error.empty()) {
    report.error = integrity_error;
  } else if (aborted) {
    std::string ranges;
    for (const auto& j : report.failed_jobs) ranges += (ranges.empty() ? "" : ", ") + j.range.str();
    report.error = fmt::format("jobs ran out of retries: {} ({}); restart with --resume {} or --range {}", ranges,
                               report.failed_jobs.empty() ? "" : report.failed_jobs.front().error, spec.run_id,
                               report.restart_range ? report.restart_range->str() : spec.range.str());
  }
  return report;
}

}  // namespace ledgerdiff::ingest
