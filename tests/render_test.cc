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

namespace fs = std::filesystem;
using namespace render_samples;
using report::RenderVerifyJUnit;
using report::RenderVerifyMarkdown;
using report::WriteVerifyHtml;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

// A fresh scratch directory, removed with everything in it when the object goes away, so the
// suite leaves nothing in the temporary directory.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("ledgerdiff-render-test-" + std::to_string(getpid()) + "-" + std::to_string(++count_) + "-" + name)) {
    fs::remove_all(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  static inline int count_ = 0;
  fs::path path_;
};

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


// ---------------------------------------------------------------------------------------------
// Issue 14: every gate speaks CI through the report sink (core/report.h, report/gate.h).

verify::ChaosReport SampleChaos(bool valid) {
  verify::ChaosReport r;
  r.options.plan.range = {2, 3001};
  r.options.plan.workers = 4;
  r.options.plan.job_size = 100;
  r.options.plan.seed = 7;
  r.replay = "ledgerdiff chaos --range 2:3001 --workers 4 --job-size 100 --seed 7";
  for (uint32_t i = 1; i <= 2; ++i) {
    verify::ChaosRound round;
    round.round = i;
    round.ingest_ok = true;
    round.jobs = 30;
    round.valid = true;
    round.faults.push_back({{verify::FaultKind::kKill, 4, "mid-job", 0},
                            1,
                            true,
                            "SIGKILL worker w2 (pid 123) during job 4 attempt 1",
                            true,
                            ingest::Detector::kProcessExit,
                            "",
                            std::nullopt});
    round.faults.push_back({{verify::FaultKind::kOrchestrator, 0, "", 25},
                            1,
                            true,
                            "killed the orchestrator after 25 jobs done",
                            true,
                            ingest::Detector::kOrchestratorRestart,
                            "",
                            std::nullopt});
    round.detectors = {{ingest::Detector::kProcessExit, 1}, {ingest::Detector::kOrchestratorRestart, 1}};
    r.rounds.push_back(round);
  }
  if (!valid) {
    r.rounds[1].valid = false;
    r.rounds[1].anomalies[verify::AnomalyClass::kDuplicated] = {{401, 500}};
    r.rounds[1].schema_kept = true;
    r.rounds[1].schema = "ld_c_r2";
  }
  r.valid = valid;
  return r;
}

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
  cycle.open.push_back({{40, 44}, verify::kFoundByScrub, "right", {"history_trades"}, 1000, 3});
  for (auto& m : report::FollowMetrics(cycle, {}, 1060)) all.push_back(m);
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
