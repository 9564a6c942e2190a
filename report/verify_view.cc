// The per-table view every format shows (contracts in verify_view.h).
#include "report/verify_view.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/report.h"
#include "core/text.h"
#include "report/escape.h"
#include "report/diff_text_json.h"

namespace ledgerdiff::report {

using verify::VerifyReport;

Sides SideNames(const VerifyReport& r) { return {r.baseline.empty() ? "serial" : "baseline", "parallel"}; }

std::vector<TableLine> TableLines(const VerifyReport& r) {
  const diff::DiffReport& d = r.diff;
  std::vector<TableLine> out;
  auto at_first = [&](const std::string& t) -> const diff::TableAtLedger* {
    for (const auto& x : d.divergent_tables)
      if (x.table == t) return &x;
    return nullptr;
  };
  auto row_diff = [&](const std::string& t) -> const diff::TableRowDiff* {
    for (const auto& x : d.rows)
      if (x.table == t) return &x;
    return nullptr;
  };
  if (!d.tables.empty()) {
    for (const auto& t : d.tables) {
      TableLine line;
      line.table = t.table;
      line.left_rows = static_cast<int64_t>(t.left_rows);
      line.right_rows = static_cast<int64_t>(t.right_rows);
      line.divergent_ledgers = t.divergent_ledgers;
      line.divergent = t.divergent;
      line.at_first = at_first(t.table);
      line.row_diff = row_diff(t.table);
      if (!t.divergent.empty()) line.first = t.divergent.front().from;
      else if (line.at_first) line.first = d.first_divergent_ledger;
      bool roots_differ = !t.left_root.empty() && !t.right_root.empty() && t.left_root != t.right_root;
      line.differs = !d.identical && (t.divergent_ledgers > 0 || line.at_first != nullptr || roots_differ ||
                                      t.left_rows != t.right_rows);
      out.push_back(std::move(line));
    }
    // A divergent table the comparison list does not name (defensive; should not happen).
    for (const auto& x : d.divergent_tables) {
      if (std::any_of(out.begin(), out.end(), [&](const TableLine& l) { return l.table == x.table; })) continue;
      TableLine line;
      line.table = x.table;
      line.at_first = &x;
      line.row_diff = row_diff(x.table);
      line.first = d.first_divergent_ledger;
      line.divergent_ledgers = 1;
      line.differs = true;
      out.push_back(std::move(line));
    }
    return out;
  }
  // Nothing compared (an ingestion failed): show what each side wrote.
  std::set<std::string> names;
  if (r.serial)
    for (const auto& [t, n] : r.serial->rows_per_table) names.insert(t);
  for (const auto& [t, n] : r.parallel.rows_per_table) names.insert(t);
  for (const auto& t : names) {
    TableLine line;
    line.table = t;
    line.compared = false;
    if (r.serial) {
      auto it = r.serial->rows_per_table.find(t);
      if (it != r.serial->rows_per_table.end()) line.left_rows = static_cast<int64_t>(it->second);
    }
    auto it = r.parallel.rows_per_table.find(t);
    if (it != r.parallel.rows_per_table.end()) line.right_rows = static_cast<int64_t>(it->second);
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<SideRun> SideRuns(const VerifyReport& r) {
  std::vector<SideRun> runs;
  if (r.serial) runs.push_back({"serial", &*r.serial});
  runs.push_back({"parallel", &r.parallel});
  return runs;
}

std::string FailedJobLine(const char* side, const ingest::JobRow& job) {
  return fmt::format("{} job {} [{}] failed after {}: {}", side, job.job_id, job.range.str(),
                     Plural(job.attempt, "attempt", "attempts"), job.error);
}

std::string TableStatus(const TableLine& t) {
  if (!t.compared) return "not compared";
  return t.differs ? "divergent" : "identical";
}

std::string CountOrDash(int64_t n) { return n >= 0 ? FormatCount(static_cast<uint64_t>(n)) : "\xe2\x80\x94"; }

double TotalSeconds(const VerifyReport& r) {
  double total = 0;
  for (const auto& p : r.phases) total += p.seconds;
  return total;
}

// Row diff of one table as plain text lines ("- only serial: ...", "+ only parallel: ...",
// "~ changed (key): col: old -> new"), at most `max_lines` row lines plus a summary line; an
// empty one that columns of another type class explain is that one line.
std::vector<std::string> RowDiffLines(const diff::TableRowDiff& rd, const Sides& sides, size_t max_lines,
                                      size_t max_value_bytes) {
  // An empty row diff that a class difference explains is that explanation alone.
  if (std::string why = report::ClassDifferenceExplanation(rd, sides.left, sides.right); !why.empty()) return {why};
  std::vector<std::string> lines;
  auto row_text = [&](const diff::RowValues& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < rd.columns.size(); ++i) {
      if (i) s += ", ";
      s += rd.columns[i] + "=" + ShowSql(v[i], max_value_bytes);
    }
    return s;
  };
  if (!rd.left_available || !rd.right_available)
    lines.push_back(fmt::format("(rows of the {} side are not available: it is a manifest)",
                                !rd.left_available ? sides.left : sides.right));
  uint64_t shown = 0;
  uint64_t total = rd.only_left_total + rd.only_right_total + rd.changed_total;
  auto note = [](const std::string& n) { return n.empty() ? n : " (" + n + ")"; };  // trade orientation
  for (size_t i = 0; i < rd.only_left.size() && shown < max_lines; ++i, ++shown)
    lines.push_back(fmt::format("- only {}: {}{}", sides.left, row_text(rd.only_left[i]),
                                note(diff::StoredFlippedNote(rd.OnlyLeftStoredFlipped(i)))));
  for (size_t i = 0; i < rd.only_right.size() && shown < max_lines; ++i, ++shown)
    lines.push_back(fmt::format("+ only {}: {}{}", sides.right, row_text(rd.only_right[i]),
                                note(diff::StoredFlippedNote(rd.OnlyRightStoredFlipped(i)))));
  for (const auto& c : rd.changed) {
    if (shown >= max_lines) break;
    std::string key;
    for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i) {
      if (i) key += ", ";
      key += rd.key[i] + "=" + ShowSql(c.key[i], max_value_bytes);
    }
    std::string changes;
    for (const auto& ch : c.changes) {
      if (!changes.empty()) changes += "; ";
      changes += ch.column + ": " + ShowSql(ch.left, max_value_bytes) + " -> " + ShowSql(ch.right, max_value_bytes);
    }
    lines.push_back(fmt::format("~ changed ({}): {}{}", key, changes, note(diff::StoredFlippedNote(c, sides.left, sides.right))));
    ++shown;
  }
  total = std::max(total, shown);
  if (total > shown)
    lines.push_back(fmt::format("... {} more differing rows ({} only {}, {} only {}, {} changed in all)",
                                FormatCount(total - shown), FormatCount(rd.only_left_total), sides.left,
                                FormatCount(rd.only_right_total), sides.right, FormatCount(rd.changed_total)));
  return lines;
}

namespace {
// The table an outside_range_differences entry ("<table>: rows outside ledgers ...") names.
std::string OutsideRangeTable(const std::string& difference) { return difference.substr(0, difference.find(':')); }

std::string JoinOrNone(const std::vector<std::string>& v) {
  return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ", "));
}
}  // namespace

