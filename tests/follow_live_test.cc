// verify-range --follow on live Horizon data (issue 41), on two copies of the real kahuna
// database: a lookup row changed in place (or two accounts swapping ids) between two cycles of
// one follower, whose lookup cache must see it; ledgers reaped on both sides (Horizon's
// retention), survived across restarts; verified ledgers gone from one side, found by the next
// cycle; nothing called verified that was not compared; ledgers past 2^31 - 1 refused.
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/history_tables.h"
#include "core/pg.h"
#include "follow_harness.h"
#include "harness.h"

namespace ledgerdiff {
namespace {

using testing::Connect;
using testing::ExecSql;
using testing::FollowArgs;
using testing::Kahuna;
using testing::QueryInt;
using testing::RunCli;
using testing::WaitForText;

nlohmann::json Outcome(const testing::CliResult& r) { return testing::FollowOutcome(r); }

// Horizon's reaper: every history row of ledgers from:to goes (each table by its ledger column).
std::string ReapSql(Ledger from, Ledger to) {
  std::string sql;
  for (const auto& t : HorizonHistoryTables())
    sql += fmt::format(
        "DO $$ BEGIN IF to_regclass('public.{0}') IS NOT NULL THEN DELETE FROM public.{0} WHERE {1}; END IF; END $$;\n",
        t.name, LedgerRangePredicate(t, LedgerRange{from, to}));
  return sql;
}

// Every account reference of kahuna's history tables, with its ledger.
constexpr const char* kAccountRefs =
    "(SELECT history_account_id a, history_operation_id >> 32 l FROM history_effects "
    "UNION ALL SELECT history_account_id, history_operation_id >> 32 FROM history_operation_participants "
    "UNION ALL SELECT history_account_id, history_transaction_id >> 32 FROM history_transaction_participants "
    "UNION ALL SELECT base_account_id, history_operation_id >> 32 FROM history_trades "
    "UNION ALL SELECT counter_account_id, history_operation_id >> 32 FROM history_trades) refs";

// The accounts first referenced after ledger `after`, the earliest first.
std::vector<int64_t> AccountsFirstReferencedAfter(const std::string& conninfo, int64_t after) {
  auto c = Connect(conninfo);
  auto r = c->Exec(fmt::format("SELECT a FROM {} GROUP BY a HAVING min(l) > {} ORDER BY min(l), a", kAccountRefs, after));
  EXPECT_TRUE(r.ok());
  std::vector<int64_t> ids;
  for (int i = 0; r.ok() && i < r->size(); ++i) ids.push_back(r->GetInt(i, 0));
  return ids;
}

// A follower over `k` whose right side holds ledgers only through `cut` (the rest held back in a
// schema of its own) verifies through `cut`; then `change` runs on the right in one transaction
// with the held-back ledgers' return, and the same follower (its lookup caches filled by the
// first cycle) goes on until k.last. Returns its outcome.
testing::CliResult FollowAcrossAChange(const Kahuna& k, int64_t cut, const std::string& change) {
  ExecSql(k.right, fmt::format("CREATE SCHEMA stash; CREATE TABLE stash.held AS SELECT * FROM history_ledgers "
                            "WHERE sequence > {0}; DELETE FROM history_ledgers WHERE sequence > {0}",
                            cut));
  const testing::ScratchDir dir("ledgerdiff-follow-live");
  const std::string state = dir.path + "/state", out = dir.path + "/out.json", err = dir.path + "/err.txt";
  testing::CliSpawnOptions so;
  so.stdout_path = out;
  so.stderr_path = err;
  const pid_t follower = testing::SpawnCli(
      FollowArgs(k.left, k.right, state,
                 {"--from", std::to_string(k.first), "--until", std::to_string(k.last), "--interval", "0.2",
                  "--scrub-period", "1e9"}),
      so);
  EXPECT_TRUE(WaitForText(err, fmt::format("cycle 1: verified through {} ", cut))) << testing::ReadFileBytes(err);
  ExecSql(k.right, "BEGIN; " + change + "; INSERT INTO history_ledgers SELECT * FROM stash.held; COMMIT");
  const int code = testing::WaitExitCode(follower);
  return {code, testing::ReadFileBytes(out), testing::ReadFileBytes(err)};
}

// An address updated in place (same id, same count of accounts) on one side between two cycles:
// the next cycle finds it at the ledger a one-shot verify-range finds it, and --until never says
// "verified through" past it.
TEST(FollowLive, ALookupRowChangedInPlaceIsCaughtAtTheLedgerAOneShotCheckCatches) {
  Kahuna k;
  const int64_t cut = 40;
  const std::vector<int64_t> late = AccountsFirstReferencedAfter(k.left, cut);
  ASSERT_FALSE(late.empty());
  const int64_t account = late.front();
  const testing::CliResult r = FollowAcrossAChange(
      k, cut,
      fmt::format("UPDATE history_accounts SET address = 'GAXCHANGEDINPLACEXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX' "
                  "WHERE id = {}",
                  account));
  ASSERT_EQ(QueryInt(k.right, "SELECT count(*) FROM history_accounts"), QueryInt(k.left, "SELECT count(*) FROM history_accounts"));
  auto once = RunCli({"verify-range", "--left", k.left, "--right", k.right, "--range",
                      fmt::format("{}:{}", k.first, k.last), "--format", "json"});
  ASSERT_EQ(once.exit_code, 1) << once.out << once.err;
  const auto one_shot = nlohmann::json::parse(once.out);
  ASSERT_TRUE(one_shot["first_divergent_ledger"].is_number()) << once.out;
  const int64_t at = one_shot["first_divergent_ledger"];
  EXPECT_GT(at, cut);

  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = Outcome(r);
  const auto& cycles = j["follow"]["cycles"];
  ASSERT_FALSE(cycles.empty());
  EXPECT_EQ(cycles.back()["finding"]["kind"], "divergent") << r.out;
  EXPECT_EQ(cycles.back()["finding"]["ledger"], at) << r.out;
  // The divergent stretch is not recorded (the next run compares it again): the frontier stays
  // before it, never past the divergence.
  EXPECT_EQ(j["follow"]["verified_through"], cut);
  EXPECT_LT(j["follow"]["verified_through"].get<int64_t>(), at);
  EXPECT_EQ(j["follow"]["reached_until"], false);
  EXPECT_EQ(r.err.find(fmt::format("verified through {} ", k.last)), std::string::npos) << r.err;
}

// Two accounts swap ids consistently in every row that references them (a rebuild with another
// insertion order) between two cycles: still identical, as a one-shot verify-range says.
TEST(FollowLive, AccountsSwappingIdsBetweenCyclesStayIdentical) {
  Kahuna k;
  const int64_t cut = 40;
  const std::vector<int64_t> late = AccountsFirstReferencedAfter(k.left, cut);
  ASSERT_GE(late.size(), 2u);
  const int64_t a = late[0], b = late[1];
  // Foreign keys would refuse the swap's intermediate states (they are not compared).
  auto c = Connect(k.right);
  auto fks = c->Exec("SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE contype = 'f'");
  ASSERT_TRUE(fks.ok());
  for (int i = 0; i < fks->size(); ++i)
    ExecSql(k.right, fmt::format("ALTER TABLE {} DROP CONSTRAINT {}", fks->Get(i, 0), pg::QuoteIdent(std::string(fks->Get(i, 1)))));
  std::string swap = fmt::format(
      "UPDATE history_accounts SET id = -1 WHERE id = {0}; UPDATE history_accounts SET id = {0} WHERE id = {1}; "
      "UPDATE history_accounts SET id = {1} WHERE id = -1",
      a, b);
  for (const auto& [table, column] : std::vector<std::pair<std::string, std::string>>{
           {"history_effects", "history_account_id"},
           {"history_operation_participants", "history_account_id"},
           {"history_transaction_participants", "history_account_id"},
           {"history_trades", "base_account_id"},
           {"history_trades", "counter_account_id"}})
    swap += fmt::format("; UPDATE {0} SET {1} = CASE {1} WHEN {2} THEN {3} ELSE {2} END WHERE {1} IN ({2}, {3})", table,
                        column, a, b);
  const testing::CliResult r = FollowAcrossAChange(k, cut, swap);
  auto once = RunCli({"verify-range", "--left", k.left, "--right", k.right, "--range",
                      fmt::format("{}:{}", k.first, k.last)});
  ASSERT_EQ(once.exit_code, 0) << "the swap is consistent: " << once.out << once.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = Outcome(r);
  EXPECT_EQ(j["follow"]["verified_through"], k.last) << r.out;
  EXPECT_EQ(j["follow"]["reached_until"], true);
  EXPECT_EQ(j["follow"]["diverged"], false);
}

// Both sides reap their oldest ledgers after they were verified: the next cycle reports them
// reaped (cycle line, JSON, metrics, state), scrubs only what is left, and restarts work; ledgers
// then reaped on one side only are a finding of the next cycle.
TEST(FollowLive, LedgersReapedOnBothSidesAreReportedAndSurviveRestarts) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-live");
  const std::string state = dir.path + "/state", metrics = dir.path + "/m.prom";
  auto first = RunCli(FollowArgs(k.left, k.right, state, {"--from", std::to_string(k.first), "--cycles", "1"}));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const int64_t reap_to = k.first + 9;
  ExecSql(k.left, ReapSql(1, reap_to));
  ExecSql(k.right, ReapSql(1, reap_to));
  ASSERT_EQ(QueryInt(k.right, "SELECT min(sequence) FROM history_ledgers"), reap_to + 1);
  // A scrub period so short that the cycle re-checks every verified ledger still held.
  auto reaped = RunCli(FollowArgs(k.left, k.right, state,
                                  {"--cycles", "1", "--scrub-period", "0.001", "--metrics", metrics}));
  ASSERT_EQ(reaped.exit_code, 0) << reaped.out << reaped.err;
  auto cycles = Outcome(reaped)["follow"]["cycles"];
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["reaped"], (nlohmann::json{{"from", k.first}, {"to", reap_to}}));
  EXPECT_EQ(cycles[0]["verified_through"], k.last);
  EXPECT_TRUE(cycles[0]["finding"].is_null());
  EXPECT_EQ(cycles[0]["scrubbed"]["from"], reap_to + 1) << "reaped ledgers are not scrubbed";
  EXPECT_NE(reaped.err.find(fmt::format(", reaped {}:{} (gone from both sides)", k.first, reap_to)), std::string::npos)
      << reaped.err;
  const std::string m = testing::ReadFileBytes(metrics);
  EXPECT_NE(m.find(fmt::format("ledgerdiff_reaped_through_ledger {}\n", reap_to)), std::string::npos) << m;
  EXPECT_NE(m.find("verdict=\"identical\""), std::string::npos) << m;
  auto st = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_EQ(st["reaped_through"], reap_to);
  // A restart: nothing more reaped, the scrub goes on over what is left.
  auto again = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--scrub-period", "0.001"}));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  cycles = Outcome(again)["follow"]["cycles"];
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_FALSE(cycles[0].contains("reaped"));
  EXPECT_EQ(cycles[0]["verified_through"], k.last);
  // The right side alone reaps five more: gone from one side, a finding at once (the scrub,
  // at its 24 h default, would not get there in this cycle).
  ExecSql(k.right, ReapSql(reap_to + 1, reap_to + 5));
  auto one_side = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--format", "text"}));
  EXPECT_EQ(one_side.exit_code, 1) << one_side.out << one_side.err;
  EXPECT_NE(one_side.out.find(fmt::format("gone after it was verified: 5 ledgers from ledger {} (right side; "
                                          "history_ledgers)",
                                          reap_to + 1)),
            std::string::npos)
      << one_side.out << one_side.err;
  EXPECT_EQ(one_side.out.find("reaped"), std::string::npos) << one_side.out;
}

