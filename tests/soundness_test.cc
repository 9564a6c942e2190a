// Verifier soundness (issue 9): every class of broken copy the gate once called identical is
// planted into a real Horizon dump and must be found: rows outside the detected range, ledger 0
// and the top ledger, lookups, tables on one side, invariants, nothing compared. The legal
// differences and the encoding are in soundness_encoding_test.cc (the same binary;
// tests/soundness_support.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/pg.h"
#include "diff/checks.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "tests/harness.h"
#include "report/diff_text_json.h"
#include "tests/soundness_support.h"

namespace ledgerdiff {
namespace {

using namespace soundness_support;

// ---------------------------------------------------------------------------------------------
// 1. Rows outside the detected range, ledger 0, the top ledger

TEST(Range, RowsPastTheLastLedgerAreCompared) {
  std::string a = LoadDump(), b = LoadDump();
  int64_t top = QueryInt(a, "SELECT max(sequence) FROM history_ledgers");
  ASSERT_GT(top, 0);
  // A job that wrote past its end: an operation 5 ledgers after the last ledger.
  ExecSql(b, fmt::format("CREATE TEMP TABLE x AS SELECT * FROM history_operations ORDER BY id LIMIT 1; "
                         "UPDATE x SET id = ({}::bigint << 32) | 4097; INSERT INTO history_operations SELECT * FROM x",
                         top + 5));
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(static_cast<Ledger>(top + 5)));
  // With an explicit --range that ends before it, the row is counted and reported.
  diff::DiffOptions o;
  o.range = LedgerRange{1, static_cast<Ledger>(top)};
  auto scoped = Diff(Db(a), Db(b), o);
  ASSERT_TRUE(scoped.ok()) << scoped.status().message();
  ASSERT_EQ(scoped->rows_outside_range.size(), 1u) << report::RenderDiffText(*scoped);
  EXPECT_EQ(scoped->rows_outside_range[0].table, "history_operations");
  EXPECT_EQ(scoped->rows_outside_range[0].side, Side::kRight);
  EXPECT_EQ(scoped->rows_outside_range[0].after, 1u);
  EXPECT_NE(report::RenderDiffText(*scoped).find("warning: history_operations (right): 1 rows outside"),
            std::string::npos);
  EXPECT_EQ(report::DiffReportToJson(*scoped)["rows_outside_range"][0]["after"], 1);
}

// --range A:B with B well below the top: a row at TOID (B+1)<<32 and one at (A-1)<<32, in two
// tables, lie outside; they are counted per side and direction, never compared (a TOID bound that
// let ledger B+1 in would find a divergence at B+1).
TEST(Range, RowsJustOutsideAnExplicitRangeAreReportedNotCompared) {
  std::string a = LoadDump(), b = LoadDump();
  const int64_t top = QueryInt(a, "SELECT max(sequence) FROM history_ledgers");
  const int64_t from = QueryInt(a, "SELECT min(sequence) FROM history_ledgers WHERE sequence > 2") + 1;
  const int64_t to = top - 10;
  ASSERT_GT(to, from);
  ExecSql(b, fmt::format("CREATE TEMP TABLE x AS SELECT * FROM history_operations ORDER BY id LIMIT 1; "
                         "UPDATE x SET id = ({}::bigint << 32) | (999 << 12) | 1; "
                         "INSERT INTO history_operations SELECT * FROM x; "
                         "CREATE TEMP TABLE y AS SELECT * FROM history_transactions ORDER BY id LIMIT 1; "
                         "UPDATE y SET id = ({}::bigint << 32) | (999 << 12), ledger_sequence = {}, "
                         "transaction_hash = repeat('ab', 32); "
                         "INSERT INTO history_transactions SELECT * FROM y",
                         to + 1, from - 1, from - 1));
  diff::DiffOptions o;
  o.range = LedgerRange{static_cast<Ledger>(from), static_cast<Ledger>(to)};
  auto r = Diff(Db(a), Db(b), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->first_divergent_ledger.has_value()) << "a row outside --range was compared: ledger "
                                                      << r->first_divergent_ledger.value_or(0);
  auto count = [&](const std::string& table, const std::string& side, bool after) -> int64_t {
    for (const auto& o : r->rows_outside_range)
      if (o.table == table && ToString(o.side) == side) return static_cast<int64_t>(after ? o.after : o.before);
    return 0;
  };
  EXPECT_EQ(count("history_operations", "right", true), count("history_operations", "left", true) + 1);
  EXPECT_EQ(count("history_operations", "right", false), count("history_operations", "left", false));
  EXPECT_EQ(count("history_transactions", "right", false), count("history_transactions", "left", false) + 1);
  EXPECT_EQ(count("history_transactions", "right", true), count("history_transactions", "left", true));
}

TEST(Range, LedgerZeroIsCompared) {
  std::string a = LoadDump(), b = LoadDump();
  // A wrong TOID: an effect whose operation id lost its ledger bits (ledger 0).
  ExecSql(b, "CREATE TEMP TABLE x AS SELECT * FROM history_effects ORDER BY history_operation_id LIMIT 1; "
             "UPDATE x SET history_operation_id = 4097; INSERT INTO history_effects SELECT * FROM x");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(r->range.from, 0u);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(0));
}

