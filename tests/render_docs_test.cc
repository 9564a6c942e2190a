// Progress and ETA on and off a terminal; the target line in every renderer; --metrics parsed by
// prometheus_client; every documented JSON key and metric is an emitted one and back. Part of the
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
// Issue 14: progress off a terminal, ETA from recent work.

TEST(Progress, RecentRateFollowsTheRecentWorkNotThePhaseAverage) {
  RecentRate rate(10);
  rate.Add("digest", 0, 0);
  rate.Add("digest", 20, 100);  // slow start: 5/s
  rate.Add("digest", 25, 600);  // now 100/s
  rate.Add("digest", 30, 1100);
  // The window [20, 30] holds 1000 units in 10 s, not the phase's 1100 in 30 s.
  EXPECT_NEAR(rate.rate(), 100, 1e-9);
  EXPECT_NEAR(rate.Eta(2100), 10, 1e-9);
  rate.Add("diff", 31, 5);  // a new phase starts afresh
  EXPECT_EQ(rate.rate(), 0);
  EXPECT_EQ(rate.Eta(10), -1);
}

// Issue 22: rows per ledger grow along the range (1 row at the first ledger, 100 at the last) and
// the rows go at a constant rate. Halfway through the ledgers three quarters of the rows are
// still to come: counting ledgers, the ETA is less than half the truth; weighing them by rows,
// it is the truth.
TEST(Progress, EtaWeighsLedgersByTheRowsStillToCome) {
  constexpr uint64_t kLedgers = 5000;
  constexpr double kRowsPerS = 10000;
  auto rows_of = [](uint64_t ledger) { return 1 + 99 * (ledger - 1) / (kLedgers - 1); };  // 1-based
  uint64_t rows_total = 0;
  for (uint64_t l = 1; l <= kLedgers; ++l) rows_total += rows_of(l);
  RecentRate rate;  // the reporter's 30 s window
  uint64_t done = 0, rows_done = 0;
  double t_s = 0;
  rate.Add("ingest", t_s, done, rows_done);
  while (done < kLedgers / 2) {  // a report per 25 ledgers, as a job of 25 ledgers commits
    for (int i = 0; i < 25; ++i) rows_done += rows_of(++done);
    t_s = static_cast<double>(rows_done) / kRowsPerS;
    rate.Add("ingest", t_s, done, rows_done);
  }
  const double truly_left_s = static_cast<double>(rows_total - rows_done) / kRowsPerS;
  ASSERT_GT(truly_left_s, 15);  // the phase is young: the window still holds all of it
  const double by_rows = rate.Eta(kLedgers, rows_total);
  const double by_ledgers = rate.Eta(kLedgers);
  EXPECT_NEAR(by_rows, truly_left_s, 0.1 * truly_left_s) << "by ledgers: " << by_ledgers;
  EXPECT_LE(2 * by_ledgers, truly_left_s) << "by rows: " << by_rows;
  EXPECT_GT(by_ledgers, 0);
  // The rate shown stays in ledgers.
  EXPECT_NEAR(rate.rate(), static_cast<double>(done) / t_s, 1e-6);
  EXPECT_NEAR(rate.work_rate(), kRowsPerS, 1e-6);
  // Work that went back (a new count) starts afresh, as units do.
  rate.Add("ingest", t_s + 1, done, rows_done - 1);
  EXPECT_EQ(rate.Eta(kLedgers, rows_total), -1);
}

// Issue 22: a phase that measured no work yet has no work-based ETA; one that knows no work
// total counts units, as before.
TEST(Progress, EtaWithoutWorkCountsUnits) {
  RecentRate rate(10);
  rate.Add("digest", 0, 0, 0);
  rate.Add("digest", 10, 100, 0);  // ledgers went, no rows yet (an empty span)
  EXPECT_EQ(rate.Eta(1000, 5000), -1);
  EXPECT_NEAR(rate.Eta(1000), 90, 1e-9);
  rate.Add("digest", 20, 200, 500);  // 50 rows/s over the window [10, 20]
  EXPECT_NEAR(rate.Eta(1000, 5000), 90, 1e-9);
  rate.Add("digest", 30, 300, 5000);  // all the work done, ledgers left (an empty tail)
  EXPECT_EQ(rate.Eta(1000, 5000), 0);
}

