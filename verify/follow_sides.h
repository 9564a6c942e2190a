#pragma once
// What verify-range --follow (verify/follow.h) reads of each side outside its comparisons: the
// side's identity as the state records it, its heads and gaps, the first ledger it lacks, and a
// ledger's close time. Each call opens its own read-only connection.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::verify {

// One side of the comparison as the state records it: its identity and schema; never a conninfo.
Result<nlohmann::json> SideRecord(const std::string& conninfo, const std::string& schema);

// The state's side and the one given now: "" when they are the same source, else why not.
// Throws what dump::SourceIdentityFromJson throws for a stored record that is not one.
std::string SideMismatch(const nlohmann::json& stored, const nlohmann::json& now, const char* side);

// Each side's heads: the highest ledger it holds, and the last of its gap-free run of ledgers
// after `after` (through after + window; `after` when ledger after + 1 is missing); and, in the
// same statement (one snapshot), what it still holds of the compared ledgers `kept`:`after`.
struct Heads {
  std::optional<Ledger> max;
  Ledger contiguous = 0;
  std::optional<double> closed_at_max;  // Unix time of `max`, when the ledger table has closed_at
  std::optional<Ledger> lowest;         // its lowest ledger at or after `kept`
  uint64_t held = 0;                    // its ledgers in kept:after (an index-only count)
  // Ledgers missing between the end of its gap-free run and its head, within the window after
  // `after` (an index-only count of the window).
  uint64_t gap_ledgers = 0;
};

Result<Heads> ReadHeads(const std::string& conninfo, const std::string& schema, Ledger after, uint64_t window,
                        Ledger kept);

// The first ledger of from:to that `schema` does not hold (to + 1 when it holds them all).
Result<Ledger> FirstMissing(const std::string& conninfo, const std::string& schema, Ledger from, Ledger to);

// closed_at of `ledger` on that side as Unix seconds; nullopt when unknown (no such row or column,
// no connection).
std::optional<double> ClosedAt(const std::string& conninfo, const std::string& schema, Ledger ledger);

}  // namespace ledgerdiff::verify
