// JUnit, Markdown and HTML reports of verify (report/), from hand-built reports:
// identical, divergent (with hostile values), error, baseline, zero-attempt and huge runs.
//
// LEDGERDIFF_RENDER_SAMPLE_DIR=DIR makes SampleReportForBrowser write the divergent sample
// report to DIR/index.html (ci/check_report_browser.sh screenshots it when no CLI report exists).

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

VerifyReport ErrorReport() {
  VerifyReport r = BaseReport();
  r.identical = false;
  r.diff = {};
  r.phases.pop_back();
  r.error = "parallel ingest failed: job 9 [202:226] failed after 4 attempts: <deadlock> & more";
  r.parallel.ok = false;
  JobRow failed{};
  failed.job_id = 9;
  failed.range = {202, 226};
  failed.state = ingest::JobState::kFailed;
  failed.attempt = 4;
  failed.worker = "w3";
  failed.error = "deadlock detected";
  r.parallel.failed_jobs = {failed};
  r.parallel.restart_range = LedgerRange{202, 401};
  r.schemas_kept = true;
  return r;
}

// 8 workers, 5,000 jobs of 100 ledgers, a few failures and their retries.
VerifyReport HugeReport() {
  VerifyReport r = IdenticalReport();
  r.range = {2, 500001};
  r.job_size = 100;
  r.workers = 8;
  r.parallel.timeline.clear();
  uint32_t job = 0;
  for (int lane = 1; lane <= 8; ++lane) {
    double t = 0;
    for (int k = 0; k < 625; ++k, t += 0.08) {
      ++job;
      Ledger from = 2 + (job - 1) * 100;
      bool fail = job % 97 == 0;
      r.parallel.timeline.push_back(Attempt(job, 1, "w" + std::to_string(lane), t, t + 0.075,
                                            fail ? "failed" : "done", fail ? "boom" : "", {from, from + 99}));
      if (fail) {
        t += 0.08;
        r.parallel.timeline.push_back(
            Attempt(job, 2, "w" + std::to_string(lane), t, t + 0.075, "done", "", {from, from + 99}));
      }
    }
  }
  r.parallel.wall_s = 52;
  return r;
}

// ---------------------------------------------------------------------------------------------
// JUnit

TEST(RenderJUnit, IdenticalHasOnePassingCasePerTable) {
  std::string x = RenderVerifyJUnit(IdenticalReport());
  EXPECT_EQ(CheckWellFormed(x), "");
  EXPECT_NE(x.find("<testsuites "), std::string::npos);
  EXPECT_NE(x.find("<testsuite name=\"ledgerdiff verify 2:401\" tests=\"6\" failures=\"0\" errors=\"0\""),
            std::string::npos)
      << x;
  EXPECT_EQ(Count(x, "<testcase classname=\"ledgerdiff.verify\" name=\""), 6u);
  EXPECT_NE(x.find("name=\"history_effects\"/>"), std::string::npos);
  EXPECT_EQ(Count(x, "<failure"), 0u);
  EXPECT_EQ(Count(x, "<error"), 0u);
  for (const char* p : {"run_id\" value=\"r7f3\"", "workers\" value=\"3\"", "job_size\" value=\"25\"",
                        "schemas\" value=\"ld_r7f3_serial ld_r7f3_parallel\"", "name=\"bug\""})
    EXPECT_NE(x.find(p), std::string::npos) << p;
}