// Issue 14: on a terminal the left and right digests, running at once, get a line each.
TEST(Progress, OnATerminalConcurrentPhasesGetTheirOwnLines) {
  LiveBlock block;
  Progress left, right;
  left.phase = "digest left";
  right.phase = "digest right";
  left.total = right.total = 3000;
  left.done = 375;
  block.Update(left, 684, -1);
  EXPECT_EQ(block.Frame(), "digest left: 375 / 3,000 ledgers (12.5%), 684 ledgers/s\n");
  right.done = 750;
  block.Update(right, 1665, 1.4);
  left.done = 1125;
  block.Update(left, 1928, 1);  // an update of the older phase keeps its line in place
  EXPECT_EQ(block.Frame(),
            "digest left: 1,125 / 3,000 ledgers (37.5%), 1928 ledgers/s, ETA 1.0 s\n"
            "digest right: 750 / 3,000 ledgers (25.0%), 1665 ledgers/s, ETA 1.4 s\n");
  left.done = 3000;
  block.Update(left, 2000, 0);  // done: the line goes, the other side's stays
  EXPECT_EQ(block.Frame(), "digest right: 750 / 3,000 ledgers (25.0%), 1665 ledgers/s, ETA 1.4 s\n");
  Progress ingest;
  ingest.phase = "parallel ingest";
  ingest.total = 500;
  ingest.workers = {"w1 job 1 [2-251]", "w2 job 2 [252-501]"};
  block.Update(ingest, 0, -1);
  EXPECT_EQ(block.Frame(),
            "digest right: 750 / 3,000 ledgers (25.0%), 1665 ledgers/s, ETA 1.4 s\n"
            "parallel ingest: 0 / 500 ledgers (0.0%)\n  w1 job 1 [2-251]\n  w2 job 2 [252-501]\n");
  right.done = 3000;
  ingest.done = 500;
  block.Update(right, 0, -1);
  block.Update(ingest, 0, -1);
  EXPECT_EQ(block.Frame(), "");
}

// What a StderrReporter (terminal or not) writes while `feed` drives it: two phases, "digest
// left" and "digest right", of `total` ledgers each.
std::string ReporterOutput(bool tty, double log_interval_s, uint64_t total,
                           const std::function<void(StderrReporter&, Progress&, Progress&)>& feed) {
  std::FILE* out = std::tmpfile();
  EXPECT_NE(out, nullptr);
  if (!out) return "";
  {
    StderrReporter rep(/*quiet=*/false,
                       tty ? StderrReporter::Display::kLiveBlock : StderrReporter::Display::kLogLines,
                       log_interval_s, out);
    Progress left, right;
    left.phase = "digest left";
    right.phase = "digest right";
    left.total = right.total = total;
    feed(rep, left, right);
  }
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text += static_cast<char>(c);
  std::fclose(out);
  return text;
}

// The reporter draws the block's frames on a terminal, each redraw erasing the previous one.
TEST(Progress, OnATerminalEachFrameErasesThePrevious) {
  const std::string shown = ReporterOutput(true, 10, 100, [](StderrReporter& rep, Progress& left, Progress& right) {
    left.done = 40;
    rep.Update(left);  // first frame: one line
    right.done = 100;
    rep.Update(right);  // a finished phase always redraws: still the left line alone
    left.done = 100;
    rep.Update(left);  // the block empties
  });
  EXPECT_EQ(shown,
            "digest left: 40 / 100 ledgers (40.0%)\n"
            "\x1b[1A\x1b[2K\rdigest left: 40 / 100 ledgers (40.0%)\n"
            "\x1b[1A\x1b[2K\r");
}

// Issue 46: at most one line per interval in all (not one per phase), phases taking turns.
TEST(Progress, OffATerminalOneTimestampedLinePerIntervalPhasesTakingTurns) {
  const std::string log = ReporterOutput(false, 0.2, 5000, [](StderrReporter& rep, Progress& left, Progress& right) {
    rep.Update(left);  // a phase's first line waits an interval: short phases stay out of the log
    rep.Update(right);
    for (uint64_t d = 250; d <= 500; d += 250) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      for (uint64_t step = 0; step < 4; ++step) {
        left.done = right.done = d + step;
        rep.Update(left);  // interleaved phases: one line per interval in all, not one per switch
        rep.Update(right);
      }
    }
  });
  EXPECT_EQ(Count(log, "\n"), 2u) << log;
  // The left phase waited longest for its first line; the right one gets the next interval's,
  // showing its last update.
  EXPECT_NE(log.find("Z digest left: 250 / 5,000 ledgers (5.0%)"), std::string::npos) << log;
  EXPECT_NE(log.find("Z digest right: 253 / 5,000 ledgers (5.1%)"), std::string::npos) << log;
  EXPECT_LT(log.find("digest left"), log.find("digest right")) << log;
  EXPECT_EQ(log[4], '-');  // 2026-11-30T23:40:05Z ...
  EXPECT_EQ(log[10], 'T');
  EXPECT_EQ(log.find('\x1b'), std::string::npos);  // no terminal control off a terminal
  Progress p;
  p.phase = "digest";
  p.done = 300;
  p.total = 1200;
  EXPECT_EQ(FormatProgressLine(p, 100, 9), "digest: 300 / 1,200 ledgers (25.0%), 100 ledgers/s, ETA 9.0 s");
}

