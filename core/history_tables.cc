#include "core/history_tables.h"

#include <fmt/format.h>

#include "core/pg.h"

namespace ledgerdiff {

const std::vector<HistoryTable>& HorizonHistoryTables() {
  using K = LedgerColumnKind;
  static const std::vector<HistoryTable> tables = {
      {"history_ledgers", "sequence", K::kSequence},
      {"history_transactions", "ledger_sequence", K::kSequence},
      {"history_operations", "id", K::kToid},
      {"history_effects", "history_operation_id", K::kToid},
      {"history_trades", "history_operation_id", K::kToid},
      // Trade aggregations (migration 47) have no ledger column: a bucket belongs to the ledger
      // of its first trade, whose operation TOID is open_ledger_toid.
      {"history_trades_60000", "open_ledger_toid", K::kToid},
      // Transaction filtering's staging table (migration 56), shaped like history_transactions.
      {"history_transactions_filtered_tmp", "ledger_sequence", K::kSequence},
      {"history_operation_participants", "history_operation_id", K::kToid},
      {"history_transaction_participants", "history_transaction_id", K::kToid},
      {"history_operation_claimable_balances", "history_operation_id", K::kToid},
      {"history_transaction_claimable_balances", "history_transaction_id", K::kToid},
      {"history_operation_liquidity_pools", "history_operation_id", K::kToid},
      {"history_transaction_liquidity_pools", "history_transaction_id", K::kToid},
  };
  return tables;
}

std::optional<HistoryTable> FindHistoryTable(std::string_view name) {
  for (const auto& t : HorizonHistoryTables())
    if (name == t.name) return t;
  return std::nullopt;
}

namespace {

std::string Column(std::string_view column, std::string_view alias) {
  return alias.empty() ? pg::QuoteIdent(column) : fmt::format("{}.{}", alias, pg::QuoteIdent(column));
}

}  // namespace

std::string LedgerRangePredicate(std::string_view column, LedgerColumnKind kind, const LedgerRange& range,
                                 std::string_view alias) {
  const std::string col = Column(column, alias);
  if (kind == LedgerColumnKind::kSequence) return fmt::format("{} BETWEEN {} AND {}", col, range.from, range.to);
  // The last TOID of ledger `to`: every tx_order and op_index bit set. For to = 2^31 - 1 it is
  // INT64_MAX, where Toid(to + 1) would overflow.
  const int64_t last = Toid(range.to) | int64_t{0xFFFFFFFF};
  return fmt::format("{} BETWEEN {} AND {}", col, Toid(range.from), last);
}

std::string LedgerRangePredicate(const HistoryTable& table, const LedgerRange& range) {
  return LedgerRangePredicate(table.ledger_column, table.kind, range);
}

std::string LedgerExpression(std::string_view column, LedgerColumnKind kind, std::string_view alias) {
  const std::string col = Column(column, alias);
  return kind == LedgerColumnKind::kSequence ? col : fmt::format("({} >> 32)", col);
}

}  // namespace ledgerdiff
