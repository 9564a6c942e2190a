#pragma once
// Canonical queries and the canonical row encoding.
//
// Canonical query of a table for a ledger range (dump, the divergent ledger's row diff):
//   COPY (SELECT <ledger expr>, <canonical columns> FROM "s"."t" t LEFT JOIN <lookups> ...
//         WHERE <index-friendly range predicate>
//         ORDER BY <ledger>, <natural key>, <every other column>) TO STDOUT
// Text sort keys use COLLATE "C"; float and numeric keys are followed by their text form, so the
// order is total on the bytes hashed (0 vs -0, 1.0 vs 1.00 never tie).
// Digest query: the same rows and columns without ORDER BY (the per-ledger digest is a multiset
// digest, independent of row order, so PostgreSQL may scan in any order).
//
// Row encoding (what each row's XXH3-128 sees), for every canonical column in order:
//   NULL:      one byte 0x00
//   non-NULL:  one class tag byte (ColumnClass, never 0x00), the length of the value as a LEB128
//              varint, then the value's COPY text form (still escaped: a bijection of the value).
// Text forms come from sessions pinned by core/pg (DateStyle ISO/YMD, TimeZone UTC, IntervalStyle
// postgres, extra_float_digits 3, bytea_output hex, UTF8), so they do not depend on server or
// user defaults. Decisions: float -0 differs from 0 (PostgreSQL prints "-0"), NaN equals NaN;
// numeric scale is significant (1.0 differs from 1.00: a different stored value); jsonb is
// compared in its canonical text form (key order and whitespace normalized by PostgreSQL), json
// as stored; money is compared as numeric.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <xxhash.h>

#include "core/ledger_range.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// A 128-bit digest in XXH128 canonical (big-endian) byte order.
struct Digest128 {
  std::array<uint8_t, 16> bytes{};
  std::string Hex() const;
  uint32_t Tag() const;  // the first 4 bytes: the truncated digest stored in compact manifests
  bool operator==(const Digest128&) const = default;
};

// The digest of no rows (count 0 entries).
const Digest128& EmptyDigest();

// SQL pieces. REQUIRES: `table` comes from ResolveProfile (its exprs are set).
std::string LedgerExpr(const ResolvedTable& table);
// " FROM schema.table t LEFT JOIN <lookups> [lateral]": what the column expressions refer to.
std::string FromClause(const ResolvedTable& table, const std::string& schema);
// The rows of `range`: the ledger predicate, and only the settled rows of a windowed table
// once a cutoff was applied (profile.h ApplySettledCutoff).
std::string RangePredicate(const ResolvedTable& table, const LedgerRange& range);
std::string CanonicalSelect(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);
std::string CanonicalCopy(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);
// The row diff's query: CanonicalCopy's rows in its order, each followed by one more field, 't'
// when the row is stored flipped relative to its canonical orientation (ResolvedTable::flip_expr)
// and 'f' otherwise (always 'f' for a table without orientation). The flag is carried alongside
// the row, never hashed or dumped.
std::string CanonicalCopyWithFlip(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);
// The canonical rows of the range in no particular order (what the digest reads).
std::string DigestCopy(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);

// How the per-(table, ledger) multiset digests are computed (dump/README "Engines").
//   kText        the client hashes each row's canonical COPY text with XXH3-128 (RowHasher):
//                the reference, and what dumps and the row diff read.
//   kServerHash  the server hashes each row from its columns' native values (ServerHashQuery)
//                and ships per ledger the row count and two 64-bit sums; only PostgreSQL 14 and
//                later (hash_record_extended).
// Both decide equality by the same rules (the encoding above); their digests and roots differ,
// so a manifest records its engine and digests of different engines are never compared.
enum class DigestEngine { kText, kServerHash };
const char* ToString(DigestEngine engine);  // "text", "server-hash"
std::optional<DigestEngine> ParseDigestEngine(std::string_view name);
// The engine a digest or diff uses when none is asked for.
constexpr DigestEngine kDefaultEngine = DigestEngine::kText;
// The lowest server_version_num the server-hash engine runs on.
constexpr int kServerHashMinVersion = 140000;