// Issue 46: one ETA for the whole command. A phase's own ETA covers what is left of it; a
// phase not begun costs its planned cost at the pace the begun phases went; a phase that reports
// nothing (the clean-up) still counts until the command ends.
Progress PhaseAt(const std::string& phase, uint64_t done, uint64_t total) {
  Progress p;
  p.phase = phase;
  p.done = done;
  p.total = total;
  return p;
}

TEST(Progress, TheCommandEtaCoversThePhasesNotBegun) {
  CommandEta eta({{"serial ingest", {"ingest s"}, 100},
                  {"digests", {"digest left", "digest right"}, 40},
                  {"clean-up", {}, 10}});
  EXPECT_EQ(eta.Estimate(0).eta_s, -1);  // nothing measured: unknown, not zero
  eta.Update(PhaseAt("ingest s", 0, 1000), 0, -1);
  EXPECT_EQ(eta.Estimate(0).eta_s, -1);
  eta.Update(PhaseAt("ingest s", 250, 1000), 20, 60);  // a quarter in 20 s: pace 0.8 s per unit of cost
  CommandEstimate e = eta.Estimate(20);
  EXPECT_NEAR(e.fraction, 25.0 / 150, 1e-9);
  EXPECT_NEAR(e.eta_s, 60 + 40 * 0.8 + 10 * 0.8, 1e-9);  // its own 60 s, then the rest at the pace
  EXPECT_EQ(e.phase, "serial ingest");
  EXPECT_EQ(e.index, 1u);
  EXPECT_EQ(e.count, 3u);
  EXPECT_NEAR(eta.Estimate(30).eta_s, 50 + 40 * 1.2 + 10 * 1.2, 1e-9);  // aged; 30 s for 25 units
  EXPECT_EQ(FormatCommandProgress("verify", e), "verify 17% (serial ingest, phase 1 of 3), ETA 1 min 40 s");

  // The ingest ends at 80 s (pace 0.8 again); the left digest begins at 90 s: its time runs from
  // the ingest's end, its planning included. The right side has not reported: the phase's cost
  // left at the pace, not the left side's own ETA alone.
  eta.Update(PhaseAt("ingest s", 1000, 1000), 80, 0);
  eta.Update(PhaseAt("digest left", 100, 1000), 90, 45);
  e = eta.Estimate(90);
  EXPECT_EQ(e.phase, "digests");
  const double pace = 90.0 / (100 + 40 * 0.05);  // 90 s for the ingest's 100 and the digests' 2
  EXPECT_NEAR(e.eta_s, (1 - 0.05) * 40 * pace + 10 * pace, 1e-9);
  // Both sides report: the later of their own ETAs.
  eta.Update(PhaseAt("digest right", 500, 1000), 92, 8);
  EXPECT_NEAR(eta.Estimate(92).eta_s, (45 - 2) + 10 * (92.0 / (100 + 40 * 0.3)), 1e-9);
  eta.Update(PhaseAt("digest left", 1000, 1000), 100, 0);
  eta.Update(PhaseAt("digest right", 1000, 1000), 101, 0);
  e = eta.Estimate(101);
  EXPECT_NEAR(e.fraction, 140.0 / 150, 1e-9);
  EXPECT_NEAR(e.eta_s, 10 * (101.0 / 140), 1e-9);  // the clean-up, at the whole run's pace
  EXPECT_EQ(e.index, 0u);  // no phase in progress that reports
  // Progress of a phase the plan does not hold is not the command's.
  eta.Update(PhaseAt("baseline digest", 1, 1000), 102, 500);
  EXPECT_NEAR(eta.Estimate(101).eta_s, 10 * (101.0 / 140), 1e-9);
}

TEST(Progress, APhaseNeverSeenWasSkipped) {
  CommandEta eta({{"serial ingest", {"ingest s"}, 100}, {"parallel ingest", {"ingest p"}, 50}});
  eta.Update(PhaseAt("ingest p", 0, 100), 0, -1);  // resumed past the serial side
  eta.Update(PhaseAt("ingest p", 10, 100), 5, -1);
  const CommandEstimate e = eta.Estimate(5);
  EXPECT_NEAR(e.fraction, (100 + 5) / 150.0, 1e-9);
  EXPECT_NEAR(e.eta_s, 45 * (5.0 / 5), 1e-9);  // its 5 units in 5 s; the skipped phase took none
  EXPECT_EQ(e.index, 2u);
}

