// verify-range --follow (issue 23) against real servers: a side ingested live by `plan` workers
// while the follower runs; a change planted in a new ledger caught within one cycle; one planted
// in a verified ledger caught by the scrub; SIGKILL and restart continuing from the frontier; the
// server dropping every connection mid-cycle; the state directory held by one follower at a time;
// the segments joined into the manifest one verify-range --out of the whole range writes.
// Issue 47: a gap on one side holds the frontier before it (never divergent); the scrub reaches
// the last verified ledger and starts a second pass, its coverage metric going to 1 and back; a
// state of a schema dropped and re-created under its name is refused.
// Issue 44: a state file is untrusted input (bounds and consistency checked before any
// connection, exit 2 naming the key); a symbolic link or a foreign directory is refused at start;
// a follower that stops without a finding (--cycles, --until, SIGTERM) writes its CI reports.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/embedded_pg.h"
#include "core/pg.h"
#include "dump/shard.h"
#include "follow_harness.h"
#include "harness.h"
#include "horizon_dumps.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::Connect;
using testing::ExecSql;
using testing::FollowArgs;
using testing::Kahuna;
using testing::QueryInt;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;
using testing::WaitForText;

// The follow JSON's cycles.
nlohmann::json Cycles(const testing::CliResult& r) { return testing::FollowOutcome(r)["follow"]["cycles"]; }

