// sweep (issue 13): the USL fit and the recommendation rule as pure code, then the command
// end to end against the harness's real PostgreSQL: a small grid, a planted bug in parallel
// cells, the CSV and HTML outputs, and bad input.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/tempdir.h"
#include "report/sweep.h"
#include "tests/harness.h"
#include "verify/sweep.h"
#include "verify/usl.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunCli;
using testing::TestConninfo;

size_t Occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + needle.size())) ++n;
  return n;
}

std::vector<verify::UslPoint> Synthetic(double sigma, double kappa, double lambda, const std::vector<double>& ns) {
  std::vector<verify::UslPoint> pts;
  for (double n : ns) pts.push_back({n, lambda * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))});
  return pts;
}

// ---------------------------------------------------------------------------------------------
// USL fit

TEST(UslFit, RecoversExactCoefficients) {
  auto fit = verify::FitUsl(Synthetic(0.05, 0.002, 120, {1, 2, 4, 8, 16, 32}));
  ASSERT_TRUE(fit.fitted);
  EXPECT_NEAR(fit.sigma, 0.05, 1e-6);
  EXPECT_NEAR(fit.kappa, 0.002, 1e-8);
  EXPECT_NEAR(fit.lambda, 120, 1e-4);
  EXPECT_NEAR(fit.r_squared, 1, 1e-9);
  ASSERT_TRUE(fit.peak_workers.has_value());
  EXPECT_NEAR(*fit.peak_workers, std::sqrt(0.95 / 0.002), 1e-3);
  EXPECT_FALSE(fit.poor);
}

TEST(UslFit, RecoversCoefficientsUnderNoise) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);
  auto pts = Synthetic(0.08, 0.004, 200, {1, 2, 3, 4, 6, 8, 12, 16, 24});
  for (auto& p : pts) p.throughput *= 1 + noise(rng);
  auto fit = verify::FitUsl(pts);
  ASSERT_TRUE(fit.fitted);
  EXPECT_NEAR(fit.sigma, 0.08, 0.02);
  EXPECT_NEAR(fit.kappa, 0.004, 0.001);
  EXPECT_NEAR(fit.lambda, 200, 10);
  EXPECT_GT(fit.r_squared, 0.95);
  ASSERT_TRUE(fit.peak_workers.has_value());
  EXPECT_NEAR(*fit.peak_workers, std::sqrt(0.92 / 0.004), 3);
  EXPECT_FALSE(fit.poor);
}

TEST(UslFit, SaysWhenTheFitIsPoor) {
  // Two worker counts: no fit at all.
  auto two = verify::FitUsl(Synthetic(0.1, 0.01, 50, {1, 2}));
  EXPECT_FALSE(two.fitted);
  EXPECT_FALSE(two.notes.empty());
  // Three: an exact fit through three points proves nothing.
  auto three = verify::FitUsl(Synthetic(0.1, 0.01, 50, {1, 2, 4}));
  ASSERT_TRUE(three.fitted);
  EXPECT_TRUE(three.poor);
  // Superlinear throughput would need a negative σ: pinned at 0 and flagged.
  auto super = verify::FitUsl({{1, 10}, {2, 25}, {4, 60}, {8, 130}});
  ASSERT_TRUE(super.fitted);
  EXPECT_GE(super.sigma, 0);
  EXPECT_GE(super.kappa, 0);
  EXPECT_TRUE(super.poor);
  // Linear scaling: σ = κ = 0, no peak.
  auto linear = verify::FitUsl({{1, 10}, {2, 20}, {4, 40}, {8, 80}});
  ASSERT_TRUE(linear.fitted);
  EXPECT_NEAR(linear.sigma, 0, 1e-9);
  EXPECT_NEAR(linear.kappa, 0, 1e-9);
  EXPECT_FALSE(linear.peak_workers.has_value());
}

// ---------------------------------------------------------------------------------------------
// The recommendation rule

verify::SweepCell Cell(uint32_t workers, uint32_t job_size, std::vector<double> walls, bool identical = true) {
  verify::SweepCell c;
  c.workers = workers;
  c.job_size = job_size;
  for (double w : walls) {
    verify::SweepRepeat r;
    r.ok = true;
    r.identical = identical;
    if (!identical) r.first_divergent_ledger = 77;
    r.wall_s = w;
    r.rows = 1000;
    c.repeats.push_back(r);
  }
  verify::SummarizeCell(c, LedgerRange{1, 1000}, 10);
  return c;
}