Soundness SoundnessOf(const diff::DiffReport& d) {
  Soundness s;
  for (const auto& c : d.lookups) {
    if (!c.divergent()) continue;
    std::string detail = fmt::format("lookup {} differs: left {} keys, right {} keys; {} only left, {} only right, {} "
                                     "issues",
                                     c.table, c.left_keys, c.right_keys, c.only_left_total, c.only_right_total,
                                     c.issues_total);
    for (const auto& k : c.only_left) detail += "; only left: " + k;
    for (const auto& k : c.only_right) detail += "; only right: " + k;
    for (const auto& i : c.issues) detail += fmt::format("; {} {}: {}", ToString(i.side), i.kind, i.detail);
    s.problems.push_back({"lookup " + c.table, detail});
  }
  for (const auto& v : d.invariants) {
    if (!v.violations) continue;
    s.problems.push_back({fmt::format("invariant {} ({})", v.name, ToString(v.side)),
                          fmt::format("invariant {} broken on the {} side: {} rows of {}{} ({})", v.name, ToString(v.side),
                                      v.violations, v.table,
                                      v.first_ledger ? fmt::format(", first at ledger {}", *v.first_ledger) : "",
                                      v.description)});
  }
  for (const auto& difference : d.outside_range_differences)
    s.problems.push_back(
        {"rows outside the range of " + OutsideRangeTable(difference), "rows outside the range differ: " + difference});
  for (const auto& o : d.rows_outside_range)
    s.warnings.push_back(fmt::format("{} ({}): {} rows outside ledgers {} not compared ({} before, {} after, {} "
                                     "without a ledger)",
                                     o.table, ToString(o.side), o.before + o.after + o.no_ledger, d.range.str(), o.before,
                                     o.after, o.no_ledger));
  if (!d.uncompared_left.empty() || !d.uncompared_right.empty())
    s.warnings.push_back(fmt::format("not compared (no ledger mapping): left {}; right {}",
                                     JoinOrNone(d.uncompared_left), JoinOrNone(d.uncompared_right)));
  for (const auto& u : d.unsettled)
    if (u.left || u.right)
      s.warnings.push_back(fmt::format("not compared (unsettled): {}: {} rows on the left, {} on the right whose window "
                                       "had not closed by {}",
                                       u.table, u.left, u.right, SettledInstant(*d.settled_before_ms)));
  if (!d.missing_tables.empty())
    s.warnings.push_back(fmt::format("not compared (on neither side): {}: the profile requires them (verdict "
                                     "incomplete)",
                                     fmt::format("{}", fmt::join(d.missing_tables, ", "))));
  if (!d.allowed_missing_tables.empty())
    s.warnings.push_back(fmt::format("not compared (on neither side, accepted by --allow-missing-table): {}",
                                     fmt::format("{}", fmt::join(d.allowed_missing_tables, ", "))));
  if (!d.tables_only_left.empty() || !d.tables_only_right.empty())
    s.warnings.push_back(fmt::format("tables on one side only: left {}; right {}", JoinOrNone(d.tables_only_left),
                                     JoinOrNone(d.tables_only_right)));
  for (const auto& n : d.schema_notes) s.warnings.push_back("schema note: " + n);
  for (const auto& c : d.lookups)
    if (c.unreferenced_left || c.unreferenced_right)
      s.warnings.push_back(fmt::format("{}: ids no compared row references: left {}, right {}", c.table,
                                       c.unreferenced_left, c.unreferenced_right));
  return s;
}

