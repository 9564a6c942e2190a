#include "verify/chaos.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/database.h"
#include "core/enum_names.h"
#include "core/history_tables.h"
#include "core/process.h"
#include "core/stage_timer.h"
#include "core/tempdir.h"
#include "core/text.h"
#include "diff/diff.h"
#include "fixtures/generator.h"
#include "dump/profile.h"
#include "ingest/job_table.h"
#include "ingest/orchestrator.h"
#include "verify/verify.h"

namespace ledgerdiff::verify {

namespace {

using ingest::JobRow;
using ingest::ListAttempts;
using ingest::ListJobs;

// splitmix64: a small, well-known deterministic generator (same seed, same schedule everywhere).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return n ? Next() % n : 0; }

 private:
  uint64_t state_;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void MergeIntervals(std::vector<LedgerRange>& into, const std::vector<LedgerRange>& more) {
  std::vector<Ledger> all;
  for (const std::vector<LedgerRange>* v : {static_cast<const std::vector<LedgerRange>*>(&into), &more})
    for (const auto& r : *v)
      for (uint64_t l = r.from; l <= r.to; ++l) all.push_back(static_cast<Ledger>(l));
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  into = ToIntervals(all);
}

// One round: an orchestrator process under the nemesis.
class Round {
 public:
  Round(const std::string& conninfo, const ChaosOptions& o, const RoundPlan& plan, const std::string& chaos_id,
        const std::string& tmp_dir, Reporter& reporter)
      : conninfo_(conninfo), o_(o), plan_(plan), tmp_(tmp_dir), reporter_(reporter) {
    r_.round = plan.round;
    r_.run_id = fmt::format("{}_r{}", chaos_id, plan.round);
    r_.schema = fmt::format("ld_{}_r{}", chaos_id, plan.round);
    for (const auto& f : plan.faults) {
      RoundFault rf;
      rf.plan = f;
      r_.faults.push_back(std::move(rf));
    }
  }

  Result<ChaosRound> Run() {
    const Stopwatch wall;
    LD_ASSIGN_OR_RETURN(conn_, pg::Connection::Open(conninfo_, "ledgerdiff chaos nemesis"));
    LD_RETURN_IF_ERROR(RegisterRound());
    LD_RETURN_IF_ERROR(StartOrchestrator());
    std::map<uint32_t, uint32_t> done_at_kill;  // job -> attempt, when the orchestrator was killed
    for (;;) {
      int ws = 0;
      if (waitpid(orchestrator_, &ws, WNOHANG) == orchestrator_) {
        exit_ = DecodeWaitStatus(ws);
        break;
      }
      auto jobs = ListJobs(*conn_, r_.run_id);
      if (jobs.ok() && !jobs->empty()) {
        // The orchestrator kill first: a target held at its hold point in this poll dies with it
        // unfired and moves to its next attempt. While the kill waits a moment for a fault to be
        // caught, held targets wait too (firing them would only prolong the wait), unless their
        // hold is about to end; not while it waits for a hang's heartbeat timeout (seconds).
        const KillDue due = OrchestratorDue(*jobs);
        if (due == KillDue::kNow) {
          for (const auto& j : *jobs)
            if (j.state == ingest::JobState::kDone) done_at_kill[j.job_id] = j.attempt;
          LD_RETURN_IF_ERROR(KillAndResumeOrchestrator());
        } else {
          InjectPerJob(*jobs, /*kill_waiting=*/due == KillDue::kAwaitCatch);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }

    // The last orchestrator's report (stdout, JSON).
    std::string out = Slurp(out_file_);
    auto j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      r_.ingest_ok = false;
      r_.ingest_error = fmt::format("orchestrator ended ({}) without a report: {}", exit_.str(), LastLine(err_file_));
    } else {
      r_.ingest_ok = j.value("ok", false);
      r_.ingest_error = j.value("error", "");
    }

    // Job history.
    LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(*conn_, r_.run_id));
    LD_ASSIGN_OR_RETURN(auto attempts, ListAttempts(*conn_, r_.run_id));
    r_.jobs = static_cast<uint32_t>(jobs.size());
    r_.attempts = static_cast<uint32_t>(attempts.size());
    for (const auto& job : jobs) {
      if (job.attempt > 1) ++r_.retried_jobs;
      if (job.attempt > 1 && job.state == ingest::JobState::kDone) ++r_.recovered_jobs;
      auto it = done_at_kill.find(job.job_id);
      if (it != done_at_kill.end() && it->second != job.attempt) ++r_.redone_after_resume;
    }
    LD_ASSIGN_OR_RETURN(std::optional<ingest::RunRow> run, ingest::FindRun(*conn_, r_.run_id));
    JudgeFaults(attempts, jobs, run ? run->resumes : 0);
    r_.seconds = wall.Seconds();
    return r_;
  }