// A command that repeats work (selftest's cases each digest "digest left" and "digest right"):
// a report belongs to the phase in progress that lists it, else to the next one not begun; a
// repeated final report of an ended phase does not begin the next.
TEST(Progress, RepeatedReportNamesGoToTheirPhaseInTurn) {
  CommandEta eta({{"case 1: digests", {"digest left", "digest right"}, 10},
                  {"case 2: ingest", {"ingest 2"}, 10},
                  {"case 2: digests", {"digest left", "digest right"}, 10}});
  eta.Update(PhaseAt("digest left", 0, 100), 0, -1);
  eta.Update(PhaseAt("digest left", 100, 100), 5, 0);
  eta.Update(PhaseAt("digest right", 100, 100), 10, 0);
  EXPECT_NEAR(eta.Estimate(10).fraction, 1.0 / 3, 1e-9);
  eta.Update(PhaseAt("digest right", 100, 100), 11, 0);  // its last word again
  EXPECT_NEAR(eta.Estimate(11).fraction, 1.0 / 3, 1e-9);
  eta.Update(PhaseAt("ingest 2", 50, 100), 15, 5);
  EXPECT_EQ(eta.Estimate(15).index, 2u);
  eta.Update(PhaseAt("digest left", 0, 100), 20, -1);
  const CommandEstimate e = eta.Estimate(20);
  EXPECT_EQ(e.index, 3u);
  EXPECT_EQ(e.phase, "case 2: digests");
  EXPECT_NEAR(e.fraction, 2.0 / 3, 1e-9);
}

// The update that ends a phase is that phase's last line: between phases the estimate names the
// phase of the update shown (chaos's serial baseline may log only its final update), none without one.
TEST(Progress, APhasesFinalUpdateIsLabelledWithThatPhase) {
  CommandEta eta({{"serial baseline", {"ingest base"}, 10}, {"round 1 of 1", {"ingest r1"}, 10}});
  eta.Update(PhaseAt("ingest base", 0, 40), 0, -1);
  const Progress last = PhaseAt("ingest base", 40, 40);
  eta.Update(last, 1, 0);
  EXPECT_EQ(eta.Estimate(1).index, 0u);  // nothing in progress
  const CommandEstimate e = eta.Estimate(1, &last);
  EXPECT_EQ(e.index, 1u);
  EXPECT_EQ(e.phase, "serial baseline");
  EXPECT_NEAR(e.fraction, 0.5, 1e-9);
  const Progress unplanned = PhaseAt("digest other", 1, 2);
  EXPECT_EQ(eta.Estimate(1, &unplanned).index, 0u);
  eta.Update(PhaseAt("ingest r1", 1, 40), 2, -1);
  EXPECT_EQ(eta.Estimate(2, &last).phase, "round 1 of 1");  // the phase in progress wins
}

// A planned command's log line carries one ETA, the command's; on a terminal the block opens with
// the command's line.
TEST(Progress, APlannedCommandsLinesEndWithTheCommandsEta) {
  const CommandPlan plan{{"digests", {"digest left", "digest right"}, 10}, {"clean-up", {}, 10}};
  const std::string log = ReporterOutput(false, 0.05, 1000, [&](StderrReporter& rep, Progress& left, Progress&) {
    rep.Plan("verify", plan);
    rep.Update(left);
    for (uint64_t d = 100; d <= 400; d += 100) {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      left.done = d;
      rep.Update(left);
    }
  });
  // The right side has not reported: the digests are a fifth done, a tenth of the command.
  EXPECT_NE(log.find("Z digest left: 400 / 1,000 ledgers (40.0%), "), std::string::npos) << log;
  EXPECT_NE(log.find(" ledgers/s; verify 10% (digests, phase 1 of 2), ETA "), std::string::npos) << log;
  EXPECT_EQ(Count(log, "ETA"), Count(log, "\n")) << log;  // one ETA a line, never the phase's too
  const std::string block = ReporterOutput(true, 10, 1000, [&](StderrReporter& rep, Progress& left, Progress&) {
    rep.Plan("verify", plan);
    left.done = 600;
    rep.Update(left);  // its first report: no time spent yet, no pace, no ETA
  });
  EXPECT_EQ(block, "verify 15% (digests, phase 1 of 2)\ndigest left: 600 / 1,000 ledgers (60.0%)\n");
}

