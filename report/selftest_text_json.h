#pragma once
// Text and JSON of the gate's self-test (`selftest`, `selftest --format json`).
//
// Text: one line per case (kind, injected ledger, reported ledger, caught, divergent tables or
// error) and the verdict. JSON: {passed, range, cases: [{kind, ledger, reported_ledger,
// divergent_tables, caught, seconds, error}], seconds}.
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "verify/selftest.h"

namespace ledgerdiff::report {

std::string RenderSelftestText(const verify::SelftestReport& report);
nlohmann::json SelftestReportToJson(const verify::SelftestReport& report);

}  // namespace ledgerdiff::report