 private:
  // How the round's run ended, for the reason a fault never fired.
  std::string RunEnd(const std::vector<JobRow>& jobs) const {
    uint32_t done = 0;
    for (const auto& j : jobs) done += j.state == ingest::JobState::kDone ? 1 : 0;
    const std::string counted = fmt::format("{} of {} done", done, FormatCountOf(jobs.size(), "job"));
    if (r_.ingest_ok) return fmt::format("the run finished ({})", counted);
    return fmt::format("the run ended ({}; {})", counted,
                       r_.ingest_error.empty() ? "orchestrator " + exit_.str() : r_.ingest_error);
  }

  std::string LastLine(const std::string& path) {
    std::string text = Slurp(path), last;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) last = line;
    return last;
  }

  // What caught each fault, from the job table: a per-job fault's target attempt records its
  // detector; an orchestrator kill was caught when a restarted orchestrator resumed the run
  // (the k-th kill by the k-th resume). A fault counts (injected) only when the detector its
  // kind exists to prove caught it; otherwise `not_counted` says why.
  void JudgeFaults(const std::vector<ingest::AttemptRow>& attempts, const std::vector<JobRow>& jobs,
                   uint32_t resumes) {
    uint32_t kills = 0;
    for (auto& f : r_.faults) {
      const ingest::Detector expected = ExpectedDetector(f.plan.kind);
      std::string evidence;  // what the job table says caught it
      const ingest::AttemptRow* target = nullptr;
      if (f.plan.kind == FaultKind::kOrchestrator) {
        if (f.performed) ++kills;
        evidence = JudgeOrchestratorKill(f, kills, resumes, r_.run_id);
      } else {
        for (const auto& a : attempts)
          if (a.job_id == f.plan.job && a.attempt == f.attempt) target = &a;
        // A crash is the worker's own abort at its crash point: the attempt died (lost).
        if (f.plan.kind == FaultKind::kCrash && target && target->outcome == ingest::AttemptOutcome::kLost) {
          f.performed = true;
          f.detail = fmt::format("worker {} aborted inside job {} attempt {} after {}", target->worker, target->job_id,
                                 target->attempt, f.plan.stage);
        }
        if (f.performed && target) {
          f.detector = target->detector;
          evidence = target->error;
        }
      }
      f.injected = f.performed && f.detector == expected;
      if (f.detector) {
        ++r_.detectors[*f.detector];
        f.detail +=
            fmt::format("; caught by {}{}", ToString(*f.detector), evidence.empty() ? "" : " (" + evidence + ")");
      }
      if (f.injected) continue;
      const std::string exp(ToString(expected));
      if (!f.performed) {
        FaultFate fate;
        fate.external_ingester = !o_.plan.ingest_cmd.empty();
        fate.run_end = RunEnd(jobs);
        fate.kill_wait = kill_wait_;
        if (target) {
          fate.attempt_outcome = target->outcome;
          fate.attempt_error = target->error;
        }
        for (const auto& j : jobs)
          if (j.job_id == f.plan.job) {
            fate.job_state = j.state;
            fate.job_attempt = j.attempt;
          }
        f.not_counted = WhyNeverFired(f, fate);
      } else if (!f.detector && f.plan.kind == FaultKind::kOrchestrator) {
        // JudgeOrchestratorKill said why.
      } else if (!f.detector) {
        f.not_counted = fmt::format("fired, but nothing recorded what caught job {} attempt {} (outcome {})",
                                    f.plan.job, f.attempt, target ? ToString(target->outcome) : "unknown");
      } else {
        const std::string got(ToString(*f.detector));
        f.not_counted = fmt::format("caught by {} instead of {}{}: a {} fault exists to prove {}, which never saw it",
                                    got, exp, evidence.empty() ? "" : " (" + evidence + ")", ToString(f.plan.kind), exp);
      }
    }
  }

  // The round's plan, registered in the job table before any orchestrator starts. With
  // orchestrator kills in the round, a hang's job also holds briefly in the attempts after its
  // first (one per kill): a hang that had to fire before a kill is caught by its heartbeat
  // timeout first, and its retry keeps the run alive for the kill that waited for it.
  Status RegisterRound() {
    ingest::IngestOptions io;
    io.plan = o_.plan;
    io.plan.schema = r_.schema;
    io.run_id = r_.run_id;
    io.hooks.unsafe_commit_every = o_.unsafe_ingester ? 100 : 0;
    uint32_t kills = 0;
    for (const auto& f : plan_.faults) kills += f.kind == FaultKind::kOrchestrator ? 1 : 0;
    for (const auto& f : plan_.faults) {
      if (f.kind == FaultKind::kCrash) io.hooks.crash_points.push_back({f.job, 1, f.stage, ingest::CrashAction::kAbort});
      if ((f.kind == FaultKind::kKill || f.kind == FaultKind::kHang || f.kind == FaultKind::kDisconnect) && o_.plan.ingest_cmd.empty())
        io.hooks.hold_points.push_back({f.job, 1, f.stage, o_.hold_s});
      if (f.kind == FaultKind::kHang && o_.plan.ingest_cmd.empty())  // (attempts past 1 + retries fail the job anyway)
        for (uint32_t a = 2; a <= 1 + std::min(kills, o_.plan.retries); ++a)
          io.hooks.hold_points.push_back({f.job, a, f.stage, RetryHoldS()});
    }
    return ingest::RegisterRun(*conn_, io).status();
  }

