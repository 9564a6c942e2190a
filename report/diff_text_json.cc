// Renderers of a DiffReport: text and JSON (keys documented in diff/README.md).
#include "report/diff_text_json.h"

#include <ctime>

#include <fmt/format.h>

#include "core/text.h"

namespace ledgerdiff {
NLOHMANN_JSON_SERIALIZE_ENUM(Side, {{Side::kLeft, "left"}, {Side::kRight, "right"}})
}  // namespace ledgerdiff

namespace ledgerdiff::diff {

// The JSON objects of the report's plain records: each key is the field of that name (the
// documented keys, diff/README.md), listed once here. Records with derived keys add them.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OutsideRows, table, side, before, after, no_ledger)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TableComparison, table, left_rows, right_rows, divergent_ledgers, left_root,
                                   right_root)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(InvariantResult, name, table, side, violations, description)  // + first_ledger
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ColumnClassDifference, column, left, right)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LookupIssue, side, kind, detail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LookupComparison, table, left_keys, right_keys, only_left, only_right,
                                   only_left_total, only_right_total, issues, issues_total)  // + divergent, unreferenced

}  // namespace ledgerdiff::diff

namespace ledgerdiff::report {

using diff::ChangedRow;
using diff::Coverage;
using diff::DiffReport;
using diff::SideCoverage;
using diff::TableRowDiff;
using diff::RowValues;
using diff::StoredFlippedNote;
using diff::Verdict;
using diff::VerdictName;

std::string SettledInstant(int64_t epoch_ms) {
  if (epoch_ms <= dump::kNothingSettled) return "no ledger";
  const int64_t seconds = epoch_ms >= 0 ? epoch_ms / 1000 : -((-epoch_ms + 999) / 1000);
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, epoch_ms - seconds * 1000);
}

std::string ClassDifferenceExplanation(const TableRowDiff& rd, const std::string& left_name,
                                       const std::string& right_name) {
  if (!rd.NoRowDiffers() || !rd.left_available || !rd.right_available || rd.class_differences.empty()) return "";
  std::vector<std::string> columns;
  for (const auto& c : rd.class_differences)
    columns.push_back(fmt::format("{} ({} on the {}, {} on the {})", c.column, c.left, left_name, c.right, right_name));
  return fmt::format("columns of another type class: {}; the rows read the same as text", fmt::join(columns, ", "));
}

namespace {

std::string ShowValue(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  // Unambiguous: a backslash is doubled, so a real tab (\t) and the two characters backslash-t
  // (\\t) read differently; other control characters as \xHH.
  std::string out = "'";
  for (char c : *v) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c == '\'') out += "''";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out + "'";
}

nlohmann::json ValueJson(const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string KeyText(const TableRowDiff& rd, const ChangedRow& c) {
  std::vector<std::string> key;
  for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i) key.push_back(rd.key[i] + "=" + ShowValue(c.key[i]));
  return fmt::format("{}", fmt::join(key, ", "));
}

// The orientation notes of the rows shown, one line each, naming the row by its place in the
// listing ("only left row 2: ...") or its key ("changed (k='1'): ...").
std::vector<std::string> RowNotes(const TableRowDiff& rd) {
  std::vector<std::string> notes;
  for (size_t i = 0; i < rd.only_left.size(); ++i)
    if (rd.OnlyLeftStoredFlipped(i)) notes.push_back(fmt::format("only left row {}: {}", i + 1, StoredFlippedNote(true)));
  for (size_t i = 0; i < rd.only_right.size(); ++i)
    if (rd.OnlyRightStoredFlipped(i))
      notes.push_back(fmt::format("only right row {}: {}", i + 1, StoredFlippedNote(true)));
  for (const auto& c : rd.changed)
    if (std::string note = StoredFlippedNote(c); !note.empty())
      notes.push_back(fmt::format("changed ({}): {}", KeyText(rd, c), note));
  return notes;
}

nlohmann::json RangesJson(const std::vector<LedgerRange>& ranges) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : ranges) a.push_back({r.from, r.to});
  return a;
}

