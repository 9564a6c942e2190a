// The nemesis's pure judgements (verify/chaos.h): why a fault never fired, whether an
// orchestrator kill fires now, and whether one that fired counts. Split from chaos.cc, which runs
// the rounds, to keep each file under 800 lines.
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/report.h"
#include "core/text.h"
#include "verify/chaos.h"

namespace ledgerdiff::verify {

std::string WhyNeverFired(const RoundFault& f, const FaultFate& fate) {
  const std::string end = fate.run_end.empty() ? "the round ended" : fate.run_end;
  if (f.plan.kind == FaultKind::kOrchestrator) {
    return fmt::format("never fired: {} before the kill was due{}", end,
                       fate.kill_wait.empty() ? std::string() : " (" + fate.kill_wait + ")");
  }
  const std::string target = fmt::format("job {} attempt {}", f.plan.job, f.attempt);
  const std::string point = f.plan.kind == FaultKind::kCrash   ? "its crash point at " + f.plan.stage
                            : fate.external_ingester ? "the nemesis (it fires once it sees the attempt running)"
                                                     : "its hold point at " + f.plan.stage;
  const std::string error = fate.attempt_error.empty() ? std::string() : ": " + fate.attempt_error;
  if (!fate.attempt_outcome) {
    if (fate.job_state == ingest::JobState::kDone)
      return fmt::format("never fired: {} never ran: job {} was done at attempt {} before it", target, f.plan.job,
                         fate.job_attempt);
    if (fate.job_state == ingest::JobState::kFailed)
      return fmt::format("never fired: {} never ran: job {} failed at attempt {} (out of retries)", target,
                         f.plan.job, fate.job_attempt);
    return fmt::format("never fired: {} was never claimed ({}; the job is {}): no worker took it", target, end,
                       fate.job_state ? ingest::ToString(*fate.job_state) : "unknown");
  }
  switch (*fate.attempt_outcome) {
    case ingest::AttemptOutcome::kDone:
      if (fate.external_ingester)
        return fmt::format("never fired: {} finished before the nemesis saw it running (it looks every 20 ms)", target);
      return fmt::format("never fired: {} finished (done) without reaching {}: the job's ingestion never passed that "
                         "point",
                         target, point);
    case ingest::AttemptOutcome::kRunning:
      return fmt::format("never fired: {} was still running short of {} when {}", target, point, end);
    case ingest::AttemptOutcome::kFailed:
    case ingest::AttemptOutcome::kLost:
    case ingest::AttemptOutcome::kFenced:
    case ingest::AttemptOutcome::kInterrupted:
    case ingest::AttemptOutcome::kCancelled:
      break;
  }
  return fmt::format("never fired: {} ended ({}{}) before reaching {}", target, ingest::ToString(*fate.attempt_outcome), error,
                     point);
}

KillDue OrchestratorKillDue(const std::vector<RoundFault>& faults, const RoundFault& due,
                            const std::vector<ingest::JobRow>& jobs, uint32_t workers, std::string& kill_wait) {
  uint32_t done = 0, running = 0;
  for (const auto& j : jobs) {
    done += j.state == ingest::JobState::kDone ? 1 : 0;
    running += j.state == ingest::JobState::kRunning ? 1 : 0;
  }
  if (done < due.plan.after_jobs_done) {
    kill_wait = fmt::format("it was due after {} done; {} were done when last seen",
                            FormatCountOf(due.plan.after_jobs_done, "job"), FormatCount(done));
    return KillDue::kNo;
  }
  // A kill with nothing in flight tests no resume of a job in flight: wait for one, however long.
  if (running == 0) {
    kill_wait = fmt::format("{} done, it waited for a job in flight; none was (a kill then would test no resume)",
                            FormatCount(done));
    return KillDue::kNo;
  }
  std::set<std::pair<uint32_t, uint32_t>> targets;
  for (const auto& f : faults)
    if (PerJob(f.plan.kind)) targets.insert({f.plan.job, f.attempt});
  bool other_in_flight = false;
  for (const auto& j : jobs)
    other_in_flight = other_in_flight || (j.state == ingest::JobState::kRunning && !targets.count({j.job_id, j.attempt}));
  if (!other_in_flight && done + 1 < due.plan.after_jobs_done + workers) {
    kill_wait = fmt::format("{} done, it waited for a job in flight that no fault targets; none was", FormatCount(done));
    return KillDue::kNo;
  }
  bool await_catch = false, await_hang = false;
  for (const auto& f : faults) {
    if (!PerJob(f.plan.kind)) continue;
    for (const auto& j : jobs) {
      if (j.job_id != f.plan.job || j.state != ingest::JobState::kRunning || j.attempt != f.attempt) continue;
      if (f.plan.kind == FaultKind::kCrash) await_catch = true;
      if (f.performed) (f.plan.kind == FaultKind::kHang ? await_hang : await_catch) = true;
    }
  }
  if (await_hang) {
    kill_wait = "it waited for a fired hang to be caught by its heartbeat timeout";
    return KillDue::kAwaitHang;
  }
  if (await_catch) {
    kill_wait = "it waited for a fired fault to be caught, or a crash target to abort";
    return KillDue::kAwaitCatch;
  }
  return KillDue::kNow;
}

std::string JudgeOrchestratorKill(RoundFault& f, uint32_t kill, uint32_t resumes, const std::string& run_id) {
  if (!f.performed) return "";
  if (f.in_flight && *f.in_flight == 0) {
    f.not_counted = fmt::format("fired with no job in flight: it tested no resume of a job in flight (the kill: {})",
                                f.detail);
    return "";
  }
  if (resumes < kill) {
    f.not_counted = fmt::format("fired, but no restarted orchestrator resumed run {} ({} resumes for {} kills)", run_id,
                                resumes, kill);
    return "";
  }
  f.detector = ingest::Detector::kOrchestratorRestart;
  return fmt::format("the restarted orchestrator resumed run {}", run_id);
}

}  // namespace ledgerdiff::verify