  double RetryHoldS() const { return std::min(o_.hold_s, 0.5); }

  bool KillsRemain() const {
    for (const auto& f : r_.faults)
      if (f.plan.kind == FaultKind::kOrchestrator && !f.performed) return true;
    return false;
  }

  // Starts (or, after a kill, restarts) the orchestrator of the registered run: the run id is
  // all it needs, the plan is in the job table.
  Status StartOrchestrator() {
    const std::vector<std::string> argv = {LedgerdiffExecutable(), "_orchestrate", "--run", r_.run_id};
    ++starts_;
    out_file_ = fmt::format("{}/{}-{}.json", tmp_, r_.run_id, starts_);
    err_file_ = fmt::format("{}/{}-{}.log", tmp_, r_.run_id, starts_);
    SpawnOptions so;
    so.new_process_group = true;
    so.parent_death_signal = SIGKILL;
    so.output_file = out_file_;
    so.error_file = err_file_;
    so.env["LEDGERDIFF_DB"] = conninfo_;  // never on a command line: it may hold a password
    LD_ASSIGN_OR_RETURN(orchestrator_, Spawn(argv, so));
    return Status::Ok();
  }

  // Fires each per-job fault whose target attempt is at its hold point (any time it runs, with an
  // external ingester). A held target waits (a hang while orchestrator kills remain in the round,
  // any kind while a due kill waits for a fault to be caught): the kill then takes its attempt
  // along and the fault moves to the next one, so that no kill cuts a hang's heartbeat timeout
  // short. When its hold is about to end first, it fires anyway (the kill then waits for it to be
  // caught, a hang for its heartbeat timeout).
  void InjectPerJob(const std::vector<JobRow>& jobs, bool kill_waiting) {
    const bool kills_remain = KillsRemain();
    for (size_t i = 0; i < r_.faults.size(); ++i) {
      RoundFault& f = r_.faults[i];
      if (f.performed || !PerJob(f.plan.kind) || f.plan.kind == FaultKind::kCrash) continue;
      for (const auto& j : jobs) {
        if (j.job_id != f.plan.job || j.state != ingest::JobState::kRunning || j.attempt != f.attempt || j.worker_pid <= 0) continue;
        bool in_hold = o_.plan.ingest_cmd.empty() ? j.stage == "hold:" + f.plan.stage : true;
        if (!in_hold) continue;
        std::string before_kill;
        if (o_.plan.ingest_cmd.empty() && ((f.plan.kind == FaultKind::kHang && kills_remain) || kill_waiting)) {
          auto& seen = hold_seen_[i];
          if (seen.first != f.attempt) seen = {f.attempt, Stopwatch()};
          const double wait_s = o_.hold_s - std::min(o_.hold_s / 2, 1.0);
          if (seen.second.Seconds() < wait_s) continue;
          before_kill = fmt::format(" (before the orchestrator kill: its hold was ending after {} of {} s)",
                                    fmt::format("{:.1f}", seen.second.Seconds()), o_.hold_s);
        }
        std::string where = fmt::format("worker {} (pid {}) during job {} [{}] attempt {} ({})", j.worker, j.worker_pid,
                                        j.job_id, j.range.str(), j.attempt, j.stage);
        if (f.plan.kind == FaultKind::kKill) {
          kill(-j.worker_pid, SIGKILL);
          f.detail = "SIGKILL " + where;
        } else if (f.plan.kind == FaultKind::kHang) {
          kill(-j.worker_pid, SIGSTOP);
          f.detail = "SIGSTOP " + where;
        } else if (f.plan.kind == FaultKind::kDisconnect) {
          auto t = conn_->Exec("SELECT pg_terminate_backend($1)", {std::to_string(j.backend_pid)});
          f.detail = fmt::format("pg_terminate_backend({}) of {}", j.backend_pid, where);
          if (!t.ok()) f.detail += ": " + t.status().message();
        }
        f.detail += before_kill;
        f.performed = true;
        reporter_.Note(fmt::format("round {}: {}", r_.round, f.detail));
      }
    }
  }