nlohmann::json SideCoverageToJson(const SideCoverage& c) {
  nlohmann::json orphans = nlohmann::json::array();
  for (const auto& o : c.orphans)
    orphans.push_back({{"table", o.table}, {"rows", o.rows}, {"ledgers", o.ledgers}, {"at", RangesJson(o.at)}});
  return {{"held", c.held},
          {"first", c.first ? nlohmann::json(*c.first) : nlohmann::json(nullptr)},
          {"last", c.last ? nlohmann::json(*c.last) : nlohmann::json(nullptr)},
          {"missing", RangesJson(c.missing)},
          {"missing_ledgers", c.missing_ledgers},
          {"missing_ranges", c.missing_ranges},
          {"not_held", RangesJson(c.not_held)},
          {"orphans", orphans}};
}

nlohmann::json CoverageToJson(const Coverage& c) {
  nlohmann::ordered_json j;
  j["checked"] = c.checked;
  j["table"] = c.checked ? nlohmann::json(c.table) : nlohmann::json(nullptr);
  j["explicit_range"] = c.explicit_range;
  j["allow_gaps"] = c.allow_gaps;
  j["complete"] = c.complete();
  j["left"] = c.checked ? SideCoverageToJson(c.left) : nlohmann::json(nullptr);
  j["right"] = c.checked ? SideCoverageToJson(c.right) : nlohmann::json(nullptr);
  return j;
}

// "  (note)" after a listed row, or "".
std::string NoteSuffix(const std::string& note) { return note.empty() ? "" : "  (" + note + ")"; }

nlohmann::ordered_json RowDiffToJson(const TableRowDiff& rd) {
  auto row_obj = [&](const RowValues& v) {
    nlohmann::ordered_json o;
    for (size_t i = 0; i < v.size() && i < rd.columns.size(); ++i) o[rd.columns[i]] = ValueJson(v[i]);
    return o;
  };
  nlohmann::ordered_json t;
  t["table"] = rd.table;
  t["key"] = rd.key;
  t["left_available"] = rd.left_available;
  t["right_available"] = rd.right_available;
  t["only_left"] = nlohmann::json::array();
  t["only_left_stored_flipped"] = nlohmann::json::array();
  for (size_t i = 0; i < rd.only_left.size(); ++i) {
    t["only_left"].push_back(row_obj(rd.only_left[i]));
    t["only_left_stored_flipped"].push_back(rd.OnlyLeftStoredFlipped(i));
  }
  t["only_right"] = nlohmann::json::array();
  t["only_right_stored_flipped"] = nlohmann::json::array();
  for (size_t i = 0; i < rd.only_right.size(); ++i) {
    t["only_right"].push_back(row_obj(rd.only_right[i]));
    t["only_right_stored_flipped"].push_back(rd.OnlyRightStoredFlipped(i));
  }
  t["changed"] = nlohmann::json::array();
  for (const auto& c : rd.changed) {
    nlohmann::ordered_json cj;
    nlohmann::ordered_json key;
    for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i) key[rd.key[i]] = ValueJson(c.key[i]);
    cj["key"] = key;
    cj["changes"] = nlohmann::json::array();
    for (const auto& ch : c.changes)
      cj["changes"].push_back({{"column", ch.column}, {"left", ValueJson(ch.left)}, {"right", ValueJson(ch.right)}});
    cj["left_stored_flipped"] = c.left_stored_flipped;
    cj["right_stored_flipped"] = c.right_stored_flipped;
    t["changed"].push_back(cj);
  }
  t["class_differences"] = nlohmann::json(rd.class_differences);
  t["notes"] = RowNotes(rd);
  t["only_left_total"] = rd.only_left_total;
  t["only_right_total"] = rd.only_right_total;
  t["changed_total"] = rd.changed_total;
  return t;
}

nlohmann::json LookupChecksToJson(const DiffReport& r) {
  nlohmann::json lookups = nlohmann::json::array();
  for (const auto& c : r.lookups) {
    nlohmann::json o = c;
    o["divergent"] = c.divergent();
    o["unreferenced"] = {{"left", c.unreferenced_left}, {"right", c.unreferenced_right}};
    lookups.push_back(std::move(o));
  }
  return lookups;
}

