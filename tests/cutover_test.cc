// The cut-over check on live Horizon data (issue 41): what a live database does every day that a
// finished copy never shows. Each case is planted into the real kahuna dump and checked with the
// verdict it must get under both engines, one-shot (`verify-range`) and following
// (`verify-range --follow`).
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/pg.h"
#include "tests/follow_harness.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

using nlohmann::json;
using testing::Connect;
using testing::ExecSql;
using testing::LoadDump;
using testing::QueryInt;
using testing::RunCli;

const std::vector<std::string> kEngines = {"text", "server-hash"};

testing::CliResult VerifyRange(const std::string& left, const std::string& right, const std::string& engine,
                               const std::string& range = "1:61") {
  return RunCli({"verify-range", "--left", left, "--right", right, "--range", range, "--engine", engine, "--format",
                 "json"});
}

// The follower over the same range, to its end (--until), in a fresh state directory.
testing::CliResult Follow(const std::string& left, const std::string& right, const std::string& engine,
                          const std::string& range = "1:61") {
  testing::ScratchDir dir("ledgerdiff-cutover-follow-");
  return RunCli({"verify-range", "--follow", "--left", left, "--right", right, "--range", range, "--state",
                 dir.path + "/state", "--engine", engine, "--interval", "0.1", "--format", "json"});
}

// ---------------------------------------------------------------------------------------------
// NULL natural keys: a reference to a lookup row whose key is NULL, a NULL reference and a
// reference to a missing row are three different values.

// The trades of two operations of kahuna (ledger, operation id); both sides get an account whose
// address is NULL, and base_account_id may be NULL (as it is for liquidity pool trades).
struct NullKeyCase {
  std::string left, right;
  int64_t trade_x = 0, trade_y = 0;
  int64_t ledger_x = 0, ledger_y = 0;
};

NullKeyCase PrepareNullKeyCase() {
  NullKeyCase c{LoadDump(), LoadDump()};
  for (const std::string& side : {c.left, c.right})
    ExecSql(side, "ALTER TABLE history_trades ALTER base_account_id DROP NOT NULL; "
                  "INSERT INTO history_accounts (id, address) VALUES (90001, NULL)");
  auto conn = Connect(c.left);
  // Two operations' trades (kahuna's 4 trades come from 3 operations).
  auto r = conn->Exec("SELECT DISTINCT history_operation_id, history_operation_id >> 32 FROM history_trades ORDER BY 1 "
                      "LIMIT 2");
  EXPECT_TRUE(r.ok() && r->size() == 2) << "kahuna holds trades of 3 operations";
  if (!r.ok() || r->size() < 2) return c;
  c.trade_x = r->GetInt(0, 0), c.ledger_x = r->GetInt(0, 1);
  c.trade_y = r->GetInt(1, 0), c.ledger_y = r->GetInt(1, 1);
  return c;
}

// Points the trades of operation `trade` at `account` (an id or NULL).
std::string PointTrade(int64_t trade, const std::string& account) {
  return fmt::format("UPDATE history_trades SET base_account_id = {} WHERE history_operation_id = {};", account, trade);
}

TEST(NullKeys, ANullKeyAccountAndANullReferenceSwappedBetweenTradesDiverge) {
  NullKeyCase c = PrepareNullKeyCase();
  ASSERT_NE(c.trade_x, 0);
  // Left: X -> the NULL-address account, Y -> nothing. Right: the reverse.
  ExecSql(c.left, PointTrade(c.trade_x, "90001") + PointTrade(c.trade_y, "NULL"));
  ExecSql(c.right, PointTrade(c.trade_x, "NULL") + PointTrade(c.trade_y, "90001"));
  const int64_t first = std::min(c.ledger_x, c.ledger_y);
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(c.left, c.right, engine);
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    EXPECT_EQ(json::parse(r.out)["first_divergent_ledger"], first) << engine << r.out;
    auto f = Follow(c.left, c.right, engine);
    EXPECT_EQ(f.exit_code, 1) << engine << "\n" << f.err << f.out;
    EXPECT_NE(f.out.find("\"divergent\""), std::string::npos) << engine << f.out;
  }
  // The canonical dump tells the three apart too.
  testing::ScratchDir dir("ledgerdiff-cutover-dump-");
  auto d = RunCli({"dump", "--db", c.left, "--schema", "public", "--out", dir.path + "/left"});
  ASSERT_EQ(d.exit_code, 0) << d.err << d.out;
  const std::string trades = testing::ReadFileBytes(dir.path + "/left/history_trades.jsonl");
  EXPECT_NE(trades.find("!null-key"), std::string::npos) << trades;
}

