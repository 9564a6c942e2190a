#pragma once
// Ledger ranges and job splitting.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ledgerdiff {

using Ledger = uint32_t;

// An inclusive range of ledger sequence numbers. INVARIANT: 0 <= from <= to < 2^31; a range that
// is ingested also has 1 <= from (see RangeUse).
struct LedgerRange {
  Ledger from = 1;
  Ledger to = 1;

  uint64_t size() const { return uint64_t{to} - from + 1; }
  bool contains(Ledger l) const { return l >= from && l <= to; }
  bool contains(const LedgerRange& r) const { return r.from >= from && r.to <= to; }
  std::string str() const;  // "FROM:TO"
  bool operator==(const LedgerRange&) const = default;
};

// What a parsed range is for.
// - kIngest: ledgers to ingest. Ledger 0 does not exist on the Stellar chain (it starts at ledger
//   1) and the ingestion code relies on that: GenerateLedger REQUIRES ledger >= 1, and the
//   orchestrator (restart range), the split-lookup ingester and BugInjection use 0 for "none".
//   So FROM >= 1.
// - kCompare: ledgers to digest, diff, dump or verify. A broken copy can hold rows at ledger 0
//   (a TOID that lost its ledger bits, a ledger_sequence of 0), and the comparison reads
//   whatever the sides hold, so FROM >= 0.
enum class RangeUse { kIngest, kCompare };

// Parses "FROM:TO" (both inclusive, FROM <= TO < 2^31; FROM >= 1 for kIngest, see RangeUse).
// A single "N" means N:N. Errors name the problem: "range \"5:2\": TO (2) is before FROM (5)".
Result<LedgerRange> ParseLedgerRange(std::string_view text, RangeUse use = RangeUse::kIngest);

// Cuts `range` into consecutive jobs of `job_size` ledgers; the last one may be shorter (down to
// one ledger). REQUIRES: job_size >= 1. The jobs cover the range exactly, in order.
std::vector<LedgerRange> SplitJobs(const LedgerRange& range, uint32_t job_size);

// Compresses sorted ledger numbers into intervals: {12,13,14,15,40} -> "12-15, 40".
std::string FormatIntervals(const std::vector<Ledger>& sorted_ledgers);
std::vector<LedgerRange> ToIntervals(const std::vector<Ledger>& sorted_ledgers);

// TOID layout of Stellar ids: ledger << 32 | tx_order << 12 | op_index (tx_order, op_index >= 1;
// a transaction's id has op_index 0, a ledger's both 0).
constexpr int64_t Toid(Ledger ledger, uint32_t tx_order = 0, uint32_t op_index = 0) {
  return (int64_t{ledger} << 32) | (int64_t{tx_order} << 12) | int64_t{op_index};
}
constexpr Ledger ToidLedger(int64_t id) { return static_cast<Ledger>(id >> 32); }

}  // namespace ledgerdiff
