// Text and JSON of a chaos session (contract in chaos_text_json.h).
#include "report/chaos_text_json.h"

#include <fmt/format.h>

#include "core/report.h"
#include "report/escape.h"

namespace ledgerdiff::verify {

// A round's JSON object: each key is the field of that name (the documented keys,
// verify/README.md), listed once here; faults and anomalies are added where it is built.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ChaosRound, round, valid, schema, schema_kept, ingest_ok, ingest_error, jobs,
                                   attempts, retried_jobs, recovered_jobs, orchestrator_restarts, redone_after_resume,
                                   inconclusive, seconds)

}  // namespace ledgerdiff::verify

namespace ledgerdiff::report {

using verify::ChaosReport;

namespace {

// "heartbeat_timeout 1, process_exit 2": the detectors that caught something.
std::string DetectorCounts(const std::map<ingest::Detector, uint32_t>& counts) {
  std::string s;
  for (ingest::Detector d : ingest::kDetectors) {
    auto it = counts.find(d);
    if (it != counts.end() && it->second > 0)
      s += fmt::format("{}{} {}", s.empty() ? "" : ", ", ingest::ToString(d), it->second);
  }
  return s.empty() ? "none" : s;
}

// {"heartbeat_timeout": n, ...}: every detector, 0 when it caught nothing.
nlohmann::json DetectorCountsJson(const std::map<ingest::Detector, uint32_t>& counts) {
  nlohmann::json j = nlohmann::json::object();
  for (ingest::Detector d : ingest::kDetectors) {
    auto it = counts.find(d);
    j[std::string(ingest::ToString(d))] = it == counts.end() ? 0 : it->second;
  }
  return j;
}

}  // namespace

std::string RenderChaosText(const ChaosReport& r) {
  std::string out = r.target ? r.target->Line() + "\n" : "";
  out += fmt::format("chaos {} ({}), {}, jobs of {}, seed {}, {}, engine {}{}\n", r.options.plan.range.str(),
                     FormatCountOf(r.options.plan.range.size(), "ledger"), FormatCountOf(r.options.plan.workers, "worker"),
                     FormatCountOf(r.options.plan.job_size, "ledger"), r.options.plan.seed, FormatCountOf(r.rounds.size(), "round"),
                     dump::ToString(r.options.engine), r.options.unsafe_ingester ? ", UNSAFE ingester (negative control)" : "");
  out += fmt::format("  {:<6} {:>8} {:>9} {:>8} {:>10} {:>9}  {:<6} {}\n", "round", "jobs", "attempts", "retried",
                     "recovered", "time", "valid", "faults / anomalies");
  for (const auto& round : r.rounds) {
    std::string faults;
    for (const auto& f : round.faults) {
      const std::string_view by = f.detector ? ingest::ToString(*f.detector) : "nothing";
      const bool idle_kill = f.in_flight && *f.in_flight == 0;  // an orchestrator kill that tested no resume
      std::string caught = f.injected    ? fmt::format(" [{}]", by)
                           : idle_kill   ? std::string(" [NOT COUNTED: fired with no job in flight]")
                           : f.performed ? fmt::format(" [NOT COUNTED: caught by {}, not {}]", by,
                                                       ingest::ToString(verify::ExpectedDetector(f.plan.kind)))
                                         : std::string(" [NOT COUNTED: never fired]");
      faults += fmt::format("{}{}{}", faults.empty() ? "" : ", ", verify::DescribeFault(f.plan), caught);
    }
    out += fmt::format("  {:<6} {:>8} {:>9} {:>8} {:>10} {:>9}  {:<6} {}\n", round.round, round.jobs, round.attempts,
                       round.retried_jobs, round.recovered_jobs, FormatDuration(round.seconds),
                       round.valid ? "yes" : "NO", faults);
    out += fmt::format("  {:<6} caught by: {}\n", "", DetectorCounts(round.detectors));
    for (const auto& f : round.faults)
      if (!f.injected) out += fmt::format("  {:<6} {} not counted: {}\n", "", verify::ToString(f.plan.kind), f.not_counted);
    for (const auto& [cls, iv] : round.anomalies)
      out += fmt::format("  {:<6} anomaly {}: ledgers {}\n", "", verify::ToString(cls), Intervals(iv));
    if (!round.ingest_ok) out += fmt::format("  {:<6} ingest failed: {}\n", "", round.ingest_error);
    if (round.redone_after_resume)
      out += fmt::format("  {:<6} {} finished jobs ran again after the orchestrator was resumed\n", "",
                         round.redone_after_resume);
    if (round.schema_kept) out += fmt::format("  {:<6} schema kept: \"{}\"\n", "", round.schema);
  }
  // The verdict in plain words. Each anomalous ledger is listed once, under its round above;
  // here only how many there are.
  switch (r.verdict()) {
    case verify::ChaosVerdict::kValid: out += "verdict: valid\n"; break;
    case verify::ChaosVerdict::kUnknown:
      out += "verdict: unknown (a planned fault never fired or was caught by another detector than the one it exists "
             "to prove; see the rounds above)\n";
      break;
    case verify::ChaosVerdict::kInvalid: out += "verdict: INVALID\n"; break;
  }
  std::string fired;
  for (const verify::FaultKind k : verify::kFaultKinds) {
    const uint32_t planned = r.planned.count(k) ? r.planned.at(k) : 0;
    const uint32_t injected = r.injected.count(k) ? r.injected.at(k) : 0;
    if (planned > 0 || injected > 0)
      fired += fmt::format("{}{} {} of {}", fired.empty() ? "" : ", ", verify::ToString(k), injected, planned);
  }
  out += fmt::format("  faults fired: {} (fired: caught by the detector its kind exists to prove)\n",
                     fired.empty() ? "none planned" : fired);
  out += fmt::format("  caught by: {}\n", DetectorCounts(r.detectors));
  out += fmt::format("  jobs: {} retried, {} recovered\n", FormatCount(r.jobs_retried), FormatCount(r.jobs_recovered));
  std::string anomalies;
  for (const verify::AnomalyClass cls : verify::kAnomaliesBySeverity) {
    auto it = r.anomalies.find(cls);
    if (it == r.anomalies.end() || it->second.empty()) continue;
    uint64_t n = 0;
    for (const auto& iv : it->second) n += iv.size();
    anomalies += fmt::format("{}{} {}", anomalies.empty() ? "" : ", ", FormatCountOf(n, "ledger"), verify::ToString(cls));
  }
  out += fmt::format("  anomalies: {}\n", anomalies.empty() ? "none" : anomalies + " (listed under their rounds above)");
  out += fmt::format("  time: baseline {}, total {}\n", FormatDuration(r.baseline_s), FormatDuration(r.seconds));
  out += fmt::format("replay: {}\n", r.replay);
  return out;
}

nlohmann::json ChaosReportToJson(const ChaosReport& r) {
  auto intervals = [](const std::vector<LedgerRange>& iv) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : iv) a.push_back({x.from, x.to});
    return a;
  };
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& round : r.rounds) {
    nlohmann::json faults = nlohmann::json::array();
    for (const auto& f : round.faults) {
      nlohmann::json jf = {
          {"kind", verify::ToString(f.plan.kind)},
          {"injected", f.injected},
          {"detail", f.detail},
          {"performed", f.performed},
          {"detector", f.detector ? nlohmann::json(ingest::ToString(*f.detector)) : nlohmann::json(nullptr)},
          {"expected_detector", ingest::ToString(verify::ExpectedDetector(f.plan.kind))},
          {"not_counted", f.injected ? nlohmann::json(nullptr) : nlohmann::json(f.not_counted)}};
      if (f.plan.kind == verify::FaultKind::kOrchestrator) {
        jf["after_jobs_done"] = f.plan.after_jobs_done;
        jf["in_flight"] = f.in_flight ? nlohmann::json(*f.in_flight) : nlohmann::json(nullptr);
      } else {
        jf["job"] = f.plan.job;
      }
      if (!f.plan.stage.empty()) jf["stage"] = f.plan.stage;
      faults.push_back(jf);
    }
    nlohmann::json anomalies = nlohmann::json::object();
    for (const auto& [cls, iv] : round.anomalies) anomalies[std::string(verify::ToString(cls))] = intervals(iv);
    nlohmann::json jr = round;
    jr["faults"] = faults;
    jr["anomalies"] = anomalies;
    jr["detectors"] = DetectorCountsJson(round.detectors);
    rounds.push_back(jr);
  }
  nlohmann::json anomalies = nlohmann::json::object();
  for (const verify::AnomalyClass cls : verify::kAnomaliesBySeverity) {
    auto it = r.anomalies.find(cls);
    anomalies[std::string(verify::ToString(cls))] = it == r.anomalies.end() ? nlohmann::json::array() : intervals(it->second);
  }
  nlohmann::json injected = nlohmann::json::object(), planned = nlohmann::json::object();
  for (const verify::FaultKind k : verify::kFaultKinds) {
    const std::string name(verify::ToString(k));
    injected[name] = r.injected.count(k) ? r.injected.at(k) : 0;
    planned[name] = r.planned.count(k) ? r.planned.at(k) : 0;
  }
  nlohmann::json j = {{"valid", r.valid},
                      {"inconclusive", r.inconclusive},
                      {"verdict", verify::ToString(r.verdict())},
                      {"range", {{"from", r.options.plan.range.from}, {"to", r.options.plan.range.to}}},
                      {"workers", r.options.plan.workers},
                      {"job_size", r.options.plan.job_size},
                      {"seed", r.options.plan.seed},
                      {"engine", dump::ToString(r.options.engine)},
                      {"unsafe_ingester", r.options.unsafe_ingester},
                      {"faults_planned", planned},
                      {"faults_injected", injected},
                      {"detectors", DetectorCountsJson(r.detectors)},
                      {"jobs_retried", r.jobs_retried},
                      {"jobs_recovered", r.jobs_recovered},
                      {"anomalies", anomalies},
                      {"rounds", rounds},
                      {"baseline_seconds", r.baseline_s},
                      {"seconds", r.seconds},
          {"replay", r.replay}};
  if (r.target) j["target"] = r.target->ToJson();
  return j;
}

}  // namespace ledgerdiff::report