TEST(NullKeys, OneSidedNullKeyReferenceDivergesWithAndWithoutARange) {
  NullKeyCase c = PrepareNullKeyCase();
  ASSERT_NE(c.trade_x, 0);
  ExecSql(c.left, PointTrade(c.trade_x, "90001"));
  ExecSql(c.right, PointTrade(c.trade_x, "NULL"));
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(c.left, c.right, engine);
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    EXPECT_EQ(json::parse(r.out)["first_divergent_ledger"], c.ledger_x) << engine << r.out;
    auto whole = RunCli({"diff", c.left + "::public", c.right + "::public", "--engine", engine, "--format", "json"});
    ASSERT_EQ(whole.exit_code, 1) << engine << "\n" << whole.err << whole.out;
    EXPECT_EQ(json::parse(whole.out)["first_divergent_ledger"], c.ledger_x) << engine << whole.out;
  }
}

TEST(NullKeys, TheSameNullKeyReferenceOnBothSidesUnderOtherIdsIsIdentical) {
  NullKeyCase c = PrepareNullKeyCase();
  ASSERT_NE(c.trade_x, 0);
  ExecSql(c.left, PointTrade(c.trade_x, "90001"));
  // The right side's NULL-address account has another id: ids are not data.
  ExecSql(c.right, "UPDATE history_accounts SET id = 90002 WHERE id = 90001;" + PointTrade(c.trade_x, "90002"));
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(c.left, c.right, engine);
    EXPECT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
  }
}

// ---------------------------------------------------------------------------------------------
// Row-level security: a side read through a role that a policy filters is an error, never a
// short read that compares as identical.

TEST(RowSecurity, APolicyThatWouldHideRowsIsAnErrorNamingTheTableAndRole) {
  const std::string left = LoadDump(), right = LoadDump();
  const std::string role = testing::UniqueName("reader");
  ExecSql(right, fmt::format("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{0}') THEN "
                             "CREATE ROLE {0} LOGIN; END IF; END $$; "
                             "GRANT USAGE ON SCHEMA public TO {0}; GRANT SELECT ON ALL TABLES IN SCHEMA public TO {0}; "
                             "ALTER TABLE history_effects ENABLE ROW LEVEL SECURITY; "
                             "CREATE POLICY odd_only ON history_effects FOR SELECT TO {0} "
                             "USING (history_operation_id % 2 = 1)",
                             role));
  const std::string as_reader = right + " user=" + role;
  {
    // The policy does hide rows from that role: without row_security off the read would be short.
    auto c = Connect(as_reader);
    ASSERT_TRUE(c->Run("SET row_security = on").ok());
    auto seen = c->Exec("SELECT count(*) FROM history_effects");
    ASSERT_TRUE(seen.ok()) << seen.status().message();
    auto all = Connect(right)->Exec("SELECT count(*) FROM history_effects");
    ASSERT_TRUE(all.ok());
    ASSERT_LT(seen->GetInt(0, 0), all->GetInt(0, 0));
  }
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(left, as_reader, engine);
    EXPECT_EQ(r.exit_code, 2) << engine << "\n" << r.err << r.out;
    EXPECT_NE(r.err.find("history_effects"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("role \"" + role + "\""), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("\"identical\""), std::string::npos) << r.out;
    auto f = Follow(left, as_reader, engine);
    EXPECT_EQ(f.exit_code, 2) << engine << "\n" << f.err << f.out;
    EXPECT_NE(f.err.find("row-level security"), std::string::npos) << f.err;
  }
}

