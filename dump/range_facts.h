#pragma once
// What a schema holds around a digest's range, read with one statement per table on the caller's
// connection (in its snapshot): the range present, the rows outside a range, the last close time
// at a ledger, and the rows of windowed tables whose window is still open.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// The range present in `schema`: the union of min..max ledger over every compared table (ledger 0
// included). Usage error when everything is empty or a ledger is outside 0..2^31-1.
Result<LedgerRange> DetectRange(pg::Connection& conn, const std::string& schema, const ResolvedProfile& profile);

// The close time (epoch milliseconds, UTC) of the last ledger at or before `at` in `schema`'s
// ledger table (core/history_tables.h kLedgerTable, its closed_at), or nullopt when it holds
// none: the instant up to which a side's windowed tables are settled (profile.h TimeWindow).
Result<std::optional<int64_t>> LastLedgerCloseMs(pg::Connection& conn, const std::string& schema, Ledger at);
// The first ledger of `range` that filed a row of a windowed table of `spec` (profile.h
// TimeWindow) whose window had not closed by `settled_before_ms` in `schema`, or nullopt: what
// holds a follower's frontier back until that window closes (windowed tables absent: nullopt).
Result<std::optional<Ledger>> FirstUnsettledLedger(pg::Connection& conn, const std::string& schema,
                                                   const ProfileSpec& spec, const LedgerRange& range,
                                                   int64_t settled_before_ms);
// A cutoff before any window: nothing is settled (far from overflow when a width is subtracted).
inline constexpr int64_t kNothingSettled = INT64_MIN / 4;

// Rows of a compared table that a digest over `range` does not read.
struct OutsideRange {
  std::string table;
  uint64_t before = 0, after = 0;  // ledger < range.from, ledger > range.to
  uint64_t no_ledger = 0;          // the ledger column is NULL
  uint64_t total() const { return before + after + no_ledger; }
};
// Counts them per table (tables with none are left out). `without_ledger_only`: only rows whose
// ledger column is NULL (an index lookup; before and after stay 0), for sides that grow past every
// range by design.
Result<std::vector<OutsideRange>> CountRowsOutsideRange(pg::Connection& conn, const std::string& schema,
                                                        const ResolvedProfile& profile, const LedgerRange& range,
                                                        bool without_ledger_only = false);

// Rows of a windowed table in a range that a settled cutoff left out (profile.h TimeWindow).
struct UnsettledRows {
  std::string table;
  uint64_t rows = 0;
};
// The rows of each windowed table of `profile` in `range` that its cutoff leaves out
// (ApplySettledCutoff), counted on `conn` (in its snapshot).
Result<std::vector<UnsettledRows>> CountUnsettled(pg::Connection& conn, const std::string& schema,
                                                  const ResolvedProfile& profile, const LedgerRange& range);

}  // namespace ledgerdiff::dump
