// verify-range --follow, issue 43: `--recheck A:B` compares a compared stretch afresh on both sides
// (after a re-ingest of both alike the segments hold the old rows): equal, the segments take the new
// rows (the scrub then agrees) and the open divergences there close; a change on one side only opens
// a divergence (exit 1) that closes once repaired; bad ranges are exit 2, one line. And a follower
// stopped by SIGTERM says where it stopped on stdout, as a line or as the JSON outcome. And a
// follower holds one session per side across cycles, opening it again when the server ended it.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "follow_harness.h"
#include "harness.h"

namespace ledgerdiff {
namespace {

using testing::ExecSql;
using testing::FollowArgs;
using testing::Kahuna;
using testing::QueryInt;
using testing::QueryText;
using testing::RunCli;
using testing::WaitForText;

nlohmann::json Cycles(const testing::CliResult& r) { return testing::FollowOutcome(r)["follow"]["cycles"]; }

TEST(FollowRecheck, AfterAReIngestOfBothSidesTheRecheckedStretchIsWhatTheScrubComparesAndAOneSidedChangeOpensADivergence) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-recheck");
  const std::string state = dir.path + "/state";
  const auto follow = [&](std::vector<std::string> more) {
    more.insert(more.end(), {"--cycles", "1"});
    return RunCli(FollowArgs(k.left, k.right, state, more));
  };
  auto first = follow({"--from", std::to_string(k.first), "--scrub-period", "1e9"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  ASSERT_EQ(Cycles(first)[0]["verified_through"], k.last);
  const int64_t changed = QueryInt(
      k.left, fmt::format("SELECT min(ledger_sequence) FROM history_transactions WHERE ledger_sequence > {}", k.first + 5));
  const int64_t a = changed - 2, b = std::min<int64_t>(changed + 2, k.last);
  ASSERT_GE(a, k.first);
  const std::string stretch = fmt::format("{}:{}", a, b);
  const auto fee = [&](const std::string& side, int delta) {
    ExecSql(side, fmt::format("UPDATE history_transactions SET fee_charged = fee_charged + ({}) WHERE ledger_sequence = {}",
                              delta, changed));
  };

  // A re-ingest of both sides alike: the segments hold the old rows, so the scrub flags the ledger
  // as changed on both sides.
  fee(k.left, 7);
  fee(k.right, 7);
  auto flagged = follow({"--scrub-period", "0.001"});
  EXPECT_EQ(flagged.exit_code, 1) << flagged.out << flagged.err;
  ASSERT_EQ(Cycles(flagged).size(), 1u);
  EXPECT_EQ(Cycles(flagged)[0]["finding"]["ledger"], changed);
  EXPECT_EQ(Cycles(flagged)[0]["finding"]["sides"], "both");

  // --recheck A:B compares both sides afresh: equal. The open divergence closes, the frontier stays.
  auto rechecked = follow({"--recheck", stretch, "--scrub-period", "1e9", "--format", "text"});
  EXPECT_EQ(rechecked.exit_code, 0) << rechecked.out << rechecked.err;
  EXPECT_NE(rechecked.err.find(fmt::format("rechecked {} (identical)", stretch)), std::string::npos) << rechecked.err;
  EXPECT_NE(rechecked.err.find("closed: the divergence at ledgers"), std::string::npos) << rechecked.err;
  const auto stored = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_TRUE(stored["open_divergences"].empty()) << stored.dump();
  EXPECT_EQ(stored["compared_through"], k.last);

  // The scrub now compares against the new rows: two full passes find nothing.
  for (int pass = 0; pass < 2; ++pass) {
    auto scrub = follow({"--scrub-period", "0.001"});
    EXPECT_EQ(scrub.exit_code, 0) << scrub.out << scrub.err;
    ASSERT_EQ(Cycles(scrub).size(), 1u);
    EXPECT_TRUE(Cycles(scrub)[0]["finding"].is_null()) << scrub.out;
    EXPECT_EQ(Cycles(scrub)[0]["verified_through"], k.last);
    EXPECT_EQ(Cycles(scrub)[0]["scrubbed"]["to"], k.last);
    if (pass == 1) {
      EXPECT_EQ(Cycles(scrub)[0]["scrubbed"]["from"], k.first) << "a whole pass, the rechecked stretch in it";
    }
  }

  // A change on one side only, found by --recheck: a divergence opens, the segments keep what was
  // verified, exit 1.
  fee(k.right, 1);
  auto found = follow({"--recheck", stretch, "--scrub-period", "1e9"});
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  auto cycles = Cycles(found);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["rechecked"], (nlohmann::json{{"from", a}, {"to", b}, {"verdict", "divergent"}}));
  EXPECT_EQ(cycles[0]["finding"]["kind"], "divergent");
  EXPECT_EQ(cycles[0]["finding"]["ledger"], changed);
  ASSERT_EQ(cycles[0]["open_divergences"].size(), 1u) << found.out;
  EXPECT_EQ(cycles[0]["open_divergences"][0]["how"], "recheck");
  EXPECT_EQ(cycles[0]["open_divergences"][0]["from"], changed);
  EXPECT_EQ(cycles[0]["open_divergences"][0]["to"], b);
  auto status = RunCli({"follow-status", "--state", state});
  EXPECT_EQ(status.exit_code, 1) << "still open: " << status.out << status.err;

  // Repaired: the next cycle finds both sides as verified (the re-ingested rows) and closes it.
  fee(k.right, -1);
  auto repaired = follow({"--scrub-period", "1e9"});
  EXPECT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;
  cycles = Cycles(repaired);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_TRUE(cycles[0]["open_divergences"].empty()) << repaired.out;
  ASSERT_EQ(cycles[0]["closed_divergences"].size(), 1u) << repaired.out;
  EXPECT_EQ(cycles[0]["closed_divergences"][0]["how"], "recheck");
  EXPECT_EQ(cycles[0]["verified_through"], k.last);
  EXPECT_FALSE(cycles[0].contains("rechecked")) << "only a run given --recheck rechecks";
}

// A stretch across two segments: each is rewritten in place (same names, so the state's list of
// segments does not change) from its own ledgers outside the stretch and the fresh ones inside it.
TEST(FollowRecheck, AStretchAcrossSegmentsIsReplacedInEach) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-recheck");
  const std::string state = dir.path + "/state";
  const int64_t until = k.first + 35;
  ASSERT_LE(until, k.last);
  const auto follow = [&](std::vector<std::string> more) {
    more.insert(more.end(), {"--cycles", "1", "--until", std::to_string(until)});
    return RunCli(FollowArgs(k.left, k.right, state, more));
  };
  // Two segments that do not join (the older is more than twice the newer): first:first+30, +31:+35.
  auto one = RunCli(FollowArgs(k.left, k.right, state,
                               {"--from", std::to_string(k.first), "--until", std::to_string(k.first + 30), "--cycles",
                                "1", "--scrub-period", "1e9"}));
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  auto two = follow({"--scrub-period", "1e9"});
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  const auto segments = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"))["segments"];
  ASSERT_EQ(segments.size(), 2u) << segments.dump();

