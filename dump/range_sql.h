#pragma once
// The one place where SQL range predicates over a ledger column are written.
//
// 64-bit safe: a TOID range is [FROM << 32, (TO << 32) | 0xffffffff], so TO = 2^31 - 1 (the
// largest ledger) gives INT64_MAX and never (TO + 1) << 32, which overflows a bigint. Both forms
// are index friendly (a plain comparison of the stored column).

#include <string>

#include <fmt/format.h>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// The ledger of a row: `column` (sequence) or `column >> 32` (TOID). `column` is SQL (quoted).
inline std::string LedgerOfSql(const std::string& column, LedgerKind kind) {
  return kind == LedgerKind::kToid ? "(" + column + " >> 32)" : column;
}

// Rows whose ledger lies in `range`. `column` is SQL (quoted, e.g. t."id"). NULL ledgers: false.
inline std::string LedgerRangeSql(const std::string& column, LedgerKind kind, const LedgerRange& range) {
  if (kind == LedgerKind::kToid)
    return fmt::format("{0} BETWEEN ({1}::bigint << 32) AND (({2}::bigint << 32) | 4294967295::bigint)", column,
                       range.from, range.to);
  return fmt::format("{0} BETWEEN {1} AND {2}", column, range.from, range.to);
}

}  // namespace ledgerdiff::dump
