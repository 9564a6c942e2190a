// verify-range's JUnit, Markdown and HTML (issue 46): verify's renderers over a one-shot
// verify-range, from hand-built reports (no database): the headline finding, the per-column row
// diff, the coverage, the state comparison and the look-again command in every format.
//
// LEDGERDIFF_RENDER_SAMPLE_DIR=DIR makes RenderRange.SamplePagesForBrowser write the pages to
// DIR/verify-range-*/index.html (tests/report_browser_test.sh reads them at 800 and 1400 px).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "core/report.h"
#include "report/gate.h"
#include "report/html.h"
#include "report/junit.h"
#include "report/markdown.h"
#include "report/verify_view.h"
#include "tests/harness.h"
#include "tests/render_samples.h"
#include "verify/state_compare.h"
#include "verify/verify.h"

namespace ledgerdiff::verify {
namespace {

using namespace render_samples;

const char* const kLookAgain =
    "ledgerdiff verify-range --left 'host=old dbname=horizon' --right 'host=new dbname=horizon' --range 200:200 --all";

// Divergent at ledger 200 in history_effects (render_samples' divergent diff), with a state
// comparison that found one changed account.
VerifyRangeReport DivergentRange() {
  VerifyRangeReport r;
  r.diff = DivergentReport().diff;
  r.diff.left = "host=old dbname=horizon schema public";
  r.diff.right = "host=new dbname=horizon schema public";
  r.look_again = kLookAgain;
  StateComparison st;
  st.compared = true;
  st.ledger_left = st.ledger_right = 401;
  st.verdict = StateVerdict::kDivergent;
  st.tables = {{"accounts", 50, 50, false, "aa", "ab"}};
  StateDifference d;
  d.table = "accounts";
  d.key_columns = {"account_id"};
  d.key = {std::string("GBXQ<ZP4T>")};
  d.columns = {"account_id", "balance", "sequence_number"};
  d.left = diff::RowValues{std::string("GBXQ<ZP4T>"), std::string("100"), std::string("7")};
  d.right = diff::RowValues{std::string("GBXQ<ZP4T>"), std::string("99"), std::string("7")};
  st.differences = {d};
  st.differing_rows = 1;
  r.state = st;
  return r;
}

VerifyRangeReport IdenticalRange() {
  VerifyRangeReport r;
  r.diff = IdenticalReport().diff;
  return r;
}

// The right side lacks ledgers 7 and 9 to 10; what both hold is identical.
VerifyRangeReport IncompleteRange() {
  VerifyRangeReport r = IdenticalRange();
  r.diff.identical = false;
  r.diff.verdict = diff::Verdict::kIncomplete;
  r.diff.coverage.right.held = 397;
  r.diff.coverage.right.missing = {{7, 7}, {9, 10}};
  r.diff.coverage.right.missing_ledgers = 3;
  r.diff.coverage.right.missing_ranges = 2;
  r.look_again = "ledgerdiff verify-range --left L --right R --range 7:10 --all";
  return r;
}

bool Has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

TEST(RenderRange, HeadlineByVerdict) {
  EXPECT_EQ(report::RangeHeadline(DivergentRange()), "Divergent at ledger 200");
  EXPECT_EQ(report::RangeHeadline(IdenticalRange()), "Identical");
  EXPECT_EQ(report::RangeHeadline(IncompleteRange()), "Incomplete: right lacks 3 ledgers of 2:401");
  VerifyRangeReport state_only = IdenticalRange();
  state_only.state = DivergentRange().state;
  EXPECT_EQ(report::RangeHeadline(state_only), "Divergent: the state differs at ledger 401");
}

TEST(RenderRange, HtmlHasTheHeadlineFindingPerColumnRowDiffCoverageStateAndLookAgain) {
  const std::string h = report::RenderVerifyRangeHtml(DivergentRange());
  // The banner: verdict, headline, the table at the first divergent ledger, counts, coverage.
  EXPECT_TRUE(Has(h, "<div class=\"banner divergent\" id=\"verdict\"><div class=\"word\">DIVERGENT</div>")) << h;
  EXPECT_TRUE(Has(h, "<span class=\"headline\">Divergent at ledger 200</span> in <code class=\"name\">history_effects</code>"));
  EXPECT_TRUE(Has(h, "1 of 400 ledgers compared differ"));
  EXPECT_TRUE(Has(h, "left holds 400 ledgers (2 to 401); right holds 400 ledgers (2 to 401)."));
  EXPECT_TRUE(Has(h, "<title>ledgerdiff verify-range 2:401: Divergent at ledger 200</title>"));
  // verify's per-table table and per-column row diff, sides called left and right.
  EXPECT_TRUE(Has(h, "<table class=\"tables\">"));
  EXPECT_TRUE(Has(h, "<td><code class=\"name\">history_operation_participants</code></td>"));
  EXPECT_TRUE(Has(h, "<h3><code class=\"name\">history_effects</code> at ledger 200"));
  EXPECT_TRUE(Has(h, "<table class=\"rows\"><tr><th></th><th>history_operation_id</th><th>order</th><th>account</th>"));
  EXPECT_TRUE(Has(h, "\xe2\x88\x92 only left"));
  EXPECT_TRUE(Has(h, "<table class=\"rows changed\"><tr><th>key</th><th>column</th><th>left \xe2\x86\x92 right</th>"));
  EXPECT_TRUE(Has(h, "<td>details</td><td><del>{&quot;amount&quot;:&quot;10&quot;}</del>"));
  // Hostile values are escaped.
  EXPECT_FALSE(Has(h, "<script>"));
  EXPECT_TRUE(Has(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  // Coverage, state (per column), look again.
  EXPECT_TRUE(Has(h, "<h2>Coverage</h2>"));
  EXPECT_TRUE(Has(h, "<h2>State</h2>"));
  EXPECT_TRUE(Has(h, "<td>balance</td><td><del>100</del> \xe2\x86\x92 <ins>99</ins></td>"));
  EXPECT_TRUE(Has(h, "account_id=GBXQ&lt;ZP4T&gt;"));
  EXPECT_TRUE(Has(h, "<pre class=\"look-again\">ledgerdiff verify-range --left &#39;host=old dbname=horizon&#39;") ||
              Has(h, "<pre class=\"look-again\">ledgerdiff verify-range --left 'host=old dbname=horizon'"))
      << h;
  // Names never wrap mid-name: the rule is in the one stylesheet.
  EXPECT_TRUE(Has(h, "code.name,td code.name{white-space:nowrap;overflow-wrap:normal;word-break:keep-all}"));
  EXPECT_EQ(h, report::RenderVerifyRangeHtml(DivergentRange()));  // deterministic
}

TEST(RenderRange, HtmlIdenticalAndIncompleteBanners) {
  const std::string same = report::RenderVerifyRangeHtml(IdenticalRange());
  EXPECT_TRUE(Has(same, "<div class=\"banner identical\" id=\"verdict\"><div class=\"word\">IDENTICAL</div>"));
  EXPECT_TRUE(Has(same, "<span class=\"headline\">Identical</span>"));
  EXPECT_FALSE(Has(same, "Look again"));
  EXPECT_FALSE(Has(same, "<h2>Divergence</h2>"));
  EXPECT_FALSE(Has(same, "Not compared:"));
  // What was not compared is counted in the banner and listed under Soundness.
  VerifyRangeReport uncompared = IdenticalRange();
  uncompared.diff.uncompared_left = uncompared.diff.uncompared_right = {"history_claimable_balances"};
  const std::string some = report::RenderVerifyRangeHtml(uncompared);
  EXPECT_TRUE(Has(some, "Not compared: 1 finding, under <a href=\"#soundness\">Soundness</a>.")) << some;
  EXPECT_TRUE(Has(some, "<h2 id=\"soundness\">Soundness</h2>"));
  EXPECT_TRUE(Has(some, "not compared (no ledger mapping): left history_claimable_balances"));
  const std::string gaps = report::RenderVerifyRangeHtml(IncompleteRange());
  EXPECT_TRUE(Has(gaps, "<div class=\"banner incomplete\" id=\"verdict\"><div class=\"word\">INCOMPLETE</div>"));
  EXPECT_TRUE(Has(gaps, "Incomplete: right lacks 3 ledgers of 2:401"));
  EXPECT_TRUE(Has(gaps, "<tr class=\"bad\"><td>right</td><td>397 ledgers (2 to 401)</td><td>3 ledgers missing: 7, 9-10</td></tr>"))
      << gaps;
  EXPECT_TRUE(Has(gaps, ".banner.error,.banner.incomplete{"));
  EXPECT_TRUE(Has(gaps, "<pre class=\"look-again\">ledgerdiff verify-range --left L --right R --range 7:10 --all</pre>"));
}

TEST(RenderRange, MarkdownHasTheHeadlineRowDiffCoverageStateAndLookAgain) {
  const std::string m = report::RenderVerifyRangeMarkdown(DivergentRange());
  EXPECT_EQ(m.rfind("## \xe2\x9d\x8c ledgerdiff verify-range: divergent\n\n**Divergent at ledger 200**\n\n1 of 400 "
                    "ledgers compared differ",
                    0),
            0u)
      << m;
  EXPECT_TRUE(Has(m, "- coverage: left holds 400 ledgers (2 to 401)\n"));
  EXPECT_TRUE(Has(m, "| table | left rows | right rows | divergent ledgers | status |"));
  EXPECT_TRUE(Has(m, "Divergent tables at ledger 200: `history_effects`"));
  EXPECT_TRUE(Has(m, "<details><summary>Row diff of history_effects at ledger 200 (left 31 rows, right 30 rows)</summary>"));
  EXPECT_TRUE(Has(m, "- only left: history_operation_id='858993463297'"));
  EXPECT_TRUE(Has(m, "**State:**"));
  EXPECT_TRUE(Has(m, "Look again:\n\n```sh\n" + std::string(kLookAgain) + "\n```"));
  const std::string gaps = report::RenderVerifyRangeMarkdown(IncompleteRange());
  EXPECT_TRUE(Has(gaps, "ledgerdiff verify-range: incomplete\n\n**Incomplete: right lacks 3 ledgers of 2:401**")) << gaps;
  EXPECT_TRUE(Has(gaps, "- coverage: right holds 397 ledgers (2 to 401); 3 ledgers missing: 7, 9-10"));
}

TEST(RenderRange, JUnitHasTheHeadlineTableCasesCoverageStateAndLookAgain) {
  const std::string x = report::RenderVerifyRangeJUnit(DivergentRange());
  EXPECT_TRUE(Has(x, "<testsuite name=\"ledgerdiff.verify-range\"")) << x;
  EXPECT_TRUE(Has(x, "<property name=\"headline\" value=\"Divergent at ledger 200\"/>"));
  EXPECT_TRUE(Has(x, "<property name=\"first_divergent_ledger\" value=\"200\"/>"));
  EXPECT_TRUE(Has(x, "<property name=\"look_again\" value=\"ledgerdiff verify-range --left &apos;host=old") ||
              Has(x, "<property name=\"look_again\" value=\"ledgerdiff verify-range --left &#39;host=old"))
      << x;
  EXPECT_TRUE(Has(x, "<testcase classname=\"ledgerdiff.verify-range\" name=\"history_effects\">\n      <failure "
                     "message=\"history_effects: first divergent ledger 200; left 12,044 rows, right 12,043 rows"));
  EXPECT_TRUE(Has(x, "- only left: history_operation_id="));
  EXPECT_TRUE(Has(x, "look again: ledgerdiff verify-range"));
  EXPECT_TRUE(Has(x, "<testcase classname=\"ledgerdiff.verify-range\" name=\"coverage\">"));
  EXPECT_TRUE(Has(x, "<testcase classname=\"ledgerdiff.verify-range\" name=\"state\">\n      <failure"));
  const std::string gaps = report::RenderVerifyRangeJUnit(IncompleteRange());
  EXPECT_TRUE(Has(gaps, "name=\"coverage\">\n      <failure message=\"left holds 400 ledgers (2 to 401); right holds 397"))
      << gaps;
  EXPECT_TRUE(Has(report::RenderVerifyRangeJUnit(IdenticalRange()), "failures=\"0\" errors=\"0\""));
}

TEST(RenderRange, TheGateReportsAreTheseRenderersAndOwnTheirReport) {
  GateReports g;
  {
    const VerifyRangeReport r = DivergentRange();
    g = report::VerifyRangeReports(r);
  }  // the report is gone: the renderers hold a copy
  EXPECT_EQ(g.junit(), report::RenderVerifyRangeJUnit(DivergentRange()));
  EXPECT_EQ(g.markdown(), report::RenderVerifyRangeMarkdown(DivergentRange()));
  const fs::path dir = fs::temp_directory_path() / ("ledgerdiff-render-range-" + std::to_string(getpid()));
  ASSERT_TRUE(g.html(dir.string()).ok());
  std::stringstream page;
  page << std::ifstream(dir / "index.html").rdbuf();
  EXPECT_EQ(page.str(), report::RenderVerifyRangeHtml(DivergentRange()));
  fs::remove_all(dir);
  // A diff alone (verify-range --follow's finding without state) renders the same way.
  const GateReports d = report::VerifyRangeReports(DivergentRange().diff, kLookAgain);
  EXPECT_TRUE(Has(d.markdown(), "**Divergent at ledger 200**"));
}

// Every rendering is well-formed XML (HTML: from <html>, XHTML-compatible) for hostile data.
TEST(RenderRange, JUnitAndHtmlAreWellFormed) {
  for (const VerifyRangeReport& r : {DivergentRange(), IdenticalRange(), IncompleteRange()}) {
    SCOPED_TRACE(report::RangeHeadline(r));
    const std::string x = report::RenderVerifyRangeJUnit(r);
    EXPECT_EQ(CheckWellFormed(x), "") << x;
    const std::string h = report::RenderVerifyRangeHtml(r);
    EXPECT_EQ(CheckWellFormed(h.substr(h.find("<html"))), "") << h;
  }
}

// The generic gate page (verify-range --follow's, selftest's, chaos's) has a headline too.
TEST(RenderRange, TheGatePageBannerHasTheVerdictInCapitalsAndAHeadline) {
  const std::string gaps = report::RenderGateHtml(report::VerifyRangeGate(IncompleteRange().diff));
  EXPECT_TRUE(Has(gaps, "<div class=\"banner incomplete\" id=\"verdict\"><div class=\"word\">INCOMPLETE</div><div "
                        "class=\"what\"><span class=\"headline\">coverage</span>: incomplete: right: 3 ledgers missing"))
      << gaps;
  const std::string same = report::RenderGateHtml(report::VerifyRangeGate(IdenticalRange().diff));
  EXPECT_TRUE(Has(same, "<div class=\"word\">IDENTICAL</div><div class=\"what\">7 checks passed</div>")) << same;
}

// Pages for the browser test (into $LEDGERDIFF_RENDER_SAMPLE_DIR, else a scratch directory):
// divergent with state and long table names, identical, incomplete; each written whole and
// well-formed.
TEST(RenderRange, SamplePagesForBrowser) {
  const char* env = std::getenv("LEDGERDIFF_RENDER_SAMPLE_DIR");
  TempDir scratch("range-sample");
  const std::string dir = env && *env ? std::string(env) : scratch.path().string();
  VerifyRangeReport wide = DivergentRange();
  for (auto& t : wide.diff.tables) t.table += "_60000";
  for (auto& t : wide.diff.divergent_tables) t.table += "_60000";
  for (auto& rd : wide.diff.rows) rd.table += "_60000";
  const std::vector<std::pair<std::string, VerifyRangeReport>> pages = {
      {"verify-range-divergent", wide}, {"verify-range-identical", IdenticalRange()},
      {"verify-range-incomplete", IncompleteRange()}};
  for (const auto& [name, r] : pages) {
    ASSERT_TRUE(report::WriteHtmlReport(report::RenderVerifyRangeHtml(r), (fs::path(dir) / name).string()).ok())
        << name;
    const std::string page = ledgerdiff::testing::ReadFileBytes((fs::path(dir) / name / "index.html").string());
    ASSERT_GT(page.size(), 1000u) << name;
    EXPECT_EQ(CheckWellFormed(page.substr(page.find("<html"))), "") << name;
  }
}

}  // namespace
}  // namespace ledgerdiff::verify
