#pragma once
// Surrogate ids resolved on the client: the digest reads each lookup table once (in its
// snapshot) into a compact id -> natural key map, then streams the history tables' own columns
// with no joins, and builds the very fields the canonical query's LEFT JOINs would give:
//   id NULL            -> NULL
//   id without a row   -> "!unresolved:<id>"
//   id with a row whose natural key is wholly NULL -> "!null-key" (first column; others NULL)
//   id with a row      -> the natural column's text (NULL when it is NULL)
// (dump/profile.h: kUnresolvedPrefix, kNullNaturalKey)
// then turns trades around (ClientOrientation) as the canonical query's CASEs do. The row
// encoding, and so every digest, is the same either way (tests/digest_test.cc checks both).
//
// While it resolves, it records what it saw of the references (ReferenceMarks, JoinReferences):
// which lookup rows some history row references and which referenced ids have no row. The
// checks of a diff (diff/checks.h) take them from there instead of scanning the tables again.
//
// Memory: per lookup row 8 bytes (id) + 4 bytes per natural column + 4 + the natural key's COPY
// text (about 72 bytes for an account: a 56-character address), plus at most 16 bytes of dense
// index when the ids are dense (or, with inline slots, at most 5/4 of the index, offsets and text
// they replace: 72 bytes for an account of dense ids), plus 1 byte of reference mark; per history
// row nothing, except 8 bytes per distinct referenced id that has no lookup row.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// A lookup table's rows as read: ids strictly ascending, each row's natural fields' COPY text.
struct LookupRows {
  size_t naturals = 0;
  // False when the rows can't be mapped exactly (a duplicate or non-integer id, over 2 GB of
  // keys); the rows are then incomplete.
  bool exact = true;
  std::vector<int64_t> ids;
  std::vector<uint32_t> offsets;  // naturals + 1 per row into text
  std::string text;
  // With `hashed` reads: the sums of the high and low 32 bits of each row's content hash
  // (RowHashSql: the server's 64-bit hash of the natural key's text seeded with the id), over
  // the rows read. Each sum fits: under 2^31 rows.
  int64_t hash_high_sum = 0, hash_low_sum = 0;
  // Appends the rows of `join`'s table with ids above `above` (every row: std::nullopt), in
  // ascending id order, as read on `conn` (in its snapshot); `hashed`: the server hashes each
  // row in the same statement and the hashes are added to hash_*_sum.
  Status ReadFrom(pg::Connection& conn, const std::string& schema, const JoinSpec& join,
                  std::optional<int64_t> above = std::nullopt, bool hashed = false);
};

// The SQL of one lookup row's content hash, computed by the server: a 64-bit hash of the natural
// key's text (hashtextextended, bytewise) seeded with the id, so that any change of a row (its
// key updated in place, two rows swapping ids, a row inserted or deleted) changes the sum of the
// hashes of the rows at or below an id with overwhelming probability (2^-64 per change).
std::string RowHashSql(const JoinSpec& join);

// One lookup table's (id, natural key) rows, sorted by id.
class LookupMap {
 public:
  // Reads `table` of `schema` (id column, natural columns as text) on `conn`.
  static Result<LookupMap> Load(pg::Connection& conn, const std::string& schema, const JoinSpec& join);
  // The map of rows already read.
  static LookupMap FromRows(LookupRows rows);
  // The natural key's COPY text fields of `id`, or nullptr when there is no such row.
  // REQUIRES: out has room for natural.size() entries.
  bool Find(int64_t id, std::string_view* out) const;
  // The row of `id` (index into ids order), or -1 when there is no such row.
  ptrdiff_t FindRow(int64_t id) const;
  // FindRow and, when found, Naturals of that row: one cache line read with the inline slots.
  // REQUIRES: out has room for natural.size() entries.
  ptrdiff_t FindRowAndNaturals(int64_t id, std::string_view* out) const;
  // The natural key's COPY text fields of `row`. REQUIRES: 0 <= row < rows().
  void Naturals(size_t row, std::string_view* out) const;
  int64_t id(size_t row) const { return ids_[row]; }
  // False when the table can't be mapped exactly (a duplicate id, over 2 GB of keys): then the
  // canonical joins must be used.
  bool exact() const { return exact_; }
  size_t rows() const { return ids_.size(); }
  size_t bytes() const {
    return ids_.capacity() * 8 + offsets_.capacity() * 4 + text_.capacity() + slot_of_.capacity() * 4 +
           inline_.capacity() * sizeof(InlineSlot);
  }

