#pragma once
// Text and JSON of a verify report (`verify`, `verify --format json`).
//
// Text: the diff's text (or the error), the run's facts and phase times, the verdict line.
// JSON: the stable object documented in verify/README.md ("verify --format json"); it embeds
// the whole `diff --format json` object and the ingestion reports (IngestReportToJson).
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "verify/verify.h"

namespace ledgerdiff::report {

nlohmann::json VerifyReportToJson(const verify::VerifyReport& report);
// One sentence linking the first divergent ledger to the parallel job that wrote it.
std::string DescribeWritingJob(Ledger ledger, const verify::WritingJob& w);
std::string RenderVerifyText(const verify::VerifyReport& report);

}  // namespace ledgerdiff::report
