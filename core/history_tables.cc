#include "core/history_tables.h"

#include <utility>

#include <fmt/format.h>

#include "core/pg.h"

namespace ledgerdiff {

std::string_view ToString(LedgerColumnKind kind) {
  switch (kind) {
    case LedgerColumnKind::kSequence: return "sequence";
    case LedgerColumnKind::kToid: return "toid";
  }
  return "sequence";  // not reached: the switch names every kind
}

const std::vector<HistoryTable>& HorizonHistoryTables() {
  // Each ledger column once, with what it holds.
  struct Column {
    const char* name;
    LedgerColumnKind kind;
  };
  static constexpr Column sequence{"sequence", LedgerColumnKind::kSequence},
      ledger_sequence{"ledger_sequence", LedgerColumnKind::kSequence}, id{"id", LedgerColumnKind::kToid},
      operation_id{"history_operation_id", LedgerColumnKind::kToid},
      transaction_id{"history_transaction_id", LedgerColumnKind::kToid},
      open_ledger_toid{"open_ledger_toid", LedgerColumnKind::kToid};
  // Each table once, in Horizon's order, with the column that maps its rows to their ledger.
  // The participant, claimable balance and liquidity pool tables come in operation /
  // transaction pairs. Trade aggregations (migration 47) have no ledger column: a bucket belongs
  // to the ledger of its first trade, whose operation TOID is open_ledger_toid. Transaction
  // filtering's staging table (migration 56) is shaped like history_transactions.
  static constexpr std::pair<const char*, Column> kTables[] = {
      {"history_ledgers", sequence}, {"history_transactions", ledger_sequence}, {"history_operations", id},
      {"history_effects", operation_id}, {"history_trades", operation_id},
      {"history_trades_60000", open_ledger_toid}, {"history_transactions_filtered_tmp", ledger_sequence},
      {"history_operation_participants", operation_id}, {"history_transaction_participants", transaction_id},
      {"history_operation_claimable_balances", operation_id},
      {"history_transaction_claimable_balances", transaction_id},
      {"history_operation_liquidity_pools", operation_id}, {"history_transaction_liquidity_pools", transaction_id},
  };
  static const std::vector<HistoryTable> tables = [] {
    std::vector<HistoryTable> out;
    for (const auto& [table, column] : kTables) out.push_back({table, column.name, column.kind});
    return out;
  }();
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