TEST(RowSecurity, ReadSessionsAreReadOnlyAndIgnoreNoPolicy) {
  // A source session (Access::kReadOnly) refuses to write, whatever it is asked.
  const std::string db = LoadDump();
  auto conn = pg::Connection::Open(db, "ledgerdiff cutover_test", pg::Access::kReadOnly);
  ASSERT_TRUE(conn.ok()) << conn.status().message();
  Status write = (*conn)->Run("CREATE TABLE public.scribble (x int)");
  EXPECT_FALSE(write.ok());
  EXPECT_NE(write.message().find("read-only transaction"), std::string::npos) << write.message();
  auto rs = (*conn)->Exec("SHOW row_security");
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->Get(0, 0), "off");
  // The table's owner reads every row with row_security off (policies do not apply to it
  // unless forced), so enabling RLS alone changes nothing for the check.
  ExecSql(db, "ALTER TABLE history_effects ENABLE ROW LEVEL SECURITY");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(db, LoadDump(), engine);
    EXPECT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
  }
}

// ---------------------------------------------------------------------------------------------
// Trade aggregation buckets: a minute's bucket is filed under the ledger that opened it and
// rewritten by later ledgers of the same minute; it is compared once its minute has closed.

// Horizon's rebuild of history_trades_60000 from history_trades (migration 47's backfill: one
// bucket per minute and asset pair; count and volumes summed, prices from the trades).
constexpr const char* kRebuildBuckets =
    "DELETE FROM history_trades_60000; "
    "INSERT INTO history_trades_60000 SELECT (extract(epoch FROM ledger_closed_at) * 1000)::bigint / 60000 * 60000, "
    "base_asset_id, counter_asset_id, count(*), sum(base_amount), sum(counter_amount), "
    "sum(counter_amount::numeric) / sum(base_amount::numeric), max(price_n), 1, min(price_n), 1, "
    "min(history_operation_id), 1, 1, max(history_operation_id), 1, 1 FROM history_trades GROUP BY 1, 2, 3";

// Removes every row at ledgers above `head` from every history table (a side that is behind).
void TruncateHistoryAbove(const std::string& conninfo, int64_t head) {
  ExecSql(conninfo, fmt::format(
                        "DELETE FROM history_ledgers WHERE sequence > {0}; "
                        "DELETE FROM history_transactions WHERE ledger_sequence > {0}; "
                        "DELETE FROM history_operations WHERE id >> 32 > {0}; "
                        "DELETE FROM history_effects WHERE history_operation_id >> 32 > {0}; "
                        "DELETE FROM history_trades WHERE history_operation_id >> 32 > {0}; "
                        "DELETE FROM history_operation_participants WHERE history_operation_id >> 32 > {0}; "
                        "DELETE FROM history_transaction_participants WHERE history_transaction_id >> 32 > {0}; "
                        "DELETE FROM history_operation_claimable_balances WHERE history_operation_id >> 32 > {0}; "
                        "DELETE FROM history_transaction_claimable_balances WHERE history_transaction_id >> 32 > {0}; "
                        "DELETE FROM history_operation_liquidity_pools WHERE history_operation_id >> 32 > {0}; "
                        "DELETE FROM history_transaction_liquidity_pools WHERE history_transaction_id >> 32 > {0}",
                        head));
}

// kahuna's trades (ledgers 19, 20 and 24) fall in one minute, whose buckets open at ledger 19;
// `open_head` is the last ledger of that minute, so a side whose head is at or before it holds
// the minute's buckets unsettled.
struct BucketCase {
  std::string left = LoadDump(), right = LoadDump();
  int64_t open_head = 0;
  BucketCase() {
    ExecSql(left, kRebuildBuckets);
    ExecSql(right, kRebuildBuckets);
    open_head = QueryInt(left, "SELECT max(sequence) FROM history_ledgers WHERE closed_at < date_trunc('minute', "
                               "(SELECT min(ledger_closed_at) FROM history_trades)) + interval '1 minute'");
  }
};