// ---------------------------------------------------------------------------------------------
// Issue 14: the JSON keys a README documents are exactly the keys emitted.

// The keys in the first column of the Markdown table under `heading` (each `backticked` name).
std::set<std::string> DocumentedTableKeys(const std::string& readme, const std::string& heading) {
  std::set<std::string> keys;
  const size_t at = readme.find("\n" + heading + "\n");
  EXPECT_NE(at, std::string::npos) << heading;
  if (at == std::string::npos) return keys;
  std::istringstream in(readme.substr(at + heading.size() + 2));
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) break;
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    const std::string first = line.substr(1, line.find('|', 1) - 1);
    for (size_t b = first.find('`'); b != std::string::npos; b = first.find('`', b + 1)) {
      const size_t e = first.find('`', b + 1);
      if (e == std::string::npos) break;
      keys.insert(first.substr(b + 1, e - b - 1));
      b = e;
    }
  }
  return keys;
}

// The `backticked` names of a prose key list (nested keys in parentheses left out), after `lead`.
std::set<std::string> DocumentedProseKeys(const std::string& readme, const std::string& lead) {
  std::set<std::string> keys;
  size_t at = readme.find(lead);
  EXPECT_NE(at, std::string::npos) << lead;
  if (at == std::string::npos) return keys;
  at += lead.size();
  const std::string para = readme.substr(at, readme.find("\n\n", at) - at);
  int depth = 0;
  for (size_t i = 0; i < para.size(); ++i) {
    if (para[i] == '(' || para[i] == '[' || para[i] == '{') ++depth;
    if (para[i] == ')' || para[i] == ']' || para[i] == '}') --depth;
    if (para[i] != '`' || depth) continue;
    const size_t e = para.find('`', i + 1);
    keys.insert(para.substr(i + 1, e - i - 1));
    i = e;
  }
  return keys;
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

// A target with hostile values (the reports escape them).
Target SampleTarget() {
  Target t;
  t.host = "/tmp/<sock>&";
  t.port = "5433";
  t.database = "db \"x\" <b>";
  t.schemas = {"ld_1_serial", "ld_1_parallel"};
  t.embedded = t.removed_on_exit = true;
  return t;
}

// Issue 22: every report names its target; the one Describe, the one ToJson.
TEST(TargetInReports, EveryRendererOfEveryGateShowsIt) {
  const Target t = SampleTarget();
  VerifyReport v = DivergentReport();
  v.target = t;
  EXPECT_EQ(report::VerifyReportToJson(v)["target"], t.ToJson());
  EXPECT_EQ(report::RenderVerifyText(v).rfind(t.Line() + "\n", 0), 0u) << "the first line of the text";
  EXPECT_NE(RenderVerifyJUnit(v).find("<property name=\"target\" value=\"" + XmlEscape(t.Describe()) + "\"/>"),
            std::string::npos);
  EXPECT_NE(RenderVerifyMarkdown(v).find("- target: `" + t.Describe() + "`"), std::string::npos)
      << RenderVerifyMarkdown(v);
  EXPECT_NE(report::RenderVerifyHtml(v).find("<dt>target</dt><dd>" + XmlEscape(t.Describe()) + "</dd>"),
            std::string::npos);
  EXPECT_EQ(report::VerifyGate(v).target, t.Describe());

  // Two sides (verify-range): the gate summary's renderers.
  diff::DiffReport d = DivergentReport().diff;
  d.targets = TargetPair{t, Target::Manifest("base.ldm")};
  EXPECT_EQ(report::DiffReportToJson(d)["target"], d.targets->ToJson());
  EXPECT_EQ(report::RenderDiffText(d).rfind(d.targets->Line() + "\n", 0), 0u);
  const GateSummary g = report::VerifyRangeGate(d);
  EXPECT_EQ(g.target, d.targets->Describe());
  EXPECT_NE(report::RenderGateJUnit(g).find("<property name=\"target\" value=\"" + XmlEscape(g.target) + "\"/>"),
            std::string::npos);
  EXPECT_NE(report::RenderGateMarkdown(g).find("- target: `" + g.target + "`"), std::string::npos);
  EXPECT_NE(report::RenderGateHtml(g).find("<dt>target</dt><dd>" + XmlEscape(g.target) + "</dd>"), std::string::npos);
  // A verify's own diff names no target: the verify names it once.
  EXPECT_FALSE(report::VerifyReportToJson(v)["diff"].contains("target"));

  ChaosReport c = SampleChaos(false);
  c.target = t;
  EXPECT_EQ(report::ChaosGate(c).target, t.Describe());
  EXPECT_EQ(report::RenderChaosText(c).rfind(t.Line(), 0), 0u);
  SelftestReport st;
  st.target = t;
  EXPECT_EQ(report::SelftestGate(st).target, t.Describe());
  EXPECT_EQ(report::SelftestReportToJson(st)["target"], t.ToJson());
  EXPECT_EQ(report::RenderSelftestText(st).rfind(t.Line(), 0), 0u);
  IngestReport in;
  EXPECT_FALSE(report::IngestReportToJson(in).contains("target")) << "a verify's side runs name none";
  in.target = t;
  EXPECT_EQ(report::RenderIngestText(in).rfind(t.Line(), 0), 0u);
}

// ---- --metrics: Prometheus text, parsed by prometheus_client --------------------------------------

// The samples of an exposition text as the reference parser reads them: name{labels} -> value
// (labels sorted, "k=v,..."). Fails the test when the parser refuses the text.
std::map<std::string, double> ParsedSamples(const std::string& text) {
  testing::ScratchDir dir("ledgerdiff-metrics-");
  const std::string file = dir.path + "/m.prom", out = dir.path + "/samples.jsonl";
  testing::WriteFileBytes(file, text);
  const std::string cmd = "/usr/bin/python3 '" + testing::SourceDir() + "/tests/parse_metrics.py' '" + file + "' > '" + out + "'";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(status, 0) << "prometheus_client refused:\n" << text;
  std::map<std::string, double> samples;
  std::istringstream in(testing::ReadFileBytes(out));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    std::string labels;
    for (const auto& [k, v] : j["labels"].items()) labels += (labels.empty() ? "" : ",") + k + "=" + v.get<std::string>();
    samples[j["name"].get<std::string>() + "{" + labels + "}"] = j["value"].get<double>();
  }
  return samples;
}