TEST(RenderJUnit, DivergentTableFailsWithLedgerCountsAndEscapedRows) {
  std::string x = RenderVerifyJUnit(DivergentReport());
  EXPECT_EQ(CheckWellFormed(x), "");
  EXPECT_NE(x.find("tests=\"6\" failures=\"1\" errors=\"0\""), std::string::npos);
  EXPECT_EQ(Count(x, "<failure "), 1u);
  EXPECT_NE(x.find("<failure message=\"history_effects: first divergent ledger 200; serial 12,044 rows, parallel "
                   "12,043 rows; 1 divergent ledger\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("divergent ledgers: 200"), std::string::npos);
  EXPECT_NE(x.find("at ledger 200: serial 31 rows, parallel 30 rows"), std::string::npos);
  EXPECT_NE(x.find("- only serial: history_operation_id=&#39;858993463297&#39;"), std::string::npos);
  EXPECT_NE(x.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(x.find("a&lt;b&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_EQ(x.find("<script>"), std::string::npos);
  EXPECT_EQ(x.find("a<b"), std::string::npos);
  EXPECT_NE(x.find("GA\\x01X"), std::string::npos);  // control characters are made visible
  EXPECT_EQ(x.find('\x01'), std::string::npos);
  EXPECT_NE(x.find("name=\"bug\" value=\"drop-row@200\""), std::string::npos);
  EXPECT_NE(x.find("name=\"first_divergent_ledger\" value=\"200\""), std::string::npos);
  // The other tables pass.
  EXPECT_NE(x.find("name=\"history_ledgers\"/>"), std::string::npos);
}

TEST(RenderJUnit, ErrorIsOneErroredCase) {
  std::string x = RenderVerifyJUnit(ErrorReport());
  EXPECT_EQ(CheckWellFormed(x), "");
  EXPECT_NE(x.find("tests=\"1\" failures=\"0\" errors=\"1\""), std::string::npos) << x;
  EXPECT_EQ(Count(x, "<testcase "), 1u);
  EXPECT_NE(x.find("<error message=\"parallel ingest failed: job 9 [202:226] failed after 4 attempts: &lt;deadlock&gt; "
                   "&amp; more\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("parallel restart range: 202:401"), std::string::npos);
}

TEST(RenderJUnit, IsDeterministicAndValidPerXmllint) {
  VerifyReport r = DivergentReport();
  std::string x = RenderVerifyJUnit(r);
  EXPECT_EQ(x, RenderVerifyJUnit(r));
  // xmllint comes with libxml2-utils, installed by ci/bootstrap.
  TempDir scratch("junit");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir);
  for (const auto& [name, report] : std::vector<std::pair<std::string, VerifyReport>>{
           {"identical", IdenticalReport()}, {"divergent", r}, {"error", ErrorReport()}}) {
    fs::path file = dir / (name + ".xml");
    std::ofstream(file) << RenderVerifyJUnit(report);
    EXPECT_EQ(std::system(("xmllint --noout " + file.string()).c_str()), 0) << name;
  }
}

// ---------------------------------------------------------------------------------------------
// Markdown

TEST(RenderMarkdown, IdenticalHasVerdictFactsAndTable) {
  std::string m = RenderVerifyMarkdown(IdenticalReport());
  EXPECT_NE(m.find("## \xe2\x9c\x85 ledgerdiff verify: identical"), std::string::npos) << m;
  EXPECT_NE(m.find("- range: `2:401` (400 ledgers)"), std::string::npos);
  EXPECT_NE(m.find("- workers: 3, jobs of 25 ledgers"), std::string::npos);
  EXPECT_NE(m.find("| parallel ingest |"), std::string::npos);
  EXPECT_NE(m.find("| **parallel speed-up** |"), std::string::npos);
  EXPECT_NE(m.find("| table | serial rows | parallel rows | divergent ledgers | status |"), std::string::npos);
  EXPECT_NE(m.find("| `history_effects` | 12,044 | 12,044 | 0 | \xe2\x9c\x85 identical |"), std::string::npos) << m;
  EXPECT_EQ(m.find("Look again"), std::string::npos);
}

TEST(RenderMarkdown, DivergentHasFirstLedgerRowDiffAndLookAgain) {
  std::string m = RenderVerifyMarkdown(DivergentReport());
  EXPECT_NE(m.find("## \xe2\x9d\x8c ledgerdiff verify: divergent"), std::string::npos) << m;
  EXPECT_NE(m.find("**First divergent ledger: 200**"), std::string::npos);
  EXPECT_NE(m.find("| `history_effects` | 12,044 | 12,043 | 1 | \xe2\x9d\x8c divergent |"), std::string::npos) << m;
  EXPECT_NE(m.find("Divergent tables at ledger 200: `history_effects`"), std::string::npos);
  EXPECT_NE(m.find("```diff\n- only serial: "), std::string::npos);
  EXPECT_NE(m.find("~ changed (history_operation_id='858993463298', order='1'): details: "), std::string::npos);
  EXPECT_NE(m.find("```sh\nledgerdiff diff --keep-db /tmp/ld-db ld_r7f3_serial ld_r7f3_parallel --range 2:401\n```"),
            std::string::npos);
  // Hostile values only inside code blocks, where Markdown shows them literally.
  size_t at = m.find("<script>alert(1)</script>");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(m.rfind("```diff", at), at);
}

TEST(RenderMarkdown, ErrorAndBaseline) {
  std::string m = RenderVerifyMarkdown(ErrorReport());
  EXPECT_NE(m.find("## \xe2\x9a\xa0\xef\xb8\x8f ledgerdiff verify: error"), std::string::npos) << m;
  EXPECT_NE(m.find("&lt;deadlock&gt; &amp; more"), std::string::npos) << m;
  EXPECT_NE(m.find("\xe2\x80\x94 not compared"), std::string::npos);
  EXPECT_NE(m.find("parallel restart range: `202:401`"), std::string::npos);

  VerifyReport b = IdenticalReport();
  b.serial.reset();
  b.serial_schema.clear();
  b.baseline = "/tmp/base.ldm";
  b.speedup = 0;
  std::string mb = RenderVerifyMarkdown(b);
  EXPECT_NE(mb.find("| table | baseline rows | parallel rows |"), std::string::npos) << mb;
  EXPECT_EQ(mb.find("speed-up"), std::string::npos);
}

TEST(RenderMarkdown, PipesInTableNamesDoNotBreakTheTable) {
  VerifyReport r = IdenticalReport();
  r.diff.tables[0].table = "odd|name`x";
  std::string m = RenderVerifyMarkdown(r);
  EXPECT_NE(m.find("| ``odd\\|name`x`` |"), std::string::npos) << m;
}

// ---------------------------------------------------------------------------------------------
// HTML

struct Html {
  Status status;
  std::string text;
};

Html WriteHtml(const VerifyReport& r, const std::string& name) {
  TempDir scratch(name);
  fs::path dir = scratch.path() / "nested" / "report";
  Html h{WriteVerifyHtml(r, dir.string()), ""};
  if (h.status.ok()) h.text = testing::ReadFileBytes(dir / "index.html");
  return h;
}

// The first <svg> of class `cls` (the parallel run's timeline comes before the serial one).
std::string Svg(const std::string& html, const std::string& cls) {
  size_t at = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" + cls + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</svg>", at) + 6 - at);
}

void ExpectSelfContained(const std::string& h) {
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("<link"), std::string::npos);
  EXPECT_EQ(h.find(" src="), std::string::npos);
  EXPECT_EQ(h.find(" href="), std::string::npos);
  EXPECT_EQ(h.find("url("), std::string::npos);
  EXPECT_EQ(h.find("@import"), std::string::npos);
  EXPECT_EQ(Count(h, "http://") + Count(h, "https://"), Count(h, "xmlns=\"http://www.w3.org/2000/svg\""));
}

// Issue 14: a row stored flipped (trade orientation) says so in every row listing; others do not.
TEST(RenderRows, StoredFlippedRowsSaySoInTextMarkdownHtmlAndJson) {
  const std::string note = "row shown in canonical orientation; stored flipped";
  VerifyReport r = DivergentReport();
  EXPECT_EQ(RenderVerifyMarkdown(r).find("stored flipped"), std::string::npos);
  EXPECT_EQ(report::RenderVerifyText(r).find("stored flipped"), std::string::npos);
  r.diff.rows[0].only_left_stored_flipped = {true};
  r.diff.rows[0].changed[0].right_stored_flipped = true;
  const std::string m = RenderVerifyMarkdown(r);
  EXPECT_NE(m.find("<script>alert(1)</script>' (" + note + ")\n"), std::string::npos) << m;
  EXPECT_NE(m.find("(" + note + " on the parallel)"), std::string::npos) << m;
  const std::string text = report::RenderVerifyText(r);
  EXPECT_NE(text.find("<script>alert(1)</script>'  (" + note + ")\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  ~ changed (history_operation_id='858993463298', order='1'):  (" + note + " on the right)\n"),
            std::string::npos)
      << text;
  Html h = WriteHtml(r, "flipped");
  ASSERT_TRUE(h.status.ok()) << h.status.message();
  EXPECT_NE(h.text.find("<span class=\"muted\">" + note + "</span>"), std::string::npos);
  EXPECT_NE(h.text.find("<span class=\"muted\">" + note + " on the parallel</span>"), std::string::npos);
  const auto j = report::VerifyReportToJson(r);
  EXPECT_EQ(j["rows"][0]["only_left_stored_flipped"], nlohmann::json::array({true}));
  EXPECT_EQ(j["rows"][0]["changed"][0]["right_stored_flipped"], true);
  EXPECT_EQ(j["rows"][0]["notes"].size(), 2u);
}

// Issue 22: a column of another type class on the two sides (jsonb against json, bigint against
// numeric) makes the digests differ at every ledger while the rows read the same as text; every
// format says so in place of an empty row diff, naming each column with both classes.
TEST(RenderRows, ColumnsOfAnotherTypeClassExplainAnEmptyRowDiffInEveryFormat) {
  VerifyReport r = DivergentReport();
  diff::TableRowDiff& rd = r.diff.rows[0];
  rd.only_left.clear();
  rd.only_left_total = 0;
  rd.changed.clear();
  rd.changed_total = 0;
  r.diff.divergent_tables[0].right_rows = 31;
  // Without a class difference an empty row diff prints as before: the table at its ledger.
  EXPECT_EQ(report::ClassDifferenceExplanation(rd), "");
  EXPECT_NE(report::RenderVerifyText(r).find("history_effects at ledger 200:\n"), std::string::npos);
  rd.class_differences = {{"details", "jsonb", "json"}, {"type", "int", "numeric"}};
  r.diff.schema_differences = {"column history_effects.details is jsonb on the left, json on the right",
                               "column history_effects.type is int on the left, numeric on the right"};
  const std::string why =
      "columns of another type class: details (jsonb on the left, json on the right), type (int on the left, numeric "
      "on the right); the rows read the same as text";
  const std::string why_verify =
      "columns of another type class: details (jsonb on the serial, json on the parallel), type (int on the serial, "
      "numeric on the parallel); the rows read the same as text";
  EXPECT_EQ(report::ClassDifferenceExplanation(rd), why);

  const std::string text = report::RenderVerifyText(r);
  EXPECT_NE(text.find("history_effects at ledger 200: " + why + "\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("history_effects at ledger 200:\n"), std::string::npos) << text;
  const auto j = report::VerifyReportToJson(r);
  EXPECT_EQ(j["rows"][0]["class_differences"],
            nlohmann::json::parse(R"([{"column": "details", "left": "jsonb", "right": "json"},
                                      {"column": "type", "left": "int", "right": "numeric"}])"));
  const std::string x = RenderVerifyJUnit(r);
  EXPECT_NE(x.find("  " + why_verify + "\n"), std::string::npos) << x;
  EXPECT_EQ(CheckWellFormed(x), "");
  const std::string m = RenderVerifyMarkdown(r);
  EXPECT_NE(m.find("```diff\n" + why_verify + "\n```"), std::string::npos) << m;
  const std::string h = report::RenderVerifyHtml(r);
  EXPECT_NE(h.find("<p class=\"note\">" + why_verify + "</p>"), std::string::npos) << h;
  EXPECT_EQ(h.find("0 rows only serial"), std::string::npos) << "the empty row diff's counts";
  // verify-range's gate: the failing table's detail under its ledger line, in every format.
  const GateSummary g = report::VerifyRangeGate(r.diff);
  const auto failing = std::find_if(g.checks.begin(), g.checks.end(),
                                    [](const GateCheck& c) { return c.name == "history_effects"; });
  ASSERT_NE(failing, g.checks.end());
  EXPECT_EQ(failing->detail, why + "\n");
  EXPECT_NE(report::RenderGateJUnit(g).find(why), std::string::npos);
  EXPECT_NE(report::RenderGateMarkdown(g).find(why), std::string::npos);
  EXPECT_NE(report::RenderGateHtml(g).find(why), std::string::npos);

  // A row that does differ is shown as such: the classes stay data, the explanation is not shown.
  VerifyReport changed = DivergentReport();
  changed.diff.rows[0].class_differences = rd.class_differences;
  EXPECT_EQ(report::ClassDifferenceExplanation(changed.diff.rows[0]), "");
  EXPECT_EQ(report::RenderVerifyText(changed).find("columns of another type class"), std::string::npos);
  EXPECT_NE(report::RenderVerifyText(changed).find("  - only left:  "), std::string::npos);
  EXPECT_EQ(report::VerifyReportToJson(changed)["rows"][0]["class_differences"].size(), 2u);
  // A manifest side: its rows are unknown, so nothing is claimed about them.
  rd.right_available = false;
  EXPECT_EQ(report::ClassDifferenceExplanation(rd), "");
  EXPECT_NE(report::RenderVerifyText(r).find("history_effects at ledger 200:\n  (rows of the right side are not "
                                              "available: it is a manifest)\n"),
            std::string::npos)
      << report::RenderVerifyText(r);
}

TEST(RenderHtml, DivergentReportHasEverySection) {
  VerifyReport r = DivergentReport();
  Html h = WriteHtml(r, "divergent");
  ASSERT_TRUE(h.status.ok()) << h.status.message();
  const std::string& t = h.text;
  ExpectSelfContained(t);
  EXPECT_NE(t.find("<div class=\"banner divergent\""), std::string::npos);
  EXPECT_NE(t.find("First divergent ledger <b>200</b>"), std::string::npos);
  EXPECT_NE(t.find("<h2>Tables</h2>"), std::string::npos);
  EXPECT_NE(t.find("<h2>Divergence</h2>"), std::string::npos);
  EXPECT_NE(t.find("<h2>Look again</h2>"), std::string::npos);
  EXPECT_NE(t.find("ledgerdiff diff --keep-db /tmp/ld-db ld_r7f3_serial ld_r7f3_parallel --range 2:401"),
            std::string::npos);
  // Row diff: the only-serial row (escaped) and the changed row as old -> new.
  EXPECT_NE(t.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(t.find("<script>alert(1)</script>"), std::string::npos);
  EXPECT_NE(t.find("<del>{&quot;amount&quot;:&quot;10&quot;}</del> \xe2\x86\x92 <ins>a&lt;b&amp;&quot;c&quot;</ins>"),
            std::string::npos);
  EXPECT_NE(t.find("<del><span class=\"null\">NULL</span></del>"), std::string::npos);
  EXPECT_EQ(t.find('\x01'), std::string::npos);
  // Timeline: one lane per worker slot (w2 and its replacement w2.1 share lane 2), one bar per
  // attempt, with the tooltip of each attempt; failures are escaped in tooltips.
  const std::string timeline = Svg(t, "timeline");
  EXPECT_EQ(Count(timeline, "<g class=\"lane\""), 3u);
  EXPECT_NE(timeline.find("data-lane=\"w2\""), std::string::npos);
  EXPECT_EQ(timeline.find("data-lane=\"w2.1\""), std::string::npos);
  EXPECT_EQ(Count(timeline, "<rect class=\"att "), r.parallel.timeline.size());
  EXPECT_NE(t.find("+1 replaced"), std::string::npos);
  EXPECT_EQ(Count(t, "<rect class=\"att "), r.parallel.timeline.size() + r.serial->timeline.size());
  EXPECT_NE(t.find("<title>job 6 [127:151] attempt 1, 0.3s, lost"), std::string::npos) << t;
  EXPECT_NE(t.find("<title>job 9 [202:226] attempt 2, "), std::string::npos);
  EXPECT_NE(t.find("connection reset &lt;by peer&gt; &amp; &quot;retried&quot;"), std::string::npos);
  EXPECT_NE(t.find("class=\"att failed retried\""), std::string::npos);
  EXPECT_NE(t.find("class=\"att fenced retried\""), std::string::npos);
  EXPECT_NE(t.find("fill=\"#cf222e\""), std::string::npos);  // failed is red
  EXPECT_NE(t.find("fill=\"#f0883e\""), std::string::npos);  // lost is orange
  EXPECT_NE(t.find("fill=\"#8250df\""), std::string::npos);  // fenced is purple
  EXPECT_NE(t.find("seconds since run start"), std::string::npos);
  // Throughput chart with its axes.
  EXPECT_NE(t.find("class=\"throughput\""), std::string::npos);
  EXPECT_NE(t.find("ledgers/s</text>"), std::string::npos);
  EXPECT_NE(t.find("parallel average "), std::string::npos);
  EXPECT_NE(t.find("serial average "), std::string::npos);
  // Well-formed markup (the HTML is written as XHTML-compatible markup apart from the doctype).
  EXPECT_EQ(CheckWellFormed(t.substr(t.find("<html"))), "");
}

TEST(RenderHtml, IdenticalIsGreenAndDeterministic) {
  VerifyReport r = IdenticalReport();
  Html a = WriteHtml(r, "identical-a");
  Html b = WriteHtml(r, "identical-b");
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  ASSERT_TRUE(b.status.ok());
  EXPECT_EQ(a.text, b.text);
  EXPECT_NE(a.text.find("<div class=\"banner identical\""), std::string::npos);
  EXPECT_EQ(a.text.find("<h2>Divergence</h2>"), std::string::npos);
  EXPECT_NE(a.text.find("12,044"), std::string::npos);
  ExpectSelfContained(a.text);
}

TEST(RenderHtml, ErrorBaselineAndZeroAttemptReports) {
  Html e = WriteHtml(ErrorReport(), "error");
  ASSERT_TRUE(e.status.ok()) << e.status.message();
  EXPECT_NE(e.text.find("<div class=\"banner error\""), std::string::npos);
  EXPECT_NE(e.text.find("&lt;deadlock&gt; &amp; more"), std::string::npos);
  EXPECT_NE(e.text.find("Restart range: <code>202:401</code>"), std::string::npos);
  EXPECT_NE(e.text.find("not compared"), std::string::npos);

  VerifyReport b = IdenticalReport();
  b.serial.reset();
  b.serial_schema.clear();
  b.baseline = "/tmp/<base>.ldm";
  b.speedup = 0;
  b.phases.erase(b.phases.begin());
  Html hb = WriteHtml(b, "baseline");
  ASSERT_TRUE(hb.status.ok());
  EXPECT_NE(hb.text.find("baseline rows"), std::string::npos);
  EXPECT_NE(hb.text.find("/tmp/&lt;base&gt;.ldm"), std::string::npos);
  EXPECT_EQ(hb.text.find("serial average"), std::string::npos);
  EXPECT_EQ(Count(Svg(hb.text, "timeline"), "<g class=\"lane\""), 3u);

  VerifyReport z;  // nothing happened at all
  z.run_id = "empty";
  z.error = "parallel ingest failed: no worker started";
  Html hz = WriteHtml(z, "zero");
  ASSERT_TRUE(hz.status.ok()) << hz.status.message();
  EXPECT_NE(hz.text.find("No job attempts were recorded"), std::string::npos);
  EXPECT_NE(hz.text.find("No table was compared"), std::string::npos);
  EXPECT_EQ(Count(hz.text, "<svg"), 0u);
  EXPECT_FALSE(RenderVerifyJUnit(z).empty());
  EXPECT_FALSE(RenderVerifyMarkdown(z).empty());
}

TEST(RenderHtml, HugeTimelineStaysSmall) {
  VerifyReport r = HugeReport();
  ASSERT_GT(r.parallel.timeline.size(), 5000u);
  Html h = WriteHtml(r, "huge");
  ASSERT_TRUE(h.status.ok());
  EXPECT_LT(h.text.size(), 1'000'000u) << "report of " << h.text.size() << " bytes";
  EXPECT_EQ(Count(Svg(h.text, "timeline"), "<g class=\"lane\""), 8u);
  EXPECT_NE(h.text.find("class=\"att done merged\""), std::string::npos);
  EXPECT_NE(h.text.find("class=\"att failed retried\""), std::string::npos);  // failures stay individual
  EXPECT_NE(h.text.find("closer than a pixel"), std::string::npos);
}

// Lanes come from AttemptRow::slot; without one, each worker name gets a lane of its own in the
// order it first appears, and names are never parsed ("w10" before "w9" here; "w2.1" is not w2).
TEST(RenderTimeline, LanesFromSlotsElseFromFirstAppearance) {
  IngestReport run;
  run.wall_s = 2;
  run.timeline = {Attempt(1, 1, "w10", 0.0, 0.5, "done", "", {2, 11}), Attempt(2, 1, "w9", 0.1, 0.6, "done", "", {12, 21}),
                  Attempt(3, 1, "w2", 0.2, 0.4, "lost", "killed", {22, 31}),
                  Attempt(3, 2, "w2.1", 0.9, 1.4, "done", "", {22, 31})};
  std::vector<report::TimelineLane> lanes = report::TimelineLanes(run);
  ASSERT_EQ(lanes.size(), 4u);
  EXPECT_EQ(lanes[0].name, "w10");
  EXPECT_EQ(lanes[1].name, "w9");
  EXPECT_EQ(lanes[2].name, "w2");
  EXPECT_EQ(lanes[3].name, "w2.1");
  for (const auto& lane : lanes) EXPECT_TRUE(lane.replacements.empty()) << lane.name;

  // With slots: w2.1 replaces w2 in lane 2; lanes in slot order, whatever the names say.
  run.timeline[0].slot = 3;
  run.timeline[1].slot = 1;
  run.timeline[2].slot = 2;
  run.timeline[3].slot = 2;
  lanes = report::TimelineLanes(run);
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes[0].name, "w9");
  EXPECT_EQ(lanes[1].name, "w2");
  EXPECT_EQ(lanes[2].name, "w10");
  ASSERT_EQ(lanes[1].attempts.size(), 2u);
  EXPECT_EQ(lanes[1].replacements, (std::map<std::string, double>{{"w2.1", 0.9}}));
  const std::string svg = report::TimelineSvg(run);
  EXPECT_EQ(Count(svg, "<g class=\"lane\""), 3u);
  EXPECT_NE(svg.find("+1 replaced"), std::string::npos);
  // Labels: wSLOT for slotted lanes (as the orchestrator names their workers), then counting on.
  EXPECT_EQ(lanes[0].label, "w1");
  EXPECT_EQ(lanes[1].label, "w2");
  EXPECT_EQ(lanes[2].label, "w3");
  run.timeline[1].slot = 0;  // w9 has no slot: its lane comes after the slotted ones
  lanes = report::TimelineLanes(run);
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes[0].label + "=" + lanes[0].name, "w2=w2");
  EXPECT_EQ(lanes[1].label + "=" + lanes[1].name, "w3=w10");
  EXPECT_EQ(lanes[2].label + "=" + lanes[2].name, "w4=w9");
}

// Issue 22: lane labels were worker names cut to 14 bytes and clipped at the left edge, so every
// lane read "1a... (41 bytes)". Lanes are w1...wN; each label's tooltip and the lane key under the
// chart give the full worker identities, replacements included.
TEST(RenderTimeline, LanesAreLabelledWnWithWorkersInTooltipAndKey) {
  const VerifyReport r = DivergentReport();
  Html h = WriteHtml(r, "lanes");
  ASSERT_TRUE(h.status.ok()) << h.status.message();
  const std::string timeline = Svg(h.text, "timeline");
  const std::string at = "@ci-runner-1a2b3c4d5e6f:48121:18f3a2b4c10";
  std::vector<std::string> labels, titles;
  for (size_t p = timeline.find("<text class=\"lane-label\""); p != std::string::npos;
       p = timeline.find("<text class=\"lane-label\"", p + 1)) {
    size_t t0 = timeline.find("<title>", p), t1 = timeline.find("</title>", p);
    ASSERT_NE(t1, std::string::npos);
    titles.push_back(timeline.substr(t0 + 7, t1 - t0 - 7));
    size_t end = timeline.find_first_of("<", t1 + 8);
    labels.push_back(timeline.substr(t1 + 8, end - t1 - 8));
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"w1", "w2", "w3"}));
  ASSERT_EQ(titles.size(), 3u);
  EXPECT_EQ(titles[0], "lane w1: worker w1" + at + " (slot 1)");
  EXPECT_EQ(titles[1].substr(0, titles[1].find(" at ", titles[1].find("replaced"))),
            "lane w2: worker w2" + at + " (slot 2)\nreplaced by w2.1" + at);
  EXPECT_EQ(titles[2], "lane w3: worker w3" + at + " (slot 3)");
  EXPECT_EQ(timeline.find("bytes)"), std::string::npos) << "a truncated name is drawn";
  EXPECT_NE(timeline.find("data-lane=\"w2\" data-worker=\"w2" + at + "\""), std::string::npos);
  // An attempt's tooltip names its lane and its worker.
  EXPECT_NE(timeline.find("\nlane w2, worker w2.1" + at + ", "), std::string::npos);
  // The key under the parallel chart: lane, worker, replacements.
  const size_t key = h.text.find("<table class=\"lane-key\">");
  ASSERT_NE(key, std::string::npos);
  EXPECT_LT(h.text.find("class=\"timeline\""), key);
  const std::string table = h.text.substr(key, h.text.find("</table>", key) - key);
  EXPECT_NE(table.find("<th>replaced by</th>"), std::string::npos);
  for (const char* w : {"w1", "w2", "w3"})
    EXPECT_NE(table.find(fmt::format("<tr><td class=\"mono\">{0}</td><td class=\"mono\">{0}{1}</td>", w, at)),
              std::string::npos)
        << w << " in " << table;
  EXPECT_NE(table.find("<span class=\"mono\">w2.1" + at + "</span> at "), std::string::npos) << table;
  EXPECT_EQ(CheckWellFormed(h.text.substr(h.text.find("<html"))), "");
}

// The dashed average lines never cross an average label, whichever average is higher and
// however close they are: no line passes through a label's glyphs (ascent = font size above the
// baseline, descent 0.3 x font size below it), and the two labels do not overlap.
TEST(RenderThroughput, AverageLabelsAreClearOfTheAverageLines) {
  auto attr = [](const std::string& tag, const std::string& name) {
    size_t at = tag.find(" " + name + "=\"");
    EXPECT_NE(at, std::string::npos) << name << " in " << tag;
    at += name.size() + 3;
    return std::stod(tag.substr(at, tag.find('"', at) - at));
  };
  auto tags = [](const std::string& svg, const std::string& start) {
    std::vector<std::string> out;
    for (size_t at = svg.find(start); at != std::string::npos; at = svg.find(start, at + 1))
      out.push_back(svg.substr(at, svg.find('>', at) - at));
    return out;
  };
  // Serial average from far below the parallel one, through equal, to above it.
  for (double serial_over_parallel : {0.5, 0.8, 0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1, 1.3}) {
    VerifyReport r = IdenticalReport();
    r.serial->wall_s = r.parallel.wall_s / serial_over_parallel;
    const std::string svg = report::ThroughputSvg(r.parallel, r.serial);
    std::vector<double> lines, baselines;
    for (const auto& t : tags(svg, "<line class=\"average\"")) lines.push_back(attr(t, "y1"));
    double font = 0;
    for (const auto& t : tags(svg, "<text class=\"average\"")) {
      baselines.push_back(attr(t, "y"));
      font = attr(t, "font-size");
    }
    ASSERT_EQ(lines.size(), 2u) << serial_over_parallel;
    ASSERT_EQ(baselines.size(), 2u) << serial_over_parallel;
    for (double b : baselines)
      for (double y : lines)
        EXPECT_FALSE(y >= b - font && y <= b + 0.3 * font)
            << "line at " << y << " crosses the label on " << b << " (serial/parallel " << serial_over_parallel << ")";
    EXPECT_GE(std::abs(baselines[0] - baselines[1]), 1.3 * font) << serial_over_parallel;
  }
  EXPECT_NE(report::ThroughputSvg(IdenticalReport().parallel, IdenticalReport().serial).find("serial average "),
            std::string::npos);
}

TEST(RenderHtml, UnwritableDirectoryIsAnError) {
  TempDir scratch("file");
  fs::path dir = scratch.path() / "file";
  fs::create_directories(dir.parent_path());
  std::ofstream(dir) << "not a directory";
  Status s = WriteVerifyHtml(IdenticalReport(), dir.string());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir.string()), std::string::npos) << s.message();
}