std::vector<FindingList> FindingLists(const Soundness& s) {
  std::vector<FindingList> lists;
  if (!s.problems.empty()) {
    FindingList& problems = lists.emplace_back(FindingList{"Soundness problems", true, {}});
    for (const auto& p : s.problems) problems.lines.push_back(p.detail);
  }
  if (!s.warnings.empty()) lists.push_back({"Not compared / warnings", false, s.warnings});
  return lists;
}

std::string DivergenceWithoutLedger(const diff::DiffReport& d) {
  std::vector<std::string> what;
  if (!d.schema_differences.empty()) what.push_back("the schemas differ");
  if (!d.outside_range_differences.empty()) {
    std::vector<std::string> tables;
    for (const auto& difference : d.outside_range_differences) tables.push_back(OutsideRangeTable(difference));
    what.push_back(fmt::format("rows outside the range differ ({})", fmt::join(tables, ", ")));
  }
  if (what.empty()) what.push_back("the two sides differ");
  std::string sentence = fmt::format("{}; the data of the common ledgers is identical.", fmt::join(what, " and "));
  sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sentence[0])));
  return sentence;
}

VerifyView ViewOf(const VerifyReport& r) { return {SideNames(r), TableLines(r), SoundnessOf(r.diff)}; }

VerifyReport RangeShell(const verify::VerifyRangeReport& r) {
  VerifyReport shell;
  shell.diff = r.diff;
  shell.identical = r.diff.identical;
  shell.range = r.diff.range;
  shell.look_again = r.look_again;
  return shell;
}