TEST(SweepRecommend, NeverADivergentCellAndFewerWorkersWithinTheSpread) {
  // The fastest cell diverged: never chosen.
  auto rec = verify::Recommend({Cell(1, 100, {10, 10}), Cell(4, 100, {2, 2}, false), Cell(2, 100, {5, 5})});
  ASSERT_TRUE(rec.found);
  EXPECT_EQ(rec.workers, 2u);
  EXPECT_FALSE(rec.every_parallel_divergent);
  ASSERT_EQ(rec.divergent.size(), 1u);
  EXPECT_EQ(rec.divergent[0], "4x100 at ledger 77");
  // 4 workers are fastest but 2 workers lie within the measured spread: 2 win.
  rec = verify::Recommend({Cell(1, 100, {10, 10}), Cell(4, 100, {3.0, 3.6}), Cell(2, 100, {3.2, 3.3})});
  ASSERT_TRUE(rec.found);
  EXPECT_EQ(rec.workers, 2u);
  // Outside the spread: the fastest wins.
  rec = verify::Recommend({Cell(4, 100, {3.0, 3.1}), Cell(2, 100, {4.0, 4.1})});
  EXPECT_EQ(rec.workers, 4u);
  // A cell with one divergent repeat out of two is divergent.
  auto mixed = Cell(4, 100, {1, 1});
  mixed.repeats[1].identical = false;
  verify::SummarizeCell(mixed, LedgerRange{1, 1000}, 10);
  EXPECT_EQ(mixed.verdict, verify::CellVerdict::kDivergent);
  rec = verify::Recommend({mixed, Cell(1, 100, {9, 9})});
  EXPECT_EQ(rec.workers, 1u);
  EXPECT_TRUE(rec.every_parallel_divergent);
  // Only parallel cells, all divergent: nothing to recommend, and it says why.
  rec = verify::Recommend({Cell(2, 100, {1}, false), Cell(4, 100, {1}, false)});
  EXPECT_FALSE(rec.found);
  EXPECT_TRUE(rec.every_parallel_divergent);
  EXPECT_NE(rec.reason.find("every parallel cell diverged (2x100 at ledger 77, 4x100 at ledger 77)"),
            std::string::npos)
      << rec.reason;
}

TEST(SweepRecommend, SummaryOfACell) {
  auto c = Cell(2, 100, {4, 2, 3});
  EXPECT_DOUBLE_EQ(c.median_s, 3);
  EXPECT_DOUBLE_EQ(c.spread_s, 2);
  EXPECT_DOUBLE_EQ(c.ledgers_per_s, 1000.0 / 3);
  EXPECT_DOUBLE_EQ(c.speedup, 10.0 / 3);
  EXPECT_EQ(c.verdict, verify::CellVerdict::kIdentical);
}

TEST(SweepRecommend, SummaryOfACellHasItsInterval) {
  auto c = Cell(2, 100, {4, 2, 5});
  EXPECT_EQ(c.samples, 3u);
  EXPECT_TRUE(c.HasNoiseEstimate());
  EXPECT_DOUBLE_EQ(c.median_s, 4);
  EXPECT_DOUBLE_EQ(c.min_s, 2);
  EXPECT_DOUBLE_EQ(c.max_s, 5);
  EXPECT_DOUBLE_EQ(c.ledgers_per_s_min, 1000.0 / 5);  // the slowest repeat
  EXPECT_DOUBLE_EQ(c.ledgers_per_s_max, 1000.0 / 2);  // the fastest repeat
  EXPECT_EQ(c.Describe(), "2x100 4.00 s (2.00-5.00)");
  auto once = Cell(2, 100, {4});
  EXPECT_FALSE(once.HasNoiseEstimate());
  EXPECT_EQ(once.Describe(), "2x100 4.00 s (one repeat)");
}

TEST(SweepRecommend, AClearWinnerIsTheFastestAndSaysItIsBeyondTheNoise) {
  // 4x100's interval (3.0-3.3) lies wholly below 2x100's (6.0-6.4): 4 workers are faster for real.
  auto rec = verify::Recommend({Cell(1, 100, {10, 10.5, 11}), Cell(2, 100, {6, 6.2, 6.4}), Cell(4, 100, {3, 3.1, 3.3})});
  ASSERT_TRUE(rec.found);
  EXPECT_EQ(rec.workers, 4u);
  EXPECT_TRUE(rec.noise_estimate);
  EXPECT_TRUE(rec.within_noise.empty());
  EXPECT_EQ(rec.noise,
            "a clear winner: 4x100 3.10 s (3.00-3.30) is faster than the next-best identical cell, 2x100 6.20 s "
            "(6.00-6.40), beyond the noise (the intervals do not overlap)");
  EXPECT_NE(rec.reason.find("faster than the next-best (2x100) beyond the noise"), std::string::npos) << rec.reason;
}

