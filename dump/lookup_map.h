#pragma once
// Surrogate ids resolved on the client: the digest reads each lookup table once (in its
// snapshot) into a compact id -> natural key map, then streams the history tables' own columns
// with no joins, and builds the very fields the canonical query's LEFT JOINs would give:
//   id NULL            -> NULL
//   id without a row   -> "!unresolved:<id>"
//   id with a row      -> the natural column's text (NULL when it is NULL)
// then turns trades around (ClientOrientation) as the canonical query's CASEs do. The row
// encoding, and so every digest, is the same either way (tests/digest_test.cc checks both).
//
// Memory: per lookup row 8 bytes (id) + 4 bytes per natural column + 4 + the natural key's COPY
// text (about 72 bytes for an account: a 56-character address), plus at most 16 bytes of dense
// index when the ids are dense; nothing per history row.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// One lookup table's (id, natural key) rows, sorted by id.
class LookupMap {
 public:
  // Reads `table` of `schema` (id column, natural columns as text) on `conn`.
  static Result<LookupMap> Load(pg::Connection& conn, const std::string& schema, const JoinSpec& join);
  // The natural key's COPY text fields of `id`, or nullptr when there is no such row.
  // REQUIRES: out has room for natural.size() entries.
  bool Find(int64_t id, std::string_view* out) const;
  // False when the table can't be mapped exactly (a duplicate id, over 2 GB of keys): then the
  // canonical joins must be used.
  bool exact() const { return exact_; }
  size_t rows() const { return ids_.size(); }
  size_t bytes() const {
    return ids_.capacity() * 8 + offsets_.capacity() * 4 + text_.capacity() + slot_of_.capacity() * 4;
  }

 private:
  // When the ids are dense (serial ids: span at most kDenseSpanPerRow per row), slot_of_[id -
  // min id] is the row + 1 (0: no such id) and Find is one array read instead of a binary search
  // that misses the cache at every step; at most 4 * kDenseSpanPerRow bytes per lookup row more.
  static constexpr size_t kDenseSpanPerRow = 4;
  void BuildDenseIndex();

  bool exact_ = true;
  size_t naturals_ = 0;
  std::vector<int64_t> ids_;
  std::vector<uint32_t> slot_of_;
  std::vector<uint32_t> offsets_;  // naturals_ + 1 per row into text_
  std::string text_;
};

// A table's digest plan on the client: its join-free statement and how each canonical field
// comes out of a row of it.
class ClientResolvedTable {
 public:
  // False when the table can't be read this way (a profile from a manifest, non-integer ids, a
  // trade whose swapped pair lost one column to the other side's restriction).
  static bool Supported(const ResolvedTable& table);
  // REQUIRES: Supported(table); maps[j] is the map of table.joins[j].
  ClientResolvedTable(const ResolvedTable& table, std::vector<const LookupMap*> maps);
  // COPY (SELECT <ledger>, <plain columns>, <surrogate ids> FROM t WHERE <range>) TO STDOUT
  std::string Copy(const std::string& schema, const LedgerRange& range) const;
  // Fields of the statement's row (ledger first) -> the canonical fields (table column order).
  // Views point into `row`, the maps, or `scratch` (valid until the next call).
  Status Resolve(const std::vector<std::string_view>& row, std::vector<std::string_view>& out);
  size_t statement_fields() const { return 1 + plain_.size() + table_.joins.size(); }

 private:
  const ResolvedTable& table_;
  std::vector<const LookupMap*> maps_;
  std::vector<size_t> plain_;                 // column indexes read as they are
  std::vector<std::pair<int, size_t>> source_;  // per column: join (-1 plain) and natural / field index
  std::vector<std::pair<size_t, size_t>> swap_;
  std::vector<size_t> negate_;
  std::vector<std::vector<std::string_view>> natural_;  // per join, this row's natural fields
  std::vector<std::string> scratch_;                    // per join, "!unresolved:<id>"
};

}  // namespace ledgerdiff::dump
