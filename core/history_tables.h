#pragma once
// The Horizon history tables and how each row maps to its ledger: the one declaration that the
// fixtures (clearing a job's range), the ingestion engine (counting rows per range) and the
// digest profiles (dump/) share.
//
// A row maps to its ledger through one column, either the ledger sequence itself or a TOID
// (ledger << 32 | tx_order << 12 | op_index, see core/ledger_range.h).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/ledger_range.h"

namespace ledgerdiff {

enum class LedgerColumnKind {
  kSequence,  // the column holds the ledger sequence number
  kToid,      // the column holds a TOID: ledger = value >> 32
};
// As profiles and manifest headers spell it: "sequence" | "toid".
std::string_view ToString(LedgerColumnKind kind);
inline constexpr std::array<LedgerColumnKind, 2> kLedgerColumnKinds = {LedgerColumnKind::kSequence,
                                                                       LedgerColumnKind::kToid};
inline std::optional<LedgerColumnKind> ParseLedgerColumnKind(std::string_view text) {
  return ParseEnum(kLedgerColumnKinds, text);
}

struct HistoryTable {
  const char* name;           // e.g. "history_effects"
  const char* ledger_column;  // e.g. "history_operation_id"
  LedgerColumnKind kind;
};

// Horizon's per-ledger history tables (the lookup tables history_accounts / history_assets /
// history_claimable_balances / history_liquidity_pools have no ledger), in Horizon's order,
// checked against stellar/go's Horizon migrations. history_transactions maps by ledger_sequence
// (its by_ledger index), not by its TOID id: both agree on every row Horizon writes.
// history_trades_60000 has a derived ledger: open_ledger_toid >> 32. A schema need not hold
// every table (the fixtures' schema has nine of them).
const std::vector<HistoryTable>& HorizonHistoryTables();
// The table with one row per ledger a database holds: which ledgers a side has (diff's coverage,
// chaos's lost ledgers) is read off its rows.
inline constexpr const char* kLedgerTable = "history_ledgers";
// The table named `name`, or nullopt for a table that is not a Horizon per-ledger table.
std::optional<HistoryTable> FindHistoryTable(std::string_view name);

// SQL predicate "the row's ledger is in `range`" over `column` (quoted here; prefixed by
// `alias.` when alias is not empty): the one range predicate of the tool. Index-friendly: a plain
// range on the column with literal bounds. A NULL ledger column is never in range.
// INVARIANT: no arithmetic overflows for any range within 0..2^31-1 (the TOID upper bound is
// inclusive, (to << 32) | 0xFFFFFFFF, at most INT64_MAX).
std::string LedgerRangePredicate(std::string_view column, LedgerColumnKind kind, const LedgerRange& range,
                                 std::string_view alias = "");
std::string LedgerRangePredicate(const HistoryTable& table, const LedgerRange& range);
// SQL expression of the row's ledger number over `column`: "col" (the column itself, so that an
// ORDER BY on it can follow an index) or "(col >> 32)" for a TOID.
std::string LedgerExpression(std::string_view column, LedgerColumnKind kind, std::string_view alias = "");

}  // namespace ledgerdiff