TEST(SweepRecommend, WithinNoiseOfTheFastestFewerWorkersWinAndTheCellsAreNamed) {
  // 4x100 has the lowest median, but 2x100's and 8x100's intervals reach into its interval
  // (3.0-3.4); 1x100 is far off. The difference is noise: 2 workers are recommended.
  auto rec = verify::Recommend({Cell(1, 100, {10, 11, 12}), Cell(2, 100, {3.2, 3.3, 3.6}), Cell(4, 100, {3.0, 3.1, 3.4}),
                                Cell(8, 100, {3.35, 3.5, 3.9})});
  ASSERT_TRUE(rec.found);
  EXPECT_EQ(rec.workers, 2u);
  EXPECT_DOUBLE_EQ(rec.median_s, 3.3);
  EXPECT_TRUE(rec.noise_estimate);
  EXPECT_EQ(rec.within_noise, (std::vector<std::string>{"4x100", "2x100", "8x100"}));  // fastest first
  EXPECT_EQ(rec.noise,
            "the difference is within noise: 4x100 3.10 s (3.00-3.40), 2x100 3.30 s (3.20-3.60), 8x100 3.50 s "
            "(3.35-3.90) overlap; 2x100 has the fewest workers of them");
  EXPECT_EQ(rec.reason, "within noise of the fastest (4x100, 3.10 s) with fewer workers");
  // The same cells, the text says it under the recommendation.
  verify::SweepReport r;
  r.options.range = {1, 1000};
  r.options.workers = {1, 2, 4, 8};
  r.options.job_sizes = {100};
  r.cells = {Cell(2, 100, {3.2, 3.3, 3.6}), Cell(4, 100, {3.0, 3.1, 3.4})};
  r.recommendation = verify::Recommend(r.cells);
  std::string text = report::RenderSweepText(r);
  EXPECT_NE(text.find("recommendation: --workers 2 --job-size 100"), std::string::npos) << text;
  EXPECT_NE(text.find("\nthe difference is within noise: 4x100 3.10 s (3.00-3.40), 2x100 3.30 s (3.20-3.60) overlap"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  3.20-3.60 "), std::string::npos) << text;  // the interval column

  // Within noise and the fastest already has the fewest workers: it stays, and the line still says so.
  rec = verify::Recommend({Cell(2, 100, {3.0, 3.1, 3.4}), Cell(4, 100, {3.2, 3.3, 3.6})});
  EXPECT_EQ(rec.workers, 2u);
  EXPECT_EQ(rec.within_noise, (std::vector<std::string>{"2x100", "4x100"}));
  EXPECT_NE(rec.noise.find("2x100 is the fastest and has the fewest workers of them"), std::string::npos) << rec.noise;
  // Among equal worker counts within noise, the lower median.
  rec = verify::Recommend({Cell(4, 500, {3.0, 3.2, 3.4}), Cell(2, 100, {3.3, 3.4, 3.5}), Cell(2, 500, {3.1, 3.3, 3.5})});
  EXPECT_EQ(rec.workers, 2u);
  EXPECT_EQ(rec.job_size, 500u);
}

TEST(SweepRecommend, OneRepeatRecommendsTheFastestWithANoNoiseCaveat) {
  auto rec = verify::Recommend({Cell(1, 100, {10}), Cell(2, 100, {5.1}), Cell(4, 100, {5.0})});
  ASSERT_TRUE(rec.found);
  EXPECT_EQ(rec.workers, 4u);
  EXPECT_FALSE(rec.noise_estimate);
  EXPECT_TRUE(rec.within_noise.empty());
  EXPECT_EQ(rec.noise.rfind("no noise estimate: cells were measured once (--repeat 1)", 0), 0u) << rec.noise;
  EXPECT_NE(rec.reason.find("no noise estimate"), std::string::npos) << rec.reason;
  verify::SweepReport r;
  r.options.range = {1, 1000};
  r.options.repeat = 1;
  r.options.workers = {2, 4};
  r.options.job_sizes = {100};
  r.cells = {Cell(2, 100, {5.1}), Cell(4, 100, {5.0})};
  r.recommendation = verify::Recommend(r.cells);
  std::string text = report::RenderSweepText(r);
  EXPECT_NE(text.find("\nno noise estimate: "), std::string::npos) << text;
  EXPECT_EQ(text.find("0.00-"), std::string::npos) << text;  // no interval is made up from one repeat
  std::string html = report::RenderSweepHtml(r);
  EXPECT_NE(html.find("<p class=\"noise\">no noise estimate: "), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The HTML: heatmap scale and legends

// The attribute `name` of every element in `svg` that starts with `open` ("<rect class=\"cell identical\"").
std::vector<std::string> Attributes(const std::string& svg, const std::string& open, const std::string& name) {
  std::vector<std::string> out;
  for (size_t p = svg.find(open); p != std::string::npos; p = svg.find(open, p + 1)) {
    size_t end = svg.find('>', p);
    std::string tag = svg.substr(p, end - p);
    size_t a = tag.find(" " + name + "=\"");
    if (a == std::string::npos) {
      out.push_back("");
      continue;
    }
    a += name.size() + 3;
    out.push_back(tag.substr(a, tag.find('"', a) - a));
  }
  return out;
}

std::array<int, 3> Rgb(const std::string& hex) {
  EXPECT_EQ(hex.size(), 7u) << hex;
  if (hex.size() != 7) return {0, 0, 0};
  return {std::stoi(hex.substr(1, 2), nullptr, 16), std::stoi(hex.substr(3, 2), nullptr, 16),
          std::stoi(hex.substr(5, 2), nullptr, 16)};
}

std::string Svg(const std::string& html, const std::string& cls) {
  size_t at = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" + cls + "\"");
  EXPECT_NE(at, std::string::npos) << cls;
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</svg>", at) - at);
}

// Two identical cells at 1,396 and 1,627 ledgers/s (range 1:1000), three repeats each.
verify::SweepReport CloseCellsReport() {
  verify::SweepReport r;
  r.options.range = {1, 1000};
  r.options.workers = {1, 2};
  r.options.job_sizes = {100};
  r.cells = {Cell(1, 100, {1000 / 1400.0, 1000 / 1396.0, 1000 / 1380.0}),
             Cell(2, 100, {1000 / 1640.0, 1000 / 1627.0, 1000 / 1600.0})};
  r.recommendation = verify::Recommend(r.cells);
  r.usl_job_size = 100;
  return r;
}

TEST(SweepHtml, HeatmapScaleRunsFromZeroAndItsLegendIsTheScaleDrawn) {
  verify::SweepReport r = CloseCellsReport();
  ASSERT_NEAR(r.cells[0].ledgers_per_s, 1396, 1e-6);
  ASSERT_NEAR(r.cells[1].ledgers_per_s, 1627, 1e-6);
  std::string heat = Svg(report::RenderSweepHtml(r), "heatmap");
  auto fills = Attributes(heat, "<rect class=\"cell identical\"", "fill");
  ASSERT_EQ(fills.size(), 2u) << heat;
  // The legend's scale: a gradient between two stops, labelled 0 and the top value.
  auto stops = Attributes(heat, "<stop ", "stop-color");
  auto offsets = Attributes(heat, "<stop ", "offset");
  ASSERT_EQ(stops.size(), 2u) << heat;
  EXPECT_EQ(offsets, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(Attributes(heat, "<rect class=\"scale\"", "data-min"), std::vector<std::string>{"0"});
  EXPECT_EQ(Attributes(heat, "<rect class=\"scale\"", "data-max"), std::vector<std::string>{"1627"});
  EXPECT_NE(heat.find(">0</text>"), std::string::npos);
  EXPECT_NE(heat.find(">1627 ledgers/s</text>"), std::string::npos);
  // Each cell's fill is the legend's colour at its value: low + (high - low) * value / 1627.
  auto low = Rgb(stops[0]), high = Rgb(stops[1]);
  for (size_t i = 0; i < 2; ++i) {
    double t = r.cells[i].ledgers_per_s / 1627.0;
    auto rgb = Rgb(fills[i]);
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(rgb[k], low[k] + (high[k] - low[k]) * t, 1.0) << r.cells[i].Name() << " " << fills[i];
  }
  // So the slower cell is nearly as dark as the faster, far from the light end (and from white).
  auto slow = Rgb(fills[0]);
  EXPECT_NE(fills[0], "#ffffff");
  for (int k = 0; k < 3; ++k) EXPECT_LT(std::abs(slow[k] - high[k]), std::abs(slow[k] - low[k])) << fills[0];
  // Each cell shows its interval in ledgers/s under its median.
  EXPECT_NE(heat.find(">1380-1400</text>"), std::string::npos) << heat;
  // Legend marks only for what occurs: the recommendation is outlined, nothing diverged or failed.
  EXPECT_EQ(Attributes(heat, "<rect class=\"key recommended\"", "stroke"), std::vector<std::string>{"#1a7f37"});
  EXPECT_EQ(heat.find("class=\"key divergent\""), std::string::npos);
  EXPECT_EQ(heat.find("class=\"key failed\""), std::string::npos);
  // A divergent cell brings its legend entry, drawn as the cell is.
  r.cells[1].repeats[0].identical = false;
  r.cells[1].repeats[0].first_divergent_ledger = 40;
  verify::SummarizeCell(r.cells[1], r.options.range, 0);
  r.recommendation = verify::Recommend(r.cells);
  heat = Svg(report::RenderSweepHtml(r), "heatmap");
  EXPECT_EQ(Attributes(heat, "<rect class=\"key divergent\"", "fill"),
            Attributes(heat, "<rect class=\"cell divergent\"", "fill"));
}

TEST(SweepHtml, TheUslLegendEntryAppearsOnlyWithItsLineAndDrawsItsDash) {
  verify::SweepReport r = CloseCellsReport();
  // No fit (two worker counts): no line, no legend entry.
  r.usl = verify::FitUsl({{1, 1396}, {2, 1627}});
  ASSERT_FALSE(r.usl.fitted);
  std::string curve = Svg(report::RenderSweepHtml(r), "throughput");
  EXPECT_EQ(curve.find("class=\"usl\""), std::string::npos);
  EXPECT_EQ(curve.find("Universal Scalability Law"), std::string::npos) << curve;
  EXPECT_EQ(curve.find("USL"), std::string::npos) << curve;
  // The measured medians carry their min-max bars, and the legend says so.
  EXPECT_EQ(Attributes(curve, "<line class=\"interval\"", "x1").size(), 2u);
  EXPECT_NE(curve.find("bar: min-max of its repeats"), std::string::npos);
  // A poor fit: dashed line, and a dashed legend entry that says it is a poor fit.
  r.usl = verify::FitUsl({{1, 1000}, {2, 1700}, {4, 2500}});
  ASSERT_TRUE(r.usl.fitted);
  ASSERT_TRUE(r.usl.poor);
  curve = Svg(report::RenderSweepHtml(r), "throughput");
  EXPECT_EQ(Attributes(curve, "<path class=\"usl\"", "stroke-dasharray"), std::vector<std::string>{"6 4"});
  EXPECT_EQ(Attributes(curve, "<line class=\"usl-key\"", "stroke-dasharray"), std::vector<std::string>{"6 4"});
  EXPECT_NE(curve.find("Universal Scalability Law fit (dashed: a poor fit, see below)"), std::string::npos) << curve;
  // A good fit: solid line, solid entry, no "poor".
  r.usl = verify::FitUsl(Synthetic(0.05, 0.002, 120, {1, 2, 4, 8, 16}));
  ASSERT_TRUE(r.usl.fitted);
  ASSERT_FALSE(r.usl.poor);
  curve = Svg(report::RenderSweepHtml(r), "throughput");
  EXPECT_EQ(Attributes(curve, "<path class=\"usl\"", "stroke-dasharray"), std::vector<std::string>{"none"});
  EXPECT_EQ(Attributes(curve, "<line class=\"usl-key\"", "stroke-dasharray"), std::vector<std::string>{"none"});
  EXPECT_NE(curve.find("Universal Scalability Law fit</text>"), std::string::npos) << curve;
  EXPECT_EQ(curve.find("poor"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The command

std::vector<std::string> SweepArgs(std::vector<std::string> extra) {
  std::vector<std::string> a = {"sweep",         "--db",    TestConninfo(), "--range", "2:301", "--workers",
                                "1,2",           "--job-size", "50,100",    "--density", "flat",
                                "--retry-backoff", "0.05"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Keys listed in the first column of the README table under `heading` (until the next heading).
std::set<std::string> DocumentedKeys(const std::string& heading) {
  std::string readme = testing::ReadFileBytes(fs::path(testing::SourceDir()) / "verify" / "README.md");
  size_t at = readme.find(heading);
  EXPECT_NE(at, std::string::npos) << heading;
  if (at == std::string::npos) return {};
  size_t end = readme.find("\n#", at + heading.size());
  std::string section = readme.substr(at, end == std::string::npos ? std::string::npos : end - at);
  std::set<std::string> keys;
  std::regex row(R"(\n\| ([^|]+)\|)");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), row); it != std::sregex_iterator(); ++it) {
    std::string cell = (*it)[1];
    std::regex key("`([a-z_]+)`");
    for (auto k = std::sregex_iterator(cell.begin(), cell.end(), key); k != std::sregex_iterator(); ++k)
      keys.insert((*k)[1]);
  }
  return keys;
}

std::set<std::string> Keys(const json& j) {
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  return keys;
}

std::set<std::string> SweepSchemas(const std::string& run_id) {
  auto conn = testing::Connect();
  auto rows = conn->Exec("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", {"ld_" + run_id + "_"});
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  std::set<std::string> out;
  if (rows.ok())
    for (int i = 0; i < rows->size(); ++i) out.insert(std::string(rows->Get(i, 0)));
  return out;
}

// Issue 46: sweep plans its phases (SweepPlan): the reference's warm-up and --repeat runs and its
// digest, then per cell and repeat its ingest, digest, diff and drop. For SweepArgs' four cells at
// --repeat 2 that is 4 + 4 * 2 * 3 = 28 phases; every log line ends with the command's fraction,
// the phase it is of, in the plan's order, and the reference's digest and the last cell's are seen.
void ExpectSweepPlanLines(const std::string& err) {
  static const std::regex progress(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (.*)$)");
  static const std::regex suffix(R"(.*; sweep (\d+)%(?: \((.+), phase (\d+) of (\d+)\))?(?:, ETA .+)?$)");
  std::vector<std::string> names;  // as the plan lists them
  names.push_back("reference warm-up");
  for (int k = 1; k <= 2; ++k) names.push_back("reference " + std::to_string(k) + "/2");
  names.push_back("reference digest");
  for (int c = 1; c <= 4; ++c)
    for (int k = 1; k <= 2; ++k)
      for (const char* step : {"ingest", "digest", "diff and drop"})
        names.push_back("cell " + std::to_string(c) + "/4 repeat " + std::to_string(k) + "/2: " + step);
  ASSERT_EQ(names.size(), 28u);
  std::istringstream in(err);
  size_t lines = 0, last_index = 0;
  std::set<std::string> seen;
  for (std::string line; std::getline(in, line);) {
    if (!std::regex_match(line, progress)) continue;
    ++lines;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, suffix)) << "'" << line << "' in:\n" << err;
    EXPECT_LE(std::stoi(m[1]), 100) << line;
    if (!m[2].matched) continue;
    const size_t index = std::stoul(m[3]);
    EXPECT_EQ(m[4].str(), "28") << line;
    ASSERT_GE(index, 1u) << line;
    ASSERT_LE(index, names.size()) << line;
    EXPECT_EQ(m[2].str(), names[index - 1]) << line;
    EXPECT_GE(index, last_index) << "a phase went back: " << line << "\nin:\n" << err;
    last_index = index;
    seen.insert(m[2]);
  }
  EXPECT_GT(lines, 0u) << err;
  EXPECT_TRUE(seen.count("reference digest")) << err;
  EXPECT_TRUE(seen.count("cell 4/4 repeat 2/2: digest")) << err;
}

TEST(SweepCommand, SmallGridIsIdenticalRecommendsAndWritesEveryOutput) {
  fs::path dir = testing::FreshTempDir("sweep");
  auto r = RunCli(SweepArgs({"--repeat", "2", "--format", "json", "--csv", (dir / "cells.csv").string(), "--report",
                             (dir / "report").string(), "--progress-interval", "0"}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_TRUE(j["all_identical"].get<bool>());
  ExpectSweepPlanLines(r.err);
  ASSERT_EQ(j["cells"].size(), 4u);
  for (const auto& c : j["cells"]) {
    EXPECT_EQ(c["verdict"], "identical");
    EXPECT_EQ(c["repeats"].size(), 2u);
    EXPECT_GT(c["median_s"].get<double>(), 0);
    EXPECT_GT(c["ledgers_per_s"].get<double>(), 0);
    EXPECT_GT(c["rows_per_s"].get<double>(), 0);
    EXPECT_GT(c["speedup"].get<double>(), 0);
    EXPECT_GE(c["attempts"].get<uint32_t>(), 2 * c["jobs"].get<uint32_t>());
    // Each worker holds a session of its own during the cell.
    EXPECT_GE(c["peak_connections"].get<uint32_t>(), c["workers"].get<uint32_t>());
    EXPECT_TRUE(c["first_divergent_ledger"].is_null());
    // The interval: min-max over the two repeats, in seconds and in ledgers/s.
    EXPECT_EQ(c["samples"], 2);
    EXPECT_LE(c["min_s"].get<double>(), c["median_s"].get<double>());
    EXPECT_LE(c["median_s"].get<double>(), c["max_s"].get<double>());
    EXPECT_LE(c["ledgers_per_s_min"].get<double>(), c["ledgers_per_s"].get<double>());
    EXPECT_LE(c["ledgers_per_s"].get<double>(), c["ledgers_per_s_max"].get<double>());
    EXPECT_NEAR(c["ledgers_per_s_max"].get<double>() * c["min_s"].get<double>(), 300, 1e-6);
  }
  EXPECT_TRUE(j["recommendation"]["noise_estimate"].get<bool>());
  EXPECT_TRUE(j["recommendation"]["noise"].is_string());
  EXPECT_EQ(j["cells"][0]["jobs"], 6);
  EXPECT_EQ(j["cells"][1]["jobs"], 3);
  ASSERT_TRUE(j["recommendation"]["found"].get<bool>());
  EXPECT_FALSE(j["recommendation"]["every_parallel_divergent"].get<bool>());
  EXPECT_TRUE(j["reference"]["schema"].is_null());
  // Issue 46: the reference is measured like a cell: a warm-up, then --repeat timed runs whose
  // median is the speed-up's denominator (a cold single run made the reference's own cell read
  // 1.46x serial).
  const std::vector<double> runs = j["reference"]["runs_s"];
  ASSERT_EQ(runs.size(), 2u) << j["reference"];
  EXPECT_GT(j["reference"]["warmup_s"].get<double>(), 0) << j["reference"];
  EXPECT_NEAR(j["reference"]["seconds"].get<double>(), (runs[0] + runs[1]) / 2, 1e-9) << j["reference"];
  EXPECT_NE(r.err.find("warm-up (not timed)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("_reference_r2\", repeat 2/2"), std::string::npos) << r.err;  // run 2 into its own schema...
  // The documented keys are exactly the emitted ones.
  EXPECT_EQ(Keys(j), DocumentedKeys("## `sweep --format json`"));
  EXPECT_EQ(Keys(j["cells"][0]), DocumentedKeys("### sweep cells"));
  // Nothing is left behind after a clean sweep (...and the warm-up's and run 2's schemas are gone too).
  EXPECT_TRUE(SweepSchemas(j["run_id"]).empty());

  std::string csv = testing::ReadFileBytes(dir / "cells.csv");
  EXPECT_EQ(Occurrences(csv, "\n"), 5u) << csv;
  EXPECT_EQ(csv.rfind("workers,job_size,jobs,verdict,", 0), 0u);
  EXPECT_NE(csv.find(",samples,ledgers_per_s_min,ledgers_per_s_max,within_noise\n"), std::string::npos) << csv;
  EXPECT_EQ(Occurrences(csv, ",identical,"), 4u);
  EXPECT_EQ(Occurrences(csv, ",true,"), 1u);  // the recommended cell

  std::string html = testing::ReadFileBytes(dir / "report" / "index.html");
  size_t heat = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\"");
  ASSERT_NE(heat, std::string::npos);
  std::string heatmap = html.substr(heat, html.find("</svg>", heat) - heat);
  EXPECT_EQ(Occurrences(heatmap, "<rect class=\"cell "), 4u);
  EXPECT_NE(html.find("class=\"throughput\""), std::string::npos);
  fs::remove_all(dir);
}

TEST(SweepCommand, PlantedBugInParallelCellsIsNeverRecommended) {
  auto r = RunCli(SweepArgs({"--inject-bug", "skip-ledger@150", "--repeat", "1", "--format", "json"}));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json j = json::parse(r.out);
  for (const auto& c : j["cells"]) {
    if (c["workers"] == 1) {
      EXPECT_EQ(c["verdict"], "identical");
      EXPECT_FALSE(c["bug_injected"].get<bool>());
    } else {
      EXPECT_EQ(c["verdict"], "divergent");
      EXPECT_EQ(c["first_divergent_ledger"], 150);
      EXPECT_TRUE(c["repeats"][0]["kept"].get<bool>());
    }
  }
  const auto& rec = j["recommendation"];
  ASSERT_TRUE(rec["found"].get<bool>());
  EXPECT_EQ(rec["workers"], 1);
  EXPECT_TRUE(rec["every_parallel_divergent"].get<bool>());
  EXPECT_FALSE(rec["noise_estimate"].get<bool>());  // one repeat: and it says so
  EXPECT_EQ(rec["noise"].get<std::string>().rfind("no noise estimate: ", 0), 0u) << rec["noise"];
  EXPECT_EQ(rec["divergent_cells"], json({"2x50 at ledger 150", "2x100 at ledger 150"}));
  EXPECT_NE(r.err.find("every parallel cell diverged: 2x50 at ledger 150, 2x100 at ledger 150"), std::string::npos)
      << r.err;
  // The evidence stays: the divergent cells and the reference; the identical cells are gone.
  auto kept = SweepSchemas(j["run_id"]);
  std::string run = j["run_id"];
  EXPECT_EQ(kept, (std::set<std::string>{"ld_" + run + "_reference", "ld_" + run + "_w2_j50_r1",
                                         "ld_" + run + "_w2_j100_r1"}));
  // Clean up through the tool's own ownership rule.
  auto conn = testing::Connect();
  for (const auto& s : kept) ASSERT_TRUE(conn->Run("DROP SCHEMA \"" + s + "\" CASCADE").ok());
}

// Issue 24: the server-hash engine digests the reference and the cells, and finds the same bug.
TEST(SweepCommand, TheServerHashEngineFindsThePlantedBugAtTheSameLedger) {
  auto r = RunCli({"sweep", "--db", TestConninfo(), "--range", "2:301", "--workers", "2", "--job-size", "100",
                   "--density", "flat", "--retry-backoff", "0.05", "--repeat", "1", "--engine", "server-hash",
                   "--inject-bug", "skip-ledger@150", "--format", "json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["engine"], "server-hash");
  ASSERT_EQ(j["cells"].size(), 1u);
  EXPECT_EQ(j["cells"][0]["verdict"], "divergent");
  EXPECT_EQ(j["cells"][0]["first_divergent_ledger"], 150);
  auto conn = testing::Connect();
  for (const auto& s : SweepSchemas(j["run_id"])) ASSERT_TRUE(conn->Run("DROP SCHEMA \"" + s + "\" CASCADE").ok());
}

TEST(SweepCommand, AFailingExternalIngesterFailsItsCellAndTheSweepGoesOn) {
  // A source to copy from, then an ingester that refuses every 2-worker cell (its schema
  // names the cell) and copies correctly otherwise.
  const std::string source = testing::UniqueName("sweep_source");
  auto ingest = RunCli({"ingest", "--db", TestConninfo(), "--schema", source, "--range", "2:161", "--workers", "2",
                        "--job-size", "40", "--profile", "flat"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  const std::string script = (fs::path(testing::SourceDir()) / "tests" / "ingesters" / "copy_from_source.sh").string();
  const std::string cmd = "case {schema} in *_w2_*) echo refused >&2; exit 3;; esac; '" + script +
                          "' {from} {to} {schema}";
  auto r = RunCli({"sweep", "--db", TestConninfo(), "--range", "2:161", "--workers", "1,2", "--job-size", "40",
                   "--retries", "0", "--repeat", "1", "--ingest-cmd", cmd, "--format", "json"},
                  {"LEDGERDIFF_TEST_SOURCE_SCHEMA=" + source});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json j = json::parse(r.out);
  ASSERT_EQ(j["cells"].size(), 2u);
  EXPECT_EQ(j["cells"][0]["verdict"], "identical");
  EXPECT_EQ(j["cells"][1]["verdict"], "failed");
  EXPECT_TRUE(j["cells"][1]["error"].is_string());
  EXPECT_FALSE(j["cells"][1]["repeats"][0]["ok"].get<bool>());
  EXPECT_EQ(j["recommendation"]["workers"], 1);
  EXPECT_FALSE(j["recommendation"]["every_parallel_divergent"].get<bool>());
  EXPECT_TRUE(SweepSchemas(j["run_id"]).empty());
  auto conn = testing::Connect();
  ASSERT_TRUE(conn->Run("DROP SCHEMA \"" + source + "\" CASCADE").ok());
}

TEST(SweepCommand, ABaselineManifestStandsInForTheSerialIngest) {
  fs::path dir = testing::FreshTempDir("sweep-baseline");
  const std::string base = (dir / "base.ldm").string();
  auto v = RunCli({"verify", "--db", TestConninfo(), "--range", "2:301", "--workers", "2", "--job-size", "50",
                   "--density", "flat", "--save-baseline", base});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  auto r = RunCli({"sweep", "--db", TestConninfo(), "--range", "2:301", "--workers", "1,2", "--job-size", "100",
                   "--density", "flat", "--baseline", base, "--repeat", "1", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["reference"]["source"], "manifest " + base);
  EXPECT_EQ(j["reference"]["seconds"], 0);
  EXPECT_EQ(j["baseline"], base);
  ASSERT_EQ(j["cells"].size(), 2u);
  // The 1-worker cell is the serial time the speed-up is measured against.
  EXPECT_DOUBLE_EQ(j["cells"][0]["speedup"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["cells"][1]["speedup"].get<double>(),
                   j["cells"][0]["median_s"].get<double>() / j["cells"][1]["median_s"].get<double>());
  EXPECT_TRUE(SweepSchemas(j["run_id"]).empty());
  EXPECT_EQ(j["engine"], "text");  // the baseline's
  // Issue 24: an --engine other than the baseline's is refused before anything runs, naming both.
  auto engine = RunCli({"sweep", "--db=host=/nonexistent/ledgerdiff port=1 dbname=none", "--range", "2:301",
                        "--workers", "1,2", "--job-size", "100", "--density", "flat", "--baseline", base, "--engine",
                        "server-hash"});
  EXPECT_EQ(engine.exit_code, 2) << engine.err;
  EXPECT_NE(engine.err.find("made by engine text, but --engine is server-hash"), std::string::npos) << engine.err;
  EXPECT_EQ(std::count(engine.err.begin(), engine.err.end(), '\n'), 1) << engine.err;
  // A baseline of another range is refused before anything runs.
  auto bad = RunCli({"sweep", "--db=host=/nonexistent/ledgerdiff port=1 dbname=none", "--range", "2:302", "--workers",
                     "1,2", "--job-size", "100", "--baseline", base});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("it covers ledgers 2:301"), std::string::npos) << bad.err;
  // Issue 22: so is a baseline of another density, naming both.
  auto stellar = RunCli({"sweep", "--db=host=/nonexistent/ledgerdiff port=1 dbname=none", "--range", "2:301",
                         "--workers", "1,2", "--job-size", "100", "--density", "stellar", "--baseline", base});
  EXPECT_EQ(stellar.exit_code, 2) << stellar.err;
  EXPECT_NE(stellar.err.find("made with --density flat, but this sweep uses --density stellar"), std::string::npos)
      << stellar.err;
  EXPECT_EQ(std::count(stellar.err.begin(), stellar.err.end(), '\n'), 1) << stellar.err;
  fs::remove_all(dir);
}

// Issue 22: a SIGKILLed sweep left its reference manifest in TMPDIR for good. It lives in an
// owned temporary directory now, which the next run reaps like every other leftover.
TEST(SweepCommand, AKilledSweepsReferenceManifestIsReapedByTheNextRun) {
  testing::ScratchDir tmp("sweep-tmpdir-");
  const std::string err = tmp.path + "/sweep.err";
  auto leftovers = [&] {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(tmp.path))
      if (e.path().filename().string().rfind("ledgerdiff-sweep-", 0) == 0) out.push_back(e.path().string());
    return out;
  };
  const pid_t pid = testing::SpawnCli(SweepArgs({"--repeat", "3"}), {.stderr_path = err, .env = {"TMPDIR=" + tmp.path}});
  // Killed as soon as its owned directory is complete: its owner marker written whole (polled,
  // with a deadline). Killed between mkdtemp and that write, the directory is reaped only once it
  // is older than kUnmarkedGrace (safety_test covers that case).
  auto marked = [&] {
    for (const auto& d : leftovers())
      if (testing::ReadFileBytes(fs::path(d) / kOwnerMarkerFile).find("boot=") != std::string::npos) return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!marked() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(pid, SIGKILL);
  EXPECT_EQ(testing::WaitExitCode(pid), 128 + SIGKILL);
  const std::vector<std::string> left = leftovers();
  EXPECT_EQ(left.size(), 1u) << "the sweep never wrote its reference manifest";
  // The next run (any command that opens a database) removes it and says so.
  auto next = RunCli({"runs", "--db", TestConninfo()}, {"TMPDIR=" + tmp.path});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(leftovers(), std::vector<std::string>{}) << next.err;
  if (!left.empty()) {
    EXPECT_NE(next.err.find(left[0]), std::string::npos) << next.err;
  }
  // What the killed sweep left in the database: its schemas (found by the run id it printed).
  const std::string log = testing::ReadFileBytes(err);
  const std::smatch m = [&] {
    std::smatch found;
    std::regex_search(log, found, std::regex("\"ld_([0-9a-f_]+)_reference\""));
    return found;
  }();
  ASSERT_EQ(m.size(), 2u) << log;
  auto conn = testing::Connect();
  for (const auto& schema : SweepSchemas(m[1].str()))
    EXPECT_TRUE(conn->Run("DROP SCHEMA \"" + schema + "\" CASCADE").ok()) << schema;
}

TEST(SweepCommand, RepeatDefaultsToThree) {
  // The CLI definition: --help shows the default (and so do the man page and completions built from it).
  auto help = RunCli({"sweep", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_TRUE(std::regex_search(help.out, std::regex(R"(\n\s+--repeat UINT=3\s)"))) << help.out;
  // And a sweep without --repeat measures each cell three times.
  auto r = RunCli({"sweep", "--db", TestConninfo(), "--range", "2:101", "--workers", "1", "--job-size", "100",
                   "--density", "flat", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["repeat"], 3);
  ASSERT_EQ(j["cells"].size(), 1u);
  EXPECT_EQ(j["cells"][0]["repeats"].size(), 3u);
  EXPECT_EQ(j["cells"][0]["samples"], 3);
  EXPECT_TRUE(j["recommendation"]["noise_estimate"].get<bool>());
  EXPECT_TRUE(SweepSchemas(j["run_id"]).empty());
}

TEST(SweepCommand, BadInputExitsTwoWithOneLineBeforeAnythingRuns) {
  // An unreachable database proves nothing ran: the flags are refused first.
  const std::string nowhere = "--db=host=/nonexistent/ledgerdiff port=1 dbname=none";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--workers", ""}, "--workers"},
      {{"--workers", "1,,2"}, "empty item"},
      {{"--workers", "1,2,1"}, "listed twice"},
      {{"--job-size", "0,50"}, "0 is not allowed"},
      {{"--workers", "1,500"}, "500 is too large (at most 64)"},
      {{"--workers", "x"}, "not a positive integer"},
      {{"--job-size", "50,100000"}, "larger than the range"},
      {{"--workers", "1,8", "--job-size", "100"}, "has only 3 jobs for 8 workers"},
      {{"--repeat", "0"}, "--repeat"},
      {{"--inject-bug", "skip-ledger@150", "--workers", "1"}, "parallel cells only"},
      {{"--range", "9:3"}, "range"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"sweep", nowhere};
    args.insert(args.end(), c.args.begin(), c.args.end());
    // The flags a case does not set take the values of a valid small sweep.
    for (auto [flag, value] : {std::pair{"--range", "2:301"}, {"--workers", "1,2"}, {"--job-size", "50,100"}}) {
      if (std::find(c.args.begin(), c.args.end(), flag) != c.args.end()) continue;
      args.push_back(flag);
      args.push_back(value);
    }
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_EQ(Occurrences(r.err, "\n"), 1u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace ledgerdiff
