#include "verify/state_compare.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "core/stage_timer.h"
#include "dump/state_digest.h"

namespace ledgerdiff::verify {

namespace {

using dump::ResolvedTable;
using dump::StateSnapshot;

std::string LedgerText(const std::optional<Ledger>& l) { return l ? std::to_string(*l) : "none recorded"; }

std::string SourceName(const dump::ProfileSpec& spec) {
  if (!spec.state_ledger) return "no state ledger source in the profile";
  return fmt::format("{} {}", spec.state_ledger->table, spec.state_ledger->key);
}

std::vector<std::string> ColumnNames(const ResolvedTable& t) {
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(c.name);
  return names;
}

const ResolvedTable* FindTable(const std::vector<ResolvedTable>& tables, const std::string& name) {
  for (const auto& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

diff::RowValues Unescaped(const dump::StateRow& row) {
  diff::RowValues v;
  for (const auto& f : row) v.push_back(dump::UnescapeCopyField(f));
  return v;
}

using StateKey = std::vector<std::string>;
using RowsOfKey = std::map<StateKey, std::vector<dump::StateRow>>;

// Runs `left` on a thread of its own and `right` on this one: the two sides' statements at once
// (each snapshot has its own connection, so its own server backend).
template <typename T>
std::pair<Result<T>, Result<T>> OnBothSides(const std::function<Result<T>()>& left,
                                            const std::function<Result<T>()>& right) {
  auto l = std::async(std::launch::async, left);
  Result<T> r = right();
  return {l.get(), std::move(r)};
}

// The rows of a table read on one side, by their key's fields. A key held by more than
// one row (a declared key that is no unique key) adds a note naming the side; all its rows are
// kept and compared as a multiset.
Result<RowsOfKey> RowsByKey(std::vector<dump::StateRow> rows, const ResolvedTable& table, const char* side_name,
                            StateComparison& out) {
  std::vector<size_t> key_index;
  for (const auto& k : table.key)
    for (size_t i = 0; i < table.columns.size(); ++i)
      if (table.columns[i].name == k) key_index.push_back(i);
  RowsOfKey by_key;
  for (auto& r : rows) {
    StateKey key;
    for (size_t i : key_index) key.push_back(r[i]);
    auto& held = by_key[key];
    held.push_back(std::move(r));
    if (held.size() == 2)
      out.notes.push_back(fmt::format("{}: key ({}) held by more than one row on the {}: the declared key is not "
                                      "unique there",
                                      table.name, fmt::join(key, ", "), side_name));
  }
  return by_key;
}

struct BucketPair {
  dump::StateBucket left, right;
};

// The buckets (paths) of a table whose rows are to be read: its differing buckets, those of more
// than `split_rows` rows on either side split into their sub-buckets, and the differing ones of
// these likewise, down to buckets of at most `split_rows` rows (or no progress, or
// kStateMaxSplitDepth). One SubBucketDigests statement per side and depth. Sorted.
Result<std::vector<std::string>> BucketsToRead(StateSnapshot& l, StateSnapshot& r, const ResolvedTable& lt,
                                               const ResolvedTable& rt, const dump::StateTableDigest& ld,
                                               const dump::StateTableDigest& rd, uint32_t split_rows,
                                               StateComparison& out) {
  std::vector<std::pair<std::string, BucketPair>> frontier;
  for (uint32_t b = 0; b < dump::kStateBuckets; ++b)
    if (!(ld.buckets[b] == rd.buckets[b])) frontier.push_back({dump::StateBucketPath(b), {ld.buckets[b], rd.buckets[b]}});
  const bool can_split = l.server_hashes() && r.server_hashes();
  std::vector<std::string> read;
  for (uint32_t depth = 0;; ++depth) {
    std::vector<std::string> split;
    std::map<std::string, BucketPair> parents;
    for (auto& [path, pair] : frontier) {
      if (can_split && depth < kStateMaxSplitDepth && std::max(pair.left.rows, pair.right.rows) > split_rows) {
        split.push_back(path);
        parents.emplace(path, pair);
      } else {
        read.push_back(path);
      }
    }
    if (split.empty()) break;
    using Sub = std::vector<std::pair<std::string, dump::StateBucket>>;
    auto [left_result, right_result] = OnBothSides<Sub>([&] { return l.SubBucketDigests(lt, split); },
                                                        [&] { return r.SubBucketDigests(rt, split); });
    LD_ASSIGN_OR_RETURN(Sub left_sub, std::move(left_result));
    LD_ASSIGN_OR_RETURN(Sub right_sub, std::move(right_result));
    out.split_depth = std::max(out.split_depth, depth + 1);
    std::map<std::string, BucketPair> children;
    for (const auto& [path, bucket] : left_sub) children[path].left = bucket;
    for (const auto& [path, bucket] : right_sub) children[path].right = bucket;
    frontier.clear();
    for (auto& [path, child] : children) {
      if (child.left == child.right) continue;  // the same rows on both sides: nothing to read
      const BucketPair& parent = parents.at(path.substr(0, path.size() - 2));
      if (child.left.rows == parent.left.rows && child.right.rows == parent.right.rows) {
        read.push_back(path);  // all the parent's rows in one sub-bucket: splitting makes no progress
        continue;
      }
      frontier.emplace_back(path, child);
    }
  }
  std::sort(read.begin(), read.end());
  return read;
}

// Compares one table both sides have; adds its result and differences.
Status CompareTable(StateSnapshot& l, StateSnapshot& r, const ResolvedTable& left_table,
                    const ResolvedTable& right_table, dump::DigestEngine engine, const StateOptions& options,
                    StateComparison& out) {
  const uint32_t max_rows = options.max_rows;
  // Only the columns both sides have (a column on one side only is a schema difference, which the
  // history comparison reports).
  const ResolvedTable lt = dump::RestrictColumns(left_table, ColumnNames(right_table));
  const ResolvedTable rt = dump::RestrictColumns(right_table, ColumnNames(lt));
  auto [left_digest, right_digest] = OnBothSides<dump::StateTableDigest>([&] { return l.Digest(lt, engine); },
                                                                         [&] { return r.Digest(rt, engine); });
  LD_ASSIGN_OR_RETURN(dump::StateTableDigest ld, std::move(left_digest));
  LD_ASSIGN_OR_RETURN(dump::StateTableDigest rd, std::move(right_digest));
  StateTableResult res{lt.name, ld.rows, rd.rows, ld.buckets == rd.buckets, ld.Hex(), rd.Hex()};
  out.tables.push_back(res);
  if (res.identical) return Status::Ok();
  LD_ASSIGN_OR_RETURN(std::vector<std::string> differing,
                      BucketsToRead(l, r, lt, rt, ld, rd, options.split_rows, out));
  using Rows = std::vector<dump::StateRow>;
  auto [left_read, right_read] = OnBothSides<Rows>([&] { return l.RowsIn(lt, differing); },
                                                   [&] { return r.RowsIn(rt, differing); });
  LD_ASSIGN_OR_RETURN(Rows left_read_rows, std::move(left_read));
  LD_ASSIGN_OR_RETURN(Rows right_read_rows, std::move(right_read));
  LD_ASSIGN_OR_RETURN(auto left_rows, RowsByKey(std::move(left_read_rows), lt, "left", out));
  LD_ASSIGN_OR_RETURN(auto right_rows, RowsByKey(std::move(right_read_rows), rt, "right", out));
  const uint64_t differing_before = out.differing_rows;
  uint32_t listed = 0;
  auto add = [&](const std::vector<std::string>& key, StateDifferenceKind kind, const dump::StateRow* lrow,
                 const dump::StateRow* rrow) {
    ++out.differing_rows;
    if (listed >= max_rows) return;
    ++listed;
    StateDifference d;
    d.table = lt.name;
    d.key_columns = lt.key;
    d.key = Unescaped(key);
    d.kind = kind;
    d.columns = ColumnNames(lt);
    if (lrow) d.left = Unescaped(*lrow);
    if (rrow) d.right = Unescaped(*rrow);
    out.differences.push_back(std::move(d));
  };
  // The rows of one key on each side as multisets: rows on both sides cancel; one row left on each
  // side is a changed row, anything else rows only one side has.
  auto compare_key = [&](const StateKey& key, std::vector<dump::StateRow> lrows, std::vector<dump::StateRow> rrows) {
    std::sort(lrows.begin(), lrows.end());
    std::sort(rrows.begin(), rrows.end());
    std::vector<dump::StateRow> only_left, only_right;
    std::set_difference(lrows.begin(), lrows.end(), rrows.begin(), rrows.end(), std::back_inserter(only_left));
    std::set_difference(rrows.begin(), rrows.end(), lrows.begin(), lrows.end(), std::back_inserter(only_right));
    if (only_left.size() == 1 && only_right.size() == 1) {
      add(key, StateDifferenceKind::kChanged, &only_left[0], &only_right[0]);
      return;
    }
    for (const auto& row : only_left) add(key, StateDifferenceKind::kOnlyLeft, &row, nullptr);
    for (const auto& row : only_right) add(key, StateDifferenceKind::kOnlyRight, nullptr, &row);
  };
  auto li = left_rows.begin(), ri = right_rows.begin();
  while (li != left_rows.end() || ri != right_rows.end()) {
    if (ri == right_rows.end() || (li != left_rows.end() && li->first < ri->first)) {
      compare_key(li->first, std::move(li->second), {});
      ++li;
    } else if (li == left_rows.end() || ri->first < li->first) {
      compare_key(ri->first, {}, std::move(ri->second));
      ++ri;
    } else {
      compare_key(li->first, std::move(li->second), std::move(ri->second));
      ++li, ++ri;
    }
  }
  if (out.differing_rows == differing_before)
    out.notes.push_back(fmt::format("{}: the digests differ but no row of the differing buckets does", lt.name));
  return Status::Ok();
}

struct Sides {
  std::unique_ptr<StateSnapshot> left, right;
};

Result<Sides> OpenSides(const diff::SchemaSource& left, const diff::SchemaSource& right, const dump::ProfileSpec& spec) {
  Sides s;
  LD_ASSIGN_OR_RETURN(s.left, StateSnapshot::Open(left.conninfo, left.schema, spec));
  LD_ASSIGN_OR_RETURN(s.right, StateSnapshot::Open(right.conninfo, right.schema, spec));
  return s;
}

// Whether some state table of either side holds a row.
Result<bool> AnyStateRow(Sides& s) {
  for (StateSnapshot* side : {s.left.get(), s.right.get()})
    for (const auto& t : side->tables()) {
      LD_ASSIGN_OR_RETURN(bool has, side->HasRows(t));
      if (has) return true;
    }
  return false;
}

}  // namespace

const char* ToString(StateVerdict v) {
  switch (v) {
    case StateVerdict::kIdentical: return "identical";
    case StateVerdict::kDivergent: return "divergent";
    case StateVerdict::kIncomplete: return "incomplete";
    case StateVerdict::kNotCompared: return "not compared";
    case StateVerdict::kSkipped: return "skipped";
  }
  return "?";
}

const char* ToString(StateDifferenceKind k) {
  switch (k) {
    case StateDifferenceKind::kOnlyLeft: return "only left";
    case StateDifferenceKind::kOnlyRight: return "only right";
    case StateDifferenceKind::kChanged: return "changed";
  }
  return "?";
}

Result<StateComparison> CompareState(const diff::SchemaSource& left, const diff::SchemaSource& right,
                                     const dump::ProfileSpec& spec, dump::DigestEngine engine,
                                     const StateOptions& options) {
  StateComparison c;
  if (spec.state_tables.empty()) {
    c.note = fmt::format("profile {} declares no state table", spec.name);
    return c;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.wait_s);
  Sides sides;
  for (;;) {
    LD_ASSIGN_OR_RETURN(sides, OpenSides(left, right, spec));
    ++c.reads;
    c.ledger_left = sides.left->ledger();
    c.ledger_right = sides.right->ledger();
    // Equal ledgers, or neither side records one (waiting would not make one appear): done.
    if (c.ledger_left == c.ledger_right || std::chrono::steady_clock::now() >= deadline) break;
    sides = {};  // ends both snapshots before waiting
    std::this_thread::sleep_for(std::chrono::duration<double>(kStateRetrySeconds));
  }
  for (StateSnapshot* side : {sides.left.get(), sides.right.get()})
    for (const auto& t : side->tables())
      if (std::find(c.state_tables.begin(), c.state_tables.end(), t.name) == c.state_tables.end())
        c.state_tables.push_back(t.name);
  std::sort(c.state_tables.begin(), c.state_tables.end());
  const StateVerdict not_at_one_ledger =
      options.mode == StateMode::kSkip ? StateVerdict::kSkipped : StateVerdict::kIncomplete;
  const std::string accepted = options.mode == StateMode::kSkip ? " (accepted by --skip-state)" : "";
  if (!c.ledger_left && !c.ledger_right) {
    LD_ASSIGN_OR_RETURN(bool any_rows, AnyStateRow(sides));
    if (!any_rows) {
      c.note = fmt::format("neither side records a state ledger ({}) and no state table holds a row", SourceName(spec));
      return c;
    }
    c.verdict = not_at_one_ledger;
    c.note = fmt::format("neither side records the ledger its state is at ({}): state not compared{}",
                         SourceName(spec), accepted);
    return c;
  }
  if (c.ledger_left != c.ledger_right) {
    c.verdict = not_at_one_ledger;
    c.note = fmt::format("state ledgers differ (left {}, right {}{}): state not compared{}", LedgerText(c.ledger_left),
                         LedgerText(c.ledger_right),
                         options.wait_s > 0 ? fmt::format(", still after {:g} s of --state-wait", options.wait_s) : "",
                         accepted);
    return c;
  }
  c.compared = true;
  const Stopwatch comparing;
  for (const auto& lt : sides.left->tables()) {
    const ResolvedTable* rt = FindTable(sides.right->tables(), lt.name);
    if (!rt) {
      c.one_sided_tables.push_back(lt.name);
      continue;
    }
    LD_RETURN_IF_ERROR(CompareTable(*sides.left, *sides.right, lt, *rt, engine, options, c));
  }
  c.rows_shipped_left = sides.left->traffic().rows;
  c.rows_shipped_right = sides.right->traffic().rows;
  c.bytes_shipped_left = sides.left->traffic().bytes;
  c.bytes_shipped_right = sides.right->traffic().bytes;
  c.digest_queries = sides.left->traffic().digest_queries + sides.right->traffic().digest_queries;
  c.seconds = comparing.Seconds();
  for (const auto& rt : sides.right->tables())
    if (!FindTable(sides.left->tables(), rt.name)) c.one_sided_tables.push_back(rt.name);
  std::sort(c.one_sided_tables.begin(), c.one_sided_tables.end());
  const bool all_identical = std::all_of(c.tables.begin(), c.tables.end(), [](const auto& t) { return t.identical; });
  c.verdict = all_identical ? StateVerdict::kIdentical : StateVerdict::kDivergent;
  return c;
}

void TakeStateTablesOffUncompared(const StateComparison& state, diff::DiffReport& report) {
  auto is_state = [&](const std::string& t) {
    return std::find(state.state_tables.begin(), state.state_tables.end(), t) != state.state_tables.end();
  };
  for (auto* list : {&report.uncompared_tables, &report.uncompared_left, &report.uncompared_right})
    list->erase(std::remove_if(list->begin(), list->end(), is_state), list->end());
}

diff::Verdict CombineVerdicts(diff::Verdict history, const std::optional<StateComparison>& state) {
  if (history == diff::Verdict::kDivergent || !state) return history;
  if (state->verdict == StateVerdict::kDivergent) return diff::Verdict::kDivergent;
  if (state->verdict == StateVerdict::kIncomplete) return diff::Verdict::kIncomplete;
  return history;
}

}  // namespace ledgerdiff::verify