TEST(Windows, SidesWhoseHeadsDifferInsideAMinuteAreIdenticalWithItsBucketsUnsettled) {
  BucketCase c;
  ASSERT_GE(c.open_head, 24) << "the minute of the trades holds ledger 24";
  // The right side is behind: it holds the minute's first trades (ledgers 19, 20), not ledger 24's;
  // its USD bucket counts one trade where the left's counts two. Both are right for their head.
  TruncateHistoryAbove(c.right, 23);
  ExecSql(c.right, kRebuildBuckets);
  ASSERT_NE(QueryInt(c.left, "SELECT sum(count) FROM history_trades_60000"),
            QueryInt(c.right, "SELECT sum(count) FROM history_trades_60000"));
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(c.left, c.right, engine, "1:23");
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
    json j = json::parse(r.out);
    ASSERT_EQ(j["unsettled"].size(), 1u) << r.out;
    EXPECT_EQ(j["unsettled"][0]["table"], "history_trades_60000");
    EXPECT_EQ(j["unsettled"][0]["left"], 2) << "both buckets of the minute, on each side";
    EXPECT_EQ(j["unsettled"][0]["right"], 2);
    auto text = RunCli({"verify-range", "--left", c.left, "--right", c.right, "--range", "1:23", "--engine", engine});
    EXPECT_EQ(text.exit_code, 0) << text.err << text.out;
    EXPECT_NE(text.out.find("not compared (unsettled): history_trades_60000: 2 rows on the left, 2 on the right"),
              std::string::npos)
        << text.out;
  }
}

// The cutoff is the earlier of the two sides' close times: the side that is behind (its head
// inside the minute) has not finished the minute's buckets, so neither side's are compared, though
// the side ahead closed the minute long ago. The ledgers the right side lacks are its findings.
TEST(Windows, TheSideThatIsBehindHoldsTheCutoff) {
  BucketCase c;
  ASSERT_GE(c.open_head, 24) << "the minute of the trades holds ledger 24";
  TruncateHistoryAbove(c.right, 23);
  ExecSql(c.right, kRebuildBuckets);
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(c.left, c.right, engine, "1:61");
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    json j = json::parse(r.out);
    ASSERT_EQ(j["unsettled"].size(), 1u) << r.out;
    EXPECT_GE(j["unsettled"][0]["left"], 2) << "the left's buckets of the minute wait for the right's head";
    EXPECT_EQ(j["unsettled"][0]["right"], QueryInt(c.right, "SELECT count(*) FROM history_trades_60000")) << r.out;
    EXPECT_NE(j["first_divergent_ledger"], 19) << "the open buckets were compared: " << r.out;
    for (const auto& t : j["divergent_tables"]) EXPECT_NE(t, "history_trades_60000") << r.out;
  }
}

TEST(Windows, ASettledBucketIsComparedAndAChangeInItIsADivergence) {
  BucketCase c;
  ExecSql(c.right, "UPDATE history_trades_60000 SET high_n = high_n + 1 WHERE count = 2");
  for (const auto& engine : kEngines) {
    // Over every ledger the minute is closed: its buckets are compared, at the ledger that opened them.
    auto r = VerifyRange(c.left, c.right, engine);
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["first_divergent_ledger"], 19) << r.out;
    EXPECT_EQ(j["divergent_tables"], json::array({"history_trades_60000"})) << r.out;
    EXPECT_EQ(j["unsettled"][0]["left"], 0) << r.out;
    // Up to a head inside the minute it is not settled yet: listed, not compared.
    auto open = VerifyRange(c.left, c.right, engine, "1:" + std::to_string(c.open_head));
    EXPECT_EQ(open.exit_code, 0) << engine << "\n" << open.err << open.out;
    EXPECT_EQ(json::parse(open.out)["unsettled"][0]["right"], QueryInt(c.right, "SELECT count(*) FROM history_trades_60000"))
        << open.out;
  }
}