// Ledger 0 through the CLI: `--range 0:N` is a legal comparison range and finds a transaction
// planted at ledger_sequence 0 (and a TOID with high bits 0); the default range finds it too, and
// a range that starts at 1 reports it as a row outside the range.
TEST(Range, ExplicitRangeFromLedgerZeroFindsPlantedRows) {
  std::string a = LoadDump(), b = LoadDump();
  int64_t top = QueryInt(a, "SELECT max(sequence) FROM history_ledgers");
  ASSERT_GT(top, 0);
  ExecSql(b, "CREATE TEMP TABLE x AS SELECT * FROM history_transactions ORDER BY id LIMIT 1; "
             "UPDATE x SET ledger_sequence = 0, id = 4096, transaction_hash = md5('planted') || md5('zero'); "
             "INSERT INTO history_transactions SELECT * FROM x");
  ASSERT_EQ(QueryInt(b, "SELECT count(*) FROM history_transactions WHERE ledger_sequence = 0"), 1);
  const std::string left = a + "::public", right = b + "::public", to = std::to_string(top);
  for (const std::vector<std::string>& range : {std::vector<std::string>{"--range", "0:" + to},
                                                std::vector<std::string>{}}) {
    std::vector<std::string> args = {"diff", left, right, "--format", "json"};
    args.insert(args.end(), range.begin(), range.end());
    auto cli = testing::RunCli(args);
    ASSERT_EQ(cli.exit_code, 1) << cli.out << cli.err;
    auto j = nlohmann::json::parse(cli.out);
    EXPECT_EQ(j["identical"], false);
    EXPECT_EQ(j["first_divergent_ledger"], 0) << cli.out;
    EXPECT_EQ(j["divergent_tables"], nlohmann::json::array({"history_transactions"})) << cli.out;
    EXPECT_EQ(j["range"]["from"], 0) << cli.out;
  }
  auto from_one = testing::RunCli({"diff", left, right, "--range", "1:" + to, "--format", "json"});
  ASSERT_EQ(from_one.exit_code, 0) << from_one.out << from_one.err;
  auto j = nlohmann::json::parse(from_one.out);
  ASSERT_EQ(j["rows_outside_range"].size(), 1u) << from_one.out;
  EXPECT_EQ(j["rows_outside_range"][0]["table"], "history_transactions");
  EXPECT_EQ(j["rows_outside_range"][0]["side"], "right");
  EXPECT_EQ(j["rows_outside_range"][0]["before"], 1);
  // Ingestion still refuses ledger 0 (it does not exist on the chain), with exit 2.
  auto ingest = testing::RunCli({"ingest", "--range", "0:5", "--schema", UniqueName("zero"), "--db", TestConninfo()});
  EXPECT_EQ(ingest.exit_code, 2) << ingest.out << ingest.err;
  EXPECT_NE(ingest.err.find("FROM is 0"), std::string::npos) << ingest.err;
}