 private:
  // When the ids are dense (serial ids: span at most kDenseSpanPerRow per row), slot_of_[id -
  // min id] is the row + 1 (0: no such id) and Find is one array read instead of a binary search
  // that misses the cache at every step; at most 4 * kDenseSpanPerRow bytes per lookup row more.
  static constexpr size_t kDenseSpanPerRow = 4;
  void BuildDenseIndex();
  // Inline slots: when the ids are dense, every row's natural fields fit in one 64-byte slot
  // (u32 row + 1, 0: no such id; a u8 length per field; the fields' COPY text) and the slots
  // take at most 5/4 of the memory of the dense index, offsets and text they replace: a lookup
  // then reads one cache line instead of three that miss (index, offsets, text) once
  // history_accounts outgrows the caches. offsets_, text_ and slot_of_ are released.
  struct alignas(64) InlineSlot {
    uint8_t bytes[64];
  };
  void BuildInlineSlots();
  std::vector<InlineSlot> inline_;

  bool exact_ = true;
  size_t naturals_ = 0;
  std::vector<int64_t> ids_;
  std::vector<uint32_t> slot_of_;
  std::vector<uint32_t> offsets_;  // naturals_ + 1 per row into text_
  std::string text_;
};

// Lookup rows kept from one digest of a source to the next (verify-range --follow's cycles:
// history_accounts grows by a few rows per ledger and is read whole otherwise). Load checks, in
// the reading connection's snapshot, that the rows at or below the highest id kept are still
// the ones kept: their count and the sums of their content hashes (RowHashSql), computed by the
// server in one aggregate over those rows, must equal the count and sums of the kept rows (whose
// hashes the server computed in the statement that read them). A row inserted, deleted or
// updated in place (a natural key changed under its id), or two rows that swapped ids, changes
// them: the table is then read whole again. Otherwise only the rows above the highest id are
// read. The check is a scan of those rows in the server (no row is sent): verify/README.md,
// "What a cycle costs", has its cost. Not thread-safe: one digest at a time per cache.
class LookupCache {
 public:
  // The map of `join`'s table in `conn`'s snapshot, the same rows LookupMap::Load reads.
  Result<LookupMap> Load(pg::Connection& conn, const std::string& schema, const JoinSpec& join);
  // Loads that read the table whole, loads that read only the rows above the kept ones, and
  // the rows read in all.
  uint64_t full_reads() const { return full_reads_; }
  uint64_t extensions() const { return extensions_; }
  uint64_t rows_read() const { return rows_read_; }

 private:
  struct Entry {
    LookupRows rows;  // read with their hashes (rows.hash_*_sum)
  };
  std::map<std::string, Entry> entries_;  // by schema, table, id column and natural columns
  uint64_t full_reads_ = 0, extensions_ = 0, rows_read_ = 0;
};

// Which rows of one LookupMap some resolved history row referenced. Any number of threads mark
// at once (a relaxed byte store: marking is idempotent, and the marks are read only after the
// threads that marked were joined or synchronized with).
class ReferenceMarks {
 public:
  explicit ReferenceMarks(size_t rows) : marks_(new std::atomic<uint8_t>[rows]), rows_(rows) {
    for (size_t i = 0; i < rows; ++i) marks_[i].store(0, std::memory_order_relaxed);
  }
  void Mark(size_t row) {
    // Most references are to rows already marked: a load, not a store that dirties the line.
    if (!marks_[row].load(std::memory_order_relaxed)) marks_[row].store(1, std::memory_order_relaxed);
  }
  bool marked(size_t row) const { return marks_[row].load(std::memory_order_relaxed) != 0; }
  size_t rows() const { return rows_; }