// Writes the divergent sample and its variants (into $LEDGERDIFF_RENDER_SAMPLE_DIR for the
// browser check, else a temporary directory) and checks every page is there.
TEST(RenderHtml, SampleReportForBrowser) {
  const char* env = std::getenv("LEDGERDIFF_RENDER_SAMPLE_DIR");
  TempDir scratch("sample");
  const std::string dir = env && *env ? std::string(env) : scratch.path().string();
  Status s = WriteVerifyHtml(DivergentReport(), dir);
  ASSERT_TRUE(s.ok()) << s.message();
  std::ofstream(fs::path(dir) / "junit.xml") << RenderVerifyJUnit(DivergentReport());
  std::ofstream(fs::path(dir) / "summary.md") << RenderVerifyMarkdown(DivergentReport());
  // The other variants beside it, to look at too.
  for (const auto& [name, report] : std::vector<std::pair<std::string, VerifyReport>>{
           {"identical", IdenticalReport()}, {"error", ErrorReport()}, {"huge", HugeReport()}})
    ASSERT_TRUE(WriteVerifyHtml(report, (fs::path(dir) / name).string()).ok()) << name;
  for (const char* page : {"index.html", "identical/index.html", "error/index.html", "huge/index.html"})
    EXPECT_GT(fs::file_size(fs::path(dir) / page), 1000u) << page;
}