TEST(Follow, KeepsUpWithASideIngestedLiveByWorkersAndEndsIdenticalAtUntil) {
  const std::string serial = UniqueName("follow_serial"), live = UniqueName("follow_live"), range = "2:401";
  auto ingest = RunCli({"ingest", "--db", TestConninfo(), "--schema", serial, "--range", range, "--workers", "1"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", range, "--schema", live, "--job-size", "20"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::string run_id = plan.out.substr(0, plan.out.find_last_not_of('\n') + 1);
  run_id = run_id.substr(run_id.find_last_of('\n') + 1);
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string state = dir.path + "/state", out = dir.path + "/out.json", err = dir.path + "/err.txt";
  // The follower starts first: the live side holds nothing yet.
  const std::string conn = TestConninfo();
  testing::CliSpawnOptions so;
  so.stdout_path = out;
  so.stderr_path = err;
  pid_t follower = testing::SpawnCli(FollowArgs(conn, conn, state,
                                                {"--left-schema", serial, "--right-schema", live, "--range", range,
                                                 "--interval", "0.3", "--metrics", dir.path + "/m.prom"}),
                                     so);
  ASSERT_TRUE(WaitForText(err, "following from ledger 2; state in " + state)) << testing::ReadFileBytes(err);
  std::vector<pid_t> workers;
  for (int i = 0; i < 2; ++i)
    workers.push_back(testing::SpawnCli({"worker", "--db", conn, "--run", run_id}));
  for (pid_t w : workers) EXPECT_EQ(testing::WaitExitCode(w), 0);
  const int code = testing::WaitExitCode(follower);
  const std::string stdout_text = testing::ReadFileBytes(out), stderr_text = testing::ReadFileBytes(err);
  ASSERT_EQ(code, 0) << stdout_text << stderr_text;
  auto cycles = Cycles({code, stdout_text, stderr_text});
  ASSERT_GE(cycles.size(), 2u) << "it followed the live side over several cycles: " << stderr_text;
  EXPECT_EQ(cycles.back()["verified_through"], 401);
  EXPECT_EQ(cycles.back()["lag_ledgers"], 0) << "the lag shrank to 0";
  // Each cycle compared only ledgers after the previous frontier, and together all of them once.
  int64_t next = 2;
  for (const auto& c : cycles)
    if (!c["compared"].is_null()) {
      EXPECT_EQ(c["compared"]["from"], next);
      next = c["compared"]["to"].get<int64_t>() + 1;
    }
  EXPECT_EQ(next, 402);
  // Cycle 1 may come before the workers wrote a ledger: then it says "nothing verified yet".
  EXPECT_NE(stderr_text.find("cycle 1: "), std::string::npos) << stderr_text;
  EXPECT_NE(stderr_text.find(": verified through 401 ("), std::string::npos) << stderr_text;
  const std::string metrics = testing::ReadFileBytes(dir.path + "/m.prom");
  EXPECT_NE(metrics.find("ledgerdiff_verified_through_ledger 401\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ledgerdiff_lag_ledgers 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ledgerdiff_scrub_coverage_ratio"), std::string::npos) << metrics;
  ASSERT_EQ(std::system(fmt::format("/usr/bin/python3 {}/tests/parse_metrics.py {} >/dev/null",
                                    testing::SourceDir(), dir.path + "/m.prom")
                            .c_str()),
            0)
      << "prometheus_client parses the file";

  // The segments the follower kept, joined, are the manifest one verify-range --out writes.
  const nlohmann::json st = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  std::vector<std::string> parts;
  for (const auto& seg : st["segments"]) parts.push_back(state + "/segments/" + seg["file"].get<std::string>());
  ASSERT_FALSE(parts.empty());
  std::string joined = parts[0];
  if (parts.size() > 1) {
    joined = dir.path + "/joined.ldm";
    LD_ASSERT_OK(dump::ConcatenateManifests(parts, joined));
  }
  auto once = RunCli({"verify-range", "--left", conn, "--right", conn, "--left-schema", serial, "--right-schema", live,
                      "--range", range, "--out", dir.path + "/once.ldm"});
  ASSERT_EQ(once.exit_code, 0) << once.err;
  EXPECT_EQ(testing::ReadFileBytes(joined), testing::ReadFileBytes(dir.path + "/once.ldm"))
      << "the follower's manifest of 2:401 is byte-identical to one verify-range --out";
  EXPECT_LE(parts.size(), 8u) << "segments are joined as they grow";
}

// A stretch of ledgers the right side gains later (its history_ledgers rows held back, then
// restored): the restart compares only them, and a change planted in one of them is caught
// within that one cycle at its ledger, with its rows.
TEST(Follow, ARestartComparesOnlyNewLedgersAndCatchesAChangeInOneWithinACycle) {
  Kahuna k;
  ASSERT_GT(k.last - k.first, 20);
  const int64_t cut = k.last - 10;
  // Held in a schema of its own: a table in the compared schema would be a schema difference.
  ExecSql(k.right, fmt::format("CREATE SCHEMA stash; CREATE TABLE stash.held AS SELECT * FROM history_ledgers "
                            "WHERE sequence > {0}; DELETE FROM history_ledgers WHERE sequence > {0}",
                            cut));
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string state = dir.path + "/state";
  auto first = RunCli(FollowArgs(k.left, k.right, state, {"--from", std::to_string(k.first), "--cycles", "1"}));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(Cycles(first)[0]["verified_through"], cut);
  // A row of a ledger the follower has not seen yet changes on the right; the ledgers arrive.
  const int64_t planted =
      QueryInt(k.right, fmt::format("SELECT min(ledger_sequence) FROM history_transactions WHERE ledger_sequence > {}", cut));
  ASSERT_GT(planted, cut);
  ExecSql(k.right, fmt::format("UPDATE history_transactions SET fee_charged = fee_charged + 1 WHERE ledger_sequence = {}; "
                            "INSERT INTO history_ledgers SELECT * FROM stash.held",
                            planted));
  auto second = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--scrub-period", "1e9"}));
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  auto cycles = Cycles(second);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["compared"]["from"], cut + 1) << "no verified ledger is read again but the scrub's";
  EXPECT_EQ(cycles[0]["finding"]["kind"], "divergent");
  EXPECT_EQ(cycles[0]["finding"]["ledger"], planted);
  auto j = nlohmann::json::parse(second.out);
  EXPECT_EQ(j["diff"]["first_divergent_ledger"], planted);
  EXPECT_NE(second.out.find("history_transactions"), std::string::npos);
  // Not verified: the state still ends before it, and the next run compares it again.
  const nlohmann::json st = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_EQ(st["compared_through"], cut);
}

// A gap on one side only, under an explicit --range (the right side has not written ledger G yet,
// while both hold every ledger after it), with either engine: the follower verifies the gap-free
// run before it and holds its frontier at G - 1, cycle after cycle; the gap is not divergent, and
// nothing past it is verified. Once G arrives, the next run verifies the rest and reaches --until.
TEST(Follow, AGapOnOneSideHoldsTheFrontierBeforeItAndIsNeverDivergent) {
  Kahuna k;
  const int64_t gap = k.first + (k.last - k.first) / 2;
  testing::HoldBackLedger(k.right, static_cast<Ledger>(gap));
  ASSERT_EQ(QueryInt(k.right, fmt::format("SELECT count(*) FROM history_ledgers WHERE sequence = {}", gap)), 0);
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string range = fmt::format("{}:{}", k.first, k.last);
  const std::vector<std::string> engines = {"text", "server-hash"};
  for (const auto& engine : engines) {
    SCOPED_TRACE(engine);
    auto r = RunCli(FollowArgs(k.left, k.right, dir.path + "/" + engine,
                               {"--range", range, "--engine", engine, "--cycles", "2", "--interval", "0"}));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto cycles = Cycles(r);
    ASSERT_EQ(cycles.size(), 2u) << r.out << r.err;
    EXPECT_EQ(cycles[0]["compared"], (nlohmann::json{{"from", k.first}, {"to", gap - 1}}));
    EXPECT_TRUE(cycles[1]["compared"].is_null()) << "nothing past the gap";
    for (const auto& c : cycles) {
      EXPECT_TRUE(c["finding"].is_null()) << c;
      EXPECT_EQ(c["verified_through"], gap - 1);
      EXPECT_EQ(c["head"], (nlohmann::json{{"left", k.last}, {"right", k.last}}));
      EXPECT_EQ(c["lag_ledgers"], k.last - gap + 1);
      // The lag's parts (issue 43): no side behind; a gap of 1 on the right holds the backlog.
      EXPECT_EQ(c["behind"], (nlohmann::json{{"left", 0}, {"right", 0}})) << c;
      EXPECT_EQ(c["gap_ledgers"], (nlohmann::json{{"left", 0}, {"right", 1}})) << c;
      EXPECT_EQ(c["backlog_ledgers"], k.last - gap + 1) << c;
      EXPECT_EQ(c["held_back_ledgers"], 0) << c;
      EXPECT_EQ(c["divergences_total"], 0);
    }
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["follow"]["diverged"], false);
    EXPECT_EQ(j["follow"]["reached_until"], false);
    EXPECT_EQ(r.out.find("divergent"), std::string::npos) << r.out;
  }
  testing::RestoreLedger(k.right, static_cast<Ledger>(gap));
  for (const auto& engine : engines) {
    SCOPED_TRACE(engine);
    auto r = RunCli(FollowArgs(k.left, k.right, dir.path + "/" + engine,
                               {"--range", range, "--engine", engine, "--cycles", "3", "--interval", "0"}));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto cycles = Cycles(r);
    ASSERT_EQ(cycles.size(), 1u) << r.out << r.err;
    EXPECT_EQ(cycles[0]["compared"], (nlohmann::json{{"from", gap}, {"to", k.last}}));
    EXPECT_TRUE(cycles[0]["finding"].is_null()) << cycles[0];
    EXPECT_EQ(cycles[0]["verified_through"], k.last);
    EXPECT_EQ(nlohmann::json::parse(r.out)["follow"]["reached_until"], true);
  }
}