// A row no ledger can hold (NULL ledger_sequence, on a copy whose column lost NOT NULL): without
// --range the range is meant to hold every row, so a different number of such rows on the two
// sides is a divergence (it once was a warning under "identical"); with --range it stays a warning.
TEST(Range, RowWithoutALedgerOnOneSideIsADivergenceWithoutRange) {
  std::string a = LoadDump(), b = LoadDump();
  const std::string plant =
      "ALTER TABLE history_transactions ALTER COLUMN ledger_sequence DROP NOT NULL; "
      "CREATE TEMP TABLE x AS SELECT * FROM history_transactions ORDER BY id LIMIT 1; "
      "UPDATE x SET ledger_sequence = NULL, id = 4095, transaction_hash = md5('null') || md5('ledger'); "
      "INSERT INTO history_transactions SELECT * FROM x";
  ExecSql(b, plant);
  ExecSql(a, "ALTER TABLE history_transactions ALTER COLUMN ledger_sequence DROP NOT NULL");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical) << report::RenderDiffText(*r);
  EXPECT_FALSE(r->first_divergent_ledger.has_value());
  ASSERT_EQ(r->outside_range_differences.size(), 1u);
  EXPECT_EQ(r->outside_range_differences[0].rfind("history_transactions: ", 0), 0u) << r->outside_range_differences[0];
  EXPECT_NE(report::RenderDiffText(*r).find("divergent: rows outside the range differ"), std::string::npos)
      << report::RenderDiffText(*r);
  EXPECT_EQ(report::DiffReportToJson(*r)["outside_range_differences"].size(), 1u);
  auto cli = testing::RunCli({"diff", a + "::public", b + "::public"});
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  // With --range the user chose the scope: a warning, counted.
  diff::DiffOptions o;
  o.range = LedgerRange{1, static_cast<Ledger>(QueryInt(a, "SELECT max(sequence) FROM history_ledgers"))};
  auto scoped = Diff(Db(a), Db(b), o);
  ASSERT_TRUE(scoped.ok()) << scoped.status().message();
  EXPECT_TRUE(scoped->identical) << report::RenderDiffText(*scoped);
  ASSERT_EQ(scoped->rows_outside_range.size(), 1u);
  EXPECT_EQ(scoped->rows_outside_range[0].no_ledger, 1u);
  // The same row on both sides: nothing tells them apart; warned, not divergent.
  ExecSql(a, plant.substr(plant.find("CREATE TEMP")));
  auto both = Diff(Db(a), Db(b));
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_TRUE(both->identical) << report::RenderDiffText(*both);
  EXPECT_EQ(both->rows_outside_range.size(), 2u);
  EXPECT_NE(report::RenderDiffText(*both).find("1 rows outside ledgers"), std::string::npos);
}

// A schema with a TOID table (profile auto) holding rows at the top ledger 2^31 - 1.
std::string TopLedgerSchema(const std::string& value) {
  std::string s = UniqueName("top");
  ExecSql(TestConninfo(), fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.ops (history_operation_id bigint, v text); "
                                      "INSERT INTO {0}.ops VALUES ((2147483646::bigint << 32) | 1, 'a'), "
                                      "((2147483647::bigint << 32) | 1, {1}), ((2147483647::bigint << 32) | 4095, 'z')",
                                      pg::QuoteIdent(s), value));
  return s;
}

TEST(Range, TamperedTopLedgerIsFound) {
  auto spec = dump::LoadProfileSpec("auto");
  ASSERT_TRUE(spec.ok());
  std::string a = TopLedgerSchema("'b'"), b = TopLedgerSchema("'B'");
  diff::DiffOptions o;
  o.range = LedgerRange{2147483646, 2147483647};
  auto r = Diff(Db(TestConninfo(), a), Db(TestConninfo(), b), o, *spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(2147483647));
  EXPECT_EQ(r->rows_compared_left, 3u);
  auto same = Diff(Db(TestConninfo(), a), Db(TestConninfo(), TopLedgerSchema("'b'")), {}, *spec);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_TRUE(same->identical);
  EXPECT_EQ(same->range.to, 2147483647u);
  EXPECT_EQ(same->rows_compared_right, 3u);
}