// The server-hash engine's statement for one table and range: per ledger that holds a row,
//   ledger, count(*), sum(h1), sum(h2)
// where h_k = hashint8extended(hash_record_extended(ROW(v_1 .. v_n), A_k), B_k) over the
// canonical columns in name order, each v_i the column's canonical value in a form whose
// built-in hash decides equality as the text encoding does (ServerHashValue). The sums are exact
// (numeric) and are reduced mod 2^64 by the client (ReduceDecimalMod64): the row hash's 128 bits
// are (h1, h2), summed like RowMultiset's. Lookups are resolved in the server by the canonical
// joins (and trades oriented by its lateral), so nothing but one row per ledger crosses the wire.
std::string ServerHashQuery(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);
// Its pieces, for statements that group otherwise (dump/state_digest.h): the canonical row
// ROW(v_1 .. v_n), and ", sum(h1), sum(h2)" over a column `row` holding such a row.
std::string ServerHashRow(const ResolvedTable& table);
std::string ServerHashSums(const std::string& row);
// One canonical column as the server-hash engine feeds it to hash_record_extended.
std::string ServerHashValue(const CanonicalColumn& column);
// An integer in decimal text (optional '-') reduced mod 2^64; false when `text` is not one.
bool ReduceDecimalMod64(std::string_view text, uint64_t& out);

// The multiset digest of one (table, ledger): rows in any order.
//   row hash  h(r) = XXH3-128 of the row's encoding (below), as a 128-bit integer
//   state     sum = sum of h(r) mod 2^128 over the rows (a duplicate row adds twice; never XOR),
//             count = number of rows
//   digest    XXH3-128 over (count u64 LE, sum u128 LE); EmptyDigest() is count 0, sum 0.
// INVARIANT: the digest depends only on the multiset of encoded rows.
struct RowMultiset {
  uint64_t lo = 0, hi = 0;  // sum mod 2^128
  uint64_t count = 0;
  void Add(const XXH128_hash_t& h) {
    uint64_t before = lo;
    lo += h.low64;
    hi += h.high64 + (lo < before ? 1 : 0);
    ++count;
  }
  Digest128 Finish() const;
};

// Hashes rows: XXH3-128 of a row's canonical encoding (the fields' AppendEncodedField bytes in
// column order). Small rows are encoded into one buffer and hashed at once; a long field (a
// transaction envelope or meta) is fed to the streaming state where it lies instead of being
// copied, which gives the very same hash (XXH3's streaming and one-shot forms agree).
// One per thread: it keeps its buffers between rows.
class RowHasher {
 public:
  RowHasher();
  ~RowHasher();
  RowHasher(const RowHasher&) = delete;
  RowHasher& operator=(const RowHasher&) = delete;
  // `fields` are the n COPY text fields of the canonical columns (without the ledger field), in
  // the table's column order; classes[i] is the class of fields[i].
  XXH128_hash_t Hash(const std::string_view* fields, const ColumnClass* classes, size_t n);

 private:
  std::string buf_;
  XXH3_state_t* state_;
};

// Appends the canonical encoding of one field to `out` (see above). `copy_text` is the COPY
// field; "\N" means NULL.
void AppendEncodedField(std::string& out, std::string_view copy_text, ColumnClass cls);

// Appends n as an unsigned LEB128 varint (7 bits a byte, low first; the row encoding's and the
// manifest's length prefix).
void AppendLeb128(std::string& out, uint64_t n);
// Decodes one LEB128 value as AppendLeb128 writes it from p[0..n): at most 10 bytes, within 64
// bits, without a redundant trailing zero byte. Returns the bytes it took, or 0 when p[0..n) does
// not start with such a value (cut short: every one of the n < 10 bytes has the continuation bit).
size_t DecodeLeb128(const unsigned char* p, size_t n, uint64_t& value);

// Decodes a COPY text field: std::nullopt for NULL, else the unescaped value.
std::optional<std::string> UnescapeCopyField(std::string_view field);

// Parses a non-negative decimal integer field (the ledger column). False when it is not one.
bool ParseLedgerField(std::string_view field, Ledger& out);

}  // namespace ledgerdiff::dump