// Issue 14: the first divergent ledger is linked to the parallel job, attempt and worker that
// wrote it, and to its place in the job (a boundary bug hits a job's first or last ledger).
TEST(FirstDivergentJob, TheDoneAttemptWhoseRangeHoldsTheLedger) {
  IngestReport run;
  run.timeline = {Attempt(1, 1, "w1", 0, 1, "done", "", {2, 26}), Attempt(2, 1, "w2", 0, 1, "failed", "x", {27, 51}),
                  Attempt(2, 2, "w3", 1, 2, "done", "", {27, 51}), Attempt(3, 1, "w1", 1, 2, "done", "", {52, 52})};
  auto w = verify::FindWritingJob(run, 27);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->job, 2u);
  EXPECT_EQ(w->attempt, 2u);  // the failed first attempt wrote nothing that stayed
  EXPECT_EQ(w->worker, "w3");
  EXPECT_EQ(w->position, "first");
  EXPECT_EQ(verify::FindWritingJob(run, 51)->position, "last");
  EXPECT_EQ(verify::FindWritingJob(run, 30)->position, "inner");
  EXPECT_EQ(verify::FindWritingJob(run, 52)->position, "first");
  EXPECT_FALSE(verify::FindWritingJob(run, 53).has_value());
}

TEST(FirstDivergentJob, EveryOutputNamesTheJobWorkerAndPosition) {
  VerifyReport r = DivergentReport();
  r.first_divergent_job = verify::WritingJob{8, 2, "w2.1", {177, 200}, "last"};
  auto j = report::VerifyReportToJson(r);
  EXPECT_EQ(j["first_divergent_job"], (nlohmann::json{{"job", 8}, {"attempt", 2}, {"worker", "w2.1"},
                                                      {"from", 177}, {"to", 200}, {"position", "last"}}));
  const std::string sentence = "ledger 200 was written on the parallel side by job 8 (ledgers 177:200, attempt 2, worker w2.1)";
  EXPECT_NE(report::RenderVerifyText(r).find(sentence), std::string::npos) << report::RenderVerifyText(r);
  EXPECT_NE(report::RenderVerifyText(r).find("job's last ledger: a job boundary"), std::string::npos);
  EXPECT_NE(RenderVerifyJUnit(r).find(sentence), std::string::npos);
  EXPECT_NE(RenderVerifyJUnit(r).find("property name=\"first_divergent_job\""), std::string::npos);
  EXPECT_NE(RenderVerifyMarkdown(r).find("job 8"), std::string::npos) << RenderVerifyMarkdown(r);
  Html h = WriteHtml(r, "divergent_job");
  ASSERT_TRUE(h.status.ok()) << h.status.message();
  EXPECT_NE(h.text.find(sentence), std::string::npos);
  // Identical: null in JSON, nothing in text.
  EXPECT_TRUE(report::VerifyReportToJson(IdenticalReport())["first_divergent_job"].is_null());
}