nlohmann::json InvariantsToJson(const DiffReport& r) {
  nlohmann::json invariants = nlohmann::json::array();
  for (const auto& v : r.invariants) {
    nlohmann::json o = v;
    o["first_ledger"] = v.first_ledger ? nlohmann::json(*v.first_ledger) : nlohmann::json(nullptr);
    invariants.push_back(std::move(o));
  }
  return invariants;
}

// The verdict's part: what differs first (keys in the documented order).
void AddVerdictJson(const DiffReport& r, nlohmann::ordered_json& j) {
  j["identical"] = r.identical;
  j["verdict"] = VerdictName(r.verdict);
  if (r.targets) j["target"] = r.targets->ToJson();
  j["first_divergent_ledger"] = r.first_divergent_ledger ? nlohmann::json(*r.first_divergent_ledger) : nlohmann::json(nullptr);
  j["divergent_tables"] = nlohmann::json::array();
  for (const auto& t : r.divergent_tables) j["divergent_tables"].push_back(t.table);
  j["divergent_table_counts"] = nlohmann::json::array();
  for (const auto& t : r.divergent_tables)
    j["divergent_table_counts"].push_back({{"table", t.table}, {"left_rows", t.left_rows}, {"right_rows", t.right_rows}});
  j["rows"] = nlohmann::json::array();
  for (const auto& rd : r.rows) j["rows"].push_back(RowDiffToJson(rd));
}

// What was compared and what was not (keys in the documented order).
void AddScopeJson(const DiffReport& r, nlohmann::ordered_json& j) {
  j["coverage"] = CoverageToJson(r.coverage);
  j["ledgers_compared"] = r.ledgers_compared;
  j["range"] = {{"from", r.range.from}, {"to", r.range.to}};
  j["rows_compared"] = {{"left", r.rows_compared_left}, {"right", r.rows_compared_right}};
  j["divergent_ledgers"] = r.divergent_ledgers;
  j["first_divergent_ledgers"] = r.divergent_sample;
  j["excluded_columns"] = r.excluded_columns;
  j["lookup_tables"] = r.lookup_tables;
  j["uncompared_tables"] = r.uncompared_tables;
  j["uncompared"] = {{"left", r.uncompared_left}, {"right", r.uncompared_right}};
  j["tables_one_side"] = {{"left", r.tables_only_left}, {"right", r.tables_only_right}};
  j["schema_differences"] = r.schema_differences;
  j["schema_notes"] = r.schema_notes;
  j["outside_range_differences"] = r.outside_range_differences;
  j["rows_outside_range"] = nlohmann::json(r.rows_outside_range);
  // Keys of the live comparison (verify-range) only: a diff of finished copies has none.
  if (r.settled_before_ms) {
    j["settled_before"] = SettledInstant(*r.settled_before_ms);
    j["unsettled"] = nlohmann::json::array();
    for (const auto& u : r.unsettled) j["unsettled"].push_back({{"table", u.table}, {"left", u.left}, {"right", u.right}});
  }
  if (!r.missing_tables.empty() || !r.allowed_missing_tables.empty()) {
    j["missing_tables"] = r.missing_tables;
    j["allowed_missing_tables"] = r.allowed_missing_tables;
  }
}

}  // namespace

nlohmann::json DiffReportToJson(const DiffReport& r) {
  nlohmann::ordered_json j;
  AddVerdictJson(r, j);
  AddScopeJson(r, j);
  j["lookups"] = LookupChecksToJson(r);
  j["invariants"] = InvariantsToJson(r);
  j["left"] = {{"source", r.left}, {"root", r.left_root}};
  j["right"] = {{"source", r.right}, {"root", r.right_root}};
  j["profile"] = r.profile;
  j["engine"] = dump::ToString(r.engine);
  j["tables"] = nlohmann::json(r.tables);
  if (r.all) {
    nlohmann::ordered_json all;
    for (const auto& t : r.tables) {
      if (t.divergent.empty()) continue;
      nlohmann::json iv = nlohmann::json::array();
      for (const auto& x : t.divergent) iv.push_back({x.from, x.to});
      all[t.table] = iv;
    }
    j["all_divergent"] = all;
  }
  j["notes"] = r.notes;
  // Where the time went (the same shape as verify's phases).
  j["phases"] = {{{"name", "digest"}, {"seconds", r.digest_seconds}}, {{"name", "row_diff"}, {"seconds", r.row_diff_seconds}}};
  return j;
}

