// verify-range --follow, issue 43: a divergence is state, not an event. Found by the scrub, it stays
// open across cycles and restarts (state.json, the cycle line, the metrics verdict and gauges, a
// counter kept in the state) and the shipped LedgerdiffDivergent alert stays firing in a promtool
// test fed the metrics files the run wrote; repaired, the next cycle closes it and the frontier
// moves on. A divergence in new ledgers closes once a later cycle compares them equal.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "follow_harness.h"
#include "harness.h"
#include "horizon_dumps.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::ExecSql;
using testing::FollowArgs;
using testing::Kahuna;
using testing::QueryInt;
using testing::RunCli;
using testing::Samples;

nlohmann::json Cycles(const testing::CliResult& r) { return testing::FollowOutcome(r)["follow"]["cycles"]; }

// The series as the textfile collector of instance vm1 would export it.
std::string WithInstance(const std::string& series) {
  const size_t brace = series.find('{');
  if (brace == std::string::npos) return series + "{instance=\"vm1\"}";
  return series.substr(0, brace + 1) + "instance=\"vm1\"," + series.substr(brace + 1);
}

// A promtool unit test of the shipped alert rules whose input is `minutes`, one metrics file per
// minute: a series missing from a file after it was there is stale (the collector stops exporting
// it), as Prometheus marks it.
std::string PromtoolTest(const std::vector<std::string>& minutes, const std::string& alert_tests) {
  std::map<std::string, std::vector<std::string>> series;
  for (size_t m = 0; m < minutes.size(); ++m)
    for (const auto& [name, value] : Samples(minutes[m])) {
      auto& values = series[WithInstance(name)];
      values.resize(m, "_");
      values.push_back(value);
    }
  std::string yaml = fmt::format("rule_files:\n  - {}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n",
                                 (fs::path(testing::SourceDir()) / "deploy/prometheus/ledgerdiff-alerts.yml").string());
  for (auto& [name, values] : series) {
    bool was = !values.empty() && values.back() != "_";
    for (size_t m = values.size(); m < minutes.size(); ++m) {
      values.push_back(was ? "stale" : "_");
      was = false;
    }
    for (size_t m = 1; m < values.size(); ++m)
      if (values[m] == "_" && values[m - 1] != "_" && values[m - 1] != "stale") values[m] = "stale";
    std::string joined;
    for (const auto& v : values) joined += (joined.empty() ? "" : " ") + v;
    yaml += fmt::format("      - series: '{}'\n        values: \"{}\"\n", name, joined);
  }
  return yaml + "    alert_rule_test:\n" + alert_tests;
}