// ---------------------------------------------------------------------------------------------
// 2. Lookup tables

TEST(Lookups, ExtraAccountRowIsADivergence) {
  std::string a = LoadDump(), b = LoadDump();
  ExecSql(b, "INSERT INTO history_accounts (id, address) VALUES (99999, 'GEXTRAACCOUNT')");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_FALSE(r->first_divergent_ledger.has_value());
  const auto* c = Lookup(*r, "history_accounts");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->only_right_total, 1u);
  ASSERT_EQ(c->only_right.size(), 1u);
  EXPECT_EQ(c->only_right[0], "[\"GEXTRAACCOUNT\"]");
  EXPECT_EQ(c->unreferenced_right, c->unreferenced_left + 1);
  EXPECT_NE(report::RenderDiffText(*r).find("lookup history_accounts differs"), std::string::npos);
  EXPECT_TRUE(report::DiffReportToJson(*r)["lookups"].is_array());
}

TEST(Lookups, OneAddressUnderTwoIdsIsADivergence) {
  std::string a = LoadDump(), b = LoadDump();
  // Split an account: a second id for the same address, half its participations moved to it.
  ExecSql(b, "DROP INDEX index_history_accounts_on_address; "
             "INSERT INTO history_accounts (id, address) SELECT 77777, address FROM history_accounts WHERE id = "
             "(SELECT history_account_id FROM history_operation_participants GROUP BY 1 ORDER BY count(*) DESC, 1 "
             "LIMIT 1); "
             "UPDATE history_operation_participants SET history_account_id = 77777 WHERE history_account_id = "
             "(SELECT id FROM history_accounts WHERE address = (SELECT address FROM history_accounts WHERE id = 77777) "
             "AND id <> 77777) AND history_operation_id % 2 = 0");
  ASSERT_GT(QueryInt(b, "SELECT count(*) FROM history_operation_participants WHERE history_account_id = 77777"), 0);
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_FALSE(r->first_divergent_ledger.has_value()) << "natural keys hide the split from the digests";
  const auto* c = Lookup(*r, "history_accounts");
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->issues.empty());
  EXPECT_EQ(c->issues[0].side, Side::kRight);
  EXPECT_EQ(c->issues[0].kind, "key_under_several_ids");
  EXPECT_NE(c->issues[0].detail.find("77777"), std::string::npos);
}