  // Both sides re-ingested alike at a ledger of each segment: the scrub flags the first.
  for (const std::string& side : {k.left, k.right})
    ExecSql(side, fmt::format("UPDATE history_ledgers SET base_fee = base_fee + 1 WHERE sequence IN ({}, {})",
                              k.first + 29, k.first + 32));
  auto flagged = follow({"--scrub-period", "0.001"});
  EXPECT_EQ(flagged.exit_code, 1) << flagged.out << flagged.err;
  ASSERT_EQ(Cycles(flagged).size(), 1u);
  EXPECT_EQ(Cycles(flagged)[0]["finding"]["ledger"], k.first + 29);
  EXPECT_EQ(Cycles(flagged)[0]["finding"]["sides"], "both");

  const std::string stretch = fmt::format("{}:{}", k.first + 25, k.first + 33);
  auto rechecked = follow({"--recheck", stretch, "--scrub-period", "1e9"});
  EXPECT_EQ(rechecked.exit_code, 0) << rechecked.out << rechecked.err;
  ASSERT_EQ(Cycles(rechecked).size(), 1u);
  EXPECT_EQ(Cycles(rechecked)[0]["rechecked"]["verdict"], "identical");
  EXPECT_TRUE(Cycles(rechecked)[0]["open_divergences"].empty()) << rechecked.out;
  EXPECT_EQ(Cycles(rechecked)[0]["verified_through"], until) << "the frontier does not move";
  const auto after = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_EQ(after["segments"], segments) << "rewritten in place";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(state + "/segments")) files.push_back(e.path().filename());
  EXPECT_EQ(files.size(), 2u) << "no piece left behind";
  for (int pass = 0; pass < 2; ++pass) {
    auto scrub = follow({"--scrub-period", "0.001"});
    EXPECT_EQ(scrub.exit_code, 0) << scrub.out << scrub.err;
    ASSERT_EQ(Cycles(scrub).size(), 1u);
    EXPECT_TRUE(Cycles(scrub)[0]["finding"].is_null()) << scrub.out;
    if (pass == 1) {
      EXPECT_EQ(Cycles(scrub)[0]["scrubbed"], (nlohmann::json{{"from", k.first}, {"to", until}}));
    }
  }
}

