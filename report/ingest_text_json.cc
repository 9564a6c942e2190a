// Text and JSON of an ingestion report (contract in ingest_text_json.h).
#include "report/ingest_text_json.h"

#include <cmath>

#include <fmt/format.h>

#include "core/report.h"

namespace ledgerdiff::report {

using ingest::IngestReport;

namespace {

// A rate per second, rounded, with thousands separators ("12,345").
std::string Rate(double per_s) {
  return std::isfinite(per_s) && per_s > 0 ? FormatCount(static_cast<uint64_t>(std::llround(per_s))) : "0";
}

}  // namespace

std::string RenderIngestText(const IngestReport& r) {
  std::string out = r.target ? r.target->Line() + "\n" : "";
  if (r.ok) {
    out += fmt::format("ingested {} ({}) into \"{}\" with {}, {} of up to {}, in {}\n",
                       FormatCountOf(r.ledgers, "ledger"), r.range.str(), r.schema, FormatCountOf(r.workers, "worker"),
                       FormatCountOf(r.jobs, "job"), FormatCountOf(r.job_size, "ledger"), FormatDuration(r.wall_s));
  } else {
    out += fmt::format("ingest FAILED for \"{}\" ({}): {}\n", r.schema, r.range.str(), r.error);
    for (const auto& j : r.failed_jobs)
      out += fmt::format("  failed job {} [{}] after {}: {}\n", j.job_id, j.range.str(),
                         FormatCountOf(j.attempt, "attempt"), j.error);
  }
  out += fmt::format("  {:<36} {:>12}\n", "table", "rows");
  for (const auto& [t, n] : r.rows_per_table) out += fmt::format("  {:<36} {:>12}\n", t, FormatCount(n));
  out += fmt::format("  {:<36} {:>12}\n", "total", FormatCount(r.rows));
  out += fmt::format("  {} ledgers/s, {} rows/s; {}, {} retried, {} replaced; run {}\n",
                     Rate(r.ledgers_per_s()), Rate(r.rows_per_s()), FormatCountOf(r.attempts, "attempt"),
                     FormatCountOf(r.retried_jobs, "job"), FormatCountOf(r.workers_replaced, "worker"), r.run_id);
  if (!r.log_dir.empty()) out += fmt::format("  ingester output per job: {}/job-N.{{stdout,stderr}}.log\n", r.log_dir);
  return out;
}

nlohmann::json IngestReportToJson(const IngestReport& r) {
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& j : r.failed_jobs)
    failed.push_back({{"job", j.job_id}, {"from", j.range.from}, {"to", j.range.to}, {"attempts", j.attempt}, {"error", j.error}});
  nlohmann::json timeline = nlohmann::json::array();
  for (const auto& a : r.timeline)
    timeline.push_back(
        {{"job", a.job_id},
         {"attempt", a.attempt},
         {"worker", a.worker},
         {"slot", a.slot},
         {"from", a.range.from},
         {"to", a.range.to},
         {"start_s", a.start_s},
         {"end_s", a.end_s},
         {"outcome", a.outcome},
         {"error", a.error},
         {"detector", a.detector ? nlohmann::json(ingest::ToString(*a.detector)) : nlohmann::json(nullptr)}});
  // A line per aspect: the run, its shape, what it wrote, how fast, what it took.
  nlohmann::json j = {{"ok", r.ok}, {"run_id", r.run_id}, {"schema", r.schema},
                      {"range", {{"from", r.range.from}, {"to", r.range.to}}},
                      {"workers", r.workers}, {"job_size", r.job_size}, {"jobs", r.jobs},
                      {"ledgers", r.ledgers}, {"rows_per_table", r.rows_per_table}, {"rows", r.rows},
                      {"wall_s", r.wall_s}, {"ledgers_per_s", r.ledgers_per_s()}, {"rows_per_s", r.rows_per_s()},
                      {"attempts", r.attempts}, {"retried_jobs", r.retried_jobs}, {"workers_replaced", r.workers_replaced},
                      {"failed_jobs", failed}, {"timeline", timeline}};
  if (r.restart_range) j["restart_range"] = {{"from", r.restart_range->from}, {"to", r.restart_range->to}};
  if (!r.ok) j["error"] = r.error;
  j["log_dir"] = r.log_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.log_dir);  // null: built-in ingester
  if (r.target) j["target"] = r.target->ToJson();
  return j;
}

std::string RenderIngestCommandText(const ingest::IngestReport& report, bool database_removed_on_exit) {
  std::string text = RenderIngestText(report);
  if (report.workers_failed > 0)
    text += fmt::format("  {} failed (ended with an error or a signal; {} started)\n",
                        FormatCountOf(report.workers_failed, "worker"), FormatCountOf(report.workers_replaced, "replacement"));
  if (database_removed_on_exit) text += "  (the embedded database is removed on exit; --keep-db DIR keeps it)\n";
  return text;
}

nlohmann::json IngestCommandToJson(const ingest::IngestReport& report) {
  nlohmann::json j = IngestReportToJson(report);
  j["workers_failed"] = report.workers_failed;
  return j;
}

}  // namespace ledgerdiff::report
