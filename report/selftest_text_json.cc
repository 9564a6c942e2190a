// Text and JSON of the self-test (contract in selftest_text_json.h).
#include "report/selftest_text_json.h"

#include <fmt/format.h>

#include "core/report.h"

namespace ledgerdiff::report {

using verify::SelftestReport;

std::string SelftestOutcome(const verify::SelftestCase& c) {
  if (!c.error.empty()) return "error: " + c.error;
  if (c.ledger == 0)  // the clean run: nothing to catch, identical is the expected outcome
    return c.caught ? "no bug injected: identical, as expected"
                    : fmt::format("no bug injected, yet DIVERGENT at ledger {} (expected identical)",
                                  c.reported ? std::to_string(*c.reported) : "?");
  if (c.caught) return fmt::format("caught at ledger {}", c.ledger);
  return fmt::format("NOT caught: injected at ledger {}, {}", c.ledger,
                     c.reported ? fmt::format("reported at ledger {}", *c.reported) : std::string("not reported"));
}

std::string RenderSelftestText(const SelftestReport& r) {
  std::string out = r.target ? r.target->Line() + "\n" : "";
  out += fmt::format("selftest over {} ({})\n", r.range.str(), FormatCountOf(r.range.size(), "ledger"));
  out += fmt::format("  {:<16} {:>8} {:>10}  {:<7} {}\n", "kind", "ledger", "reported", "caught", "tables");
  for (const auto& c : r.cases) {
    if (c.ledger == 0 && c.error.empty()) {  // the clean run: no bug, so no "caught" column
      out += fmt::format("  {:<16} {:>8} {:>10}  {}\n", c.kind, "-", c.reported ? std::to_string(*c.reported) : "-",
                         SelftestOutcome(c));
      continue;
    }
    std::string tables;
    for (const auto& t : c.tables) tables += (tables.empty() ? "" : ",") + t;
    out += fmt::format("  {:<16} {:>8} {:>10}  {:<7} {}\n", c.kind, c.ledger ? std::to_string(c.ledger) : "-",
                       c.reported ? std::to_string(*c.reported) : "-",
                       c.caught ? "yes" : "NO", c.error.empty() ? tables : "error: " + c.error);
  }
  out += fmt::format("selftest {} in {}\n", r.passed() ? "PASSED: every bug caught at its ledger, clean run identical"
                                                       : "FAILED",
                     FormatDuration(r.seconds));
  return out;
}

nlohmann::json SelftestReportToJson(const SelftestReport& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : r.cases) {
    cases.push_back({{"kind", c.kind},
                     {"ledger", c.ledger ? nlohmann::json(c.ledger) : nlohmann::json(nullptr)},
                     {"reported_ledger", c.reported ? nlohmann::json(*c.reported) : nlohmann::json(nullptr)},
                     {"divergent_tables", c.tables},
                     {"caught", c.caught},
                     {"bug_injected", c.ledger != 0},
                     {"outcome", SelftestOutcome(c)},
                     {"seconds", c.seconds},
                     {"error", c.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.error)}});
  }
  nlohmann::json j = {{"passed", r.passed()},
                      {"range", {{"from", r.range.from}, {"to", r.range.to}}},
                      {"cases", cases},
                      {"seconds", r.seconds}};
  if (r.target) j["target"] = r.target->ToJson();
  return j;
}

}  // namespace ledgerdiff::report