 private:
  std::unique_ptr<std::atomic<uint8_t>[]> marks_;
  size_t rows_;
};

// What the client resolution saw of one join of one table (over the rows it read): the rows
// whose surrogate id has no lookup row (a NULL id is not a reference).
struct JoinReferences {
  std::string table;         // the history table
  std::string column;        // JoinSpec::column ("history_account_id")
  std::string on_expr;       // JoinSpec::on_expr ("t.\"history_account_id\"")
  std::string lookup_table;  // JoinSpec::lookup_table
  std::string lookup_id;     // JoinSpec::lookup_id
  uint64_t missing_rows = 0;
  std::optional<Ledger> first_missing_ledger;  // the least ledger of such a row
  std::vector<int64_t> missing_ids;            // their ids; sorted and unique after Normalize()
  // Adds `other` (same join, other rows).
  void Merge(const JoinReferences& other);
  void Normalize();
};

// A table's digest plan on the client: its join-free statement and how each canonical field
// comes out of a row of it.
class ClientResolvedTable {
 public:
  // False when the table can't be read this way (a profile from a manifest, non-integer ids, a
  // trade whose swapped pair lost one column to the other side's restriction).
  static bool Supported(const ResolvedTable& table);
  // REQUIRES: Supported(table); maps[j] is the map of table.joins[j], marks[j] its marks.
  ClientResolvedTable(const ResolvedTable& table, std::vector<const LookupMap*> maps,
                      std::vector<ReferenceMarks*> marks);
  // COPY (SELECT <fields> FROM t WHERE <range>) TO STDOUT. The fields are the raw columns the
  // canonical row needs (plain columns, surrogate ids, the ledger column), each once, in the
  // table's physical order, then any plain column that is an expression (timestamptz at UTC,
  // money as numeric). A table whose columns are all such raw columns, none excluded, is
  // selected exactly as stored: the server sends its tuples with no projection. The ledger is
  // derived on the client (LedgerOf()) instead of by a server-side expression.
  std::string Copy(const std::string& schema, const LedgerRange& range) const;
  // The row's ledger from its ledger column's field (a TOID shifted right by 32 bits); false
  // when the field is no ledger (NULL, negative, not an integer, above 2^32 - 1).
  bool LedgerOf(const std::vector<std::string_view>& row, Ledger& out) const;
  // Fields of the statement's row -> the canonical fields (table column order).
  // Views point into `row`, the maps, or `scratch` (valid until the next call).
  // `ledger`: the row's ledger (LedgerOf()), for references().
  Status Resolve(const std::vector<std::string_view>& row, Ledger ledger,
                 std::vector<std::string_view>& out);
  size_t statement_fields() const { return fields_.size(); }
  // Per join, the missing references of the rows resolved so far (referenced rows go to the marks).
  // Per join, the missing references of the rows resolved so far (referenced rows go to the
  // marks). missing_ids may hold duplicates until Normalize().
  const std::vector<JoinReferences>& references() const { return references_; }

 private:
  const ResolvedTable& table_;
  std::vector<const LookupMap*> maps_;
  std::vector<ReferenceMarks*> marks_;
  std::vector<JoinReferences> references_;
  std::vector<size_t> distinct_missing_;  // per join, missing_ids.size() after its last Normalize
  std::vector<std::string> fields_;  // the statement's select list
  size_t ledger_field_ = 0;          // the ledger column's field
  std::vector<size_t> id_field_;     // per join, its surrogate id's field
  // per column: join (-1 plain) and natural index, or the field of a plain column
  std::vector<std::pair<int, size_t>> source_;
  std::vector<std::pair<size_t, size_t>> swap_;
  std::vector<size_t> negate_;
  std::vector<std::vector<std::string_view>> natural_;  // per join, this row's natural fields
  std::vector<std::string> scratch_;                    // per join, "!unresolved:<id>"
};

}  // namespace ledgerdiff::dump
