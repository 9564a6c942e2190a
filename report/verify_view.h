#pragma once
// The view of a verify report that JUnit, Markdown and HTML all show: the two sides' names, one
// line per table, and a row diff as text lines. Shared so the formats cannot disagree.
//
// INVARIANT: pure functions of the report; pointers in a TableLine point into the report and
// live as long as it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"
#include "diff/diff.h"
#include "verify/verify.h"
#include "report/diff_text_json.h"

namespace ledgerdiff::report {

// What the two sides are called: the left is "serial" (or "baseline" when a manifest stood in
// for the serial ingest), the right is "parallel".
struct Sides {
  std::string left;
  std::string right;
};
Sides SideNames(const verify::VerifyReport& r);

struct TableLine {
  std::string table;
  int64_t left_rows = -1, right_rows = -1;  // -1: not known on that side
  uint64_t divergent_ledgers = 0;
  std::vector<LedgerRange> divergent;
  std::optional<Ledger> first;                    // first divergent ledger of this table
  const diff::TableAtLedger* at_first = nullptr;  // rows at the report's first divergent ledger
  const diff::TableRowDiff* row_diff = nullptr;
  bool compared = true;
  bool differs = false;
};

// One line per compared table (and any divergent table the comparison does not name); when
// nothing was compared (an ingestion failed), one line per table either side wrote, with
// compared == false.
std::vector<TableLine> TableLines(const verify::VerifyReport& r);

// "identical", "divergent" or "not compared".
std::string TableStatus(const TableLine& t);

// The ingestion runs of a verify report with their side names: "serial" (when it ran), then
// "parallel". INVARIANT: `run` points into the report.
struct SideRun {
  const char* side;
  const ingest::IngestReport* run;
};
std::vector<SideRun> SideRuns(const verify::VerifyReport& r);

// A failed job as one plain line, "parallel job 4 [101:125] failed after 3 attempts: <error>".
std::string FailedJobLine(const char* side, const ingest::JobRow& job);

// The count with thousands separators, or an em dash for -1 (not known).
std::string CountOrDash(int64_t n);

// Sum of the report's phase times.
double TotalSeconds(const verify::VerifyReport& r);

// Row diff of one table as plain text lines ("- only serial: ...", "+ only parallel: ...",
// "~ changed (key): col: old -> new"), at most `max_lines` row lines plus a summary line;
// values cut at `max_value_bytes`. An empty row diff that columns of another type class explain
// is one line, report::ClassDifferenceExplanation ("columns of another type class: ...").
std::vector<std::string> RowDiffLines(const diff::TableRowDiff& rd, const Sides& sides, size_t max_lines,
                                      size_t max_value_bytes);

// The diff's soundness findings as one-line sentences, shared by JUnit, Markdown and HTML.
// `problems`: lookup differences, side invariant violations and tables whose rows outside the
// range differ between the sides (DiffReport::outside_range_differences); each fails the gate.
// `warnings`: what was not compared (uncompared / one-side-only tables, rows outside the range,
// unreferenced lookup ids) and schema notes.
struct Soundness {
  struct Problem {
    std::string name;    // e.g. "lookup history_accounts", "invariant X (parallel)"
    std::string detail;  // one line
  };
  std::vector<Problem> problems;
  std::vector<std::string> warnings;
};
Soundness SoundnessOf(const diff::DiffReport& d);

// The findings as the titled lists Markdown and HTML show: "Soundness problems" (failing), then
// "Not compared / warnings"; a list without lines is left out.
struct FindingList {
  std::string_view title;
  bool failing = false;
  std::vector<std::string> lines;
};
std::vector<FindingList> FindingLists(const Soundness& s);

// The verdict's sentence for a divergent report that names no divergent ledger: what differs
// instead (the schemas, rows outside the range), the compared ledgers being identical.
std::string DivergenceWithoutLedger(const diff::DiffReport& d);

// Everything JUnit, Markdown and HTML show of a verify report beside its own fields, computed
// once per rendering so the formats cannot disagree.
struct VerifyView {
  Sides sides;
  std::vector<TableLine> tables;
  Soundness soundness;
};
VerifyView ViewOf(const verify::VerifyReport& r);

// A one-shot verify-range as verify's renderers (JUnit, Markdown, HTML) show it, so the cut-over
// page and the gate's page are one rendering (issue 46). `RangeShell`: a VerifyReport holding the
// range report's diff, range, verdict and look-again, and nothing else (no runs, phases, schemas
// or job). `RangeViewOf`: ViewOf the shell with the sides called "left" and "right".
verify::VerifyReport RangeShell(const verify::VerifyRangeReport& r);
VerifyView RangeViewOf(const verify::VerifyReport& shell);

// The headline finding of a verify-range, by its combined verdict (history and state), one line
// of plain text: "Identical", "Divergent at ledger N", "Divergent: <what differs>" (no divergent
// ledger: the schemas, rows outside the range, the state), "Incomplete: <what is missing>".
std::string RangeHeadline(const verify::VerifyRangeReport& r);

// Coverage as sentences, one per side, then what was not compared: "left holds 400 ledgers (2 to
// 401)", "right holds 397 ledgers (2 to 401); 3 ledgers missing: 7, 9:10", or "coverage not
// checked: ..." when it was not. Plain text.
std::vector<std::string> CoverageLines(const diff::DiffReport& d, const Sides& sides);
// What a side holds of the range: "400 ledgers (2 to 401)" or "no ledger of the range".
std::string CoverageHeld(const diff::SideCoverage& c);
// The ledgers a side lacks: "3 ledgers missing: 7, 9:10"; "" when none.
std::string CoverageMissing(const diff::SideCoverage& c);

}  // namespace ledgerdiff::report
