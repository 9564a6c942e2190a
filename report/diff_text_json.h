// Renderers of a diff::DiffReport: text and JSON. The JSON object is stable and documented in
// diff/README.md (render_test's DocumentedJson keeps the two equal).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "diff/diff.h"

namespace ledgerdiff::report {

nlohmann::json DiffReportToJson(const diff::DiffReport& report);
std::string RenderDiffText(const diff::DiffReport& report);

// What every renderer shows for a divergent table at a ledger in place of an empty row diff when
// the table has columns of another type class: "columns of another type class: details (jsonb on
// the left, json on the right); the rows read the same as text" (sides named `left_name` /
// `right_name`, as StoredFlippedNote does). "" when the row diff is not empty, a side's rows are
// not available (a manifest: nothing is known of them), or no column's class differs; the
// renderers then show the row diff as it is.
std::string ClassDifferenceExplanation(const diff::TableRowDiff& rd, const std::string& left_name = "left",
                                       const std::string& right_name = "right");

// The instant windowed tables were settled at (diff::DiffReport::settled_before_ms), as UTC
// "2015-10-12T21:03:00.000Z"; "no ledger" for dump::kNothingSettled or earlier.
std::string SettledInstant(int64_t epoch_ms);

}  // namespace ledgerdiff::report
