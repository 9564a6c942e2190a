#pragma once
// Text and JSON of a chaos session (`chaos`, `chaos --format json`).
//
// Text: one line per round (jobs, attempts, retried, recovered, time, valid, faults with the
// detector that caught each) with its detector counts, why a fault does not count, and its
// anomalies, then a Jepsen-style verdict map and the replay command. JSON: the stable object
// documented in verify/README.md ("chaos --format json").
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "verify/chaos.h"

namespace ledgerdiff::report {

std::string RenderChaosText(const verify::ChaosReport& report);
nlohmann::json ChaosReportToJson(const verify::ChaosReport& report);

}  // namespace ledgerdiff::report
