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
#include <vector>

#include "core/ledger_range.h"
#include "diff/diff.h"
#include "verify/verify.h"

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

// The count with thousands separators, or an em dash for -1 (not known).
std::string CountOrDash(int64_t n);

// Sum of the report's phase times.
double TotalSeconds(const verify::VerifyReport& r);

// Row diff of one table as plain text lines ("- only serial: ...", "+ only parallel: ...",
// "~ changed (key): col: old -> new"), at most `max_lines` row lines plus a summary line;
// values cut at `max_value_bytes`.
std::vector<std::string> RowDiffLines(const diff::TableRowDiff& rd, const Sides& sides, size_t max_lines,
                                      size_t max_value_bytes);

// The diff's soundness findings as one-line sentences, shared by JUnit, Markdown and HTML.
// `problems`: lookup differences and side invariant violations (each fails the gate);
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

}  // namespace ledgerdiff::report