  // The round's next orchestrator kill fires now (OrchestratorKillDue)?
  KillDue OrchestratorDue(const std::vector<JobRow>& jobs) {
    RoundFault* due = nullptr;
    for (auto& f : r_.faults)
      if (f.plan.kind == FaultKind::kOrchestrator && !f.performed) {
        due = &f;
        break;
      }
    if (!due) return KillDue::kNo;
    const KillDue when = OrchestratorKillDue(r_.faults, *due, jobs, o_.plan.workers, kill_wait_);
    if (when != KillDue::kNow) return when;
    due->performed = true;
    uint32_t done = 0, running = 0;
    for (const auto& j : jobs) {
      done += j.state == ingest::JobState::kDone ? 1 : 0;
      running += j.state == ingest::JobState::kRunning ? 1 : 0;
    }
    due->in_flight = running;
    due->detail = fmt::format(
        "SIGKILL orchestrator (pid {}) after {} of {} jobs done (planned {}), {} in flight; "
        "restarted on run {}",
        orchestrator_, done, jobs.size(), due->plan.after_jobs_done, running, r_.run_id);
    reporter_.Note(fmt::format("round {}: {}", r_.round, due->detail));
    return KillDue::kNow;
  }

  Status KillAndResumeOrchestrator() {
    kill(-orchestrator_, SIGKILL);
    int ws = 0;
    waitpid(orchestrator_, &ws, 0);
    ++r_.orchestrator_restarts;
    LD_RETURN_IF_ERROR(RetargetFaultsLostWithTheOrchestrator());
    return StartOrchestrator();
  }

  // A worker may claim a fault's target job between the nemesis's look at the job table and the
  // kill: that first attempt dies with the orchestrator before its fault fired, and the fault
  // (planned for attempt 1) could never fire. Such a fault moves to the next attempt: its hold
  // or crash point is added to the run's spec before the resumed orchestrator (and its workers)
  // load it. Waits until the killed instance's worker sessions are gone, so that no claim of
  // theirs can still commit afterwards.
  Status RetargetFaultsLostWithTheOrchestrator() {
    const std::string sessions = fmt::format("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE {}",
                                             pg::QuoteLiteral(fmt::format("ledgerdiff worker %:{}:%", orchestrator_)));
    for (int i = 0; i < 250; ++i) {
      auto n = conn_->Exec(sessions);
      if (n.ok() && n->GetInt(0, 0) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    LD_ASSIGN_OR_RETURN(auto jobs, ListJobs(*conn_, r_.run_id));
    LD_ASSIGN_OR_RETURN(ingest::RunSpec spec, ingest::LoadRun(*conn_, r_.run_id));
    bool changed = false;
    for (auto& f : r_.faults) {
      if (f.performed || !PerJob(f.plan.kind)) continue;
      for (const auto& j : jobs) {
        if (j.job_id != f.plan.job || j.state != ingest::JobState::kRunning || j.attempt != f.attempt) continue;
        ++f.attempt;
        if (f.plan.kind == FaultKind::kCrash) {
          spec.hooks.crash_points.push_back({f.plan.job, f.attempt, f.plan.stage, ingest::CrashAction::kAbort});
        } else if (o_.plan.ingest_cmd.empty()) {
          // The full hold (a hang's job may hold briefly in this attempt already: RegisterRound).
          std::erase_if(spec.hooks.hold_points, [&](const ingest::HoldPoint& h) {
            return h.job_id == f.plan.job && h.attempt == f.attempt && h.stage == f.plan.stage;
          });
          spec.hooks.hold_points.push_back({f.plan.job, f.attempt, f.plan.stage, o_.hold_s});
        }
        changed = true;
        reporter_.Note(fmt::format("round {}: {} moves to job {} attempt {} (attempt {} died with the orchestrator)",
                                   r_.round, DescribeFault(f.plan), f.plan.job, f.attempt, f.attempt - 1));
      }
    }
    if (!changed) return Status::Ok();
    return conn_
        ->Exec(fmt::format("UPDATE {} SET spec = $2::jsonb WHERE run_id = $1",
                           pg::Qualified(ingest::kControlSchema, "runs")),
               {r_.run_id, spec.ToJson().dump()})
        .status();
  }

  const std::string& conninfo_;
  const ChaosOptions& o_;
  const RoundPlan& plan_;
  std::string tmp_;
  Reporter& reporter_;
  ChaosRound r_;
  std::unique_ptr<pg::Connection> conn_;
  pid_t orchestrator_ = -1;
  int starts_ = 0;
  std::string out_file_, err_file_;
  ExitInfo exit_;
  std::string kill_wait_;  // why the next orchestrator kill was not due when last considered
  // Per fault (index into r_.faults): the attempt a deferred hang was first seen held, and when.
  std::map<size_t, std::pair<uint32_t, Stopwatch>> hold_seen_;
};

}  // namespace

namespace {

// Rows per ledger of `table` in `schema` at the ledgers of `intervals` (absent: 0 rows).
Result<std::map<Ledger, uint64_t>> RowsPerLedger(pg::Connection& conn, const std::string& schema,
                                                 const HistoryTable& table, const std::vector<LedgerRange>& intervals) {
  std::string where;
  for (const auto& iv : intervals) where += (where.empty() ? "" : " OR ") + LedgerRangePredicate(table, iv);
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT {0}, count(*) FROM {1} WHERE {2} GROUP BY 1",
                                                           LedgerExpression(table.ledger_column, table.kind),
                                                           pg::Qualified(schema, table.name), where)));
  std::map<Ledger, uint64_t> out;
  for (int i = 0; i < rows.size(); ++i)
    out[static_cast<Ledger>(rows.GetInt(i, 0))] = static_cast<uint64_t>(rows.GetInt(i, 1));
  return out;
}

}  // namespace

