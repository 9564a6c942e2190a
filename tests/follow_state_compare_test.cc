// verify-range --follow compares the state tables (issue 45, --state-interval): on two copies of
// the real kahuna database, their state filled from their own history (tests/state_support.h),
// the follower compares state whenever a cycle finds both sides' state ledgers equal, at most once
// every --state-interval, and exports when state last agreed and at which ledger (state.json, the
// cycle JSON and line, follow-status, the metrics file). A changed balance is a divergence of kind
// "state" that stays open (exit 1, follow-status exit 1) until a later comparison at a common
// ledger agrees; sides whose state ledgers differ are no finding and are compared once they meet.
#include <sys/types.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/follow_harness.h"
#include "tests/harness.h"
#include "tests/state_support.h"

namespace ledgerdiff {
namespace {

using nlohmann::json;
using testing::ExecSql;
using testing::FillState;
using testing::FollowArgs;
using testing::Kahuna;
using testing::RunCli;
using testing::Samples;
using testing::SetStateLedger;
using testing::WaitForText;

constexpr const char* kAccount = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H";

json Follow(const testing::CliResult& r) { return testing::FollowOutcome(r)["follow"]; }

// Kahuna twice, state filled on both at `left_ledger` and `right_ledger`.
struct FilledKahuna : Kahuna {
  FilledKahuna(int left_ledger, int right_ledger) {
    FillState(left, left_ledger);
    FillState(right, right_ledger);
  }
};

// Holds back the history ledgers after `cut` on `db` (the side grows when they return).
std::string HoldBackSql(int64_t cut) {
  return fmt::format("CREATE SCHEMA stash; CREATE TABLE stash.held AS SELECT * FROM history_ledgers "
                     "WHERE sequence > {0}; DELETE FROM history_ledgers WHERE sequence > {0}",
                     cut);
}
constexpr const char* kReturnSql = "INSERT INTO history_ledgers SELECT * FROM stash.held; DROP SCHEMA stash CASCADE";

// A follower over `k` spawned while both sides hold history only through `cut`; once its first
// cycle verified through `cut`, `grow_left` and `grow_right` run on the sides (each one
// transaction, with the held-back ledgers' return) and the follower goes on to k.last.
testing::CliResult FollowWhileGrowing(const Kahuna& k, int64_t cut, const std::vector<std::string>& more,
                                      const std::string& grow_left, const std::string& grow_right,
                                      const std::string& state, std::string* err_out = nullptr) {
  ExecSql(k.left, HoldBackSql(cut));
  ExecSql(k.right, HoldBackSql(cut));
  const testing::ScratchDir dir("ledgerdiff-follow-state");
  const std::string out = dir.path + "/out.json", err = dir.path + "/err.txt";
  testing::CliSpawnOptions so;
  so.stdout_path = out;
  so.stderr_path = err;
  std::vector<std::string> args = {"--from", std::to_string(k.first), "--until", std::to_string(k.last),
                                   "--interval", "0.2", "--scrub-period", "1e9"};
  args.insert(args.end(), more.begin(), more.end());
  const pid_t follower = testing::SpawnCli(FollowArgs(k.left, k.right, state, args), so);
  EXPECT_TRUE(WaitForText(err, fmt::format("cycle 1: verified through {} ", cut))) << testing::ReadFileBytes(err);
  ExecSql(k.left, "BEGIN; " + grow_left + kReturnSql + "; COMMIT");
  ExecSql(k.right, "BEGIN; " + grow_right + kReturnSql + "; COMMIT");
  const int code = testing::WaitExitCode(follower);
  if (err_out) *err_out = testing::ReadFileBytes(err);
  return {code, testing::ReadFileBytes(out), testing::ReadFileBytes(err)};
}

// (1) Both at the same state ledger, the sides growing while the follower runs: state compared
// at that ledger, identical, and when it last agreed exported everywhere.
TEST(FollowStateCompare, BothAtTheSameLedgerStateIsComparedAndItsAgreementExported) {
  FilledKahuna k(61, 61);
  const testing::ScratchDir dir("ledgerdiff-follow-state");
  const std::string state = dir.path + "/state", metrics = dir.path + "/follow.prom";
  const int64_t before = static_cast<int64_t>(std::time(nullptr));
  auto r = FollowWhileGrowing(k, 40, {"--state-interval", "0", "--metrics", metrics}, "", "", state);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json f = Follow(r);
  ASSERT_FALSE(f["cycles"].empty());
  EXPECT_EQ(f["verified_through"], k.last);
  for (const auto& c : f["cycles"]) {  // --state-interval 0: every cycle, and the state never moved
    ASSERT_TRUE(c["state"].is_object()) << c.dump();
    EXPECT_EQ(c["state"]["compared"], true) << c.dump();
    EXPECT_EQ(c["state"]["verdict"], "identical") << c.dump();
    EXPECT_EQ(c["state"]["ledger_left"], 61);
    EXPECT_EQ(c["state_last_agreed_ledger"], 61) << c.dump();
    EXPECT_GE(c["state_last_agreed_at"].get<int64_t>(), before);
    EXPECT_EQ(c["state_differs"], false);
  }
  EXPECT_NE(r.err.find("state: identical at ledger 61"), std::string::npos) << r.err;
  // state.json keeps it.
  const json stored = json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_EQ(stored["state_last_agreed_ledger"], 61) << stored.dump();
  EXPECT_GE(stored["state_last_agreed_at"].get<int64_t>(), before);
  EXPECT_GE(stored["state_last_compared_at"].get<int64_t>(), stored["state_last_agreed_at"].get<int64_t>());
  EXPECT_TRUE(stored["open_divergences"].empty());
  // The metrics file of the last cycle.
  const auto m = Samples(testing::ReadFileBytes(metrics));
  ASSERT_TRUE(m.count("ledgerdiff_state_last_agreed_ledger")) << testing::ReadFileBytes(metrics);
  EXPECT_EQ(m.at("ledgerdiff_state_last_agreed_ledger"), "61");
  EXPECT_EQ(m.at("ledgerdiff_state_divergent"), "0");
  EXPECT_GE(std::stoll(m.at("ledgerdiff_state_last_agreed_timestamp_seconds")), before);
  // follow-status, text and JSON.
  auto st = RunCli({"follow-status", "--state", state, "--format", "json"});
  ASSERT_EQ(st.exit_code, 0) << st.out << st.err;
  const json sj = json::parse(st.out);
  EXPECT_EQ(sj["state_last_agreed_ledger"], 61);
  EXPECT_EQ(sj["state_differs"], false);
  auto text = RunCli({"follow-status", "--state", state});
  ASSERT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("state: last agreed at ledger 61 ("), std::string::npos) << text.out;
}

// (2) A changed balance on one side: a divergence of kind state, named by key, exit 1 and
// follow-status exit 1; it stays open while the state differs or is not compared at a common
// ledger, and the next comparison at a common ledger that agrees closes it.
TEST(FollowStateCompare, AChangedBalanceIsAStateDivergenceThatStaysOpenUntilStateAgreesAgain) {
  FilledKahuna k(61, 61);
  const testing::ScratchDir dir("ledgerdiff-follow-state");
  const std::string state = dir.path + "/state", metrics = dir.path + "/follow.prom", junit = dir.path + "/junit.xml";
  auto follow = [&](std::vector<std::string> more) {
    more.insert(more.end(), {"--cycles", "1", "--scrub-period", "1e9", "--state-interval", "0", "--metrics", metrics,
                             "--junit", junit, "--markdown", dir.path + "/summary.md"});
    return RunCli(FollowArgs(k.left, k.right, state, more));
  };
  ExecSql(k.right, fmt::format("UPDATE accounts SET balance = balance + 1 WHERE account_id = '{}'", kAccount));
  auto found = follow({"--from", std::to_string(k.first)});
  ASSERT_EQ(found.exit_code, 1) << found.out << found.err;
  json c = Follow(found)["cycles"][0];
  EXPECT_EQ(c["verified_through"], k.last);  // history is identical: the frontier moves on
  EXPECT_TRUE(c["finding"].is_null()) << c.dump();
  EXPECT_EQ(c["state"]["verdict"], "divergent") << c.dump();
  ASSERT_EQ(c["state"]["differences"].size(), 1u) << c.dump();
  EXPECT_EQ(c["state"]["differences"][0]["table"], "accounts");
  EXPECT_EQ(c["state"]["differences"][0]["key"]["account_id"], kAccount);
  ASSERT_EQ(c["open_divergences"].size(), 1u) << c.dump();
  const json d = c["open_divergences"][0];
  EXPECT_EQ(d["how"], "state");
  EXPECT_EQ(d["from"], 61);
  EXPECT_EQ(d["tables"], json::array({"accounts"}));
  EXPECT_EQ(d["differing_keys"], 1);
  EXPECT_EQ(c["divergences_total"], 1);
  EXPECT_EQ(c["state_differs"], true);
  EXPECT_TRUE(c["state_last_agreed_ledger"].is_null()) << c.dump();
  EXPECT_NE(found.err.find(fmt::format("accounts: account_id={}: changed: balance left", kAccount)), std::string::npos)
      << found.err;
  EXPECT_NE(found.err.find("open: 1 divergence (the state at ledger 61, found in cycle 1)"), std::string::npos)
      << found.err;
  auto m = Samples(testing::ReadFileBytes(metrics));
  EXPECT_EQ(m.at("ledgerdiff_state_divergent"), "1");
  EXPECT_EQ(m.at("ledgerdiff_open_divergences"), "1");
  EXPECT_EQ(m.count("ledgerdiff_state_last_agreed_ledger"), 0u);
  auto st = RunCli({"follow-status", "--state", state});
  EXPECT_EQ(st.exit_code, 1) << st.out << st.err;
  EXPECT_NE(st.out.find("state at ledger 61 (1 differing key; accounts)"), std::string::npos) << st.out;
  // The CI reports carry the state as a check of its own, failed, with the differing key.
  std::string xml = testing::ReadFileBytes(junit);
  size_t state_case = xml.find("<testcase classname=\"ledgerdiff.verify-range\" name=\"state\">");
  ASSERT_NE(state_case, std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"the state tables differ at ledger 61\"", state_case), std::string::npos) << xml;
  EXPECT_NE(xml.find(fmt::format("account_id={}", kAccount), state_case), std::string::npos) << xml;
  EXPECT_NE(testing::ReadFileBytes(dir.path + "/summary.md").find("the state tables differ at ledger 61"),
            std::string::npos);