// The right side loses its newest verified ledgers (a restore, a bad delete): the next cycle
// finds it, not the scrub, and nothing past the loss is called verified.
TEST(FollowLive, VerifiedLedgersGoneFromOneSideAreAFindingOfTheNextCycle) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-live");
  const std::string state = dir.path + "/state", metrics = dir.path + "/m.prom";
  auto first = RunCli(FollowArgs(k.left, k.right, state, {"--from", std::to_string(k.first), "--cycles", "1"}));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const int64_t keep = k.last - 10;
  ExecSql(k.right, fmt::format("DELETE FROM history_ledgers WHERE sequence > {}", keep));
  auto r = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--scrub-period", "1e9", "--metrics", metrics}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto cycles = Outcome(r)["follow"]["cycles"];
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["head"]["right"], keep);
  EXPECT_EQ(cycles[0]["finding"]["kind"], "gone_after_verified") << r.out;
  EXPECT_EQ(cycles[0]["finding"]["ledger"], keep + 1);
  EXPECT_EQ(cycles[0]["finding"]["sides"], "right");
  EXPECT_EQ(cycles[0]["finding"]["ledgers"], 10);
  EXPECT_EQ(cycles[0]["verified_through"], keep);
  const std::string m = testing::ReadFileBytes(metrics);
  EXPECT_NE(m.find("verdict=\"divergent\""), std::string::npos) << m;
  EXPECT_NE(m.find(fmt::format("ledgerdiff_verified_through_ledger {}\n", keep)), std::string::npos) << m;
  EXPECT_EQ(m.find("ledgerdiff_last_success_timestamp_seconds"), std::string::npos) << m;
  EXPECT_NE(r.err.find(fmt::format("gone after it was verified: 10 ledgers from ledger {} (right side; history_ledgers)",
                                   keep + 1)),
            std::string::npos)
      << r.err;
}