TEST(FollowRecheck, BadRangesExitTwoWithOneLineNamingTheProblem) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-recheck");
  const std::string state = dir.path + "/state";
  const int64_t from = k.first + 2;  // ledgers before it are not the state's
  auto first = RunCli(FollowArgs(k.left, k.right, state, {"--from", std::to_string(from), "--cycles", "1"}));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::string before = testing::ReadFileBytes(state + "/state.json");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::string compared = fmt::format("has compared ledgers {}:{} only", from, k.last);
  const std::vector<Case> cases = {
      {FollowArgs(k.left, k.right, state, {"--recheck", "9:5"}), "TO (5) is before FROM (9)"},
      {FollowArgs(k.left, k.right, state, {"--recheck", "0:5"}), "--recheck 0:5"},
      {FollowArgs(k.left, k.right, state, {"--recheck", "1:2147483648"}), "is larger than 2147483647"},
      {FollowArgs(k.left, k.right, state, {"--recheck", "x"}), "--recheck x"},
      {FollowArgs(k.left, k.right, state, {"--recheck", fmt::format("{}:{}", k.last, k.last + 1)}), compared},
      {FollowArgs(k.left, k.right, state, {"--recheck", fmt::format("{}:{}", from - 1, from)}), compared},
      {FollowArgs(k.left, k.right, dir.path + "/new", {"--from", std::to_string(k.first), "--recheck", "5:6"}),
       "holds no state yet"},
      {{"verify-range", "--left", k.left, "--right", k.right, "--range", "5:6", "--recheck", "5:6"},
       "--recheck go with --follow"},
  };
  for (const Case& c : cases) {
    auto r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  EXPECT_EQ(testing::ReadFileBytes(state + "/state.json"), before) << "nothing written";
}

// SIGTERM: stderr's line as before, and stdout's summary in the output asked for.
TEST(FollowSignal, SigtermPrintsWhereTheFollowerStoppedOnStdout) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-term");
  for (const std::string format : {"json", "text"}) {
    const std::string state = dir.path + "/" + format, json = dir.path + "/" + format + ".json";
    testing::CliSpawnOptions so;
    so.stdout_path = dir.path + "/" + format + ".out";
    so.stderr_path = dir.path + "/" + format + ".err";
    const pid_t pid = testing::SpawnCli(
        FollowArgs(k.left, k.right, state,
                   {"--from", std::to_string(k.first), "--interval", "0.2", "--format", format, "--json", json}),
        so);
    ASSERT_TRUE(WaitForText(so.stderr_path, "cycle 2: verified through")) << testing::ReadFileBytes(so.stderr_path);
    kill(pid, SIGTERM);
    EXPECT_EQ(testing::WaitExitCode(pid), 128 + SIGTERM);
    const std::string out = testing::ReadFileBytes(so.stdout_path);
    const std::string err = testing::ReadFileBytes(so.stderr_path);
    EXPECT_NE(err.find("the follow state in"), std::string::npos) << err;
    const auto doc = nlohmann::json::parse(testing::ReadFileBytes(json), nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << testing::ReadFileBytes(json);
    EXPECT_EQ(doc["follow"]["stopped_by"], "a termination signal");
    EXPECT_EQ(doc["follow"]["verified_through"], k.last);
    EXPECT_GE(doc["follow"]["cycles_total"].get<int64_t>(), 2);
    EXPECT_EQ(doc["follow"]["cycles_total"], doc["follow"]["cycles"].size()) << "a new state: every cycle is this run's";
    EXPECT_EQ(doc["follow"]["open_divergences"], 0);
    if (format == "json") {
      EXPECT_EQ(nlohmann::json::parse(out, nullptr, false), doc) << out;
    } else {
      EXPECT_EQ(out.rfind(fmt::format("stopped by a termination signal: verified through ledger {} after ", k.last), 0),
                0u)
          << out;
      EXPECT_NE(out.find("; no divergence open\n"), std::string::npos) << out;
      EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    }
  }
  // Stopped before any cycle of this run finished (a side unreachable, retried): the state on disk
  // says where it stands.
  testing::CliSpawnOptions so;
  so.stdout_path = dir.path + "/down.out";
  so.stderr_path = dir.path + "/down.err";
  const pid_t pid = testing::SpawnCli(
      FollowArgs(k.left, "postgresql://127.0.0.1:1/nothing?connect_timeout=2", dir.path + "/text",
                 {"--format", "text"}),
      so);
  ASSERT_TRUE(WaitForText(so.stderr_path, "retrying in")) << testing::ReadFileBytes(so.stderr_path);
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::WaitExitCode(pid), 128 + SIGTERM);
  const std::string out = testing::ReadFileBytes(so.stdout_path);
  EXPECT_EQ(out.rfind(fmt::format("stopped by a termination signal: verified through ledger {} after 0 cycles (", k.last), 0),
            0u)
      << out << testing::ReadFileBytes(so.stderr_path);
}