  // Still different: still open, not found again.
  auto again = follow({});
  ASSERT_EQ(again.exit_code, 1) << again.out << again.err;
  c = Follow(again)["cycles"][0];
  ASSERT_EQ(c["open_divergences"].size(), 1u) << c.dump();
  EXPECT_EQ(c["open_divergences"][0]["found_cycle"], 1);
  EXPECT_EQ(c["divergences_total"], 1);
  // Undone on the right, but its state at another ledger: not compared, still open.
  ExecSql(k.right, fmt::format("UPDATE accounts SET balance = balance - 1 WHERE account_id = '{}';", kAccount) +
                       SetStateLedger(62));
  auto apart = follow({});
  ASSERT_EQ(apart.exit_code, 1) << apart.out << apart.err;
  c = Follow(apart)["cycles"][0];
  EXPECT_EQ(c["state"]["compared"], false) << c.dump();
  EXPECT_EQ(c["open_divergences"].size(), 1u) << c.dump();
  EXPECT_NE(apart.err.find("state: not compared: ledgers 61 vs 62"), std::string::npos) << apart.err;
  EXPECT_EQ(RunCli({"follow-status", "--state", state}).exit_code, 1);
  // At a common ledger again, equal: closed.
  ExecSql(k.right, SetStateLedger(61));
  auto agreed = follow({});
  ASSERT_EQ(agreed.exit_code, 0) << agreed.out << agreed.err;
  c = Follow(agreed)["cycles"][0];
  EXPECT_TRUE(c["open_divergences"].empty()) << c.dump();
  ASSERT_EQ(c["closed_divergences"].size(), 1u) << c.dump();
  EXPECT_EQ(c["closed_divergences"][0]["how"], "state");
  EXPECT_EQ(c["state_last_agreed_ledger"], 61);
  m = Samples(testing::ReadFileBytes(metrics));
  EXPECT_EQ(m.at("ledgerdiff_state_divergent"), "0");
  EXPECT_EQ(m.at("ledgerdiff_open_divergences"), "0");
  auto status = RunCli({"follow-status", "--state", state, "--format", "json"});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_EQ(json::parse(status.out)["state_differs"], false);
  xml = testing::ReadFileBytes(junit);
  state_case = xml.find("<testcase classname=\"ledgerdiff.verify-range\" name=\"state\"");
  ASSERT_NE(state_case, std::string::npos) << xml;
  EXPECT_EQ(xml.find("<failure", state_case), std::string::npos) << xml;
  EXPECT_NE(testing::ReadFileBytes(dir.path + "/summary.md").find("the state tables last agreed at ledger 61"),
            std::string::npos);
}