// --from past both heads: nothing is compared, so nothing is called verified (not "verified
// through from - 1"), the metrics claim no frontier and no success; it waits. Ledgers past
// 2^31 - 1 (history_ledgers.sequence is an integer) are refused.
TEST(FollowLive, NothingComparedIsNotCalledVerifiedAndLedgersPastTheIntegerRangeAreRefused) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-live");
  const std::string state = dir.path + "/state", metrics = dir.path + "/m.prom";
  auto r = RunCli(FollowArgs(k.left, k.right, state,
                             {"--from", "1000000", "--until", "1000010", "--cycles", "2", "--interval", "0",
                              "--format", "text", "--metrics", metrics}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("verified through"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("verified through"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("followed 2 cycles: nothing verified yet (waiting for ledger 1000000)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find(fmt::format("cycle 2: nothing verified yet (waiting for ledger 1000000), heads left {0} right {0}",
                                   k.last)),
            std::string::npos)
      << r.err;
  const std::string m = testing::ReadFileBytes(metrics);
  EXPECT_EQ(m.find("ledgerdiff_verified_through_ledger"), std::string::npos) << m;
  EXPECT_EQ(m.find("ledgerdiff_last_success_timestamp_seconds"), std::string::npos) << m;
  EXPECT_NE(m.find("verdict=\"incomplete\""), std::string::npos) << m;
  const auto st = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_EQ(st["compared_through"], 999999);
  // A restart of a state that verified nothing yet goes on waiting.
  auto again = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--format", "text"}));
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("followed 1 cycles: nothing verified yet (waiting for ledger 1000000)"), std::string::npos)
      << again.out << again.err;

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--from", "2147483648"}, {"--from", "4294967295"}, {"--from", "2", "--until", "4294967295"},
        {"--range", "2147483648:"}, {"--range", "2:2147483648"}}) {
    const std::string fresh = dir.path + "/refused";
    std::vector<std::string> more = args;
    more.insert(more.end(), {"--cycles", "1"});  // were it accepted, it would end, not follow forever
    auto refused = RunCli(FollowArgs(k.left, k.right, fresh, more));
    EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
    // --range's parser says it its own way ("TO (2147483648) is larger than 2147483647").
    EXPECT_NE(refused.err.find("2147483647"), std::string::npos) << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << "one line: " << refused.err;
    EXPECT_FALSE(std::filesystem::exists(fresh)) << "nothing written";
  }
}

}  // namespace
}  // namespace ledgerdiff