Result<Anomalies> ClassifyDivergence(const std::string& conninfo, const std::string& baseline,
                                     const std::string& schema, const dump::ProfileSpec& spec, const LedgerRange& range,
                                     dump::DigestEngine engine, Reporter& reporter) {
  diff::DiffOptions options;
  options.range = range;
  options.engine = engine;
  options.all = true;
  options.max_rows = 1;
  options.jobs = 2;
  LD_ASSIGN_OR_RETURN(diff::DiffReport report,
                      diff::DiffSources(diff::SchemaSource{conninfo, baseline},
                                        diff::SchemaSource{conninfo, schema}, spec, options, reporter));
  if (report.identical) return Anomalies{};
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff chaos"));
  // Per divergent ledger: did some table gain or lose rows, and is the ledger row gone?
  struct Counts {
    bool more = false, fewer = false, lost = false;
  };
  std::map<Ledger, Counts> ledgers;
  for (const auto& t : report.tables) {
    if (t.divergent.empty()) continue;
    for (const auto& iv : t.divergent)
      for (uint64_t l = iv.from; l <= iv.to; ++l) ledgers[static_cast<Ledger>(l)];
    const std::optional<HistoryTable> mapping = FindHistoryTable(t.table);
    if (!mapping) continue;  // a table of no known ledger mapping: its ledgers stay "divergent"
    LD_ASSIGN_OR_RETURN(auto base_rows, RowsPerLedger(*conn, baseline, *mapping, t.divergent));
    LD_ASSIGN_OR_RETURN(auto round_rows, RowsPerLedger(*conn, schema, *mapping, t.divergent));
    for (const auto& iv : t.divergent) {
      for (uint64_t l = iv.from; l <= iv.to; ++l) {
        const Ledger ledger = static_cast<Ledger>(l);
        const uint64_t b = base_rows.count(ledger) ? base_rows.at(ledger) : 0;
        const uint64_t r = round_rows.count(ledger) ? round_rows.at(ledger) : 0;
        Counts& c = ledgers[ledger];
        c.more |= r > b;
        c.fewer |= r < b;
        c.lost |= t.table == kLedgerTable && b > 0 && r == 0;
      }
    }
  }
  std::map<AnomalyClass, std::vector<Ledger>> by_class;
  for (const auto& [l, c] : ledgers)
    by_class[c.lost    ? AnomalyClass::kLost
             : c.more  ? AnomalyClass::kDuplicated
             : c.fewer ? AnomalyClass::kPartial
                       : AnomalyClass::kDivergent]
        .push_back(l);
  Anomalies out;
  for (auto& [cls, ls] : by_class) out[cls] = ToIntervals(ls);
  return out;
}

Result<FaultCounts> ParseFaultCounts(const std::string& text) {
  FaultCounts counts;
  for (const FaultKind k : kFaultKinds) counts[k] = 0;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::optional<FaultKind> kind = ParseFaultKind(name);
    if (!kind)
      return Status::Usagef("--faults: unknown fault kind \"{}\" (kinds: kill, hang, crash, disconnect, orchestrator)",
                            name);
    uint32_t n = 1;
    if (eq != std::string::npos) {
      const std::string count = item.substr(eq + 1);
      if (count.empty() || count.size() > 6 || count.find_first_not_of("0123456789") != std::string::npos)
        return Status::Usagef("--faults: \"{}\" is not KIND=COUNT (COUNT from 0 to {})", item, kMaxFaultsPerKind);
      unsigned long value = std::stoul(count);
      if (value > kMaxFaultsPerKind)
        return Status::Usagef("--faults: \"{}\": at most {} faults of a kind per round", item, kMaxFaultsPerKind);
      n = static_cast<uint32_t>(value);
    }
    counts[*kind] = n;
  }
  return counts;
}