// (3) State ledgers that differ (one side's ingestion ahead): not compared, no divergence, tried
// again every cycle; compared once the sides meet (while both grow).
TEST(FollowStateCompare, SidesAtDifferentStateLedgersAreComparedWhenTheyMeet) {
  FilledKahuna k(61, 60);
  const testing::ScratchDir dir("ledgerdiff-follow-state");
  const std::string state = dir.path + "/state";
  std::string err;
  auto r = FollowWhileGrowing(k, 40, {"--state-interval", "0"}, "", SetStateLedger(61), state, &err);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json f = Follow(r);
  const json& cycles = f["cycles"];
  ASSERT_GE(cycles.size(), 2u) << r.out;
  const json& first = cycles.front();
  EXPECT_EQ(first["state"]["compared"], false) << first.dump();
  EXPECT_EQ(first["state"]["verdict"], "not compared") << first.dump();
  EXPECT_EQ(first["state"]["ledger_left"], 61);
  EXPECT_EQ(first["state"]["ledger_right"], 60);
  EXPECT_TRUE(first["state_last_agreed_ledger"].is_null());
  EXPECT_NE(err.find("state: not compared: ledgers 61 vs 60"), std::string::npos) << err;
  for (const auto& c : cycles) {
    EXPECT_TRUE(c["open_divergences"].empty()) << c.dump();
    EXPECT_EQ(c["divergences_total"], 0);
  }
  const json& last = cycles.back();
  EXPECT_EQ(last["state"]["compared"], true) << last.dump();
  EXPECT_EQ(last["state"]["verdict"], "identical") << last.dump();
  EXPECT_EQ(last["state_last_agreed_ledger"], 61);
  EXPECT_EQ(f["diverged"], false);
}