TEST(FollowDivergence, AScrubFindingStaysOpenAndAlertingAcrossRestartsUntilRepairedThenClosesAndTheFrontierMovesOn) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-div");
  const std::string state = dir.path + "/state", metrics = dir.path + "/m.prom";
  const auto follow = [&](std::vector<std::string> more) {
    more.insert(more.end(), {"--keep-going", "--metrics", metrics, "--cycles", "1"});
    return RunCli(FollowArgs(k.left, k.right, state, more));
  };
  auto first = follow({"--from", std::to_string(k.first), "--scrub-period", "1e9"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  ASSERT_EQ(Cycles(first)[0]["verified_through"], k.last);
  const int64_t planted = QueryInt(
      k.right, fmt::format("SELECT min(ledger_sequence) FROM history_transactions WHERE ledger_sequence > {}", k.first + 5));
  const auto fee = [&](int delta) {
    ExecSql(k.right, fmt::format("UPDATE history_transactions SET fee_charged = fee_charged + ({}) WHERE ledger_sequence = {}",
                                 delta, planted));
  };
  fee(1);

  // Found by the scrub (one cycle scrubs everything), then two quiet cycles, each a restart.
  std::vector<std::string> files;
  auto found = follow({"--scrub-period", "0.001"});
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  auto cycles = Cycles(found);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["finding"]["ledger"], planted);
  files.push_back(testing::ReadFileBytes(metrics));
  for (int restart = 0; restart < 2; ++restart) {
    auto quiet = follow({"--scrub-period", "1e9"});
    EXPECT_EQ(quiet.exit_code, 1) << "an open divergence fails the run: " << quiet.out << quiet.err;
    cycles = Cycles(quiet);
    ASSERT_EQ(cycles.size(), 1u);
    EXPECT_TRUE(cycles[0]["finding"].is_null()) << "not found again: still open";
    ASSERT_EQ(cycles[0]["open_divergences"].size(), 1u) << quiet.out;
    EXPECT_EQ(cycles[0]["open_divergences"][0]["from"], planted);
    EXPECT_EQ(cycles[0]["open_divergences"][0]["how"], "scrub");
    EXPECT_EQ(cycles[0]["open_divergences"][0]["sides"], "right");
    EXPECT_EQ(cycles[0]["verified_through"], planted - 1);
    EXPECT_EQ(cycles[0]["held_back_ledgers"], k.last - planted + 1) << "the lag is the divergence's, not a side's";
    EXPECT_EQ(cycles[0]["backlog_ledgers"], 0);
    EXPECT_EQ(cycles[0]["behind"], (nlohmann::json{{"left", 0}, {"right", 0}}));
    EXPECT_EQ(cycles[0]["divergences_total"], 1) << "the counter is kept in the state, not reset by a restart";
    const std::string m = testing::ReadFileBytes(metrics);
    const auto samples = Samples(m);
    EXPECT_EQ(samples.count("ledgerdiff_verdict{command=\"verify-range\",verdict=\"divergent\"}"), 1u) << m;
    EXPECT_EQ(samples.at("ledgerdiff_open_divergences"), "1") << m;
    EXPECT_EQ(samples.at("ledgerdiff_first_open_divergent_ledger"), std::to_string(planted)) << m;
    EXPECT_EQ(samples.at("ledgerdiff_follow_divergences_found_total"), "1") << m;
    EXPECT_EQ(samples.count("ledgerdiff_oldest_open_divergence_age_seconds"), 1u) << m;
    EXPECT_EQ(samples.at("ledgerdiff_held_back_ledgers"), std::to_string(k.last - planted + 1)) << m;
    EXPECT_EQ(samples.at("ledgerdiff_head_behind_ledgers{side=\"right\"}"), "0") << m;
    EXPECT_EQ(Samples(files.front()).at("ledgerdiff_last_success_timestamp_seconds"),
              samples.at("ledgerdiff_last_success_timestamp_seconds"))
        << "no success while a divergence is open";
    files.push_back(m);
  }
  const auto stored = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  ASSERT_EQ(stored["open_divergences"].size(), 1u) << stored.dump();
  EXPECT_EQ(stored["open_divergences"][0]["from"], planted);
  auto text = follow({"--scrub-period", "1e9", "--format", "text"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.err.find(fmt::format("open: 1 divergence (the first at ledgers {}:", planted)), std::string::npos)
      << text.err;
  EXPECT_NE(text.err.find(fmt::format("[{} held back by a divergence]", k.last - planted + 1)), std::string::npos)
      << text.err;
  EXPECT_NE(text.out.find(fmt::format("1 divergence open (the first at ledgers {}:", planted)), std::string::npos)
      << text.out;

  // follow-status reads the state alone (no database): the open divergence, exit 1.
  auto status = RunCli({"follow-status", "--state", state, "--format", "json"});
  EXPECT_EQ(status.exit_code, 1) << status.out << status.err;
  const auto sj = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_FALSE(sj.is_discarded()) << status.out << status.err;
  EXPECT_EQ(sj["first"], k.first);
  EXPECT_EQ(sj["compared_through"], k.last);
  EXPECT_EQ(sj["verified_through"], planted - 1);
  ASSERT_EQ(sj["open_divergences"].size(), 1u);
  EXPECT_EQ(sj["open_divergences"][0]["from"], planted);
  EXPECT_EQ(sj["divergences_total"], 1);
  EXPECT_EQ(sj["lock_holder_running"], false) << "the follower that wrote the lock line has exited";
  auto status_text = RunCli({"follow-status", "--state", state});
  EXPECT_EQ(status_text.exit_code, 1);
  EXPECT_NE(status_text.out.find(fmt::format("  open divergences: 1\n    ledgers {}:", planted)), std::string::npos)
      << status_text.out;
  EXPECT_NE(status_text.out.find("(scrub, right side; history_transactions), found 20"), std::string::npos)
      << status_text.out;
  EXPECT_NE(status_text.out.find(fmt::format("verified through {}", planted - 1)), std::string::npos) << status_text.out;

  // Repaired: the next cycle compares the open divergence's ledgers again and closes it.
  fee(-1);
  auto repaired = follow({"--scrub-period", "1e9"});
  EXPECT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;
  cycles = Cycles(repaired);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_TRUE(cycles[0]["open_divergences"].empty()) << repaired.out;
  ASSERT_EQ(cycles[0]["closed_divergences"].size(), 1u) << repaired.out;
  EXPECT_EQ(cycles[0]["closed_divergences"][0]["from"], planted);
  EXPECT_EQ(cycles[0]["verified_through"], k.last) << "the frontier moves on";
  const std::string after = testing::ReadFileBytes(metrics);
  EXPECT_EQ(Samples(after).count("ledgerdiff_verdict{command=\"verify-range\",verdict=\"identical\"}"), 1u) << after;
  EXPECT_EQ(Samples(after).at("ledgerdiff_open_divergences"), "0") << after;
  EXPECT_EQ(Samples(after).at("ledgerdiff_follow_divergences_found_total"), "1") << after;
  status = RunCli({"follow-status", "--state", state});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("  open divergences: none\n"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find(fmt::format("ledgers {}:", planted)), std::string::npos) << "the closed one: " << status.out;
  // Not a state directory: bad input, one line.
  auto foreign = RunCli({"follow-status", "--state", dir.path});
  EXPECT_EQ(foreign.exit_code, 2) << foreign.out << foreign.err;
  EXPECT_NE(foreign.err.find("is not the follower's"), std::string::npos) << foreign.err;

  // The alert: firing from the finding, still at minute 11 (the last open file exported on), and
  // silent once the file says the divergence is closed (minute 12 on).
  std::vector<std::string> minutes = files;
  while (minutes.size() < 12) minutes.push_back(files.back());
  for (int i = 0; i < 3; ++i) minutes.push_back(after);
  const std::string firing =
      "        exp_alerts:\n"
      "          - exp_labels: {severity: critical, instance: vm1, command: verify-range}\n"
      "            exp_annotations:\n"
      "              summary: \"ledgerdiff verify-range on vm1: the histories differ\"\n"
      "              description: >-\n"
      "                The last verify-range found divergent ledgers; its report names the first one\n"
      "                and its rows, and prints the verify-range command that looks again.\n";
  const std::string tests = "      - eval_time: 2m\n        alertname: LedgerdiffDivergent\n" + firing +
                            "      - eval_time: 11m\n        alertname: LedgerdiffDivergent\n" + firing +
                            "      - eval_time: 13m\n        alertname: LedgerdiffDivergent\n        exp_alerts: []\n";
  const std::string test_file = dir.path + "/alerts.test.yml", log = dir.path + "/promtool.log";
  testing::WriteFileBytes(test_file, PromtoolTest(minutes, tests));
  const int rc = std::system(fmt::format("promtool test rules '{}' > '{}' 2>&1", test_file, log).c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0)
      << testing::ReadFileBytes(log) << "\n" << testing::ReadFileBytes(test_file);
}

// Without --keep-going a divergence in new ledgers stops the follower and is not recorded; it
// stays open (the restart's verdict says so until then) and closes when a later cycle compares
// those ledgers equal.
TEST(FollowDivergence, ADivergenceInNewLedgersClosesWhenALaterCycleComparesThemEqual) {
  Kahuna k;
  const testing::ScratchDir dir("ledgerdiff-follow-div");
  const std::string state = dir.path + "/state";
  const int64_t planted = QueryInt(
      k.right, fmt::format("SELECT min(ledger_sequence) FROM history_transactions WHERE ledger_sequence > {}", k.first + 5));
  ExecSql(k.right, fmt::format("UPDATE history_transactions SET fee_charged = fee_charged + 1 WHERE ledger_sequence = {}",
                               planted));
  auto found = RunCli(FollowArgs(k.left, k.right, state, {"--from", std::to_string(k.first), "--cycles", "1"}));
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  auto cycles = Cycles(found);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["finding"]["kind"], "divergent");
  ASSERT_EQ(cycles[0]["open_divergences"].size(), 1u);
  EXPECT_EQ(cycles[0]["open_divergences"][0]["how"], "new-ledgers");
  EXPECT_EQ(cycles[0]["open_divergences"][0]["from"], planted);

  ExecSql(k.right, fmt::format("UPDATE history_transactions SET fee_charged = fee_charged - 1 WHERE ledger_sequence = {}",
                               planted));
  auto fixed = RunCli(FollowArgs(k.left, k.right, state, {"--cycles", "1"}));
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  cycles = Cycles(fixed);
  ASSERT_EQ(cycles.size(), 1u);
  EXPECT_EQ(cycles[0]["verified_through"], k.last);
  EXPECT_TRUE(cycles[0]["open_divergences"].empty()) << fixed.out;
  ASSERT_EQ(cycles[0]["closed_divergences"].size(), 1u) << fixed.out;
  EXPECT_EQ(cycles[0]["closed_divergences"][0]["how"], "new-ledgers");
  const auto stored = nlohmann::json::parse(testing::ReadFileBytes(state + "/state.json"));
  EXPECT_TRUE(stored["open_divergences"].empty());
  ASSERT_EQ(stored["closed_divergences"].size(), 1u);
  EXPECT_EQ(stored["divergences"], 1);
}

}  // namespace
}  // namespace ledgerdiff