namespace {

std::string Ledgers(uint64_t n) { return FormatCountOf(n, "ledger"); }

std::string HeldText(const char* side, const SideCoverage& c) {
  if (!c.first) return fmt::format("{} holds no ledger of the range", side);
  return fmt::format("{} holds {} ({} to {})", side, Ledgers(c.held), *c.first, *c.last);
}

// Coverage lines: what each side holds, what it lacks, rows at ledgers it does not hold.
std::string RenderCoverage(const DiffReport& r) {
  const Coverage& cov = r.coverage;
  if (!cov.checked) return "";
  std::string out = fmt::format("coverage ({}): {}; {}\n", cov.table, HeldText("left", cov.left), HeldText("right", cov.right));
  const bool same_missing = cov.left.missing_ledgers && cov.left.missing == cov.right.missing &&
                            cov.left.missing_ranges == cov.right.missing_ranges;
  if (same_missing)
    out += fmt::format("{}: {} missing on both sides: {}\n", cov.allow_gaps ? "gaps (accepted by --allow-gaps)" : "incomplete",
                       Ledgers(cov.left.missing_ledgers), FormatIntervals(cov.left.missing, cov.left.missing_ranges));
  for (const auto& [side, c] : {std::pair<const char*, const SideCoverage*>{"left", &cov.left}, {"right", &cov.right}}) {
    if (c->missing_ledgers && !same_missing)
      out += fmt::format("{}: {} missing on the {}: {}{}\n", cov.allow_gaps ? "gaps (accepted by --allow-gaps)" : "incomplete",
                         Ledgers(c->missing_ledgers), side, FormatIntervals(c->missing, c->missing_ranges),
                         cov.explicit_range || c->first ? "" : " (it holds none)");
    if (!cov.explicit_range && !c->not_held.empty())
      out += fmt::format("coverage: the {} side holds no ledgers {} (beyond its data; compared row by row)\n", side,
                         FormatIntervals(c->not_held, c->not_held.size()));
    for (const auto& o : c->orphans) {
      uint64_t listed = 0;
      for (const auto& a : o.at) listed += a.size();
      out += fmt::format("warning: {} ({}): {} at {} without a {} row: {}{}\n", o.table, side, FormatCountOf(o.rows, "row"),
                         Ledgers(o.ledgers), cov.table, FormatIntervals(o.at, o.at.size()),
                         listed < o.ledgers ? fmt::format(" and {} more", Ledgers(o.ledgers - listed)) : "");
    }
  }
  return out;
}

// Lines every verdict carries: coverage, what was not compared, what lies outside the range, widenings.
std::string RenderInventory(const DiffReport& r) {
  std::string out = RenderCoverage(r);
  for (const auto& o : r.rows_outside_range)
    out += fmt::format("warning: {} ({}): {} rows outside ledgers {} not compared ({} before, {} after, {} without a "
                       "ledger)\n",
                       o.table, ToString(o.side), o.before + o.after + o.no_ledger, r.range.str(), o.before, o.after, o.no_ledger);
  if (!r.uncompared_left.empty() || !r.uncompared_right.empty())
    out += fmt::format("not compared (no ledger mapping): left {}; right {}\n",
                       r.uncompared_left.empty() ? "none" : fmt::format("{}", fmt::join(r.uncompared_left, ", ")),
                       r.uncompared_right.empty() ? "none" : fmt::format("{}", fmt::join(r.uncompared_right, ", ")));
  for (const auto& u : r.unsettled)
    if (u.left || u.right)
      out += fmt::format("not compared (unsettled): {}: {} rows on the left, {} on the right whose window had not "
                         "closed by {} (the last ledger both sides hold); compared once it has\n",
                         u.table, FormatCount(u.left), FormatCount(u.right), SettledInstant(*r.settled_before_ms));
  if (!r.missing_tables.empty())
    out += fmt::format("not compared (on neither side): {}: the profile requires them\n", fmt::join(r.missing_tables, ", "));
  if (!r.allowed_missing_tables.empty())
    out += fmt::format("not compared (on neither side, accepted by --allow-missing-table): {}\n",
                       fmt::join(r.allowed_missing_tables, ", "));
  if (!r.tables_only_left.empty() || !r.tables_only_right.empty())
    out += fmt::format("tables on one side only: left {}; right {}\n",
                       r.tables_only_left.empty() ? "none" : fmt::format("{}", fmt::join(r.tables_only_left, ", ")),
                       r.tables_only_right.empty() ? "none" : fmt::format("{}", fmt::join(r.tables_only_right, ", ")));
  for (const auto& n : r.schema_notes) out += "schema note: " + n + "\n";
  for (const auto& c : r.lookups)
    if (c.unreferenced_left || c.unreferenced_right)
      out += fmt::format("warning: {}: ids no compared row references: left {}, right {}\n", c.table,
                         c.unreferenced_left, c.unreferenced_right);
  return out;
}

// The lookups and invariants sections (divergent ones only).
std::string RenderSideChecks(const DiffReport& r) {
  std::string out;
  for (const auto& c : r.lookups) {
    if (!c.divergent()) continue;
    out += fmt::format("lookup {} differs (left {} keys, right {} keys):\n", c.table, c.left_keys, c.right_keys);
    for (const auto& k : c.only_left) out += "  - only left:  " + k + "\n";
    if (c.only_left_total > c.only_left.size())
      out += fmt::format("  ... {} more keys only on the left\n", c.only_left_total - c.only_left.size());
    for (const auto& k : c.only_right) out += "  + only right: " + k + "\n";
    if (c.only_right_total > c.only_right.size())
      out += fmt::format("  ... {} more keys only on the right\n", c.only_right_total - c.only_right.size());
    for (const auto& i : c.issues) out += fmt::format("  ! {} {}: {}\n", ToString(i.side), i.kind, i.detail);
  }
  for (const auto& v : r.invariants)
    if (v.violations)
      out += fmt::format("invariant {} broken on the {} side: {} rows of {}{} ({})\n", v.name, ToString(v.side), v.violations,
                         v.table, v.first_ledger ? fmt::format(", first at ledger {}", *v.first_ledger) : "",
                         v.description);
  return out;
}

// The verdict and what backs it (RenderDiffText without the target line).
std::string RenderDiffBody(const DiffReport& r) {
  std::string out;
  if (r.verdict == Verdict::kIncomplete) {
    const Coverage& c = r.coverage;
    if (c.complete())  // incomplete by the tables alone
      return RenderInventory(r) +
             fmt::format("incomplete: {} of the profile on neither side, not compared; what both sides have is "
                         "identical ({} rows compared); --allow-missing-table {} accepts it\n",
                         fmt::join(r.missing_tables, ", "), FormatCount(r.rows_compared_left), r.missing_tables.front());
    return RenderInventory(r) +
           fmt::format("incomplete: ledgers of {} are missing (left {}, right {}, of {}){}; the ledgers held are "
                       "identical ({} rows compared); --allow-gaps accepts missing ledgers\n",
                       r.range.str(), FormatCount(c.left.missing_ledgers), FormatCount(c.right.missing_ledgers),
                       Ledgers(r.ledgers_compared),
                       r.missing_tables.empty() ? ""
                                                : fmt::format(" and {} on neither side", fmt::join(r.missing_tables, ", ")),
                       FormatCount(r.rows_compared_left));
  }
  if (r.identical) {
    // Identical over what was held: ledgers --allow-gaps accepted as missing are said so here too.
    const uint64_t missing = std::max(r.coverage.left.missing_ledgers, r.coverage.right.missing_ledgers);
    return fmt::format("identical: {} ({}){}, {} compared, root {} (engine {})\n", FormatCountOf(r.ledgers_compared, "ledger"),
                       r.range.str(),
                       missing && r.coverage.allow_gaps
                           ? fmt::format(" but {} missing on a side, accepted by --allow-gaps",
                                         FormatCountOf(missing, "ledger"))
                           : "",
                       FormatCountOf(r.rows_compared_left, "row"),
                       r.left_root.empty() ? r.right_root : r.left_root, dump::ToString(r.engine)) +
           RenderInventory(r);
  }
  out += RenderInventory(r);
  for (const auto& d : r.schema_differences) out += "schema difference: " + d + "\n";
  for (const auto& d : r.outside_range_differences) out += "rows outside the range differ: " + d + "\n";
  out += RenderSideChecks(r);
  if (!r.first_divergent_ledger) {
    out += fmt::format("divergent: {}; the data of the {} ledgers ({}) is identical\n",
                       !r.schema_differences.empty()          ? "schemas differ"
                       : !r.outside_range_differences.empty() ? "rows outside the range differ"
                                                              : "lookup tables or side invariants differ",
                       FormatCount(r.ledgers_compared), r.range.str());
    for (const auto& n : r.notes) out += "note: " + n + "\n";
    return out;
  }
  out += fmt::format("divergent: first divergent ledger {} ({} of {} ledgers compared differ by engine {}; left {}, right {})\n",
                     *r.first_divergent_ledger, FormatCount(r.divergent_ledgers), FormatCount(r.ledgers_compared),
                     dump::ToString(r.engine), r.left, r.right);
  for (const auto& t : r.divergent_tables)
    out += fmt::format("  {}: left {}, right {} at ledger {}\n", t.table, FormatCountOf(t.left_rows, "row"),
                       FormatCountOf(t.right_rows, "row"), *r.first_divergent_ledger);
  auto row_text = [](const TableRowDiff& rd, const RowValues& v) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < v.size() && i < rd.columns.size(); ++i) parts.push_back(rd.columns[i] + "=" + ShowValue(v[i]));
    return fmt::format("{}", fmt::join(parts, ", "));
  };
  for (const auto& rd : r.rows) {
    if (const std::string why = ClassDifferenceExplanation(rd); !why.empty()) {
      out += fmt::format("{} at ledger {}: {}\n", rd.table, *r.first_divergent_ledger, why);
      continue;
    }
    out += fmt::format("{} at ledger {}:\n", rd.table, *r.first_divergent_ledger);
    if (!rd.left_available || !rd.right_available)
      out += fmt::format("  (rows of the {} side are not available: it is a manifest)\n",
                         !rd.left_available ? "left" : "right");
    for (size_t i = 0; i < rd.only_left.size(); ++i)
      out += "  - only left:  " + row_text(rd, rd.only_left[i]) +
             NoteSuffix(StoredFlippedNote(rd.OnlyLeftStoredFlipped(i))) + "\n";
    if (rd.only_left_total > rd.only_left.size())
      out += fmt::format("  ... {} more rows only on the left\n", rd.only_left_total - rd.only_left.size());
    for (size_t i = 0; i < rd.only_right.size(); ++i)
      out += "  + only right: " + row_text(rd, rd.only_right[i]) +
             NoteSuffix(StoredFlippedNote(rd.OnlyRightStoredFlipped(i))) + "\n";
    if (rd.only_right_total > rd.only_right.size())
      out += fmt::format("  ... {} more rows only on the right\n", rd.only_right_total - rd.only_right.size());
    for (const auto& c : rd.changed) {
      out += fmt::format("  ~ changed ({}):{}\n", KeyText(rd, c), NoteSuffix(StoredFlippedNote(c)));
      for (const auto& ch : c.changes)
        out += fmt::format("      {}: {} -> {}\n", ch.column, ShowValue(ch.left), ShowValue(ch.right));
    }
    if (rd.changed_total > rd.changed.size())
      out += fmt::format("  ... {} more changed rows\n", rd.changed_total - rd.changed.size());
  }
  if (r.all) {
    out += "all divergent ledgers:\n";
    for (const auto& t : r.tables) {
      if (t.divergent.empty()) continue;
      std::vector<std::string> iv;
      for (const auto& x : t.divergent) iv.push_back(x.from == x.to ? fmt::format("{}", x.from) : fmt::format("{}-{}", x.from, x.to));
      out += fmt::format("  {}: {}\n", t.table, fmt::join(iv, ", "));
    }
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace

std::string RenderDiffText(const DiffReport& r) {
  return (r.targets ? r.targets->Line() + "\n" : "") + RenderDiffBody(r);
}

}  // namespace ledgerdiff::report
