#pragma once
// Text and JSON of the gate's self-test (`selftest`, `selftest --format json`).
//
// Text: one line per case (kind, injected ledger, reported ledger, caught, divergent tables or
// error; the clean run, which injects no bug, reads "no bug injected: identical, as expected")
// and the verdict. JSON: {passed, range, cases: [{kind, ledger, reported_ledger,
// divergent_tables, caught, bug_injected, outcome, seconds, error}], seconds}: `caught` is the
// case's expected outcome (a bug caught at its ledger; for the clean run, identical), `outcome`
// the same sentence as JUnit's and Markdown's (SelftestOutcome).
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "verify/selftest.h"

namespace ledgerdiff::report {

// One case's outcome in words, the same in text, JSON, JUnit and Markdown: "caught at ledger 150",
// "NOT caught: injected at ledger 251, reported at ledger 252", "no bug injected: identical, as
// expected", "error: ...".
std::string SelftestOutcome(const verify::SelftestCase& c);
std::string RenderSelftestText(const verify::SelftestReport& report);
nlohmann::json SelftestReportToJson(const verify::SelftestReport& report);

}  // namespace ledgerdiff::report
