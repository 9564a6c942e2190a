// Renderers of a distributed run's status (report/runs_text_json.h).
#include "report/runs_text_json.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/pg.h"
#include "core/report.h"
#include "core/text.h"
#include "ingest/distributed.h"

namespace ledgerdiff::report {

namespace {

nlohmann::json JobJson(const ingest::JobRow& j) {
  return {{"job", j.job_id}, {"range", {{"from", j.range.from}, {"to", j.range.to}}}, {"attempt", j.attempt},
          {"worker", j.worker}, {"error", j.error.empty() ? nlohmann::json() : nlohmann::json(j.error)}};
}

}  // namespace

nlohmann::json RunStatusToJson(const ingest::RunStatus& s, const Target& target) {
  nlohmann::json stale = nlohmann::json::array(), failed = nlohmann::json::array();
  for (const auto& j : s.stale_jobs) {
    nlohmann::json o = JobJson(j);
    o["heartbeat_age_s"] = j.heartbeat_age_s;
    o["session_ended"] = !j.session_alive;
    o["status"] = ingest::StaleJobText(j);
    stale.push_back(o);
  }
  for (const auto& j : s.failed_jobs) failed.push_back(JobJson(j));
  return {{"run_id", s.run_id},
          {"schema", s.schema},
          {"state", ingest::ToString(s.state)},
          {"mode", s.mode},
          {"error", s.error.empty() ? nlohmann::json() : nlohmann::json(s.error)},
          {"range", {{"from", s.range.from}, {"to", s.range.to}}},
          {"job_size", s.job_size},
          {"created_at", s.created_at},
          {"jobs", {{"total", s.counts.total()},
                    {"pending", s.counts.pending},
                    {"running", s.counts.running},
                    {"done", s.counts.done},
                    {"failed", s.counts.failed},
                    {"cancelled", s.counts.cancelled}}},
          {"ledgers_done", s.counts.ledgers_done},
          {"workers", s.workers},
          {"workers_joined", s.worker_counts.joined},
          {"workers_alive", s.worker_counts.alive},
          {"workers_reconnecting", s.worker_counts.reconnecting},
          {"liveness", ingest::LivenessName(s.liveness)},
          {"stale_jobs", stale},
          {"failed_jobs", failed},
          {"target", target.ToJson()}};
}

std::string RunStatusText(const ingest::RunStatus& s) {
  std::string workers;
  const size_t seen = std::max<size_t>(s.workers.size(), s.worker_counts.joined);
  switch (s.liveness) {
    case ingest::Liveness::kNeverHadWorker: workers = "no worker has joined yet"; break;
    case ingest::Liveness::kNoWorkerAlive:
      workers = fmt::format("{} seen, no worker alive", FormatCountOf(seen, "worker"));
      break;
    case ingest::Liveness::kWorkersReconnecting:
      workers = fmt::format("{} seen, {} reconnecting", FormatCountOf(seen, "worker"),
                            FormatCount(s.worker_counts.reconnecting));
      break;
    case ingest::Liveness::kWorkersAlive:
      workers = s.worker_counts.joined > 0
                    ? fmt::format("{} seen, {} alive", FormatCountOf(seen, "worker"), FormatCount(s.worker_counts.alive))
                    : fmt::format("{} seen", FormatCountOf(seen, "worker"));
      break;
    case ingest::Liveness::kNotRunning: workers = FormatCountOf(s.workers.size(), "worker"); break;
  }
  std::string out = fmt::format(
      "{}  {:<7}  schema \"{}\"  ledgers {}  jobs {}/{} done, {} running, {} pending, {} failed{}  {}  created {}\n",
      s.run_id, ingest::ToString(s.state), s.schema, s.range.str(), s.counts.done, s.counts.total(), s.counts.running, s.counts.pending,
      s.counts.failed, s.counts.cancelled ? fmt::format(", {} cancelled", s.counts.cancelled) : "", workers,
      s.created_at);
  for (const auto& j : s.stale_jobs)
    out += fmt::format("    job {} [{}] attempt {}: {}\n", j.job_id, j.range.str(), j.attempt, ingest::StaleJobText(j));
  if (s.liveness == ingest::Liveness::kNoWorkerAlive)
    out += fmt::format("    no worker alive: {} pending, {} running; start `ledgerdiff worker --run {}`\n",
                       FormatCountOf(s.counts.pending, "job"), FormatCount(s.counts.running), s.run_id);
  if (s.liveness == ingest::Liveness::kWorkersReconnecting)
    out += fmt::format("    {} lost its database session and is reconnecting (a worker gives up after max(60 s, 2 x "
                       "the job timeout)); a new worker is not needed unless it does\n",
                       FormatCountOf(s.worker_counts.reconnecting, "worker"));
  if (s.liveness == ingest::Liveness::kNeverHadWorker)
    out += fmt::format("    start workers with `ledgerdiff worker --run {}`\n", s.run_id);
  for (const auto& j : s.failed_jobs)
    out += fmt::format("    job {} [{}] failed after {}: {}\n", j.job_id, j.range.str(), FormatCountOf(j.attempt, "attempt"),
                       j.error.empty() ? "no error recorded" : j.error);
  if (!s.error.empty()) out += fmt::format("    {}: {}\n", s.state == ingest::RunState::kCancelled ? "cancelled" : "error", s.error);
  return out;
}

std::string RenderRunListText(const std::vector<ingest::RunStatus>& runs, const Target& target) {
  std::string out = target.Line() + "\n";
  for (const auto& r : runs) out += RunStatusText(r);
  if (runs.empty()) out += "no runs\n";
  return out;
}

nlohmann::json RunListToJson(const std::vector<ingest::RunStatus>& runs, const std::vector<Target>& targets) {
  nlohmann::json out = nlohmann::json::array();  // each run names its target: the array has no other place
  for (size_t i = 0; i < runs.size() && i < targets.size(); ++i) out.push_back(RunStatusToJson(runs[i], targets[i]));
  return out;
}

std::string RenderPlanText(const ingest::RunSpec& spec, size_t jobs, const Target& target,
                           const std::string& reconnect_flags) {
  return fmt::format("# {}\n# run {}: schema \"{}\", ledgers {}, {} of {}; start workers with "
                     "`ledgerdiff worker --run {}{}{}`\n{}\n",
                     target.Line(), spec.run_id, spec.plan.schema, spec.plan.range.str(), FormatCountOf(jobs, "job"),
                     FormatCountOf(spec.plan.job_size, "ledger"), spec.run_id, reconnect_flags.empty() ? "" : " ",
                     reconnect_flags, spec.run_id);
}

std::string RenderRunCompleteText(const std::string& run_id) { return fmt::format("run {} complete\n", run_id); }

std::string RenderCancelText(const ingest::CancelReport& r, const Target& target, const std::string& reconnect_flags) {
  const std::string schema_flag = ShellQuote(r.schema, ShellQuoting::kWhenNeeded);
  return target.Line() + "\n" +
         fmt::format(
             "run {} cancelled: {} pending and {} running jobs fenced ({} done jobs keep their rows); its workers "
             "stop claiming and exit 1, and a running attempt can no longer commit (its data transaction rolls "
             "back)\nschema \"{}\" stays ledgerdiff's (mark \"{}\") and no run holds it now: reuse it with "
             "`ledgerdiff plan --fresh --schema {} ...` or `ledgerdiff ingest --fresh --schema {} ...`, or drop it "
             "with `ledgerdiff drop {}--schema {}`\n",
             r.run_id, r.pending, r.running, r.done, r.schema, r.schema_mark, schema_flag, schema_flag,
             reconnect_flags.empty() ? "" : reconnect_flags + " ", schema_flag);
}

nlohmann::json CancelReportToJson(const ingest::CancelReport& r, const Target& target) {
  return {{"run_id", r.run_id},
          {"state", "cancelled"},
          {"schema", r.schema},
          {"schema_mark", r.schema_mark},
          {"mode", r.mode},
          {"jobs_fenced", {{"pending", r.pending}, {"running", r.running}}},
          {"jobs_done", r.done},
          {"drop", fmt::format("DROP SCHEMA {} CASCADE", pg::QuoteIdent(r.schema))},
          {"target", target.ToJson()}};
}

std::string RenderDropText(const DropOutcome& drop, const Target& target) {
  std::string out = target.Line() + "\n";
  for (const auto& r : drop.cancelled_runs) out += fmt::format("cancelled run {}\n", r);
  for (const auto& s : drop.dropped) out += fmt::format("dropped schema \"{}\"\n", s);
  for (const auto& s : drop.absent) out += fmt::format("schema \"{}\" does not exist: nothing to drop\n", s);
  return out;
}

nlohmann::json DropOutcomeToJson(const DropOutcome& drop, const Target& target) {
  return {{"dropped", drop.dropped},
          {"absent", drop.absent},
          {"cancelled_runs", drop.cancelled_runs},
          {"target", target.ToJson()}};
}

}  // namespace ledgerdiff::report