// The same split in each other lookup table of the Horizon profile: a natural key under a second
// id with rows pointing at it is reported for that table, naming the id (issue 25: the check
// skipped for one table passed every test while only history_accounts was planted).
TEST(Lookups, EveryLookupTablesKeyUnderTwoIdsIsADivergence) {
  struct Case {
    std::string table, both_sides, right_side, new_id;
  };
  const std::vector<Case> cases = {
      {"history_assets", "",
       // trades keep base_asset_id < counter_asset_id: the native asset (7) moves to a high id
       "ALTER TABLE history_assets DROP CONSTRAINT history_assets_asset_code_asset_type_asset_issuer_key; "
       "INSERT INTO history_assets SELECT 88888, asset_type, asset_code, asset_issuer FROM history_assets "
       "WHERE id = 7; UPDATE history_trades SET counter_asset_id = 88888 WHERE counter_asset_id = 7",
       "88888"},
      {"history_liquidity_pools",
       "INSERT INTO history_liquidity_pools (id, liquidity_pool_id) VALUES (44444, 'pool-x'); "
       "INSERT INTO history_operation_liquidity_pools SELECT id, 44444 FROM history_operations ORDER BY id LIMIT 2",
       "DROP INDEX index_history_liquidity_pools_on_liquidity_pool_id; "
       "INSERT INTO history_liquidity_pools (id, liquidity_pool_id) VALUES (55555, 'pool-x'); "
       "UPDATE history_operation_liquidity_pools SET history_liquidity_pool_id = 55555 WHERE history_operation_id = "
       "(SELECT max(history_operation_id) FROM history_operation_liquidity_pools WHERE history_liquidity_pool_id = 44444)",
       "55555"},
      {"history_claimable_balances", "",
       "DROP INDEX index_history_claimable_balances_on_claimable_balance_id; "
       "INSERT INTO history_claimable_balances SELECT 66666, claimable_balance_id FROM history_claimable_balances "
       "WHERE id = 1; UPDATE history_operation_claimable_balances SET history_claimable_balance_id = 66666 "
       "WHERE history_operation_id = 8589938689",
       "66666"},
  };
  for (const Case& c : cases) {
    std::string a = LoadDump(), b = LoadDump();
    if (!c.both_sides.empty()) {
      ExecSql(a, c.both_sides);
      ExecSql(b, c.both_sides);
    }
    ExecSql(b, c.right_side);
    auto r = Diff(Db(a), Db(b));
    ASSERT_TRUE(r.ok()) << c.table << ": " << r.status().message();
    EXPECT_FALSE(r->identical) << c.table;
    const auto* l = Lookup(*r, c.table);
    ASSERT_NE(l, nullptr) << c.table;
    ASSERT_FALSE(l->issues.empty()) << c.table;
    EXPECT_EQ(l->issues[0].side, Side::kRight) << c.table;
    EXPECT_EQ(l->issues[0].kind, "key_under_several_ids") << c.table;
    EXPECT_NE(l->issues[0].detail.find(c.new_id), std::string::npos) << c.table << ": " << l->issues[0].detail;
  }
}

// Rows are a multiset per (table, ledger): {r, r, s} and {s, t, t} have the same count and, if row
// hashes were XORed, the same digest (r^r = t^t = 0). Each must be its own divergence at its ledger.
TEST(Multiset, SameCountDifferentRowsAtOneLedgerDiverge) {
  std::string a = LoadDump(), b = LoadDump();
  const std::string seed_row =
      "FROM history_effects WHERE (history_operation_id, \"order\") = "
      "(SELECT history_operation_id, \"order\" FROM history_effects ORDER BY 1, 2 LIMIT 1)";
  auto twice = [&](int order) {
    const std::string insert = fmt::format(
        "INSERT INTO history_effects (history_account_id, history_operation_id, \"order\", type, details) "
        "SELECT history_account_id, history_operation_id, {}, type, details {}; ", order, seed_row);
    return "DROP INDEX hist_e_by_order; DROP INDEX hist_e_id; " + insert + insert;
  };
  ExecSql(a, twice(900));  // s, r, r
  ExecSql(b, twice(901));  // s, t, t
  const int64_t ledger = QueryInt(a, "SELECT min(history_operation_id) >> 32 FROM history_effects");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  ASSERT_TRUE(r->first_divergent_ledger.has_value());
  EXPECT_EQ(static_cast<int64_t>(*r->first_divergent_ledger), ledger);
}

TEST(Lookups, ReferencedButMissingIdAndUnreferencedExtras) {
  std::string a = LoadDump(), b = LoadDump();
  // Unreferenced accounts on both sides are legal (Horizon keeps them): identical, warned.
  for (const auto& c : {a, b}) ExecSql(c, "INSERT INTO history_accounts (id, address) VALUES (88888, 'GUNUSED')");
  auto same = Diff(Db(a), Db(b));
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_TRUE(same->identical) << report::RenderDiffText(*same);
  ASSERT_NE(Lookup(*same, "history_accounts"), nullptr);
  EXPECT_GE(Lookup(*same, "history_accounts")->unreferenced_left, 1u);
  EXPECT_NE(report::RenderDiffText(*same).find("ids no compared row references"), std::string::npos);
  // A referenced account deleted: its id is referenced but missing.
  ExecSql(b, "DELETE FROM history_accounts WHERE id = (SELECT min(history_account_id) FROM "
             "history_transaction_participants)");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  const auto* c = Lookup(*r, "history_accounts");
  ASSERT_NE(c, nullptr);
  bool missing = false;
  for (const auto& i : c->issues) missing = missing || (i.kind == "referenced_id_missing" && i.side == Side::kRight);
  EXPECT_TRUE(missing);
  EXPECT_GT(Violations(*r, "history_transaction_participants_account_exists", "right"), 0u);
}

