#pragma once
// Canonical queries and the canonical row encoding.
//
// Canonical query of a table for a ledger range:
//   COPY (SELECT <ledger expr>, <canonical columns> FROM "s"."t" t LEFT JOIN <lookups> ...
//         WHERE <index-friendly range predicate>
//         ORDER BY <ledger>, <natural key>, <every other column>) TO STDOUT
// Text sort keys use COLLATE "C"; float and numeric keys are followed by their text form, so the
// order is total on the bytes hashed (0 vs -0, 1.0 vs 1.00 never tie).
//
// Row encoding (what the per-ledger XXH3-128 sees), for every canonical column in order:
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
std::string RangePredicate(const ResolvedTable& table, const LedgerRange& range);
std::string CanonicalSelect(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);
std::string CanonicalCopy(const ResolvedTable& table, const std::string& schema, const LedgerRange& range);

// Streams one ledger's rows into an XXH3-128 state.
// INVARIANT: rows are added in canonical order; Finish() may be called once per Reset().
class LedgerHasher {
 public:
  LedgerHasher();
  ~LedgerHasher();
  LedgerHasher(const LedgerHasher&) = delete;
  LedgerHasher& operator=(const LedgerHasher&) = delete;
  void Reset();
  // `fields` are the n COPY text fields of the canonical columns (without the ledger field), in
  // the table's column order; classes[i] is the class of fields[i].
  void AddRow(const std::string_view* fields, const ColumnClass* classes, size_t n);
  Digest128 Finish();

 private:
  void Flush();
  XXH3_state_t* state_;
  std::string buffer_;
};

// Appends the canonical encoding of one field to `out` (see above). `copy_text` is the COPY
// field; "\N" means NULL.
void AppendEncodedField(std::string& out, std::string_view copy_text, ColumnClass cls);

// Decodes a COPY text field: std::nullopt for NULL, else the unescaped value.
std::optional<std::string> UnescapeCopyField(std::string_view field);

// Parses a non-negative decimal integer field (the ledger column). False when it is not one.
bool ParseLedgerField(std::string_view field, Ledger& out);

}  // namespace ledgerdiff::dump