// Rows after the frontier are expected on a live side, so a follower does not count them; a row
// that has no ledger at all (NULL) is counted on both sides, and a difference is divergent.
TEST(Follow, ARowWithoutALedgerOnOneSideIsDivergent) {
  Kahuna k;
  // An effect loses its operation (its ledger diverges too; the count says why).
  ExecSql(k.right, "ALTER TABLE history_effects ALTER COLUMN history_operation_id DROP NOT NULL; "
                "UPDATE history_effects SET history_operation_id = NULL WHERE ctid = (SELECT min(ctid) FROM history_effects)");
  ASSERT_EQ(QueryInt(k.right, "SELECT count(*) FROM history_effects WHERE history_operation_id IS NULL"), 1);
  const testing::ScratchDir dir("ledgerdiff-follow");
  auto r = RunCli(FollowArgs(k.left, k.right, dir.path + "/state",
                             {"--from", std::to_string(k.first), "--cycles", "1", "--format", "text"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("history_effects: rows outside ledgers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("right 0 / 0 / 1"), std::string::npos) << r.out;
}

// A ledger verified earlier changes (a reingest, a manual fix): the scrub finds it within its
// period and names the ledger, the side and the table.
TEST(Follow, TheScrubCatchesAVerifiedLedgerThatChangedLater) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string state = dir.path + "/state";
  auto first = RunCli(FollowArgs(k.left, k.right, state,
                                 {"--from", std::to_string(k.first), "--cycles", "1", "--scrub-period", "1e9"}));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  ASSERT_EQ(Cycles(first)[0]["verified_through"], k.last);
  const int64_t planted = QueryInt(
      k.right, fmt::format("SELECT min(ledger_sequence) FROM history_transactions WHERE ledger_sequence > {}", k.first + 5));
  ExecSql(k.right, fmt::format("UPDATE history_transactions SET fee_charged = fee_charged + 1 WHERE ledger_sequence = {}",
                            planted));
  // A period short enough that one cycle scrubs everything verified.
  auto again = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--scrub-period", "0.001"}));
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  auto cycles = Cycles(again);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_TRUE(cycles[0]["compared"].is_null()) << "nothing new";
  EXPECT_EQ(cycles[0]["finding"]["kind"], "changed_after_verified");
  EXPECT_EQ(cycles[0]["finding"]["ledger"], planted);
  EXPECT_EQ(cycles[0]["finding"]["sides"], "right");
  EXPECT_EQ(cycles[0]["finding"]["tables"], nlohmann::json::array({"history_transactions"}));
  EXPECT_EQ(cycles[0]["verified_through"], planted - 1) << "a changed ledger is not verified any more";
  auto text = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1", "--scrub-period", "0.001", "--format", "text"}));
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find(fmt::format("changed after it was verified: ledger {} (right side; history_transactions)",
                                      planted)),
            std::string::npos)
      << text.out;
}

// The value of the gauge `name` in a Prometheus text file (NaN when it is not there).
double Gauge(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(metrics.substr(at + name.size() + 2));
}

// The scrub walks the verified range to its last ledger, starts a second pass, and the coverage
// metric says where it is. With --scrub-period 1e9 each cycle scrubs one ledger (the slice is at
// least 1), so the passes are counted cycle by cycle: 5 verified ledgers, F..L.
// - pass 1: a change planted at L, the last verified ledger, is found at L in the cycle that
//   scrubs it (after F..L-1 are found clean);
// - the change undone, the next cycle scrubs L clean: the coverage reaches 1;
// - pass 2: a change planted at F+1 after pass 1 had scrubbed it clean is found by the second
//   pass, which starts over at F (the coverage back at 1/5).
TEST(Follow, TheScrubReachesTheLastVerifiedLedgerAndStartsASecondPass) {
  Kahuna k;
  const int64_t L = k.last, F = L - 4;
  ASSERT_EQ(QueryInt(k.left, fmt::format("SELECT count(*) FROM history_ledgers WHERE sequence BETWEEN {} AND {}", F, L)), 5);
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string state = dir.path + "/state", metrics = dir.path + "/m.prom";
  const auto follow = [&](const std::vector<std::string>& more) {
    std::vector<std::string> args = {"--interval", "0", "--scrub-period", "1e9", "--metrics", metrics};
    args.insert(args.end(), more.begin(), more.end());
    return RunCli(FollowArgs(k.left, k.right, state, args));
  };
  const auto coverage = [&] { return Gauge(testing::ReadFileBytes(metrics), "ledgerdiff_scrub_coverage_ratio"); };
  const auto fee_pool = [&](int64_t ledger, int delta) {
    ExecSql(k.right, fmt::format("UPDATE history_ledgers SET fee_pool = fee_pool + ({}) WHERE sequence = {}", delta, ledger));
  };
  const auto scrubbed = [](const nlohmann::json& c) {
    return c["scrubbed"].is_null() ? std::string("null")
                                   : fmt::format("{}:{}", c["scrubbed"]["from"].get<int64_t>(),
                                                 c["scrubbed"]["to"].get<int64_t>());
  };

  auto first = follow({"--from", std::to_string(F), "--cycles", "1"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto cycles = Cycles(first);
  ASSERT_EQ(cycles.size(), 1u);
  ASSERT_EQ(cycles[0]["verified_through"], L);
  EXPECT_EQ(scrubbed(cycles[0]), fmt::format("{}:{}", F, F));
  EXPECT_DOUBLE_EQ(coverage(), 0.2) << testing::ReadFileBytes(metrics);

  // Pass 1 reaches the last verified ledger, changed after it was verified.
  fee_pool(L, 1);
  auto last = follow({"--cycles", "10"});
  EXPECT_EQ(last.exit_code, 1) << last.out << last.err;
  cycles = Cycles(last);
  ASSERT_EQ(cycles.size(), 4u) << "F+1, F+2, F+3 clean, then L: " << last.out;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(scrubbed(cycles[i]), fmt::format("{0}:{0}", F + 1 + i));
  EXPECT_EQ(cycles[3]["finding"]["kind"], "changed_after_verified");
  EXPECT_EQ(cycles[3]["finding"]["ledger"], L);
  EXPECT_EQ(cycles[3]["finding"]["sides"], "right");
  EXPECT_EQ(cycles[3]["finding"]["tables"], nlohmann::json::array({"history_ledgers"}));
  EXPECT_EQ(cycles[3]["verified_through"], L - 1) << "a changed ledger is not verified any more";

  // Undone: the scrub checks L again first and finds it clean; the pass is complete.
  fee_pool(L, -1);
  auto done = follow({"--cycles", "1"});
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  cycles = Cycles(done);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(scrubbed(cycles[0]), fmt::format("{0}:{0}", L));
  EXPECT_EQ(cycles[0]["scrub_coverage"], 1);
  EXPECT_EQ(cycles[0]["verified_through"], L);
  EXPECT_DOUBLE_EQ(coverage(), 1) << testing::ReadFileBytes(metrics);

  // Pass 2: a ledger pass 1 found clean changes; the scrub starts over and finds it.
  fee_pool(F + 1, 1);
  auto second = follow({"--cycles", "10"});
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  cycles = Cycles(second);
  ASSERT_EQ(cycles.size(), 2u) << second.out;
  EXPECT_EQ(scrubbed(cycles[0]), fmt::format("{0}:{0}", F)) << "a new pass starts at the first verified ledger";
  EXPECT_DOUBLE_EQ(cycles[0]["scrub_coverage"].get<double>(), 0.2);
  EXPECT_TRUE(cycles[0]["finding"].is_null());
  EXPECT_EQ(scrubbed(cycles[1]), fmt::format("{0}:{0}", F + 1));
  EXPECT_EQ(cycles[1]["finding"]["kind"], "changed_after_verified");
  EXPECT_EQ(cycles[1]["finding"]["ledger"], F + 1);
  EXPECT_EQ(cycles[1]["finding"]["sides"], "right");
  const double now = coverage();
  EXPECT_GT(now, 0) << testing::ReadFileBytes(metrics);
  EXPECT_LT(now, 1) << "the metric started over with the second pass: " << testing::ReadFileBytes(metrics);
}

// A follow state names its sides by identity: the right schema dropped and re-created under its
// name (a restore) holds the same rows, but it is not what was verified, and the state is refused.
TEST(Follow, AStateOfASchemaDroppedAndRecreatedUnderItsNameIsRefused) {
  const std::string db = TestConninfo(), left = UniqueName("follow_re_left"), right = UniqueName("follow_re_right");
  for (const auto& schema : {left, right}) {
    auto r = RunCli({"ingest", "--db", db, "--schema", schema, "--range", "2:61", "--workers", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string state = dir.path + "/state";
  const std::vector<std::string> sides = {"--left-schema", left, "--right-schema", right, "--cycles", "1"};
  std::vector<std::string> start = sides;
  start.insert(start.end(), {"--from", "2"});
  auto first = RunCli(FollowArgs(db, db, state, start));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const uint32_t before = testing::SchemaOid(db, right);
  const uint32_t after = testing::RecreateSchemaUnderItsName(db, right);
  ASSERT_NE(after, 0u);
  const std::string state_before = testing::ReadFileBytes(state + "/state.json");
  auto again = RunCli(FollowArgs(db, db, state, sides));
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find(fmt::format("--state {} follows other databases: the right side was schema \"{}\" of oid {} "
                                       "and is now schema \"{}\" of oid {}",
                                       state, right, before, right, after)),
            std::string::npos)
      << again.err;
  EXPECT_EQ(testing::ReadFileBytes(state + "/state.json"), state_before) << "the state is untouched";
  // The same rows in a fresh state verify identical: only the identity made the difference.
  auto fresh = RunCli(FollowArgs(db, db, dir.path + "/fresh", start));
  EXPECT_EQ(fresh.exit_code, 0) << fresh.out << fresh.err;
}

// SIGKILL mid-cycle, then the same command: it continues from the state of the last finished
// cycle, the killed cycle's files are gone; a second follower on the same directory is refused;
// every connection dropped mid-cycle (and refused for a while) is survived.
TEST(Follow, SurvivesSigkillAndLostConnectionsAndRefusesASecondFollower) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string state = dir.path + "/state";
  const std::string from = std::to_string(k.first);
  // First cycle: a few ledgers; then a killed one.
  auto first = RunCli(FollowArgs(k.left, k.right, state, {"--from", from, "--until", std::to_string(k.first + 9)}));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  testing::CliSpawnOptions so;
  so.stderr_path = dir.path + "/killed.err";
  pid_t killed = testing::SpawnCli(FollowArgs(k.left, k.right, state, {"--interval", "0"}), so);
  // Once it holds the directory (it says so after taking the lock), a second follower is refused.
  for (int i = 0; i < 300 && testing::ReadFileBytes(so.stderr_path).find("continuing from") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto second = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1"}));
  EXPECT_EQ(second.exit_code, 2) << second.out << second.err;
  EXPECT_NE(second.err.find("in use"), std::string::npos) << second.err;
  // The refusal names the holder (issue 43): its pid and host, and since when.
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_NE(second.err.find(fmt::format("held by pid {} on host {} since 20", killed, host)), std::string::npos)
      << second.err;
  kill(killed, SIGKILL);
  testing::WaitExitCode(killed);
  const nlohmann::json st = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  const int64_t through = st["compared_through"];
  EXPECT_GE(through, k.first + 9);

  // The right server refuses every connection for ~2 s (as while it restarts), then is back.
  const std::string right_db = [&] {
    auto c = Connect(k.right);
    return std::string(c->Exec("SELECT current_database()")->Get(0, 0));
  }();
  ExecSql(TestConninfo(), fmt::format("ALTER DATABASE {} ALLOW_CONNECTIONS false", pg::QuoteIdent(right_db)));
  // Refused for longer than --give-up-after: exit 3, naming how long and why.
  auto gave_up = RunCli(FollowArgs(k.left, k.right, state, {"--give-up-after", "0.5", "--cycles", "1"}));
  EXPECT_EQ(gave_up.exit_code, 3) << gave_up.out << gave_up.err;
  EXPECT_NE(gave_up.err.find("--give-up-after 0"), std::string::npos) << gave_up.err;
  EXPECT_NE(gave_up.err.find("not currently accepting connections"), std::string::npos) << gave_up.err;
  // Still refused when the next follower starts; the server comes back only once that follower
  // has reported a failed attempt (no timing assumption: the reopen waits for the report).
  testing::CliSpawnOptions rest_so;
  rest_so.stdout_path = dir.path + "/rest.out";
  rest_so.stderr_path = dir.path + "/rest.err";
  pid_t rest_pid =
      testing::SpawnCli(FollowArgs(k.left, k.right, state, {"--until", std::to_string(k.last), "--interval", "0"}), rest_so);
  for (int i = 0; i < 600 && testing::ReadFileBytes(rest_so.stderr_path).find("failed") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ExecSql(TestConninfo(), fmt::format("ALTER DATABASE {} ALLOW_CONNECTIONS true", pg::QuoteIdent(right_db)));
  const int rest_code = testing::WaitExitCode(rest_pid);
  const testing::CliResult rest{rest_code, testing::ReadFileBytes(rest_so.stdout_path), testing::ReadFileBytes(rest_so.stderr_path)};
  ASSERT_EQ(rest.exit_code, 0) << rest.out << rest.err;
  auto cycles = Cycles(rest);
  ASSERT_FALSE(cycles.empty());
  EXPECT_EQ(cycles.back()["verified_through"], k.last);
  if (!cycles[0]["compared"].is_null()) {
    EXPECT_EQ(cycles[0]["compared"]["from"], through + 1);
  }
  EXPECT_NE(rest.err.find("failed"), std::string::npos) << "the lost connections were reported: " << rest.err;
  // Nothing of the killed cycle stays behind.
  const nlohmann::json end = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(state + "/segments")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, end["segments"].size());
  // A state of other databases is refused.
  auto other = RunCli(FollowArgs(k.left, k.left, state, {"--cycles", "1"}));
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("follows other databases"), std::string::npos) << other.err;
}

// The server both sides live on restarts while the follower runs cycles: the cycles that fail
// are retried and reported, the follower recovers, and SIGTERM then stops it with its state
// durable (exit 143, the line saying where the state is).
TEST(Follow, SurvivesARestartOfTheServerAndStopsCleanlyOnSigterm) {
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string cluster = dir.path + "/pg", state = dir.path + "/state", err = dir.path + "/err.txt";
  auto server = EmbeddedPostgres::Start({.dir = cluster});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string db = (*server)->conninfo();
  for (const char* schema : {"old", "new"}) {
    auto r = RunCli({"ingest", "--db", db, "--schema", schema, "--range", "2:601", "--workers", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  testing::CliSpawnOptions so;
  so.stderr_path = err;
  const pid_t follower = testing::SpawnCli(
      FollowArgs(db, db, state, {"--left-schema", "old", "--right-schema", "new", "--from", "2", "--interval", "0.2"}),
      so);
  ASSERT_TRUE(WaitForText(err, "cycle 1: verified through 601")) << testing::ReadFileBytes(err);
  const size_t before_stop = testing::ReadFileBytes(err).size();
  ASSERT_TRUE((*server)->Stop().ok());
  // The server comes back once the follower has seen it gone: a cycle failed and is retried.
  ASSERT_TRUE(WaitForText(err, " failed: ", before_stop)) << testing::ReadFileBytes(err);
  server = EmbeddedPostgres::Start({.dir = cluster});
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_TRUE(WaitForText(err, "recovered after", before_stop)) << testing::ReadFileBytes(err);
  kill(follower, SIGTERM);
  EXPECT_EQ(testing::WaitExitCode(follower), 128 + SIGTERM);
  const std::string log = testing::ReadFileBytes(err);
  EXPECT_NE(log.find("failed: "), std::string::npos) << log;
  EXPECT_NE(log.find("the follow state in " + state + " holds what was verified (through ledger 601, after "),
            std::string::npos)
      << log;
  const nlohmann::json st = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_EQ(st["compared_through"], 601);
  (void)(*server)->Stop();
}

// Bad input is refused before any work, exit 2 with one line naming it; --range A: is open-ended.
TEST(Follow, BadInputIsAUsageError) {
  const std::string db = TestConninfo();
  const testing::ScratchDir dir("ledgerdiff-follow");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--from", "2"}, "--follow needs --state DIR"},
      {{"--state", dir.path + "/s"}, "--follow needs the first ledger"},
      {{"--state", dir.path + "/s", "--from", "9", "--until", "5"}, "--until 5 is before the first ledger 9"},
      {{"--state", dir.path + "/s", "--range", "2:", "--from", "2"}, "give --range or --from/--until, not both"},
      {{"--state", dir.path + "/s", "--from", "2", "--out", dir.path + "/o.ldm"}, "--out, --shards and --resume do not apply"},
      {{"--state", dir.path + "/s", "--from", "2", "--scrub-period", "0"}, "--scrub-period 0 is not a positive number"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"verify-range", "--follow", "--left", db, "--right", db};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir.path + "/s")) << c.says << ": nothing written";
  }
  auto without = RunCli({"verify-range", "--left", db, "--right", db, "--state", dir.path + "/s", "--range", "2:5"});
  EXPECT_EQ(without.exit_code, 2);
  EXPECT_NE(without.err.find("--state, --from, --until and --recheck go with --follow"), std::string::npos) << without.err;
  // --range A: is open-ended: on an empty schema it follows from A and finds nothing yet.
  const std::string empty = UniqueName("follow_empty");
  ExecSql(db, fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.history_ledgers (sequence integer)", empty));
  auto open = RunCli({"verify-range", "--follow", "--left", db, "--right", db, "--left-schema", empty, "--right-schema",
                      empty, "--state", dir.path + "/open", "--range", "2:", "--cycles", "1", "--format", "json"});
  ASSERT_EQ(open.exit_code, 0) << open.out << open.err;
  auto cycles = Cycles(open);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["verified_through"], 1) << "nothing verified yet: the first ledger less one";
  EXPECT_TRUE(cycles[0]["compared"].is_null());
}

// A follow state of two small identical schemas after one cycle, in DIR/state: the sides, and the
// flags that continue it.
struct SmallState {
  std::string db = TestConninfo();
  std::string left = UniqueName("follow_st_left"), right = UniqueName("follow_st_right");
  std::vector<std::string> sides() const { return {"--left-schema", left, "--right-schema", right}; }
  // Makes the state in `state` (one cycle from ledger 2 through 61).
  void Make(const std::string& state) {
    for (const auto& schema : {left, right}) {
      auto r = RunCli({"ingest", "--db", db, "--schema", schema, "--range", "2:61", "--workers", "1"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    std::vector<std::string> more = sides();
    more.insert(more.end(), {"--from", "2", "--cycles", "1"});
    auto r = RunCli(FollowArgs(db, db, state, more));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
};

// One line on stderr (the error), nothing more.
size_t Lines(const std::string& err) { return static_cast<size_t>(std::count(err.begin(), err.end(), '\n')); }

// Every bound and consistency rule of state.json: a hostile value is exit 2 with one line naming
// the key, before any work (the state and the segments untouched; never a failure retried until
// --give-up-after, exit 3).
TEST(FollowState, AHostileStateFileIsBadInputNamingTheKey) {
  SmallState s;
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string good = dir.path + "/good";
  s.Make(good);
  const nlohmann::json base = nlohmann::json::parse(testing::ReadFileBytes(good + "/state.json"));
  ASSERT_EQ(base["compared_through"], 61);
  struct Case {
    std::string pointer;  // JSON pointer of the value replaced
    nlohmann::json value;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"/from", -1, "key \"from\": -1 is not a whole number"},
      {"/from", 0, "key \"from\": 0 is not a ledger"},
      {"/cycles", -1, "key \"cycles\": -1 is not a whole number"},
      {"/divergences", -1, "key \"divergences\": -1"},
      {"/compared_through", 4294967295u, "key \"compared_through\": 4294967295 is not a whole number from 0 to 2147483647"},
      {"/compared_through", 2147483648u, "key \"compared_through\": 2147483648"},
      {"/compared_through", 1.5, "key \"compared_through\": 1.5"},
      {"/scrub_next", 0, "key \"scrub_next\": 0 is not a ledger"},
      {"/scrub_next", 63, "key \"scrub_next\": ledger 63, outside the kept ledgers 2:61"},
      {"/reaped_through", 62, "key \"reaped_through\": ledger 62, outside the compared ledgers"},
      {"/first_divergence", 62, "key \"first_divergence\": ledger 62, outside the compared ledgers 2:61"},
      {"/divergences", 2, "key \"divergences\": 2 divergences in 1 cycles"},
      {"/cycles", 0, "key \"cycles\": 0, but ledgers 2:61 were compared"},
      {"/segments/0/to", 60, "key \"segments\": they end at 60, the state at 61"},
      {"/segments/0/file", "../../etc/passwd", "key \"segments[0].file\""},
      {"/segments/0/from", -5, "key \"segments[0].from\": -5"},
      {"/format", -1, "key \"format\": -1"},
      {"/left", "x", "key \"left\": \"x\" is not an object"},
      // Issue 43: the open divergences are untrusted too.
      {"/open_divergences", nlohmann::json::parse(R"([{"from":0,"to":3,"how":"scrub","sides":"right","tables":[],"found_at":1,"cycle":1}])"),
       "key \"open_divergences[0].from\": 0 is not a ledger"},
      {"/open_divergences", nlohmann::json::parse(R"([{"from":5,"to":4,"how":"scrub","sides":"right","tables":[],"found_at":1,"cycle":1}])"),
       "key \"open_divergences[0].to\": 4 is before"},
      {"/open_divergences", nlohmann::json::parse(R"([{"from":5,"to":5,"how":"rm -rf","sides":"right","tables":[],"found_at":1,"cycle":1}])"),
       "key \"open_divergences[0].how\": \"rm -rf\" is not new-ledgers, scrub, gone, recheck or state"},
      // Issue 45: the state divergence (one, last, one ledger) and when state last agreed.
      {"/open_divergences", nlohmann::json::parse(R"([{"from":61,"to":61,"how":"state","sides":"","tables":[],"found_at":1,"cycle":1},{"from":5,"to":5,"how":"scrub","sides":"right","tables":[],"found_at":1,"cycle":1}])"),
       "key \"open_divergences[1]\": after the state divergence"},
      {"/open_divergences", nlohmann::json::parse(R"([{"from":60,"to":61,"how":"state","sides":"","tables":[],"found_at":1,"cycle":1}])"),
       "key \"open_divergences[0]\": ledgers 60:61 are not one state ledger"},
      {"/state_last_agreed_ledger", 0, "key \"state_last_agreed_ledger\": 0 is not a ledger"},
      {"/state_last_agreed_ledger", 61, "key \"state_last_agreed_at\": 0, with a last agreed ledger 61"},
      {"/open_divergences", nlohmann::json::parse(R"([{"from":5,"to":5,"how":"scrub","sides":"right","tables":[],"found_at":1,"cycle":1}])"),
       "key \"open_divergences\": 1 open, 0 found"},
  };
  for (const auto& c : cases) {
    const std::string state = dir.path + "/case";
    fs::remove_all(state);
    fs::copy(good, state, fs::copy_options::recursive);
    nlohmann::json j = base;
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    testing::WriteFileBytes(state + "/state.json", j.dump(2));
    std::vector<std::string> more = s.sides();
    more.insert(more.end(), {"--cycles", "1", "--give-up-after", "0.5"});
    auto r = RunCli(FollowArgs(s.db, s.db, state, more));
    EXPECT_EQ(r.exit_code, 2) << c.pointer << " = " << c.value.dump() << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(state + "/state.json: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.pointer << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_EQ(testing::ReadFileBytes(state + "/state.json"), j.dump(2)) << "the state is untouched";
  }
  {  // A first divergence that no open divergence starts at (issue 43).
    const std::string state = dir.path + "/first";
    fs::copy(good, state, fs::copy_options::recursive);
    nlohmann::json j = base;
    j["divergences"] = 1;
    j["first_divergence"] = 30;
    testing::WriteFileBytes(state + "/state.json", j.dump(2));
    std::vector<std::string> more = s.sides();
    more.insert(more.end(), {"--cycles", "1", "--give-up-after", "0.5"});
    auto r = RunCli(FollowArgs(s.db, s.db, state, more));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("key \"first_divergence\": ledger 30 is not an open divergence"), std::string::npos) << r.err;
  }
  // Before any connection: a bad state with the servers away is exit 2 at once, not exit 3.
  const std::string state = dir.path + "/away";
  fs::copy(good, state, fs::copy_options::recursive);
  nlohmann::json j = base;
  j["scrub_next"] = 0;
  testing::WriteFileBytes(state + "/state.json", j.dump(2));
  const std::string away = "host=/nonexistent-ledgerdiff port=1 user=x dbname=x connect_timeout=1";
  auto r = RunCli(FollowArgs(away, away, state, {"--cycles", "1", "--give-up-after", "0.5"}));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("key \"scrub_next\""), std::string::npos) << r.err;
  // The state as written continues.
  std::vector<std::string> more = s.sides();
  more.insert(more.end(), {"--cycles", "1"});
  auto again = RunCli(FollowArgs(s.db, s.db, good, more));
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
}

// A symbolic link in the state directory (state.json, lock, segments or a segment) is refused at
// start, before any connection or cycle; the file it points to is untouched.
TEST(FollowState, SymbolicLinksInTheStateDirectoryAreRefusedAtStart) {
  SmallState s;
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string good = dir.path + "/good";
  s.Make(good);
  const std::string away = "host=/nonexistent-ledgerdiff port=1 user=x dbname=x connect_timeout=1";
  const std::string segment = fs::directory_iterator(good + "/segments")->path().filename().string();
  for (const std::string& entry : std::vector<std::string>{"state.json", "lock", "segments/" + segment}) {
    const std::string state = dir.path + "/case";
    fs::remove_all(state);
    fs::copy(good, state, fs::copy_options::recursive);
    const std::string target = dir.path + "/elsewhere";
    fs::remove(target);
    fs::rename(state + "/" + entry, target);
    fs::create_symlink(target, state + "/" + entry);
    const std::string before = testing::ReadFileBytes(target);
    for (const std::string& side : {away, s.db}) {
      std::vector<std::string> more = s.sides();
      more.insert(more.end(), {"--cycles", "1", "--give-up-after", "0.5"});
      auto r = RunCli(FollowArgs(side, side, state, more));
      EXPECT_EQ(r.exit_code, 2) << entry << ": " << r.out << r.err;
      EXPECT_NE(r.err.find(entry + " is a symbolic link"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("cycle 1"), std::string::npos) << "no cycle ran: " << r.err;
      EXPECT_EQ(testing::ReadFileBytes(target), before) << entry;
      EXPECT_TRUE(fs::is_symlink(state + "/" + entry)) << entry;
    }
  }
}

// --state refuses a non-empty directory that is not a follow state, as --keep-db refuses one that
// is not a cluster: nothing in it is removed, whatever --from says.
TEST(FollowState, AForeignNonEmptyDirectoryIsRefusedAndNothingInItRemoved) {
  SmallState s;
  const testing::ScratchDir dir("ledgerdiff-follow");
  const std::string good = dir.path + "/good";
  s.Make(good);
  std::vector<std::string> more = s.sides();
  more.insert(more.end(), {"--from", "2", "--cycles", "1"});
  // An unrelated segments/notes.txt: in a directory without a state, and in a follow state.
  const std::string foreign = dir.path + "/foreign";
  fs::create_directories(foreign + "/segments");
  testing::WriteFileBytes(foreign + "/segments/notes.txt", "mine\n");
  auto r = RunCli(FollowArgs(s.db, s.db, foreign, more));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("segments/notes.txt is not the follower's"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadFileBytes(foreign + "/segments/notes.txt"), "mine\n");
  EXPECT_FALSE(fs::exists(foreign + "/state.json"));
  testing::WriteFileBytes(good + "/segments/notes.txt", "mine\n");
  auto ours = RunCli(FollowArgs(s.db, s.db, good, more));
  EXPECT_EQ(ours.exit_code, 2) << ours.out << ours.err;
  EXPECT_NE(ours.err.find("segments/notes.txt is not the follower's"), std::string::npos) << ours.err;
  EXPECT_EQ(testing::ReadFileBytes(good + "/segments/notes.txt"), "mine\n");
  fs::remove(good + "/segments/notes.txt");
  // Any other file at the top.
  const std::string top = dir.path + "/top";
  fs::create_directories(top);
  testing::WriteFileBytes(top + "/notes.txt", "mine\n");
  auto t = RunCli(FollowArgs(s.db, s.db, top, more));
  EXPECT_EQ(t.exit_code, 2) << t.out << t.err;
  EXPECT_NE(t.err.find("the directory is not empty and does not hold a follow state (notes.txt"), std::string::npos)
      << t.err;
  EXPECT_EQ(fs::directory_iterator(top)->path().filename(), "notes.txt");
  // An empty directory, and the follower's own, are used.
  fs::create_directories(dir.path + "/empty");
  EXPECT_EQ(RunCli(FollowArgs(s.db, s.db, dir.path + "/empty", more)).exit_code, 0);
  EXPECT_EQ(RunCli(FollowArgs(s.db, s.db, good, more)).exit_code, 0);
}

// A follower that stops without a finding writes --junit, --markdown and --report: at --cycles'
// end, and on SIGTERM (exit 143) with the cycles finished before it.
TEST(FollowReports, StoppingWithoutAFindingWritesTheCiReports) {
  SmallState s;
  const testing::ScratchDir dir("ledgerdiff-follow");
  s.Make(dir.path + "/first");
  auto flags = [&](const std::string& out) {
    std::vector<std::string> more = s.sides();
    more.insert(more.end(), {"--from", "2", "--junit", out + ".xml", "--markdown", out + ".md", "--report", out});
    return more;
  };
  std::vector<std::string> cycles = flags(dir.path + "/cycles");
  cycles.insert(cycles.end(), {"--cycles", "2", "--interval", "0"});
  auto r = RunCli(FollowArgs(s.db, s.db, dir.path + "/s1", cycles));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string junit = testing::ReadFileBytes(dir.path + "/cycles.xml");
  EXPECT_NE(junit.find("testsuite name=\"ledgerdiff.verify-range\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<property name=\"verified through\" value=\"61\"/>"), std::string::npos) << junit;
  EXPECT_NE(junit.find("<property name=\"stopped by\" value=\"--cycles 2 ran\"/>"), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"ledgerdiff.verify-range\" name=\"verified through\"/>"),
            std::string::npos)
      << junit;
  EXPECT_EQ(junit.find("<failure"), std::string::npos) << junit;
  const std::string md = testing::ReadFileBytes(dir.path + "/cycles.md");
  EXPECT_NE(md.find("--cycles 2 ran"), std::string::npos) << md;
  EXPECT_NE(testing::ReadFileBytes(dir.path + "/cycles/index.html").find("verified through"), std::string::npos);
  // SIGTERM after a cycle: the reports of the cycles finished, then exit 143.
  std::vector<std::string> forever = flags(dir.path + "/term");
  forever.insert(forever.end(), {"--interval", "0.2"});
  testing::CliSpawnOptions so;
  so.stderr_path = dir.path + "/term.err";
  const pid_t pid = testing::SpawnCli(FollowArgs(s.db, s.db, dir.path + "/s2", forever), so);
  ASSERT_TRUE(WaitForText(so.stderr_path, "cycle 1: verified through 61")) << testing::ReadFileBytes(so.stderr_path);
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::WaitExitCode(pid), 128 + SIGTERM);
  const std::string term = testing::ReadFileBytes(dir.path + "/term.xml");
  EXPECT_NE(term.find("<property name=\"verified through\" value=\"61\"/>"), std::string::npos)
      << term << testing::ReadFileBytes(so.stderr_path);
  EXPECT_NE(testing::ReadFileBytes(dir.path + "/term.md").find("a termination signal"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir.path + "/term/index.html"));
  EXPECT_NE(testing::ReadFileBytes(so.stderr_path).find("wrote the reports of the"), std::string::npos);
}

}  // namespace
}  // namespace ledgerdiff
