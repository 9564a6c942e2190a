// The gates' reports through the report sink (issue 14, core/report.h, report/gate.h): chaos's
// text, JUnit, Markdown and HTML naming the failing round, its detectors and its replay; counts
// and nouns; selftest and verify-range checks; GitHub annotations; the sink's files. Part of the
// render_test binary (samples: tests/render_samples.h).
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/chaos_text_json.h"
#include "report/gate.h"
#include "report/html.h"
#include "report/ingest_text_json.h"
#include "report/sweep.h"
#include "report/junit.h"
#include "report/markdown.h"
#include "report/metrics.h"
#include "report/selftest_text_json.h"
#include "report/svg_chart.h"
#include "report/verify_text_json.h"
#include "dump/source_identity.h"
#include "tests/harness.h"
#include "tests/render_samples.h"
#include "verify/verify.h"
#include "report/diff_text_json.h"

namespace ledgerdiff::verify {
namespace {

using namespace render_samples;

// ---------------------------------------------------------------------------------------------
// Issue 14: every gate speaks CI through the report sink (core/report.h, report/gate.h).

// Issue 22: chaos's text is plain words (no EDN map), and each anomalous ledger is listed once,
// under its round; the verdict gives the counts.
TEST(TextOutput, ChaosTextIsPlainWordsAndListsEachAnomalousLedgerOnce) {
  verify::ChaosReport r = SampleChaos(false);
  r.anomalies[verify::AnomalyClass::kDuplicated] = {{401, 500}};
  r.planned = {{verify::FaultKind::kKill, 1}, {verify::FaultKind::kOrchestrator, 1}};
  r.injected = {{verify::FaultKind::kKill, 1}, {verify::FaultKind::kOrchestrator, 1}};
  r.detectors = {{ingest::Detector::kProcessExit, 2}, {ingest::Detector::kOrchestratorRestart, 2}};
  const std::string text = report::RenderChaosText(r);
  EXPECT_EQ(text.find("{:"), std::string::npos) << text;
  EXPECT_EQ(text.find(":valid?"), std::string::npos) << text;
  EXPECT_EQ(text.find(" :"), std::string::npos) << text;
  EXPECT_EQ(Count(text, "401-500"), 1u) << text;
  EXPECT_NE(text.find("\nverdict: INVALID\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  faults fired: kill 1 of 1, orchestrator 1 of 1"), std::string::npos) << text;
  EXPECT_NE(text.find("  anomalies: 100 ledgers duplicated (listed under their rounds above)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  jobs: 0 retried, 0 recovered\n"), std::string::npos) << text;
  EXPECT_NE(text.find("chaos 2:3001 (3,000 ledgers), 4 workers, jobs of 100 ledgers, seed 7, 2 rounds"),
            std::string::npos)
      << text;
  EXPECT_NE(report::RenderChaosText(SampleChaos(true)).find("  anomalies: none\n"), std::string::npos);
}

TEST(GateReports, ChaosJUnitMarkdownHtmlNameTheFailingRoundAndTheReplay) {
  const verify::ChaosReport r = SampleChaos(false);
  const GateSummary s = report::ChaosGate(r);
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.verdict, "invalid");
  const std::string x = report::RenderGateJUnit(s);
  EXPECT_EQ(CheckWellFormed(x), "") << x;
  EXPECT_NE(x.find("<testcase classname=\"ledgerdiff.chaos\" name=\"round 2\">"), std::string::npos) << x;
  EXPECT_NE(x.find("anomalies: duplicated ledgers 401-500"), std::string::npos) << x;
  EXPECT_EQ(Count(x, "<failure "), 1u);
  EXPECT_NE(x.find("replay: ledgerdiff chaos --range 2:3001"), std::string::npos);
  const std::string md = report::RenderGateMarkdown(s);
  EXPECT_NE(md.find("ledgerdiff chaos: invalid"), std::string::npos) << md;
  // Failing checks come first in the table.
  EXPECT_LT(md.find("round 2"), md.find("round 1")) << md;
  EXPECT_NE(md.find("```sh\nledgerdiff chaos --range 2:3001"), std::string::npos) << md;
  const std::string h = report::RenderGateHtml(s, report::ChaosTimelineHtml(r));
  EXPECT_EQ(CheckWellFormed(h.substr(h.find("<html"))), "");
  EXPECT_NE(h.find("Rounds &#215; faults"), std::string::npos);
  EXPECT_NE(h.find("killed the orchestrator after 25 jobs done"), std::string::npos);
  EXPECT_NE(h.find("<td>invalid</td>"), std::string::npos) << h;
  EXPECT_TRUE(report::ChaosGate(SampleChaos(true)).passed);
}

// Issue 25: every format names the detector that caught each fault, counts them per round and in
// all, and says why a fault caught by another detector does not count.
// The gate pages beside SampleReportForBrowser's verify pages (into
// $LEDGERDIFF_RENDER_SAMPLE_DIR for tests/report_browser_test.sh, else a temporary directory):
// verify-range, selftest and chaos (a failing one of each, so every section shows).
TEST(GateReports, SamplePagesForBrowser) {
  const char* env = std::getenv("LEDGERDIFF_RENDER_SAMPLE_DIR");
  TempDir scratch("gate-sample");
  const fs::path dir = env && *env ? fs::path(env) : scratch.path();
  verify::SelftestReport st;
  st.range = {2, 2001};
  st.cases = {{"clean", 0, std::nullopt, {}, true, 1, ""},
              {"skip-ledger", 150, 150, {"history_ledgers"}, true, 1, ""},
              {"boundary-gap", 251, 252, {"history_ledgers"}, false, 1, ""}};
  // The renderings refer to their reports: keep these alive while they render.
  const VerifyReport verify_range = DivergentReport();
  const verify::ChaosReport chaos = SampleChaos(false);
  const std::vector<std::pair<std::string, GateReports>> pages = {
      {"verify-range", report::VerifyRangeReports(verify_range.diff)},
      {"selftest", report::SelftestReports(st)},
      {"chaos", report::ChaosReports(chaos)}};
  for (const auto& [name, g] : pages) {
    ASSERT_TRUE(g.html((dir / name).string()).ok()) << name;
    EXPECT_GT(fs::file_size(dir / name / "index.html"), 1000u) << name;
  }
}

TEST(GateReports, ChaosNamesTheDetectorOfEveryFaultAndWhyOneDoesNotCount) {
  verify::ChaosReport r = SampleChaos(true);
  verify::RoundFault hang;
  hang.plan = {verify::FaultKind::kHang, 7, "history_effects", 0};
  hang.performed = true;
  hang.detector = ingest::Detector::kOrchestratorRestart;
  hang.detail = "SIGSTOP worker w3 (pid 9) during job 7 attempt 1";
  hang.not_counted =
      "caught by orchestrator_restart instead of heartbeat_timeout: a hang fault exists to prove "
      "heartbeat_timeout, which never saw it";
  r.rounds[1].faults.push_back(hang);
  r.rounds[1].detectors[ingest::Detector::kOrchestratorRestart] = 2;
  r.rounds[1].valid = false;
  r.rounds[1].inconclusive = true;
  r.valid = false;
  r.inconclusive = true;
  r.detectors = {{ingest::Detector::kProcessExit, 2}, {ingest::Detector::kOrchestratorRestart, 3}};

  const std::string text = report::RenderChaosText(r);
  EXPECT_NE(text.find("kill job 4 after mid-job [process_exit]"), std::string::npos) << text;
  EXPECT_NE(text.find("[NOT COUNTED: caught by orchestrator_restart, not heartbeat_timeout]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("hang not counted: caught by orchestrator_restart instead of heartbeat_timeout"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("caught by: process_exit 1, orchestrator_restart 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  caught by: process_exit 2, orchestrator_restart 3\n"), std::string::npos) << text;

  const auto j = report::ChaosReportToJson(r);
  EXPECT_EQ(j["detectors"]["process_exit"], 2);
  EXPECT_EQ(j["detectors"]["heartbeat_timeout"], 0);
  EXPECT_EQ(j["rounds"][1]["detectors"]["orchestrator_restart"], 2);
  const auto& kill = j["rounds"][0]["faults"][0];
  EXPECT_EQ(kill["detector"], "process_exit");
  EXPECT_EQ(kill["expected_detector"], "process_exit");
  EXPECT_TRUE(kill["not_counted"].is_null());
  const auto& frozen = j["rounds"][1]["faults"][2];
  EXPECT_EQ(frozen["detector"], "orchestrator_restart");
  EXPECT_EQ(frozen["expected_detector"], "heartbeat_timeout");
  EXPECT_FALSE(frozen["injected"].get<bool>());
  EXPECT_TRUE(frozen["performed"].get<bool>());
  EXPECT_EQ(frozen["not_counted"], hang.not_counted);

  const GateSummary g = report::ChaosGate(r);
  EXPECT_EQ(g.verdict, "unknown");
  EXPECT_NE(g.checks[1].message.find("caught by another detector"), std::string::npos) << g.checks[1].message;
  EXPECT_NE(g.checks[1].detail.find("NOT COUNTED: caught by orchestrator_restart instead of heartbeat_timeout"),
            std::string::npos)
      << g.checks[1].detail;
  const std::string h = report::RenderGateHtml(g, report::ChaosTimelineHtml(r));
  EXPECT_EQ(CheckWellFormed(h.substr(h.find("<html"))), "");
  EXPECT_NE(h.find("<th>caught by</th>"), std::string::npos);
  EXPECT_NE(h.find("caught by <b>process_exit</b>"), std::string::npos);
  EXPECT_NE(h.find("<b>not counted</b>: caught by orchestrator_restart instead of heartbeat_timeout"),
            std::string::npos);
  EXPECT_NE(h.find("<td>all</td>"), std::string::npos);
  EXPECT_NE(h.find("<div>orchestrator_restart 3</div>"), std::string::npos) << h;
}

// Issue 22: one number formatter in every text renderer: counts with thousands separators, the
// noun singular for 1 ("1 worker", never "1 workers"; "1,000 ledgers", never "1000 ledgers").
// One divergent ledger, one ledger missing, one row at one ledger without its header row: the
// gate's checks (so JUnit, Markdown and the GitHub annotations) and the text say each in the
// singular ("1 rows at 1 ledgers", "1 divergent ledgers: 30", "1 ledgers missing: 30" before).
TEST(GateReports, OneOfEachIsSingularInEveryFormat) {
  VerifyReport v = DivergentReport();
  v.diff.divergent_ledgers = 1;
  v.diff.divergent_sample = {30};
  v.diff.coverage.left.missing = {{30, 30}};
  v.diff.coverage.left.missing_ledgers = 1;
  v.diff.coverage.left.missing_ranges = 1;
  v.diff.coverage.left.held = 399;
  v.diff.coverage.right.orphans.push_back({"history_effects", 1, 1, {{30, 30}}});
  const GateSummary g = report::VerifyRangeGate(v.diff);
  std::string joined;
  for (const auto& c : g.checks) joined += c.message + "\n";
  std::string annotations;
  for (const auto& line : GithubAnnotations(g)) annotations += line + "\n";
  const std::vector<std::string> outputs = {joined, report::RenderGateJUnit(g), report::RenderGateMarkdown(g),
                                            annotations};
  // "1 ledgers" alone, not the end of "401 ledgers".
  auto has_wrong = [](const std::string& out, const std::string& wrong) {
    for (size_t at = out.find(wrong); at != std::string::npos; at = out.find(wrong, at + 1))
      if (at == 0 || !(std::isdigit(static_cast<unsigned char>(out[at - 1])) || out[at - 1] == ',')) return true;
    return false;
  };
  for (const std::string& out : outputs) {
    EXPECT_NE(out.find("1 divergent ledger: 30"), std::string::npos) << out;
    EXPECT_NE(out.find("1 ledger missing: 30"), std::string::npos) << out;
    EXPECT_NE(out.find("1 row at 1 ledger without a "), std::string::npos) << out;  // Markdown escapes the _
    for (const char* wrong : {"1 divergent ledgers", "1 ledgers", "1 rows"})
      EXPECT_FALSE(has_wrong(out, wrong)) << wrong << " in " << out;
  }
  const std::string text = report::RenderDiffText(v.diff);
  EXPECT_NE(text.find("1 row at 1 ledger without a history_ledgers row"), std::string::npos) << text;
  EXPECT_FALSE(has_wrong(text, "1 rows")) << text;
}

TEST(TextOutput, CountsAreGroupedAndNounsAgreeWithTheirNumber) {
  IngestReport run = SampleRun("ld_x", 1, {Attempt(1, 1, "w1", 0, 1, "done", "", {2, 1001})}, 2);
  run.range = {2, 1001};
  run.ledgers = 1000;
  run.jobs = 1;
  run.job_size = 1000;
  run.workers_replaced = 1;
  run.retried_jobs = 1;
  const std::string ingest = report::RenderIngestText(run);
  EXPECT_NE(ingest.find("ingested 1,000 ledgers (2:1001) into \"ld_x\" with 1 worker, 1 job of up to 1,000 ledgers"),
            std::string::npos)
      << ingest;
  EXPECT_NE(ingest.find("1 attempt, 1 job retried, 1 worker replaced"), std::string::npos) << ingest;
  VerifyReport v = IdenticalReport();
  v.range = {2, 1501};
  v.workers = 1;
  v.job_size = 1;
  const std::string verify = report::RenderVerifyText(v);
  EXPECT_NE(verify.find("(1,500 ledgers), 1 worker, jobs of 1 ledger\n"), std::string::npos) << verify;
  for (const std::string& text : {ingest, verify}) {
    EXPECT_EQ(text.find("1 workers"), std::string::npos) << text;
    EXPECT_EQ(text.find("1000 ledgers"), std::string::npos) << text;
    EXPECT_EQ(text.find("1500 ledgers"), std::string::npos) << text;
  }
}

// Issue 22: the clean run injects no bug, so it is not "caught": every format says it was
// identical, as expected, and says so in the same words.
TEST(GateReports, SelftestCleanRowSaysNoBugInjectedIdenticalAsExpected) {
  verify::SelftestReport st;
  st.range = {2, 2001};
  st.cases = {{"clean", 0, std::nullopt, {}, true, 1, ""}, {"skip-ledger", 150, 150, {"history_ledgers"}, true, 1, ""}};
  const std::string text = report::RenderSelftestText(st);
  std::string clean_line;
  for (std::istringstream in(text); std::getline(in, clean_line);)
    if (clean_line.find("clean") != std::string::npos) break;
  EXPECT_NE(clean_line.find("no bug injected: identical, as expected"), std::string::npos) << text;
  EXPECT_EQ(clean_line.find("yes"), std::string::npos) << text;
  EXPECT_NE(text.find("skip-ledger"), std::string::npos);
  const auto j = report::SelftestReportToJson(st);
  EXPECT_EQ(j["cases"][0]["outcome"], "no bug injected: identical, as expected") << j.dump();
  EXPECT_FALSE(j["cases"][0]["bug_injected"].get<bool>());
  EXPECT_EQ(j["cases"][1]["outcome"], "caught at ledger 150") << j.dump();
  EXPECT_TRUE(j["cases"][1]["bug_injected"].get<bool>());
  const GateSummary g = report::SelftestGate(st);
  EXPECT_EQ(g.checks[0].message, "no bug injected: identical, as expected");
  const std::string md = report::RenderGateMarkdown(g);
  EXPECT_NE(md.find("no bug injected: identical, as expected"), std::string::npos) << md;
  EXPECT_NE(report::RenderGateJUnit(g).find("no bug injected: identical, as expected"), std::string::npos);

  // A clean run that diverged says so instead.
  st.cases[0].caught = false;
  st.cases[0].reported = 77;
  EXPECT_NE(report::RenderSelftestText(st).find("no bug injected, yet DIVERGENT at ledger 77 (expected identical)"),
            std::string::npos)
      << report::RenderSelftestText(st);
  EXPECT_EQ(report::SelftestGate(st).checks[0].state, GateCheck::State::kFail);
}

TEST(GateReports, SelftestAndVerifyRangeChecks) {
  verify::SelftestReport st;
  st.range = {2, 2001};
  st.cases = {{"clean", 0, std::nullopt, {}, true, 1, ""},
              {"skip-ledger", 150, 150, {"history_ledgers"}, true, 1, ""},
              {"boundary-gap", 251, 252, {"history_ledgers"}, false, 1, ""}};
  const GateSummary s = report::SelftestGate(st);
  EXPECT_FALSE(s.passed);
  const std::string x = report::RenderGateJUnit(s);
  EXPECT_NE(x.find("tests=\"3\" failures=\"1\" errors=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("boundary-gap injected at ledger 251 but reported at ledger 252"), std::string::npos) << x;

  VerifyReport v = DivergentReport();
  const GateSummary d = report::VerifyRangeGate(v.diff);
  EXPECT_EQ(d.command, "verify-range");
  EXPECT_FALSE(d.passed);
  ASSERT_FALSE(d.checks.empty());
  const auto failing = std::find_if(d.checks.begin(), d.checks.end(),
                                    [](const GateCheck& c) { return c.state == GateCheck::State::kFail; });
  ASSERT_NE(failing, d.checks.end());
  EXPECT_EQ(failing->name, "history_effects");
  EXPECT_NE(failing->message.find("first divergent ledger 200; left 12,044 rows, right 12,043 rows"), std::string::npos)
      << failing->message;
  EXPECT_NE(failing->detail.find("only left"), std::string::npos) << failing->detail;
  EXPECT_TRUE(report::VerifyRangeGate(IdenticalReport().diff).passed);
}

TEST(GateReports, GithubAnnotationsNameTableLedgerJobAndNextStepAndCannotBeBrokenByData) {
  VerifyReport r = DivergentReport();
  r.first_divergent_job = verify::WritingJob{8, 2, "w2.1", {177, 200}, "last"};
  const auto lines = GithubAnnotations(report::VerifyGate(r));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("::error title=ledgerdiff verify%3A history_effects::history_effects: first divergent "
                           "ledger 200",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[0].find("job 8 (ledgers 177:200, attempt 2, worker w2.1)"), std::string::npos);
  EXPECT_NE(lines.back().find("::notice title=ledgerdiff verify%3A look again::ledgerdiff diff --keep-db"),
            std::string::npos)
      << lines.back();
  GateSummary hostile;
  hostile.command = "chaos";
  hostile.checks = {{"a:b,c", GateCheck::State::kFail, "line1\nline2 100%\r", ""},
                    {"w", GateCheck::State::kWarning, "careful", ""},
                    {"ok", GateCheck::State::kPass, "fine", ""}};
  const auto h = GithubAnnotations(hostile);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0], "::error title=ledgerdiff chaos%3A a%3Ab%2Cc::line1%0Aline2 100%25%0D");
  EXPECT_EQ(h[1], "::warning title=ledgerdiff chaos%3A w::careful");
  // A failed gate with no failing check still fails visibly; a passed one says nothing.
  GateSummary bare;
  bare.command = "sweep";
  bare.verdict = "divergent or failed cells";
  EXPECT_EQ(GithubAnnotations(bare), std::vector<std::string>{"::error title=ledgerdiff sweep::verdict divergent or failed cells"});
  bare.passed = true;
  EXPECT_TRUE(GithubAnnotations(bare).empty());
}

TEST(GateReports, SinkWritesFilesAnnotatesAndAppendsTheStepSummary) {
  TempDir dir("sink");
  fs::create_directories(dir.path());
  const verify::ChaosReport r = SampleChaos(false);
  const GateReports g = report::ChaosReports(r);
  const fs::path summary = dir.path() / "step_summary.md";
  { std::ofstream(summary) << "earlier step\n"; }
  ReportFiles files{(dir.path() / "chaos.xml").string(), (dir.path() / "chaos.md").string(),
                    (dir.path() / "html").string(), ""};
  CiEnvironment ci;
  ci.github_annotations = true;
  ci.step_summary = summary.string();
  std::FILE* annotations = std::tmpfile();
  ASSERT_NE(annotations, nullptr);
  Status st = EmitGateReports(g, files, ci, annotations);
  ASSERT_TRUE(st.ok()) << st.message();
  std::rewind(annotations);
  std::string printed;
  for (int c; (c = std::fgetc(annotations)) != EOF;) printed += static_cast<char>(c);
  std::fclose(annotations);
  EXPECT_NE(printed.find("::error title=ledgerdiff chaos%3A round 2::anomalies: duplicated ledgers 401-500"),
            std::string::npos)
      << printed;
  EXPECT_EQ(testing::ReadFileBytes(dir.path() / "chaos.xml"), report::RenderGateJUnit(g.summary));
  const std::string md = testing::ReadFileBytes(dir.path() / "chaos.md");
  EXPECT_EQ(testing::ReadFileBytes(summary), "earlier step\n" + md + "\n");
  EXPECT_NE(testing::ReadFileBytes(dir.path() / "html" / "index.html").find("Rounds &#215; faults"), std::string::npos);
  // Outside CI: files only.
  std::FILE* quiet = std::tmpfile();
  ASSERT_TRUE(EmitGateReports(g, ReportFiles{}, CiEnvironment{}, quiet).ok());
  EXPECT_EQ(std::ftell(quiet), 0);
  std::fclose(quiet);
  // An unwritable file is a usage error naming it.
  Status bad = EmitGateReports(g, ReportFiles{"/nonexistent-dir/x.xml", "", "", ""}, CiEnvironment{}, stderr);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent-dir/x.xml"), std::string::npos);
}

}  // namespace
}  // namespace ledgerdiff::verify
