#pragma once
// Text and JSON of verify-range's state comparison (verify/state_compare.h; the JSON object
// "state" is documented in verify/README.md, "State tables").
// INVARIANT: pure functions of the comparison.

#include <string>

#include <nlohmann/json.hpp>

#include "diff/diff.h"
#include "verify/state_compare.h"

namespace ledgerdiff::report {

// "state: <verdict> at ledger L: T tables, R rows ..." then one line per differing key (its
// columns: the changed ones, or the whole row on the side that has it), or the note.
std::string RenderStateText(const verify::StateComparison& state);
nlohmann::json StateToJson(const verify::StateComparison& state);
// The line a verdict the state changed gets after the history's verdict line ("" when the state
// did not change it): the history said `history`, the comparison as a whole says `combined`.
std::string RenderStateVerdictLine(diff::Verdict history, diff::Verdict combined);

}  // namespace ledgerdiff::report