// Issue 14: the soundness sections of the diff reach JUnit, Markdown and HTML.
TEST(RenderSoundness, LookupAndInvariantProblemsFailAndWarningsAreShown) {
  VerifyReport r = DivergentReport();
  diff::LookupComparison lc;
  lc.table = "history_accounts";
  lc.left_keys = 5;
  lc.right_keys = 4;
  lc.only_left = {"GBXQ_ONLY_LEFT"};
  lc.only_left_total = 1;
  r.diff.lookups = {lc};
  diff::InvariantResult inv;
  inv.name = "op_has_tx";
  inv.table = "history_operations";
  inv.side = Side::kRight;
  inv.description = "every operation has its transaction";
  inv.violations = 3;
  inv.first_ledger = 42;
  r.diff.invariants = {inv};
  r.diff.uncompared_right = {"asset_stats"};
  r.diff.schema_notes = {"ledger_close: timestamp vs timestamptz"};
  r.diff.rows_outside_range = {{"history_ledgers", Side::kLeft, 1, 2, 0}};
  const std::string x = RenderVerifyJUnit(r);
  EXPECT_NE(x.find("name=\"lookup history_accounts\">"), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"invariant op_has_tx (right)\">"), std::string::npos) << x;
  EXPECT_NE(x.find("GBXQ_ONLY_LEFT"), std::string::npos);
  EXPECT_NE(x.find("not compared (no ledger mapping): left none; right asset_stats"), std::string::npos);
  EXPECT_EQ(CheckWellFormed(x), "") << x;
  const std::string md = RenderVerifyMarkdown(r);
  // Markdown escapes the underscores of names in plain text.
  EXPECT_NE(md.find("invariant op\\_has\\_tx broken on the right side: 3 rows of history\\_operations, first at "
                    "ledger 42"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("schema note: ledger\\_close: timestamp vs timestamptz"), std::string::npos);
  EXPECT_NE(md.find("history\\_ledgers (left): 3 rows outside ledgers 2:401"), std::string::npos) << md;
  Html h = WriteHtml(r, "soundness");
  ASSERT_TRUE(h.status.ok());
  EXPECT_NE(h.text.find("<h2 id=\"soundness\">Soundness</h2>"), std::string::npos);
  EXPECT_NE(h.text.find("lookup history_accounts differs"), std::string::npos);
  EXPECT_NE(md.find("**Soundness problems:**"), std::string::npos) << md;
  // A clean report has no such section.
  EXPECT_EQ(RenderVerifyMarkdown(IdenticalReport()).find("Soundness problems"), std::string::npos);
}