TEST(Metrics, AComparisonsFiguresParseWithThePrometheusParser) {
  diff::DiffReport d = DivergentReport().diff;  // divergent at ledger 200 of 2:401
  d.coverage.left.last = 401;
  d.coverage.right.last = 390;
  d.coverage.right.missing = {{391, 401}};
  d.coverage.right.missing_ledgers = 11;
  d.coverage.right.missing_ranges = 1;
  d.rows_compared_left = 1234;
  d.rows_compared_right = 1200;
  d.divergent_ledgers = 3;
  std::vector<report::Metric> m = report::GateMetrics("verify-range", "divergent", false, 2.5, 1700000000, "");
  for (auto& one : report::ComparisonMetrics(d)) m.push_back(one);
  const auto samples = ParsedSamples(report::RenderPrometheus(m));
  EXPECT_EQ(samples.at("ledgerdiff_verdict{command=verify-range,verdict=divergent}"), 1);
  EXPECT_EQ(samples.at("ledgerdiff_verified_through_ledger{}"), 199);
  EXPECT_EQ(samples.at("ledgerdiff_head_ledger{side=left}"), 401);
  EXPECT_EQ(samples.at("ledgerdiff_head_ledger{side=right}"), 390);
  EXPECT_EQ(samples.at("ledgerdiff_head_behind_ledgers{side=right}"), 11);
  EXPECT_EQ(samples.at("ledgerdiff_head_behind_ledgers{side=left}"), 0);
  EXPECT_EQ(samples.count("ledgerdiff_lag_ledgers{}"), 0u) << "lag is the follower's, one meaning";
  EXPECT_EQ(samples.at("ledgerdiff_missing_ledgers{side=right}"), 11);
  EXPECT_EQ(samples.at("ledgerdiff_divergent_ledgers{}"), 3);
  EXPECT_EQ(samples.at("ledgerdiff_rows_compared{side=left}"), 1234);
  EXPECT_EQ(samples.at("ledgerdiff_cycle_duration_seconds{}"), 2.5);
  EXPECT_EQ(samples.at("ledgerdiff_last_run_timestamp_seconds{}"), 1700000000);
  EXPECT_EQ(samples.count("ledgerdiff_last_success_timestamp_seconds{}"), 0u) << "no run has passed yet";

  // The first missing ledger stops the verified prefix as a divergence does.
  d.first_divergent_ledger.reset();
  EXPECT_EQ(report::VerifiedThrough(d), 390u);
  d.coverage.right.missing.clear();
  EXPECT_EQ(report::VerifiedThrough(d), 401u);
  d.coverage.left.missing = {{2, 5}};
  EXPECT_EQ(report::VerifiedThrough(d), 1u) << "nothing verified: the range's first - 1";
}

