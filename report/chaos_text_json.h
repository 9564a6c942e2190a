#pragma once
// Text and JSON of a chaos session (`chaos`, `chaos --format json`).
//
// Text: one line per round (jobs, attempts, retried, recovered, time, valid, faults with the
// detector that caught each) with its detector counts, why a fault does not count, and its
// anomalies (each anomalous ledger listed there, once), then the verdict in plain words (faults
// fired of planned per kind, detectors, jobs, how many ledgers per anomaly class, time) and the
// replay command. JSON: the stable object
// documented in verify/README.md ("chaos --format json").
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "verify/chaos.h"

namespace ledgerdiff::report {

std::string RenderChaosText(const verify::ChaosReport& report);
nlohmann::json ChaosReportToJson(const verify::ChaosReport& report);

}  // namespace ledgerdiff::report
