// Text and JSON of a verify report (contracts in verify_text_json.h).
#include "report/verify_text_json.h"

#include <fmt/format.h>

#include "core/report.h"
#include "core/text.h"
#include "report/ingest_text_json.h"

namespace ledgerdiff::report {

using verify::VerifyReport;

nlohmann::json VerifyReportToJson(const VerifyReport& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) phases.push_back({{"name", p.name}, {"seconds", p.seconds}});
  nlohmann::json diff = diff::DiffReportToJson(r.diff);
  nlohmann::json j = {
      {"verdict", r.verdict()},
      {"identical", r.identical},
      {"run_id", r.run_id},
      {"range", {{"from", r.range.from}, {"to", r.range.to}}},
      {"workers", r.workers},
      {"job_size", r.job_size},
      {"schemas", {{"serial", r.serial_schema.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.serial_schema)},
                   {"parallel", r.parallel_schema},
                   {"kept", r.schemas_kept}}},
      {"baseline", r.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.baseline)},
      {"phases", phases},
      {"speedup", r.speedup},
      {"rows_per_table",
       {{"serial", r.serial ? nlohmann::json(r.serial->rows_per_table) : nlohmann::json(nullptr)},
        {"parallel", r.parallel.rows_per_table}}},
      {"first_divergent_ledger", diff.value("first_divergent_ledger", nlohmann::json(nullptr))},
      {"divergent_tables", diff.value("divergent_tables", nlohmann::json::array())},
      {"rows", diff.value("rows", nlohmann::json::array())},
      {"excluded_columns", diff.value("excluded_columns", nlohmann::json::array())},
      {"diff", diff},
      {"parallel_run", IngestReportToJson(r.parallel)},
  };
  if (r.serial) j["serial_run"] = IngestReportToJson(*r.serial);
  if (!r.look_again.empty()) j["look_again"] = r.look_again;
  j["first_divergent_job"] = nullptr;
  if (const auto& w = r.first_divergent_job)
    j["first_divergent_job"] = {{"job", w->job},         {"attempt", w->attempt},   {"worker", w->worker},
                                {"from", w->range.from}, {"to", w->range.to}, {"position", w->position}};
  if (!r.kept_cluster.empty())
    j["kept_cluster"] = {{"dir", r.kept_cluster}, {"remove", r.remove_command}};
  if (!r.evidence_gone.empty()) j["evidence_gone"] = r.evidence_gone;
  if (!r.saved_baseline.empty()) j["saved_baseline"] = r.saved_baseline;
  if (!r.bug.empty()) j["injected_bug"] = r.bug;
  if (!r.error.empty()) j["error"] = r.error;
  if (r.target) j["target"] = r.target->ToJson();
  return j;
}

std::string DescribeWritingJob(Ledger ledger, const verify::WritingJob& w) {
  return fmt::format("ledger {} was written on the parallel side by job {} (ledgers {}, attempt {}, worker {}); it is the job's "
                     "{} ledger{}",
                     ledger, w.job, w.range.str(), w.attempt, w.worker, w.position,
                     w.position == "inner" ? "" : ": a job boundary, suspect the boundary handling");
}

std::string RenderVerifyText(const VerifyReport& r) {
  std::string out = r.target ? r.target->Line() + "\n" : "";
  if (!r.error.empty()) {
    out += fmt::format("ERROR: {}\n", r.error);
  } else {
    out += diff::RenderDiffText(r.diff);
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  if (r.first_divergent_job && r.diff.first_divergent_ledger)
    out += DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job) + "\n";
  out += fmt::format("verify {}: {} ({}), {}, jobs of {}\n", r.run_id, r.range.str(),
                     FormatCountOf(r.range.size(), "ledger"), FormatCountOf(r.workers, "worker"),
                     FormatCountOf(r.job_size, "ledger"));
  for (const auto& p : r.phases) out += fmt::format("  {:<18} {:>10}\n", p.name, FormatDuration(p.seconds));
  if (r.speedup > 0) out += fmt::format("  parallel speed-up  {:>9.2f}x\n", r.speedup);
  if (!r.saved_baseline.empty()) out += fmt::format("  baseline saved to {}\n", r.saved_baseline);
  if (r.schemas_kept) {
    out += fmt::format("  schemas kept: {}{}\n", r.serial_schema.empty() ? "" : "\"" + r.serial_schema + "\", ",
                       "\"" + r.parallel_schema + "\"");
    if (!r.kept_cluster.empty()) out += fmt::format("  embedded cluster kept in {}\n", r.kept_cluster);
    if (!r.look_again.empty()) out += fmt::format("  look again: {}\n", r.look_again);
    if (!r.remove_command.empty()) out += fmt::format("  remove it when done: {}\n", r.remove_command);
  }
  if (!r.evidence_gone.empty()) out += fmt::format("  nothing kept: {}\n", r.evidence_gone);
  out += fmt::format("verdict: {}\n", UpperAscii(r.verdict()));
  return out;
}

}  // namespace ledgerdiff::report