// (4) --state-interval: a second comparison not before the interval, within a run and across a
// restart (the state's last comparison); one after it. Bad values are exit 2.
TEST(FollowStateCompare, StateIsComparedAtMostOnceEveryStateInterval) {
  FilledKahuna k(61, 61);
  const testing::ScratchDir dir("ledgerdiff-follow-state");
  const std::string state = dir.path + "/state";
  auto follow = [&](std::vector<std::string> more) {
    more.insert(more.end(), {"--scrub-period", "1e9"});
    auto r = RunCli(FollowArgs(k.left, k.right, state, more));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Follow(r)["cycles"];
  };
  // An hour: the first cycle compares, the next ones do not, nor a restart.
  auto hour = follow({"--from", std::to_string(k.first), "--cycles", "3", "--interval", "0", "--state-interval", "3600"});
  ASSERT_EQ(hour.size(), 3u);
  EXPECT_EQ(hour[0]["state"]["compared"], true) << hour[0].dump();
  EXPECT_TRUE(hour[1]["state"].is_null()) << hour[1].dump();
  EXPECT_TRUE(hour[2]["state"].is_null()) << hour[2].dump();
  EXPECT_EQ(hour[2]["state_last_agreed_ledger"], 61);  // exported by every cycle
  const int64_t compared_at = hour[0]["state_last_compared_at"];
  auto restarted = follow({"--cycles", "1", "--state-interval", "3600"});
  EXPECT_TRUE(restarted[0]["state"].is_null()) << restarted[0].dump();
  EXPECT_EQ(restarted[0]["state_last_compared_at"], compared_at);
  // One second: over cycles 0.25 s apart, comparisons at least a second apart, and more than one.
  auto second = follow({"--cycles", "12", "--interval", "0.25", "--state-interval", "1"});
  std::vector<int64_t> at;
  for (const auto& c : second)
    if (c["state"].is_object() && c["state"]["compared"] == true) at.push_back(c["state_last_compared_at"]);
  ASSERT_GE(at.size(), 2u) << second.dump();
  for (size_t i = 1; i < at.size(); ++i) EXPECT_GE(at[i], at[i - 1] + 1) << second.dump();
  // --skip-state: the follower compares no state, whatever the interval.
  auto skipped = follow({"--cycles", "1", "--state-interval", "0", "--skip-state"});
  EXPECT_TRUE(skipped[0]["state"].is_null()) << skipped[0].dump();
  EXPECT_EQ(skipped[0]["state_last_compared_at"], at.back()) << skipped[0].dump();
  // Validated like the other follow flags; --state-wait is the one-shot's.
  auto wait = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--state-wait", "5"}));
  EXPECT_EQ(wait.exit_code, 2) << wait.out << wait.err;
  EXPECT_NE(wait.err.find("--state-wait applies to a one-shot verify-range"), std::string::npos) << wait.err;
  for (const char* bad : {"-1", "nan", "1e9"}) {
    auto r = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--state-interval", bad}));
    EXPECT_EQ(r.exit_code, 2) << bad << r.out << r.err;
    EXPECT_NE(r.err.find("--state-interval"), std::string::npos) << bad << r.err;
  }
}

}  // namespace
}  // namespace ledgerdiff