TEST(Metrics, ARunThatDoesNotPassKeepsTheLastSuccessOfThePreviousFile) {
  const std::string passed = report::RenderPrometheus(report::GateMetrics("verify", "identical", true, 1, 1000, ""));
  EXPECT_EQ(report::SampleValue(passed, "ledgerdiff_last_success_timestamp_seconds"), 1000);
  const std::string failed = report::RenderPrometheus(report::GateMetrics("verify", "divergent", false, 1, 2000, passed));
  EXPECT_EQ(report::SampleValue(failed, "ledgerdiff_last_success_timestamp_seconds"), 1000);
  EXPECT_EQ(report::SampleValue(failed, "ledgerdiff_last_run_timestamp_seconds"), 2000);
  EXPECT_EQ(ParsedSamples(failed).at("ledgerdiff_verdict{command=verify,verdict=divergent}"), 1);
  // A label value with a quote, a backslash and a newline survives the round trip.
  const std::string hostile = report::RenderPrometheus({{"ledgerdiff_x", "gauge", "h", {{{{"k", "a\"b\\c\nd"}}, 1}}}});
  EXPECT_EQ(ParsedSamples(hostile).count("ledgerdiff_x{k=a\"b\\c\nd}"), 1u) << hostile;
}

TEST(Metrics, ChaosCountsFaultsByKindDetectorAndVerdict) {
  const auto samples = ParsedSamples(report::RenderPrometheus(report::ChaosMetrics(SampleChaos(false))));
  EXPECT_EQ(samples.at("ledgerdiff_chaos_faults_total{detector=process_exit,kind=kill,verdict=valid}"), 1);
  EXPECT_EQ(samples.at("ledgerdiff_chaos_faults_total{detector=process_exit,kind=kill,verdict=invalid}"), 1);
  EXPECT_EQ(samples.at("ledgerdiff_chaos_faults_total{detector=orchestrator_restart,kind=orchestrator,verdict=valid}"),
            1);
  EXPECT_EQ(samples.at("ledgerdiff_chaos_rounds_total{verdict=invalid}"), 1);
  EXPECT_EQ(samples.at("ledgerdiff_chaos_rounds_total{verdict=valid}"), 1);
}

// The table in report/README.md names every metric any gate writes, with its type.
TEST(Metrics, TheDocumentedMetricsAreTheWrittenOnes) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "report" / "README.md");
  diff::DiffReport d = DivergentReport().diff;
  d.coverage.left.last = d.coverage.right.last = 401;
  std::vector<report::Metric> all = report::GateMetrics("verify", "identical", true, 1, 1, "");
  for (auto& m : report::ComparisonMetrics(d)) all.push_back(m);
  for (auto& m : report::ChaosMetrics(SampleChaos(false))) all.push_back(m);
  verify::FollowCycle cycle;
  cycle.lag_seconds = 12;
  cycle.open.push_back({{40, 44}, verify::kFoundByScrub, SideSet::kRight, {"history_trades"}, 1000, 3});
  cycle.state_followed = true;  // the state comparison's (issue 45)
  cycle.state_last_agreed_ledger = 61;
  cycle.state_last_agreed_at = cycle.state_last_compared_at = 1000;
  for (auto& m : report::FollowMetrics(cycle, {}, 1060)) all.push_back(m);
  verify::StateComparison state;  // a one-shot verify-range's, compared and divergent
  state.compared = true;
  state.verdict = verify::StateVerdict::kDivergent;
  state.ledger_left = state.ledger_right = 61;
  state.differing_rows = 3;
  for (auto& m : report::StateMetrics(state)) all.push_back(m);
  state.verdict = verify::StateVerdict::kIdentical;
  for (auto& m : report::StateMetrics(state)) all.push_back(m);
  std::set<std::string> written;
  for (const auto& m : all) {
    written.insert(m.name);
    EXPECT_NE(readme.find("| `" + m.name + "` | " + m.type + " |"), std::string::npos) << m.name << " " << m.type;
  }
  EXPECT_EQ(DocumentedTableKeys(readme, "## `--metrics FILE`"), written);
}

TEST(DocumentedJson, FollowCycleKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "verify" / "README.md");
  verify::FollowCycle c;
  c.retry = "recovered after 1.0 s of failures";  // every optional key present
  c.reaped = LedgerRange{2, 11};
  c.rechecked = verify::FollowCycle::Recheck{{20, 29}, verify::kFollowRecheckIdentical};
  c.finding = verify::FollowFinding{};
  EXPECT_EQ(DocumentedTableKeys(readme, "### follow cycles"), Keys(report::FollowCycleToJson(c)));
  EXPECT_EQ(Keys(report::FollowCycleToJson(c)["finding"]),
            (std::set<std::string>{"kind", "ledger", "sides", "tables"}));
  EXPECT_EQ(report::RenderFollowCycle(c).find("cycle 0: verified through 0 (nothing new)"), 0u);
}