TEST(Windows, AnAggregationBrokenAlikeOnBothSidesBreaksTheInvariant) {
  BucketCase c;
  for (const std::string& side : {c.left, c.right})
    ExecSql(side, "UPDATE history_trades_60000 SET base_volume = base_volume + 1 WHERE count = 2");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(c.left, c.right, engine);
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    EXPECT_TRUE(json::parse(r.out)["first_divergent_ledger"].is_null()) << "the two sides agree" << r.out;
    EXPECT_NE(r.out.find("trade_aggregation_matches_its_trades"), std::string::npos) << r.out;
  }
  // The same buckets rebuilt from the trades hold the invariant.
  for (const std::string& side : {c.left, c.right}) ExecSql(side, kRebuildBuckets);
  EXPECT_EQ(VerifyRange(c.left, c.right, "text").exit_code, 0);
}

// A live side that is behind: its history rows above `head` wait in schema "ahead" until
// RevealThrough moves them back (the ledgers arriving), and its buckets are rebuilt each time.
const std::vector<std::pair<std::string, std::string>> kLedgerOf = {
    {"history_ledgers", "sequence"},
    {"history_transactions", "ledger_sequence"},
    {"history_operations", "id >> 32"},
    {"history_effects", "history_operation_id >> 32"},
    {"history_trades", "history_operation_id >> 32"},
    {"history_operation_participants", "history_operation_id >> 32"},
    {"history_transaction_participants", "history_transaction_id >> 32"},
    {"history_operation_claimable_balances", "history_operation_id >> 32"},
    {"history_transaction_claimable_balances", "history_transaction_id >> 32"},
    {"history_operation_liquidity_pools", "history_operation_id >> 32"},
    {"history_transaction_liquidity_pools", "history_transaction_id >> 32"}};

void HoldBackAbove(const std::string& conninfo, int64_t head) {
  std::string sql = "CREATE SCHEMA ahead;";
  for (const auto& [table, ledger] : kLedgerOf)
    sql += fmt::format("CREATE TABLE ahead.{0} AS SELECT * FROM public.{0} WHERE {1} > {2}; "
                       "DELETE FROM public.{0} WHERE {1} > {2};",
                       table, ledger, head);
  ExecSql(conninfo, sql + kRebuildBuckets);
}

void RevealThrough(const std::string& conninfo, int64_t head) {
  std::string sql;
  for (const auto& [table, ledger] : kLedgerOf)
    sql += fmt::format("INSERT INTO public.{0} SELECT * FROM ahead.{0} WHERE {1} <= {2}; "
                       "DELETE FROM ahead.{0} WHERE {1} <= {2};",
                       table, ledger, head);
  ExecSql(conninfo, sql + kRebuildBuckets);
}

TEST(Windows, AFollowerComparesEachBucketOnceWhenItsMinuteHasClosed) {
  for (const auto& engine : kEngines) {
    BucketCase c;
    for (const std::string& side : {c.left, c.right}) HoldBackAbove(side, 20);
    testing::ScratchDir dir("ledgerdiff-cutover-window-");
    auto cycle = [&] {
      auto r = RunCli({"verify-range", "--follow", "--left", c.left, "--right", c.right, "--range", "1:61", "--state",
                       dir.path + "/state", "--engine", engine, "--cycles", "1", "--scrub-period", "1", "--format",
                       "json"});
      EXPECT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
      return r.exit_code == 0 ? json::parse(r.out)["follow"].value("verified_through", json()) : json();
    };
    // Both sides at ledger 20: the minute's buckets (opened at 19) are open; the frontier waits before them.
    EXPECT_EQ(cycle(), 18) << engine;
    // Both gain ledgers 21..24: ledger 24's trade rewrites the USD bucket of ledger 19. Nothing was
    // compared of it, so nothing "changed after it was verified".
    for (const std::string& side : {c.left, c.right}) RevealThrough(side, 24);
    EXPECT_EQ(cycle(), 18) << engine;
    // The minute closes (ledgers up to 61): its buckets are compared once, settled, and the rest follows.
    for (const std::string& side : {c.left, c.right}) RevealThrough(side, 61);
    EXPECT_EQ(cycle(), 61) << engine;
  }
}