// Issue 9: a table whose rows outside the range differ between the sides (the only divergence
// here) fails in JUnit, Markdown, HTML and the gate summary, named with its counts; a report
// without such rows mentions none.
TEST(RenderSoundness, OutsideRangeDifferencesFailInEveryFormat) {
  const std::string difference =
      "history_transactions: rows outside ledgers 2:401 (before / after / without a ledger): left 0 / 0 / 1, right "
      "0 / 0 / 0";
  VerifyReport r = IdenticalReport();
  r.identical = false;
  r.diff.identical = false;
  r.diff.verdict = diff::Verdict::kDivergent;
  r.diff.outside_range_differences = {difference};

  const std::string x = RenderVerifyJUnit(r);
  EXPECT_EQ(CheckWellFormed(x), "") << x;
  EXPECT_NE(x.find("failures=\"1\" errors=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"rows outside the range of history_transactions\">"), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"rows outside the range differ: " + difference + "\""), std::string::npos) << x;
  EXPECT_EQ(x.find("name=\"schema\""), std::string::npos) << x;  // not mistaken for a schema difference

  const std::string md = RenderVerifyMarkdown(r);
  EXPECT_NE(md.find("**Rows outside the range differ (history\\_transactions); the data of the common ledgers is "
                    "identical.**"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**Soundness problems:**\n\n- \xe2\x9d\x8c rows outside the range differ: "
                    "history\\_transactions: rows outside ledgers 2:401"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("left 0 / 0 / 1, right 0 / 0 / 0"), std::string::npos) << md;

  Html h = WriteHtml(r, "outside-range");
  ASSERT_TRUE(h.status.ok());
  EXPECT_NE(h.text.find("<div class=\"what\">Rows outside the range differ (history_transactions); the data of the "
                        "common ledgers is identical.</div>"),
            std::string::npos)
      << h.text;
  EXPECT_NE(h.text.find("<li class=\"bad\">rows outside the range differ: " + difference + "</li>"), std::string::npos)
      << h.text;

  const GateSummary g = report::VerifyGate(r);
  const auto failing = std::find_if(g.checks.begin(), g.checks.end(),
                                    [](const GateCheck& c) { return c.state == GateCheck::State::kFail; });
  ASSERT_NE(failing, g.checks.end());
  EXPECT_EQ(failing->name, "rows outside the range of history_transactions");
  EXPECT_NE(failing->message.find("left 0 / 0 / 1, right 0 / 0 / 0"), std::string::npos) << failing->message;

  // Without such rows no format mentions them, also when the report diverges otherwise.
  for (const VerifyReport& clean : {IdenticalReport(), DivergentReport()}) {
    EXPECT_EQ(RenderVerifyJUnit(clean).find("outside the range"), std::string::npos);
    EXPECT_EQ(RenderVerifyMarkdown(clean).find("outside the range"), std::string::npos);
    Html ch = WriteHtml(clean, "inside-range");
    ASSERT_TRUE(ch.status.ok());
    EXPECT_EQ(ch.text.find("outside the range"), std::string::npos);
  }
}

}  // namespace
}  // namespace ledgerdiff::verify