VerifyView RangeViewOf(const VerifyReport& shell) {
  VerifyView view = ViewOf(shell);
  view.sides = {"left", "right"};
  return view;
}

std::string CoverageHeld(const diff::SideCoverage& c) {
  return c.first ? fmt::format("{} ({} to {})", Plural(c.held, "ledger", "ledgers"), *c.first, *c.last)
                 : std::string("no ledger of the range");
}

std::string CoverageMissing(const diff::SideCoverage& c) {
  if (!c.missing_ledgers) return "";
  return fmt::format("{}: {}", Plural(c.missing_ledgers, "ledger missing", "ledgers missing"),
                     FormatIntervals(c.missing, c.missing_ranges));
}

std::vector<std::string> CoverageLines(const diff::DiffReport& d, const Sides& sides) {
  const diff::Coverage& cov = d.coverage;
  if (!cov.checked) return {fmt::format("coverage not checked: {} is not compared on both sides", cov.table)};
  std::vector<std::string> lines;
  for (const auto& [name, c] : {std::pair{&sides.left, &cov.left}, std::pair{&sides.right, &cov.right}}) {
    const std::string missing = CoverageMissing(*c);
    lines.push_back(fmt::format("{} holds {}{}", *name, CoverageHeld(*c), missing.empty() ? "" : "; " + missing));
  }
  if (cov.allow_gaps && (cov.left.missing_ledgers || cov.right.missing_ledgers))
    lines.push_back("gaps accepted by --allow-gaps: the ledgers both sides hold were compared");
  return lines;
}

std::string RangeHeadline(const verify::VerifyRangeReport& r) {
  const diff::DiffReport& d = r.diff;
  const diff::Verdict combined = r.verdict();
  if (combined == diff::Verdict::kIdentical) return "Identical";
  if (combined == diff::Verdict::kDivergent) {
    if (d.verdict == diff::Verdict::kDivergent)
      return d.first_divergent_ledger ? fmt::format("Divergent at ledger {}", *d.first_divergent_ledger)
                                      : "Divergent: " + DivergenceWithoutLedger(d);
    // The history is not divergent: the state is.
    return r.state && r.state->ledger_left
               ? fmt::format("Divergent: the state differs at ledger {}", *r.state->ledger_left)
               : std::string("Divergent: the state differs");
  }
  if (d.verdict == diff::Verdict::kIncomplete) {
    std::vector<std::string> lacks;
    if (d.coverage.left.missing_ledgers)
      lacks.push_back(fmt::format("left lacks {}", Plural(d.coverage.left.missing_ledgers, "ledger", "ledgers")));
    if (d.coverage.right.missing_ledgers)
      lacks.push_back(fmt::format("right lacks {}", Plural(d.coverage.right.missing_ledgers, "ledger", "ledgers")));
    if (!d.missing_tables.empty())
      lacks.push_back(fmt::format("required tables on neither side ({})", fmt::join(d.missing_tables, ", ")));
    if (lacks.empty()) lacks.push_back("not everything of the range was compared");
    return fmt::format("Incomplete: {} of {}", fmt::join(lacks, ", "), d.range.str());
  }
  return "Incomplete: the state was not compared" +
         (r.state && !r.state->note.empty() ? ": " + r.state->note : std::string());
}

}  // namespace ledgerdiff::report