// Natural keys are compared by an encoding that no field's content can blur: a NULL against the
// text \N, a tab inside a field against the same characters split over two fields, a backslash.
TEST(Lookups, KeysThatOnlyEscapingTellsApartStayApart) {
  std::string a = LoadDump(), b = LoadDump();
  for (const auto& c : {a, b}) ExecSql(c, "ALTER TABLE history_assets ALTER asset_code DROP NOT NULL");
  ExecSql(a, "INSERT INTO history_assets (id, asset_type, asset_code, asset_issuer) VALUES (90001, "
             "'credit_alphanum4', NULL, 'GISSUER'), (90002, E'x\\ty', 'z', 'GISSUER'), (90003, 'same', E'back\\\\', "
             "'GISSUER')");
  ExecSql(b, "INSERT INTO history_assets (id, asset_type, asset_code, asset_issuer) VALUES (90001, "
             "'credit_alphanum4', '\\N', 'GISSUER'), (90002, 'x', E'y\\tz', 'GISSUER'), (90003, 'same', E'back\\\\', "
             "'GISSUER')");
  diff::DiffOptions scan;
  scan.resolve_on_client = false;
  for (const auto& o : {diff::DiffOptions{}, scan}) {
    SCOPED_TRACE(o.resolve_on_client ? "client resolution" : "canonical joins");
    auto r = Diff(Db(a), Db(b), o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r->identical);
    const auto* c = Lookup(*r, "history_assets");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->only_left_total, 2u);
    EXPECT_EQ(c->only_right_total, 2u);
    EXPECT_EQ(c->only_left, (std::vector<std::string>{"[\"credit_alphanum4\",null,\"GISSUER\"]",
                                                      "[\"x\\ty\",\"z\",\"GISSUER\"]"}));
    EXPECT_EQ(c->only_right, (std::vector<std::string>{"[\"credit_alphanum4\",\"\\\\N\",\"GISSUER\"]",
                                                       "[\"x\",\"y\\tz\",\"GISSUER\"]"}));
    EXPECT_EQ(c->left_keys, c->right_keys);
    EXPECT_EQ(c->unreferenced_left, c->unreferenced_right);
    EXPECT_GE(c->unreferenced_left, 3u);
    EXPECT_EQ(c->issues_total, 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Every history table

TEST(Tables, TradeAggregationsAreComparedByTheirOpenLedger) {
  std::string a = LoadDump(), b = LoadDump();
  const std::string row = "INSERT INTO history_trades_60000 VALUES (60000, 1, 2, 1, {}, 20, 2, 2, 1, 2, 1, "
                          "(19::bigint << 32) | 4097, 2, 1, (19::bigint << 32) | 4097, 2, 1)";
  ExecSql(a, fmt::format(fmt::runtime(row), 10));
  ExecSql(b, fmt::format(fmt::runtime(row), 11));
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(19));
  ASSERT_FALSE(r->divergent_tables.empty());
  EXPECT_EQ(r->divergent_tables[0].table, "history_trades_60000");
  // The same bucket stored the other way round (assets swapped, volumes and prices inverted)
  // under renumbered asset ids is the same bucket.
  std::string c = LoadDump();
  DropForeignKeys(c);
  ExecSql(c, "UPDATE history_assets SET id = -1 WHERE id = 1; UPDATE history_assets SET id = 1 WHERE id = 2; "
             "UPDATE history_assets SET id = 2 WHERE id = -1; "
             "ALTER TABLE history_trades DROP CONSTRAINT history_trades_check; "
             "UPDATE history_trades SET base_asset_id = CASE base_asset_id WHEN 1 THEN 2 WHEN 2 THEN 1 ELSE "
             "base_asset_id END, counter_asset_id = CASE counter_asset_id WHEN 1 THEN 2 WHEN 2 THEN 1 ELSE "
             "counter_asset_id END");
  ExecSql(c, "INSERT INTO history_trades_60000 VALUES (60000, 1, 2, 1, 20, 10, 0.5, 1, 2, 1, 2, "
             "(19::bigint << 32) | 4097, 1, 2, (19::bigint << 32) | 4097, 1, 2)");
  auto flipped = Diff(Db(a), Db(c));
  ASSERT_TRUE(flipped.ok()) << flipped.status().message();
  for (const auto& t : flipped->divergent_tables) EXPECT_NE(t.table, "history_trades_60000") << report::RenderDiffText(*flipped);
}

TEST(Tables, HistoryTableOnOneSideOnlyIsADivergenceAndInventoryIsFromBothSides) {
  std::string a = LoadDump(), b = LoadDump();
  ExecSql(b, "CREATE TABLE history_transactions_filtered_tmp AS SELECT * FROM history_transactions WHERE false; "
             "CREATE TABLE right_notes (x int)");
  ExecSql(a, "CREATE TABLE left_notes (x int)");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_NE(std::find(r->schema_differences.begin(), r->schema_differences.end(),
                      "table history_transactions_filtered_tmp only on the right"),
            r->schema_differences.end());
  EXPECT_NE(std::find(r->uncompared_left.begin(), r->uncompared_left.end(), "left_notes"), r->uncompared_left.end());
  EXPECT_NE(std::find(r->uncompared_right.begin(), r->uncompared_right.end(), "right_notes"),
            r->uncompared_right.end());
  EXPECT_NE(std::find(r->tables_only_right.begin(), r->tables_only_right.end(), "right_notes"),
            r->tables_only_right.end());
  std::string text = report::RenderDiffText(*r);
  EXPECT_NE(text.find("not compared (no ledger mapping): left "), std::string::npos);
  EXPECT_NE(text.find("right_notes"), std::string::npos);
  auto j = report::DiffReportToJson(*r);
  EXPECT_EQ(j["tables_one_side"]["left"], nlohmann::json::array({"left_notes"}));
  // A row in the staging table is compared at its ledger.
  ExecSql(a, "CREATE TABLE history_transactions_filtered_tmp AS SELECT * FROM history_transactions WHERE false");
  ExecSql(b, "INSERT INTO history_transactions_filtered_tmp SELECT * FROM history_transactions WHERE ledger_sequence = 7 "
             "LIMIT 1");
  auto staged = Diff(Db(a), Db(b));
  ASSERT_TRUE(staged.ok()) << staged.status().message();
  ASSERT_TRUE(staged->first_divergent_ledger.has_value()) << report::RenderDiffText(*staged);
  EXPECT_EQ(*staged->first_divergent_ledger, 7u);
}

// ---------------------------------------------------------------------------------------------
// 4. Side invariants

TEST(Invariants, TradeAgainstHorizonsOrientationIsADivergence) {
  std::string a = LoadDump(), b = LoadDump();
  // One trade turned around on its own ids: canonically the same trade, but Horizon's /trades
  // query (base_asset_id < counter_asset_id) no longer finds it.
  ExecSql(b, "ALTER TABLE history_trades DROP CONSTRAINT history_trades_check; "
             "UPDATE history_trades SET base_asset_id = counter_asset_id, counter_asset_id = base_asset_id, "
             "base_account_id = counter_account_id, counter_account_id = base_account_id, base_amount = "
             "counter_amount, counter_amount = base_amount, base_offer_id = counter_offer_id, counter_offer_id = "
             "base_offer_id, price_n = price_d, price_d = price_n, base_is_seller = NOT base_is_seller "
             "WHERE history_operation_id = 81604382721 AND \"order\" = 1");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->first_divergent_ledger.has_value()) << "canonical orientation sees the same trade";
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(Violations(*r, "horizon_trade_orientation", "right"), 1u);
  EXPECT_EQ(Violations(*r, "horizon_trade_orientation", "left"), 0u);
  EXPECT_NE(report::RenderDiffText(*r).find("invariant horizon_trade_orientation broken on the right side: 1 rows of "
                                          "history_trades, first at ledger 19"),
            std::string::npos);
}