// Issue 43, "cycles cost what is new": the follower's own statements (identity, heads, close
// time) go through one session per side held for its life, not a connection per cycle; a session
// the server ended between cycles is opened again before the next cycle uses it, which then runs
// as any other (no failure, no retry).
TEST(FollowSessions, OneSessionPerSideIsHeldAcrossCyclesAndOpenedAgainWhenTheServerEndedIt) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-sessions");
  const std::string left_db = QueryText(k.left, "SELECT current_database()");
  // The follower's held session on the left database: its backend pid, or 0 when none (-1 when
  // more than one).
  const auto held = [&] {
    const int64_t n = QueryInt(testing::TestConninfo(),
                               fmt::format("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                                           "'ledgerdiff verify-range --follow' AND datname = '{}'",
                                           left_db));
    if (n != 1) return n == 0 ? int64_t{0} : int64_t{-1};
    return QueryInt(testing::TestConninfo(),
                    fmt::format("SELECT pid FROM pg_stat_activity WHERE application_name = "
                                "'ledgerdiff verify-range --follow' AND datname = '{}'",
                                left_db));
  };
  testing::CliSpawnOptions so;
  so.stdout_path = dir.path + "/out";
  so.stderr_path = dir.path + "/err";
  // Cycles 3 s apart: each line is printed at a cycle's end, so the checks below land in the
  // sleep between two cycles.
  const pid_t pid = testing::SpawnCli(
      FollowArgs(k.left, k.right, dir.path + "/state", {"--from", std::to_string(k.first), "--interval", "3"}), so);
  ASSERT_TRUE(WaitForText(so.stderr_path, "cycle 2: verified through")) << testing::ReadFileBytes(so.stderr_path);
  const int64_t first = held();
  EXPECT_GT(first, 0) << "one session held on the left between cycles";
  ASSERT_TRUE(WaitForText(so.stderr_path, "cycle 3: verified through")) << testing::ReadFileBytes(so.stderr_path);
  EXPECT_EQ(held(), first) << "the same session after another cycle";
  // The server ends it between cycles: the next cycle opens another and goes on.
  ASSERT_GT(first, 0);
  EXPECT_EQ(QueryInt(testing::TestConninfo(), fmt::format("SELECT pg_terminate_backend({})::int", first)), 1);
  for (int i = 0; i < 100 && held() == first; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const size_t terminated = testing::ReadFileBytes(so.stderr_path).size();
  ASSERT_TRUE(WaitForText(so.stderr_path, "cycle 5: verified through", terminated))
      << testing::ReadFileBytes(so.stderr_path);
  const int64_t second = held();
  EXPECT_GT(second, 0) << "a session held again";
  EXPECT_NE(second, first);
  const std::string err = testing::ReadFileBytes(so.stderr_path);
  EXPECT_EQ(err.find(" failed: "), std::string::npos) << "a session gone between cycles is no failure: " << err;
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::WaitExitCode(pid), 128 + SIGTERM);
}

}  // namespace
}  // namespace ledgerdiff
