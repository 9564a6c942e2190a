#include "report/state_text_json.h"

#include <fmt/format.h>

#include "core/text.h"

namespace ledgerdiff::report {

namespace {

using verify::StateDifference;
using verify::StateDifferenceKind;

std::string StateValue(const std::optional<std::string>& v) { return v ? *v : "NULL"; }

nlohmann::json StateValueJson(const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

std::string StateKeyText(const StateDifference& d) {
  std::string out;
  for (size_t i = 0; i < d.key_columns.size() && i < d.key.size(); ++i)
    out += fmt::format("{}{}={}", i ? ", " : "", d.key_columns[i], StateValue(d.key[i]));
  return out;
}

std::string StateRowText(const StateDifference& d, const diff::RowValues& row) {
  std::string out;
  for (size_t i = 0; i < d.columns.size() && i < row.size(); ++i)
    out += fmt::format("{}{}={}", i ? ", " : "", d.columns[i], StateValue(row[i]));
  return out;
}

nlohmann::json StateRowJson(const std::vector<std::string>& columns, const std::optional<diff::RowValues>& row) {
  if (!row) return nullptr;
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < columns.size() && i < row->size(); ++i) j[columns[i]] = StateValueJson((*row)[i]);
  return j;
}

std::string StateDifferenceText(const StateDifference& d) {
  std::string line = fmt::format("  {}: {}: {}", d.table, StateKeyText(d), verify::ToString(d.kind));
  if (d.kind == StateDifferenceKind::kChanged && d.left && d.right) {
    std::string changed;
    for (size_t i = 0; i < d.columns.size(); ++i)
      if ((*d.left)[i] != (*d.right)[i])
        changed += fmt::format("{}{} left {}, right {}", changed.empty() ? "" : "; ", d.columns[i], StateValue((*d.left)[i]),
                               StateValue((*d.right)[i]));
    return line + ": " + changed + "\n";
  }
  const auto& row = d.left ? *d.left : *d.right;
  return line + " (" + StateRowText(d, row) + ")\n";
}

}  // namespace

std::string RenderStateText(const verify::StateComparison& s) {
  if (!s.compared) return fmt::format("state: {}: {}\n", verify::ToString(s.verdict), s.note);
  uint64_t left_rows = 0, right_rows = 0, differing_tables = 0;
  for (const auto& t : s.tables) {
    left_rows += t.left_rows;
    right_rows += t.right_rows;
    differing_tables += t.identical ? 0 : 1;
  }
  std::string out = fmt::format("state: {} at ledger {}: {} compared, rows left {}, right {}", verify::ToString(s.verdict),
                                *s.ledger_left, FormatCountOf(s.tables.size(), "table"), FormatCount(left_rows),
                                FormatCount(right_rows));
  if (differing_tables)
    out += fmt::format("; {} differ{} in {}", FormatCountOf(s.differing_rows, "row"), s.differing_rows == 1 ? "s" : "",
                       FormatCountOf(differing_tables, "table"));
  out += "\n";
  for (const auto& t : s.tables)
    if (!t.identical)
      out += fmt::format("  {}: left {}, right {}\n", t.table, FormatCountOf(t.left_rows, "row"),
                         FormatCountOf(t.right_rows, "row"));
  for (const auto& d : s.differences) out += StateDifferenceText(d);
  if (s.differences.size() < s.differing_rows)
    out += fmt::format("  ... and {} more (--max-rows)\n", FormatCountOf(s.differing_rows - s.differences.size(), "row"));
  if (differing_tables)
    out += fmt::format("  found reading {} left, {} right ({} bytes){}\n", FormatCountOf(s.rows_shipped_left, "row"),
                       FormatCountOf(s.rows_shipped_right, "row"),
                       FormatCount(s.bytes_shipped_left + s.bytes_shipped_right),
                       s.split_depth ? fmt::format(", buckets split {} deep", s.split_depth) : std::string());
  for (const auto& n : s.notes) out += "state note: " + n + "\n";
  if (!s.one_sided_tables.empty())
    out += fmt::format("state: not compared (on one side only): {}\n", fmt::join(s.one_sided_tables, ", "));
  return out;
}

nlohmann::json StateToJson(const verify::StateComparison& s) {
  auto ledger = [](const std::optional<Ledger>& l) { return l ? nlohmann::json(*l) : nlohmann::json(); };
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : s.tables)
    tables.push_back({{"table", t.table},
                      {"left_rows", t.left_rows},
                      {"right_rows", t.right_rows},
                      {"identical", t.identical},
                      {"left_digest", t.left_digest},
                      {"right_digest", t.right_digest}});
  nlohmann::json differences = nlohmann::json::array();
  for (const auto& d : s.differences) {
    nlohmann::json key = nlohmann::json::object();
    for (size_t i = 0; i < d.key_columns.size() && i < d.key.size(); ++i) key[d.key_columns[i]] = StateValueJson(d.key[i]);
    differences.push_back({{"table", d.table},
                           {"key", key},
                           {"kind", verify::ToString(d.kind)},
                           {"left", StateRowJson(d.columns, d.left)},
                           {"right", StateRowJson(d.columns, d.right)}});
  }
  return {{"ledger_left", ledger(s.ledger_left)},
          {"ledger_right", ledger(s.ledger_right)},
          {"compared", s.compared},
          {"tables", tables},
          {"differences", differences},
          {"differing_rows", s.differing_rows},
          {"one_sided_tables", s.one_sided_tables},
          {"note", s.note.empty() ? nlohmann::json() : nlohmann::json(s.note)},
          {"notes", s.notes},
          {"reads", s.reads},
          {"rows_shipped", s.rows_shipped_left + s.rows_shipped_right},
          {"bytes_shipped", s.bytes_shipped_left + s.bytes_shipped_right},
          {"shipped",
           {{"left", {{"rows", s.rows_shipped_left}, {"bytes", s.bytes_shipped_left}}},
            {"right", {{"rows", s.rows_shipped_right}, {"bytes", s.bytes_shipped_right}}}}},
          {"digest_queries", s.digest_queries},
          {"split_depth", s.split_depth},
          {"seconds", s.seconds},
          {"verdict", verify::ToString(s.verdict)}};
}

std::string RenderStateVerdictLine(diff::Verdict history, diff::Verdict combined) {
  if (history == combined) return "";
  if (combined == diff::Verdict::kDivergent) return "divergent: the state tables differ (see state above)\n";
  if (combined == diff::Verdict::kIncomplete)
    return "incomplete: the state tables were not compared at one ledger (see state above; --state-wait S waits "
           "for it, --skip-state accepts it)\n";
  return "";
}

}  // namespace ledgerdiff::report
