// The row diff of one table at one ledger (diff.h DiffRows) and how a row stored flipped is noted.
#include <algorithm>
#include <iterator>
#include <map>

#include "diff/diff.h"

namespace ledgerdiff::diff {

void DiffRows(const std::vector<RowValues>& left, const std::vector<RowValues>& right, const std::vector<size_t>& key,
              const std::vector<std::string>& columns, uint32_t max_rows, TableRowDiff& out,
              const std::vector<bool>& left_flipped, const std::vector<bool>& right_flipped) {
  using Row = std::pair<RowValues, bool>;  // canonical values, stored flipped
  auto key_of = [&](const RowValues& r) {
    RowValues k;
    for (size_t i : key) k.push_back(r[i]);
    return k;
  };
  auto flag = [](const std::vector<bool>& f, size_t i) { return i < f.size() && f[i]; };
  // Group by key (multisets of rows per key); exact matches (on the values alone) cancel one for
  // one. Sorting by (values, flag) keeps runs of equal values together and the pick determinate.
  std::map<RowValues, std::pair<std::vector<Row>, std::vector<Row>>> groups;
  for (size_t i = 0; i < left.size(); ++i) groups[key_of(left[i])].first.emplace_back(left[i], flag(left_flipped, i));
  for (size_t i = 0; i < right.size(); ++i)
    groups[key_of(right[i])].second.emplace_back(right[i], flag(right_flipped, i));
  auto values_less = [](const Row& a, const Row& b) { return a.first < b.first; };
  for (auto& [k, g] : groups) {
    auto& [l, r] = g;
    std::sort(l.begin(), l.end());
    std::sort(r.begin(), r.end());
    std::vector<Row> lo, ro;
    std::set_difference(l.begin(), l.end(), r.begin(), r.end(), std::back_inserter(lo), values_less);
    std::set_difference(r.begin(), r.end(), l.begin(), l.end(), std::back_inserter(ro), values_less);
    size_t pairs = key.empty() ? 0 : std::min(lo.size(), ro.size());
    for (size_t i = 0; i < pairs; ++i) {
      ++out.changed_total;
      if (out.changed.size() >= max_rows) continue;
      ChangedRow c;
      c.key = k;
      const RowValues& lv = lo[i].first;
      const RowValues& rv = ro[i].first;
      for (size_t col = 0; col < columns.size(); ++col)
        if (lv[col] != rv[col]) c.changes.push_back({columns[col], lv[col], rv[col]});
      c.left_stored_flipped = lo[i].second;
      c.right_stored_flipped = ro[i].second;
      out.changed.push_back(std::move(c));
    }
    for (size_t i = pairs; i < lo.size(); ++i) {
      ++out.only_left_total;
      if (out.only_left.size() >= max_rows) continue;
      out.only_left.push_back(lo[i].first);
      out.only_left_stored_flipped.push_back(lo[i].second);
    }
    for (size_t i = pairs; i < ro.size(); ++i) {
      ++out.only_right_total;
      if (out.only_right.size() >= max_rows) continue;
      out.only_right.push_back(ro[i].first);
      out.only_right_stored_flipped.push_back(ro[i].second);
    }
  }
}

std::string StoredFlippedNote(bool stored_flipped) {
  return stored_flipped ? "row shown in canonical orientation; stored flipped" : "";
}

std::string StoredFlippedNote(const ChangedRow& row, const std::string& left_name, const std::string& right_name) {
  if (!row.left_stored_flipped && !row.right_stored_flipped) return "";
  return StoredFlippedNote(true) + (row.left_stored_flipped && row.right_stored_flipped ? " on both sides"
                                    : row.left_stored_flipped                         ? " on the " + left_name
                                                                                      : " on the " + right_name);
}

}  // namespace ledgerdiff::diff