// ---------------------------------------------------------------------------------------------
// What a merged or appended result read, and when.

TEST(Snapshots, AMergeOfPartsReadAtDifferentSnapshotsSaysSo) {
  const std::string left = LoadDump(), right = LoadDump();
  testing::ScratchDir dir("ledgerdiff-cutover-parts-");
  auto part = [&](int index) {
    const std::string out = fmt::format("{}/part-{}.ldm", dir.path, index);
    auto r = RunCli({"verify-range", "--left", left, "--right", right, "--range", "1:61", "--shards", "2", "--shard",
                     std::to_string(index), "--out", out});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return out;
  };
  const std::string p0 = part(0);
  // Between the two parts' reads the left side commits something (here outside the history).
  ExecSql(left, "CREATE TABLE public.operator_notes (x int); INSERT INTO public.operator_notes VALUES (1)");
  const std::string p1 = part(1);
  auto merged = RunCli({"manifest", "merge", "--out", dir.path + "/all.ldm", p0, p1, "--format", "json"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err << merged.out;
  json j = json::parse(merged.out);
  EXPECT_EQ(j["snapshots"]["same"], false) << merged.out;
  ASSERT_EQ(j["snapshots"]["parts"].size(), 2u);
  EXPECT_NE(j["snapshots"]["parts"][0]["left"]["lsn"], j["snapshots"]["parts"][1]["left"]["lsn"]);
  auto text = RunCli({"manifest", "merge", "--out", dir.path + "/all2.ldm", p0, p1});
  EXPECT_NE(text.out.find("the parts were read at different snapshots"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(p0 + ": left at WAL "), std::string::npos) << text.out;
}

// ---------------------------------------------------------------------------------------------
// Coverage: a table the profile requires that neither side has is not compared, and says so.

TEST(Coverage, ATableNeitherSideHasMakesTheVerdictIncompleteUnlessAllowed) {
  const std::string left = LoadDump(), right = LoadDump();
  for (const std::string& side : {left, right}) ExecSql(side, "DROP TABLE history_effects");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(left, right, engine);
    EXPECT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "incomplete") << r.out;
    EXPECT_EQ(j["missing_tables"], json::array({"history_effects"})) << r.out;
    auto text = RunCli({"verify-range", "--left", left, "--right", right, "--range", "1:61", "--engine", engine});
    EXPECT_EQ(text.exit_code, 1);
    EXPECT_NE(text.out.find("not compared (on neither side): history_effects"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("--allow-missing-table history_effects"), std::string::npos) << text.out;
    auto allowed = RunCli({"verify-range", "--left", left, "--right", right, "--range", "1:61", "--engine", engine,
                           "--allow-missing-table", "history_effects", "--format", "json"});
    EXPECT_EQ(allowed.exit_code, 0) << allowed.err << allowed.out;
    EXPECT_EQ(json::parse(allowed.out)["allowed_missing_tables"], json::array({"history_effects"})) << allowed.out;
    auto f = Follow(left, right, engine);
    EXPECT_EQ(f.exit_code, 1) << engine << "\n" << f.err << f.out;
  }
  // A table that only later migrations add (claimable balances) is not required.
  const std::string old_a = LoadDump("base-horizon.sql"), old_b = LoadDump("base-horizon.sql");
  for (const std::string& side : {old_a, old_b}) ExecSql(side, "DROP TABLE history_operation_claimable_balances");
  auto r = RunCli({"verify-range", "--left", old_a, "--right", old_b, "--range", "1:3", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
}

}  // namespace
}  // namespace ledgerdiff
