#include "tests/horizon_dumps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "core/history_tables.h"
#include "tests/harness.h"

namespace ledgerdiff::testing {

namespace {

std::string Q(const std::string& s) { return pg::QuoteIdent(s); }

}  // namespace

const std::vector<std::string>& LoadableDumps() {
  static const std::vector<std::string> files = {"kahuna-horizon.sql",
                                                 "paths_strict_send-horizon.sql",
                                                 "pathed_payment-horizon.sql",
                                                 "ingest_asset_stats-horizon.sql",
                                                 "operation_fee_stats_1-horizon.sql",
                                                 "operation_fee_stats_2-horizon.sql",
                                                 "operation_fee_stats_3-horizon.sql",
                                                 "failed_transactions-horizon.sql",
                                                 "base-horizon.sql",
                                                 "account_merge-horizon.sql"};
  return files;
}

bool HasColumn(pg::Connection& c, const std::string& table, const std::string& column) {
  auto r = c.Exec(
      "SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND "
      "column_name = $2",
      {table, column});
  return r.ok() && r->size() > 0;
}

void Renumber(const std::string& conninfo) {
  auto c = Connect(conninfo);
  auto fks = c->Exec("SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE contype = 'f'");
  ASSERT_TRUE(fks.ok());
  for (int i = 0; i < fks->size(); ++i)
    ExecSql(*c, fmt::format("ALTER TABLE {} DROP CONSTRAINT {}", fks->Get(i, 0), Q(std::string(fks->Get(i, 1)))));
  ExecSql(*c, "UPDATE history_accounts SET id = id + 1000");
  for (const char* t : {"history_effects", "history_operation_participants", "history_transaction_participants"})
    if (HasColumn(*c, t, "history_account_id"))
      ExecSql(*c, fmt::format("UPDATE {} SET history_account_id = history_account_id + 1000", t));
  ExecSql(*c,
          "UPDATE history_trades SET base_account_id = base_account_id + 1000, counter_account_id = counter_account_id "
          "+ 1000");
  ExecSql(*c, "UPDATE history_assets SET id = 1000 - id");
  std::vector<std::string> set = {"base_asset_id = 1000 - counter_asset_id", "counter_asset_id = 1000 - base_asset_id"};
  for (const char* p : {"account_id", "amount", "offer_id", "liquidity_pool_id"})
    if (HasColumn(*c, "history_trades", std::string("base_") + p))
      set.push_back(fmt::format("base_{0} = counter_{0}, counter_{0} = base_{0}", p));
  set.push_back("price_n = price_d, price_d = price_n, base_is_seller = NOT base_is_seller");
  if (HasColumn(*c, "history_trades", "base_is_exact")) set.push_back("base_is_exact = NOT base_is_exact");
  ExecSql(*c, fmt::format("UPDATE history_trades SET {}", fmt::join(set, ", ")));
  if (HasColumn(*c, "history_claimable_balances", "id")) {
    ExecSql(*c, "UPDATE history_claimable_balances SET id = id + 500");
    ExecSql(*c,
            "UPDATE history_operation_claimable_balances SET history_claimable_balance_id = "
            "history_claimable_balance_id + 500");
    ExecSql(*c,
            "UPDATE history_transaction_claimable_balances SET history_claimable_balance_id = "
            "history_claimable_balance_id + 500");
  }
  if (HasColumn(*c, "history_liquidity_pools", "id")) {
    ExecSql(*c, "UPDATE history_liquidity_pools SET id = id + 500");
    ExecSql(*c,
            "UPDATE history_operation_liquidity_pools SET history_liquidity_pool_id = history_liquidity_pool_id + 500");
    ExecSql(
        *c,
        "UPDATE history_transaction_liquidity_pools SET history_liquidity_pool_id = history_liquidity_pool_id + 500");
    if (HasColumn(*c, "history_trades", "base_liquidity_pool_id"))
      ExecSql(*c,
              "UPDATE history_trades SET base_liquidity_pool_id = base_liquidity_pool_id + 500, "
              "counter_liquidity_pool_id = counter_liquidity_pool_id + 500");
  }
  // Physical order too: rewrite the tables in reverse.
  ExecSql(*c,
          "CREATE TEMP TABLE e AS SELECT * FROM history_effects ORDER BY history_operation_id DESC; "
          "DELETE FROM history_effects; INSERT INTO history_effects SELECT * FROM e");
}

void DeleteLedger(const std::string& conninfo, Ledger l) {
  auto c = Connect(conninfo);
  for (const auto& t : HorizonHistoryTables())
    if (HasColumn(*c, t.name, t.ledger_column))
      ExecSql(*c, fmt::format("DELETE FROM {} WHERE {}", Q(t.name), LedgerRangePredicate(t, {l, l})));
}

void HoldBackLedger(const std::string& conninfo, Ledger l) {
  auto c = Connect(conninfo);
  ExecSql(*c, "CREATE SCHEMA IF NOT EXISTS ld_held_back");
  for (const auto& t : HorizonHistoryTables())
    if (HasColumn(*c, t.name, t.ledger_column)) {
      const std::string held = Q("ld_held_back") + "." + Q(fmt::format("{}_{}", t.name, l));
      const std::string where = LedgerRangePredicate(t, {l, l});
      ExecSql(*c, fmt::format("CREATE TABLE {0} AS SELECT * FROM public.{1} WHERE {2}; DELETE FROM public.{1} WHERE {2}",
                              held, Q(t.name), where));
    }
}

void RestoreLedger(const std::string& conninfo, Ledger l) {
  auto c = Connect(conninfo);
  for (const auto& t : HorizonHistoryTables())
    if (HasColumn(*c, t.name, t.ledger_column)) {
      const std::string held = Q("ld_held_back") + "." + Q(fmt::format("{}_{}", t.name, l));
      ExecSql(*c, fmt::format("INSERT INTO public.{} SELECT * FROM {}; DROP TABLE {}", Q(t.name), held, held));
    }
}

}  // namespace ledgerdiff::testing