Result<dump::ProfileSpec> ValidateChaosOptions(const ChaosOptions& o) {
  LD_RETURN_IF_ERROR(o.plan.Validate(/*check_schema=*/false));
  if (o.rounds == 0) return Status::Usage("--rounds must be at least 1");
  if (o.rounds > 10000) return Status::Usage("--rounds must be at most 10000");
  if (!std::isfinite(o.hold_s) || o.hold_s <= 0 || o.hold_s > 600)
    return Status::Usagef(
        "--hold {} must be a number of seconds above 0 and at most 600 (a fault needs a job held "
        "mid-transaction to hit)",
        o.hold_s);
  if (!o.plan.ingest_cmd.empty() && o.faults.count(FaultKind::kCrash) && o.faults.at(FaultKind::kCrash) > 0)
    return Status::Usage(
        "--faults crash needs the built-in ingester (a fault point inside its transaction); use "
        "kill, hang, disconnect or orchestrator with --ingest-cmd");
  LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, o.profile_spec ? Result<dump::ProfileSpec>(*o.profile_spec)
                                                             : dump::LoadProfileSpec(o.table_profile));
  LD_RETURN_IF_ERROR(PlanChaos(o).status());
  return spec;
}

std::string_view ToString(AnomalyClass anomaly) {
  switch (anomaly) {
    case AnomalyClass::kDivergent: return "divergent";
    case AnomalyClass::kDuplicated: return "duplicated";
    case AnomalyClass::kLost: return "lost";
    case AnomalyClass::kPartial: return "partial";
  }
  return "divergent";  // not reached: the switch names every class
}

std::string_view ToString(ChaosVerdict verdict) {
  switch (verdict) {
    case ChaosVerdict::kValid: return "valid";
    case ChaosVerdict::kUnknown: return "unknown";
    case ChaosVerdict::kInvalid: return "invalid";
  }
  return "invalid";  // not reached: the switch names every verdict
}

// A fault kind as --faults, the schedule and the reports spell it.
std::string_view ToString(FaultKind kind) {
  switch (kind) {
    case FaultKind::kKill: return "kill";
    case FaultKind::kHang: return "hang";
    case FaultKind::kCrash: return "crash";
    case FaultKind::kDisconnect: return "disconnect";
    case FaultKind::kOrchestrator: return "orchestrator";
  }
  return "?";
}

std::optional<FaultKind> ParseFaultKind(std::string_view text) { return ParseEnum(kFaultKinds, text); }

bool PerJob(FaultKind kind) {
  switch (kind) {
    case FaultKind::kKill:
    case FaultKind::kHang:
    case FaultKind::kCrash:
    case FaultKind::kDisconnect: return true;
    case FaultKind::kOrchestrator: return false;
  }
  return false;
}

ingest::Detector ExpectedDetector(FaultKind kind) {
  switch (kind) {
    case FaultKind::kHang: return ingest::Detector::kHeartbeatTimeout;
    case FaultKind::kDisconnect: return ingest::Detector::kLostConnection;
    case FaultKind::kOrchestrator: return ingest::Detector::kOrchestratorRestart;
    case FaultKind::kKill:
    case FaultKind::kCrash: return ingest::Detector::kProcessExit;
  }
  return ingest::Detector::kProcessExit;
}

std::string DescribeFault(const PlannedFault& f) {
  // What happens (OrchestratorDue): the kill fires at the first poll with at least this many jobs
  // done and every fault that fired caught by its detector; its detail names the count.
  if (f.kind == FaultKind::kOrchestrator)
    return fmt::format("orchestrator once >= {} jobs are done (not before every fired fault is caught)",
                       f.after_jobs_done);
  if (f.stage.empty()) return fmt::format("{} job {}", ToString(f.kind), f.job);
  return fmt::format("{} job {} after {}", ToString(f.kind), f.job, f.stage);
}