TEST(Invariants, OperationOutsideItsTransactionLedgerAndUserDeclaredInvariants) {
  std::string a = LoadDump();
  // The same wrong TOID on both sides: the digests agree, the invariant does not hold.
  std::string b = LoadDump();
  for (const auto& c : {a, b})
    ExecSql(c, "UPDATE history_operations SET transaction_id = (SELECT min(id) FROM history_transactions WHERE "
               "ledger_sequence = 3) WHERE id = (SELECT max(id) FROM history_operations)");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->first_divergent_ledger.has_value());
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(Violations(*r, "operation_toid_in_its_transaction_ledger", "left"), 1u);
  EXPECT_EQ(Violations(*r, "operation_toid_in_its_transaction_ledger", "right"), 1u);
  // A user profile declares its own.
  auto spec = dump::ParseProfileSpecJson(R"({"name": "mine", "tables": [
      {"table": "history_ledgers", "ledger": {"column": "sequence"}, "key": ["sequence"]}],
      "invariants": [{"name": "positive_tx_count", "table": "history_ledgers",
                      "violation": "t.transaction_count < 0", "columns": ["transaction_count"]}]})",
                                         "test");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ExecSql(b, "UPDATE history_ledgers SET transaction_count = -1 WHERE sequence = 4");
  ExecSql(a, "UPDATE history_ledgers SET transaction_count = -1 WHERE sequence = 4");
  auto u = Diff(Db(a), Db(b), {}, *spec);
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_FALSE(u->identical);
  EXPECT_EQ(Violations(*u, "positive_tx_count", "left"), 1u);
  ASSERT_EQ(u->invariants.size(), 2u);
  EXPECT_EQ(u->invariants[0].first_ledger, std::optional<Ledger>(4));
}