TEST(DocumentedJson, FollowStatusKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "verify" / "README.md");
  verify::FollowStatus st;
  st.dir = "/var/lib/ledgerdiff/follow";
  st.state.from = 2;
  st.state.compared_through = 61;
  st.state.left = st.state.right = dump::SourceIdentityToJson({"7301", "horizon", "public", 2200});
  EXPECT_EQ(DocumentedTableKeys(readme, "### follow-status"), Keys(report::FollowStatusToJson(st)));
  EXPECT_NE(report::RenderFollowStatusText(st).find("  first ledger 2; compared through 61, verified through 61\n"),
            std::string::npos)
      << report::RenderFollowStatusText(st);
}

TEST(DocumentedJson, VerifyKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "verify" / "README.md");
  VerifyReport r = DivergentReport();  // every optional key present
  r.first_divergent_job = verify::WritingJob{8, 2, "w2", {177, 200}, "last"};
  r.kept_cluster = "/tmp/ld";
  r.remove_command = "rm -rf /tmp/ld";
  r.evidence_gone = "gone";
  r.saved_baseline = "base.ldm";
  r.error = "x";
  r.target = SampleTarget();
  EXPECT_EQ(DocumentedTableKeys(readme, "## `verify --format json`"), Keys(report::VerifyReportToJson(r)));
  // Optional keys come and go; nothing undocumented ever appears.
  for (const auto& k : Keys(report::VerifyReportToJson(IdenticalReport())))
    EXPECT_TRUE(DocumentedTableKeys(readme, "## `verify --format json`").count(k)) << k;
  // divergent_tables holds names; the counts are under diff.divergent_table_counts.
  const auto j = report::VerifyReportToJson(DivergentReport());
  EXPECT_EQ(j["divergent_tables"], nlohmann::json::array({"history_effects"}));
  EXPECT_EQ(j["diff"]["divergent_table_counts"][0]["left_rows"], 31);
}

TEST(DocumentedJson, DiffKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "diff" / "README.md");
  diff::DiffReport d = DivergentReport().diff;
  d.all = true;  // every optional key present
  d.targets = TargetPair{SampleTarget(), Target::Manifest("base.ldm")};
  d.settled_before_ms = 1559579760000;  // a live comparison's windows (verify-range)
  d.unsettled = {{"history_trades_60000", 2, 1}};
  d.missing_tables = {"history_effects"};
  const nlohmann::json j = report::DiffReportToJson(d);
  EXPECT_EQ(j["settled_before"], "2019-06-03T16:36:00.000Z");
  EXPECT_EQ(j["unsettled"][0]["right"], 1);
  EXPECT_EQ(DocumentedProseKeys(readme, "## JSON (`--format json`), stable keys\n"), Keys(report::DiffReportToJson(d)));
}

TEST(DocumentedJson, ChaosKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "verify" / "README.md");
  ChaosReport c = SampleChaos(false);
  c.target = SampleTarget();
  EXPECT_EQ(DocumentedTableKeys(readme, "## `chaos --format json`"), Keys(report::ChaosReportToJson(c)));
}

TEST(DocumentedJson, SweepKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "verify" / "README.md");
  verify::SweepReport r;
  r.options.range = {2, 401};
  r.options.workers = {1, 2};
  r.options.job_sizes = {100};
  verify::SweepCell cell;
  cell.workers = 2;
  cell.job_size = 100;
  cell.verdict = verify::CellVerdict::kIdentical;
  cell.repeats.resize(1);
  r.cells = {cell};
  r.target = SampleTarget();
  const auto j = report::SweepReportToJson(r);
  EXPECT_EQ(DocumentedTableKeys(readme, "## `sweep --format json`"), Keys(j));
  EXPECT_EQ(DocumentedTableKeys(readme, "### sweep cells"), Keys(j["cells"][0]));
}

TEST(DocumentedJson, IngestKeysAreTheEmittedKeys) {
  const std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "ingest" / "README.md");
  IngestReport run = BaseReport().parallel;
  run.ok = false;
  run.error = "x";
  run.restart_range = LedgerRange{2, 401};
  JobRow failed{};
  run.failed_jobs = {failed};
  run.target = SampleTarget();
  EXPECT_EQ(DocumentedProseKeys(readme, "`ingest --format json`:"), Keys(report::IngestReportToJson(run)));
}

}  // namespace
}  // namespace ledgerdiff::verify
