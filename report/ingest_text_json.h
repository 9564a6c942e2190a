#pragma once
// Text and JSON of an ingestion report (`ingest`, `ingest --format json`, and the serial and
// parallel runs inside a verify report).
//
// Text: what was ingested (or why it failed, with the failed jobs), rows per table, rates and
// retry counts. JSON: ok, run_id, schema, range, workers, job_size, jobs, ledgers,
// rows_per_table, rows, wall_s, ledgers_per_s, rows_per_s, attempts, retried_jobs,
// workers_replaced, failed_jobs, timeline (every attempt), restart_range and error when set.
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "ingest/ingest_report.h"

namespace ledgerdiff::report {

std::string RenderIngestText(const ingest::IngestReport& report);
nlohmann::json IngestReportToJson(const ingest::IngestReport& report);

// The `ingest` command's output: the report, the workers that ended with an error or a signal,
// and (text) a hint when the embedded database goes away with the process.
std::string RenderIngestCommandText(const ingest::IngestReport& report, bool database_removed_on_exit);
nlohmann::json IngestCommandToJson(const ingest::IngestReport& report);

}  // namespace ledgerdiff::report