// ---------------------------------------------------------------------------------------------
// 5. A gate that passes on nothing

TEST(Empty, NothingComparedIsAUsageErrorUnlessAllowed) {
  std::string a = UniqueName("empty"), b = UniqueName("empty");
  for (const auto& s : {a, b})
    ExecSql(TestConninfo(), fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.history_ledgers (sequence int, x text)",
                                        pg::QuoteIdent(s)));
  diff::DiffOptions o;
  o.range = LedgerRange{10, 20};
  auto r = Diff(Db(TestConninfo(), a), Db(TestConninfo(), b), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), Status::Kind::kUsage);
  EXPECT_NE(r.status().message().find("ledgers 10:20"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(a), std::string::npos);
  EXPECT_NE(r.status().message().find(b), std::string::npos);
  o.allow_empty = true;
  auto ok = Diff(Db(TestConninfo(), a), Db(TestConninfo(), b), o);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->identical);
  // The CLI: exit 2 with one line naming the range, exit 0 with --allow-empty.
  auto cli = testing::RunCli({"diff", "--db", TestConninfo(), a, b, "--range", "10:20"});
  EXPECT_EQ(cli.exit_code, 2) << cli.out;
  EXPECT_NE(cli.err.find("nothing compared"), std::string::npos) << cli.err;
  auto allowed = testing::RunCli({"diff", "--db", TestConninfo(), a, b, "--range", "10:20", "--allow-empty"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  // Without --range: both sides empty is the same usage error.
  auto none = Diff(Db(TestConninfo(), a), Db(TestConninfo(), b));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().kind(), Status::Kind::kUsage);
}

}  // namespace
}  // namespace ledgerdiff