Result<std::vector<RoundPlan>> PlanChaos(const ChaosOptions& o) {
  const uint32_t jobs = static_cast<uint32_t>((o.plan.range.size() + o.plan.job_size - 1) / o.plan.job_size);
  uint32_t per_job = 0;
  for (const auto& [kind, n] : o.faults)
    if (PerJob(kind)) per_job += n;
  uint32_t orchestrator = o.faults.count(FaultKind::kOrchestrator) ? o.faults.at(FaultKind::kOrchestrator) : 0;
  // Targets come from the first three quarters of the jobs, so that they are reached before
  // the run ends and leave room for orchestrator kills after them.
  uint32_t pool = std::max<uint32_t>(per_job, (jobs * 3 + 3) / 4);
  if (per_job > 0 && pool > jobs) {
    return Status::Usagef("{} per round {} at least {}; the range {} has {} of {}",
                          FormatCountOf(per_job, "per-job fault"), per_job == 1 ? "needs" : "need",
                          FormatCountOf(per_job + 1, "job"), o.plan.range.str(), FormatCountOf(jobs, "job"), o.plan.job_size);
  }
  if (orchestrator > 0 && jobs < orchestrator + 1)
    return Status::Usagef("{} per round {} at least {}; the range has {}",
                          FormatCountOf(orchestrator, "orchestrator kill"), orchestrator == 1 ? "needs" : "need",
                          FormatCountOf(orchestrator + 1, "job"), FormatCount(jobs));
  // Stages at which a target attempt is held or crashes: the job has written part of itself.
  const std::vector<std::string> stages =
      o.unsafe_ingester
          ? std::vector<std::string>{"committed"}
          : std::vector<std::string>{"history_transactions", "history_operations", "history_effects", "history_trades"};
  std::vector<RoundPlan> plans;
  for (uint32_t round = 1; round <= o.rounds; ++round) {
    Rng rng(o.plan.seed * 0x100000001b3ULL + round);
    std::vector<uint32_t> candidates;
    for (uint32_t j = 1; j <= pool; ++j) candidates.push_back(j);
    for (size_t i = candidates.size(); i > 1; --i) std::swap(candidates[i - 1], candidates[rng.Below(i)]);
    RoundPlan plan;
    plan.round = round;
    size_t next = 0;
    for (const FaultKind kind : kFaultKinds) {
      uint32_t n = o.faults.count(kind) ? o.faults.at(kind) : 0;
      for (uint32_t i = 0; i < n; ++i) {
        PlannedFault f;
        f.kind = kind;
        if (PerJob(kind)) {
          f.job = candidates[next++];
          if (o.plan.ingest_cmd.empty() || kind == FaultKind::kCrash) f.stage = stages[rng.Below(stages.size())];
        } else {
          f.after_jobs_done = std::clamp<uint32_t>(jobs * (i + 1) / (n + 1), 1, jobs - 1);
        }
        plan.faults.push_back(f);
      }
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::string ReplayCommand(const ChaosOptions& o, const std::string& faults) {
  auto num = [](double v) { return fmt::format("{}", v); };
  std::string cmd = fmt::format(
      "ledgerdiff chaos --range {} --workers {} --job-size {} --seed {} --rounds {} --faults {} --hold {} "
      "--job-timeout {} --retries {} --retry-backoff {} --density {} --profile {}",
      o.plan.range.str(), o.plan.workers, o.plan.job_size, o.plan.seed, o.rounds, faults, num(o.hold_s), num(o.plan.job_timeout_s), o.plan.retries,
      num(o.plan.retry_backoff_s), fixtures::ToString(o.plan.density),
      ShellQuote(o.table_profile, ShellQuoting::kWhenNeeded));
  if (!o.plan.ingest_cmd.empty()) cmd += " --ingest-cmd " + ShellQuote(o.plan.ingest_cmd, ShellQuoting::kWhenNeeded);
  if (o.engine != dump::kDefaultEngine) cmd += fmt::format(" --engine {}", dump::ToString(o.engine));
  if (o.unsafe_ingester) cmd += " --unsafe-ingester";
  if (o.keep) cmd += " --keep";
  return cmd;
}

namespace {

// Chaos's phases, costed like verify's (kDigestCostPerRow): the serial baseline, then each round,
// under its classification's digests (both sides at once, 2 jobs each). A round's ingestion runs
// in its orchestrator's process and reports nothing here: its cost is the round's, whose time
// runs from the end of the phase before (CommandEta), so the pace holds the faults' delays too.
CommandPlan ChaosPlan(const ChaosOptions& o, const std::string& baseline_schema) {
  const double rows = PlannedRows(o.plan, o.plan.range);
  CommandPlan plan{{"serial baseline", {fmt::format("ingest \"{}\"", baseline_schema)}, rows}};
  for (uint32_t r = 1; r <= o.rounds; ++r)
    plan.push_back({fmt::format("round {} of {}", r, o.rounds), {"digest left", "digest right"},
                    rows / OnCores(o.plan.workers) + 2 * rows * kDigestCostPerRow / OnCores(4)});
  return plan;
}

}  // namespace

Result<ChaosReport> RunChaos(const std::string& conninfo, const ChaosOptions& options, Reporter& reporter) {
  LD_ASSIGN_OR_RETURN(const dump::ProfileSpec spec, ValidateChaosOptions(options));
  const Stopwatch wall;
  ChaosReport report;
  report.options = options;
  const ChaosOptions& o = report.options;
  LD_ASSIGN_OR_RETURN(report.schedule, PlanChaos(o));
  for (const auto& plan : report.schedule)
    for (const auto& f : plan.faults) ++report.planned[f.kind];
  std::string faults;
  for (const FaultKind k : kFaultKinds)
    faults += fmt::format("{}{}={}", faults.empty() ? "" : ",", ToString(k), o.faults.count(k) ? o.faults.at(k) : 0);
  report.replay = ReplayCommand(o, faults);
  for (const auto& plan : report.schedule) {
    std::string s;
    for (const auto& f : plan.faults) s += (s.empty() ? "" : "; ") + DescribeFault(f);
    reporter.Note(fmt::format("schedule round {}: {}", plan.round, s));
  }

  const std::string chaos_id = NewRunId();
  LD_ASSIGN_OR_RETURN(std::string tmp, MakeOwnedTempDir("ledgerdiff-chaos-"));
  int cleanup = RegisterDescribedCleanup([tmp] {
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    return ec ? std::string() : "removed the temporary directory " + tmp;
  });
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff chaos"));

  // The serial baseline, once, without faults and with the safe ingester.
  ingest::IngestOptions base;
  base.plan = o.plan;
  base.plan.schema = fmt::format("ld_{}_baseline", chaos_id);
  base.plan.workers = 1;
  if (!o.plan.ingest_cmd.empty()) base.plan.job_size = ingest::WholeRangeJobSize(o.plan.range);
  base.run_id = chaos_id + "_base";
  reporter.Plan("chaos", ChaosPlan(o, base.plan.schema));
  reporter.Note(fmt::format("chaos: serial baseline of {} into \"{}\"", o.plan.range.str(), base.plan.schema));
  const Stopwatch baseline;
  LD_ASSIGN_OR_RETURN(ingest::IngestReport base_report, ingest::RunIngest(conninfo, base, reporter));
  if (!base_report.ok) return Status::Runtimef("chaos: the serial baseline failed: {}", base_report.error);
  report.baseline_s = baseline.Seconds();

  report.valid = true;
  for (const auto& plan : report.schedule) {
    reporter.Note(fmt::format("chaos: round {} of {}", plan.round, o.rounds));
    Round round(conninfo, o, plan, chaos_id, tmp, reporter);
    LD_ASSIGN_OR_RETURN(ChaosRound r, round.Run());
    auto classified = ClassifyDivergence(conninfo, base.plan.schema, r.schema, spec, o.plan.range, o.engine, reporter);
    if (classified.ok()) {
      r.anomalies = std::move(classified).value();
    } else {
      r.ingest_ok = false;
      if (r.ingest_error.empty()) r.ingest_error = classified.status().message();
    }
    // A round whose planned fault never fired proves nothing: inconclusive, never valid.
    for (const auto& f : r.faults) r.inconclusive |= !f.injected;
    r.valid = !r.inconclusive && r.ingest_ok && r.anomalies.empty() && r.redone_after_resume == 0;
    report.inconclusive |= r.inconclusive;
    if (r.valid && !o.keep) {
      LD_RETURN_IF_ERROR(DropOwnedSchema(*conn, r.schema));
    } else {
      r.schema_kept = true;
    }
    for (const auto& f : r.faults)
      if (f.injected) ++report.injected[f.plan.kind];
    for (const auto& [detector, n] : r.detectors) report.detectors[detector] += n;
    for (const auto& [cls, intervals] : r.anomalies) MergeIntervals(report.anomalies[cls], intervals);
    report.jobs_retried += r.retried_jobs;
    report.jobs_recovered += r.recovered_jobs;
    report.valid = report.valid && r.valid;
    std::string anomalies;
    for (const auto& [cls, iv] : r.anomalies) {  // counts only: the report lists the ledgers, once
      uint64_t n = 0;
      for (const auto& x : iv) n += x.size();
      anomalies += fmt::format(" {} {};", FormatCountOf(n, "ledger"), ToString(cls));
    }
    std::string_view verdict;
    switch (r.verdict()) {
      case ChaosVerdict::kValid: verdict = "valid"; break;
      case ChaosVerdict::kUnknown: verdict = "INCONCLUSIVE (a planned fault never fired or another detector caught it)"; break;
      case ChaosVerdict::kInvalid: verdict = "INVALID"; break;
    }
    reporter.Note(fmt::format("chaos: round {} {} in {}{}", r.round, verdict, FormatDuration(r.seconds),
                              anomalies.empty() ? "" : ":" + anomalies));
    report.rounds.push_back(std::move(r));
  }
  if (report.valid && !o.keep) LD_RETURN_IF_ERROR(DropOwnedSchema(*conn, base.plan.schema));
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  UnregisterCleanup(cleanup);
  report.seconds = wall.Seconds();
  return report;
}

}  // namespace ledgerdiff::verify
