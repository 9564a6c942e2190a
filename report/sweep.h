#pragma once
// Renderings of a sweep report: text table, JSON (documented in verify/README.md), CSV (one
// line per cell) and a self-contained HTML report (inline CSS and SVG: a heatmap workers x job
// size coloured by ledgers/s with divergent and failed cells marked, and the throughput curve
// with the USL fit). Pure functions of the report, except WriteSweepHtml which writes a file.

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "verify/sweep.h"

namespace ledgerdiff::report {

using verify::SweepReport;

std::string RenderSweepText(const SweepReport& report);
nlohmann::json SweepReportToJson(const SweepReport& report);
std::string RenderSweepCsv(const SweepReport& report);
std::string RenderSweepHtml(const SweepReport& report);
// Writes DIR/index.html (created through a temporary file, then renamed).
Status WriteSweepHtml(const SweepReport& report, const std::string& dir);

}  // namespace ledgerdiff::report
