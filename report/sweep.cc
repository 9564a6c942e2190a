#include "report/sweep.h"

#include "report/escape.h"
#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "core/report.h"

namespace ledgerdiff::report {

using namespace verify;

namespace {

using nlohmann::json;

json OptLedger(const std::optional<Ledger>& l) { return l ? json(*l) : json(nullptr); }
json OptString(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// The sweep JSON's "usl" object.
nlohmann::json UslFitToJson(const UslFit& fit) {
  nlohmann::json peak = fit.peak_workers ? nlohmann::json(*fit.peak_workers) : nlohmann::json(nullptr);
  return {{"fitted", fit.fitted}, {"sigma", fit.sigma},     {"kappa", fit.kappa}, {"lambda", fit.lambda},
          {"r_squared", fit.r_squared}, {"points", fit.points}, {"peak_workers", peak}, {"poor", fit.poor},
          {"notes", fit.notes}};
}

// One repeat and one cell of the grid (keys: verify/README.md), a line per aspect: the outcome,
// the time, the work, where it lies.
json RepeatJson(const SweepRepeat& x) {
  return {{"ok", x.ok}, {"identical", x.identical}, {"first_divergent_ledger", OptLedger(x.first_divergent_ledger)},
          {"error", OptString(x.error)},
          {"wall_s", x.wall_s}, {"rows", x.rows},
          {"attempts", x.attempts}, {"retried_jobs", x.retried_jobs}, {"peak_connections", x.peak_connections},
          {"schema", x.schema}, {"kept", x.kept}};
}

json CellJson(const SweepCell& c) {
  json repeats = json::array();
  for (const auto& x : c.repeats) repeats.push_back(RepeatJson(x));
  return {{"workers", c.workers}, {"job_size", c.job_size}, {"jobs", c.jobs}, {"bug_injected", c.bug_injected},
          {"verdict", verify::ToString(c.verdict)}, {"first_divergent_ledger", OptLedger(c.first_divergent_ledger)},
          {"error", OptString(c.error)},
          {"samples", c.samples},
          {"median_s", c.median_s}, {"min_s", c.min_s}, {"max_s", c.max_s}, {"spread_s", c.spread_s},
          {"ledgers_per_s", c.ledgers_per_s}, {"ledgers_per_s_min", c.ledgers_per_s_min},
          {"ledgers_per_s_max", c.ledgers_per_s_max}, {"rows_per_s", c.rows_per_s}, {"speedup", c.speedup},
          {"attempts", c.attempts}, {"retries", c.retries}, {"peak_connections", c.peak_connections},
          {"repeats", repeats}};
}

std::string UslLine(const SweepReport& r) {
  const UslFit& f = r.usl;
  if (!r.usl_job_size) return "USL fit: no identical cell to fit";
  std::string head = fmt::format("USL fit at jobs of {}: ", r.usl_job_size);
  if (!f.fitted) return head + "not fitted (" + fmt::format("{}", fmt::join(f.notes, "; ")) + ")";
  std::string peak = f.peak_workers ? fmt::format("predicted peak at {:.1f} workers", *f.peak_workers)
                                    : std::string("no peak predicted");
  return head + fmt::format("σ={:.4f} κ={:.5f} λ={:.1f} ledgers/s, R²={:.3f}, {}{}", f.sigma, f.kappa, f.lambda,
                            f.r_squared, peak,
                            f.poor ? fmt::format(" — poor fit: {}", fmt::join(f.notes, "; ")) : std::string());
}

std::string RecommendationLine(const SweepRecommendation& rec) {
  if (!rec.found) return "recommendation: none — " + rec.reason;
  return fmt::format("recommendation: --workers {} --job-size {} ({:.2f} s, {:.0f} ledgers/s{}) — {}", rec.workers,
                     rec.job_size, rec.median_s, rec.ledgers_per_s,
                     rec.speedup > 0 ? fmt::format(", {:.2f}x serial", rec.speedup) : std::string(), rec.reason);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// An SVG coordinate with one decimal.
std::string Svg1(double v) { return fmt::format("{:.1f}", v); }

// A cell's interval of wall times, "2.95-3.40", or "-" when it was measured once (no interval).
std::string Interval(const SweepCell& c) {
  return c.HasNoiseEstimate() ? fmt::format("{:.2f}-{:.2f}", c.min_s, c.max_s) : std::string("-");
}

// The heatmap's colour scale: light blue at 0 ledgers/s to dark blue at the scale's top, linear in
// RGB (so an SVG linearGradient between the two ends draws exactly the same colours).
constexpr int kScaleLow[3] = {0xdd, 0xeb, 0xf7};
constexpr int kScaleHigh[3] = {0x0a, 0x3d, 0x91};

std::string Blue(double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto mix = [t](int i) { return static_cast<int>(std::lround(kScaleLow[i] + (kScaleHigh[i] - kScaleLow[i]) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2));
}

// The heatmap's geometry and what its legend shows: the colour scale's top (the fastest
// identical cell's median ledgers/s) and which marks occur.
struct HeatmapLayout {
  static constexpr double cw = 120, ch = 48, left = 90, top = 40;
  double hi = 0;
  bool any_divergent = false, any_failed = false, any_identical = false;
  double grid_w = 0, legend_y = 0, width = 0, height = 0;
};

HeatmapLayout HeatmapLayoutOf(const SweepReport& r) {
  HeatmapLayout l;
  for (const auto& c : r.cells) {
    l.any_divergent = l.any_divergent || c.verdict == verify::CellVerdict::kDivergent;
    l.any_failed = l.any_failed || (c.verdict != verify::CellVerdict::kIdentical && c.verdict != verify::CellVerdict::kDivergent);
    if (c.verdict != verify::CellVerdict::kIdentical) continue;
    l.any_identical = true;
    l.hi = std::max(l.hi, c.ledgers_per_s);
  }
  l.grid_w = l.cw * static_cast<double>(r.options.job_sizes.size());
  const double grid_bottom = l.top + l.ch * static_cast<double>(r.options.workers.size());
  l.legend_y = grid_bottom + 22;  // the scale bar's top
  l.width = std::max(l.left + l.grid_w + 20, 660.0);  // room for the legend
  l.height = l.legend_y + 78;
  return l;
}

// The axis titles, a column label per job size and a row label per worker count.
std::string HeatmapAxes(const SweepReport& r, const HeatmapLayout& l) {
  const std::vector<uint32_t>& workers = r.options.workers;
  const std::vector<uint32_t>& job_sizes = r.options.job_sizes;
  std::string s = fmt::format("<text x=\"{}\" y=\"16\" text-anchor=\"middle\" fill=\"#59636e\">job size (ledgers)</text>\n",
                              Svg1(l.left + l.grid_w / 2));
  s += fmt::format("<text x=\"12\" y=\"{}\" fill=\"#59636e\">workers</text>\n", Svg1(l.top - 6));
  for (size_t j = 0; j < job_sizes.size(); ++j)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#59636e\">{}</text>\n",
                     Svg1(l.left + l.cw * (static_cast<double>(j) + 0.5)), Svg1(l.top - 8), job_sizes[j]);
  for (size_t w = 0; w < workers.size(); ++w)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#59636e\">{}</text>\n", Svg1(l.left - 10),
                     Svg1(l.top + l.ch * (static_cast<double>(w) + 0.5) + 4), workers[w]);
  return s;
}

// One cell: its rectangle (outlined green when recommended) with a tooltip, its value and the
// interval of its repeats.
std::string HeatmapCell(const SweepCell& c, const SweepReport& r, const HeatmapLayout& l, bool chosen) {
  const auto& workers = r.options.workers;
  const auto& job_sizes = r.options.job_sizes;
  auto wi = std::find(workers.begin(), workers.end(), c.workers) - workers.begin();
  auto ji = std::find(job_sizes.begin(), job_sizes.end(), c.job_size) - job_sizes.begin();
  const double cw = l.cw, ch = l.ch;
  double x = l.left + cw * static_cast<double>(ji), y = l.top + ch * static_cast<double>(wi);
  std::string fill, label, sublabel, text_fill = "#1f2328", title;
  if (c.verdict == verify::CellVerdict::kIdentical) {
    double t = l.hi > 0 ? c.ledgers_per_s / l.hi : 0;
    fill = Blue(t);
    text_fill = t > 0.55 ? "#ffffff" : "#1f2328";
    label = fmt::format("{:.0f}/s", c.ledgers_per_s);
    if (c.HasNoiseEstimate()) sublabel = fmt::format("{:.0f}-{:.0f}", c.ledgers_per_s_min, c.ledgers_per_s_max);
    title = fmt::format("{}: {:.0f} ledgers/s, median {:.2f} s{}, identical", c.Name(), c.ledgers_per_s, c.median_s,
                        c.HasNoiseEstimate()
                            ? fmt::format(" (min-max of {} repeats {:.2f}-{:.2f} s, {:.0f}-{:.0f} ledgers/s)",
                                          c.samples, c.min_s, c.max_s, c.ledgers_per_s_min, c.ledgers_per_s_max)
                            : std::string(" (one repeat: no interval)"));
  } else if (c.verdict == verify::CellVerdict::kDivergent) {
    fill = "#ffebe9";
    text_fill = "#cf222e";
    label = c.first_divergent_ledger ? fmt::format("✗ ledger {}", *c.first_divergent_ledger) : "✗ divergent";
    title = fmt::format("{}: divergent{}", c.Name(),
                        c.first_divergent_ledger ? fmt::format(" at ledger {}", *c.first_divergent_ledger) : "");
  } else {
    fill = "#eaeef2";
    text_fill = "#59636e";
    label = "failed";
    title = c.Name() + ": failed: " + c.error;
  }
  std::string s = fmt::format(
      "<rect class=\"cell {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"{}\" "
      "stroke-width=\"{}\"><title>{}</title></rect>\n",
      verify::ToString(c.verdict), Svg1(x + 2), Svg1(y + 2), Svg1(cw - 4), Svg1(ch - 4), fill, chosen ? "#1a7f37" : "#ffffff",
      chosen ? 3 : 1, Esc(title));
  double label_y = sublabel.empty() ? y + ch / 2 + 4 : y + ch / 2 - 1;
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\" font-weight=\"600\">{}</text>\n",
                   Svg1(x + cw / 2), Svg1(label_y), text_fill, Esc(label));
  if (!sublabel.empty())
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\" font-size=\"10\">{}</text>\n",
                     Svg1(x + cw / 2), Svg1(label_y + 13), text_fill, Esc(sublabel));
  return s;
}

// The legend: the scale as drawn (a gradient between the two ends of Blue, 0 to `hi`), then a
// swatch for each mark that occurs.
std::string HeatmapLegend(const HeatmapLayout& l, bool any_chosen) {
  std::string s = "<g class=\"legend\">\n";
  double lx = l.left;
  const double legend_y = l.legend_y;
  if (l.any_identical) {
    const double bar_w = 200;
    s += fmt::format("<defs><linearGradient id=\"sweep-scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">"
                     "<stop offset=\"0\" stop-color=\"{}\"/><stop offset=\"1\" stop-color=\"{}\"/>"
                     "</linearGradient></defs>\n",
                     Blue(0), Blue(1));
    s += fmt::format("<rect class=\"scale\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" fill=\"url(#sweep-scale)\" "
                     "data-min=\"0\" data-max=\"{:.0f}\"/>\n",
                     Svg1(lx), Svg1(legend_y), Svg1(bar_w), l.hi);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"start\" fill=\"#59636e\">0</text>\n", Svg1(lx),
                     Svg1(legend_y + 26));
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#59636e\">{:.0f} ledgers/s</text>\n",
                     Svg1(lx + bar_w), Svg1(legend_y + 26), l.hi);
    // Two lines: one would run past the chart's 660 px in a wide fallback font (DejaVu Sans).
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#59636e\">colour: median ledgers/s of an identical cell, "
                     "on a scale from 0;</text>\n<text x=\"{}\" y=\"{}\" fill=\"#59636e\">small print: min-max "
                     "over its repeats</text>\n",
                     Svg1(lx), Svg1(legend_y + 44), Svg1(lx), Svg1(legend_y + 60));
    lx += bar_w + 16;
  }
  auto swatch = [&](const std::string& cls, const std::string& fill, const std::string& stroke, int stroke_w,
                    const std::string& text) {
    s += fmt::format("<rect class=\"key {}\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\" stroke=\"{}\" "
                     "stroke-width=\"{}\"/><text x=\"{}\" y=\"{}\" fill=\"#59636e\">{}</text>\n",
                     cls, Svg1(lx), Svg1(legend_y), fill, stroke, stroke_w, Svg1(lx + 17), Svg1(legend_y + 10), text);
    lx += 17 + 7.0 * static_cast<double>(text.size()) + 12;
  };
  if (l.any_divergent) swatch("divergent", "#ffebe9", "#cf222e", 1, "divergent");
  if (l.any_failed) swatch("failed", "#eaeef2", "#59636e", 1, "failed");
  if (any_chosen) swatch("recommended", "#ffffff", "#1a7f37", 3, "recommended");
  return s + "</g>\n";
}

// Workers x job size, each identical cell coloured by its median ledgers/s on a scale from 0 to the
// fastest identical cell (so 1,396 and 1,627 ledgers/s look alike, as they nearly are), with the
// interval of its repeats under the value. The legend under the grid draws the scale and only the
// marks that occur.
std::string Heatmap(const SweepReport& r) {
  const HeatmapLayout l = HeatmapLayoutOf(r);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\" font-size=\"12\">\n",
      Svg1(l.width), Svg1(l.height));
  s += HeatmapAxes(r, l);
  bool any_chosen = false;
  for (const auto& c : r.cells) {
    const bool chosen = r.recommendation.found && r.recommendation.workers == c.workers &&
                        r.recommendation.job_size == c.job_size;
    any_chosen = any_chosen || chosen;
    s += HeatmapCell(c, r, l, chosen);
  }
  s += HeatmapLegend(l, any_chosen);
  return s + "</svg>\n";
}

std::string ThroughputCurve(const SweepReport& r) {
  const double w = 560, h = 310, l = 60, rt = 20, t = 34, b = 40;
  std::vector<const SweepCell*> pts;
  double xmax = 1, ymax = 1;
  for (const auto& c : r.cells) {
    if (c.job_size != r.usl_job_size || c.verdict != verify::CellVerdict::kIdentical) continue;
    pts.push_back(&c);
    xmax = std::max(xmax, static_cast<double>(c.workers));
    ymax = std::max(ymax, std::max(c.ledgers_per_s, c.ledgers_per_s_max));
  }
  if (r.usl.fitted && r.usl.peak_workers) xmax = std::max(xmax, std::min(*r.usl.peak_workers * 1.3, xmax * 4));
  xmax = std::ceil(xmax);
  if (r.usl.fitted)
    for (int i = 0; i <= 100; ++i) ymax = std::max(ymax, r.usl.Predict(1 + (xmax - 1) * i / 100.0));
  ymax *= 1.1;
  auto X = [&](double n) { return l + (w - l - rt) * n / xmax; };
  auto Y = [&](double v) { return h - b - (h - t - b) * v / ymax; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"throughput\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\" font-size=\"11\">\n",
      Svg1(w), Svg1(h));
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#d1d9e0\"/>\n", Svg1(l), Svg1(h - b), Svg1(w - rt));
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#d1d9e0\"/>\n", Svg1(l), Svg1(t), Svg1(h - b));
  for (int i = 0; i <= 4; ++i) {
    double v = ymax * i / 4;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#59636e\">{:.0f}</text>\n", Svg1(l - 6),
                     Svg1(Y(v) + 4), v);
  }
  int step = std::max(1, static_cast<int>(xmax / 8));
  for (int n = 0; n <= static_cast<int>(xmax); n += step)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#59636e\">{}</text>\n", Svg1(X(n)),
                     Svg1(h - b + 16), n);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#59636e\">workers</text>\n",
                   Svg1((l + w - rt) / 2), Svg1(h - 4));
  s += "<text x=\"12\" y=\"14\" fill=\"#59636e\">ledgers/s</text>\n";
  // The legend: the marks drawn, and the USL entry only when its line is drawn.
  const bool whiskers = std::any_of(pts.begin(), pts.end(), [](const SweepCell* c) { return c->HasNoiseEstimate(); });
  const std::string dash = r.usl.poor ? "6 4" : "none";
  s += "<g class=\"legend\">\n";
  s += fmt::format("<circle cx=\"130\" cy=\"10\" r=\"4\" fill=\"#1f2328\"/><text x=\"138\" y=\"14\" "
                   "fill=\"#59636e\">median of an identical cell{}</text>\n",
                   whiskers ? ", bar: min-max of its repeats" : "");
  if (r.usl.fitted)
    s += fmt::format("<line class=\"usl-key\" x1=\"{0}\" y1=\"24\" x2=\"{1}\" y2=\"24\" stroke=\"#0969da\" "
                     "stroke-width=\"2\" stroke-dasharray=\"{2}\"/><text x=\"{3}\" y=\"28\" fill=\"#0969da\">"
                     "Universal Scalability Law fit{4}</text>\n",
                     Svg1(126), Svg1(150), dash, Svg1(156),
                     r.usl.poor ? " (dashed: a poor fit, see below)" : "");
  s += "</g>\n";
  if (r.usl.fitted) {
    std::string d;
    for (int i = 0; i <= 100; ++i) {
      double n = 1 + (xmax - 1) * i / 100.0;
      d += fmt::format("{}{},{}", i ? " L" : "M", Svg1(X(n)), Svg1(Y(r.usl.Predict(n))));
    }
    s += fmt::format("<path class=\"usl\" d=\"{}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\" "
                     "stroke-dasharray=\"{}\"/>\n",
                     d, dash);
  }
  for (const auto* c : pts) {
    if (c->HasNoiseEstimate())
      s += fmt::format("<line class=\"interval\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#1f2328\" "
                       "stroke-width=\"1.5\"/>\n",
                       Svg1(X(c->workers)), Svg1(Y(c->ledgers_per_s_min)), Svg1(Y(c->ledgers_per_s_max)));
    s += fmt::format("<circle class=\"measured\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#1f2328\"><title>{}: {:.0f} "
                     "ledgers/s</title></circle>\n",
                     Svg1(X(c->workers)), Svg1(Y(c->ledgers_per_s)), c->Name(), c->ledgers_per_s);
  }
  return s + "</svg>\n";
}

}  // namespace

std::string RenderSweepText(const SweepReport& r) {
  const SweepOptions& o = r.options;
  std::string s = r.target ? r.target->Line() + "\n" : "";
  std::string reference_time;
  if (!r.reference_runs_s.empty()) {
    auto [lo, hi] = std::minmax_element(r.reference_runs_s.begin(), r.reference_runs_s.end());
    reference_time = r.reference_runs_s.size() == 1
                         ? fmt::format(" {:.2f} s (one run after a {:.2f} s warm-up)", r.reference_s,
                                       r.reference_warmup_s)
                         : fmt::format(" {:.2f} s ({:.2f}-{:.2f}, median of {} runs after a {:.2f} s warm-up)",
                                       r.reference_s, *lo, *hi, r.reference_runs_s.size(), r.reference_warmup_s);
  }
  s += fmt::format("sweep {} ({}), repeat {}, engine {}, reference: {}{}\n", o.range.str(),
                   FormatCountOf(o.range.size(), "ledger"), o.repeat, dump::ToString(r.engine), r.reference,
                   reference_time);
  if (!o.hooks.bug.empty()) s += fmt::format("injected bug {} in parallel cells\n", o.hooks.bug);
  s += fmt::format("{:>7} {:>8} {:>5} {:>9} {:>13} {:>10} {:>10} {:>8} {:>8} {:>7} {:>5}  {}\n", "workers",
                   "job size", "jobs", "median s", "min-max s", "ledgers/s", "rows/s", "speed-up", "attempts",
                   "retries", "conns", "verdict");
  for (const auto& c : r.cells) {
    std::string verdict(verify::ToString(c.verdict));
    if (c.verdict == verify::CellVerdict::kDivergent && c.first_divergent_ledger)
      verdict += fmt::format(" at ledger {}", *c.first_divergent_ledger);
    if (c.verdict == verify::CellVerdict::kFailed) verdict += ": " + c.error;
    s += fmt::format("{:>7} {:>8} {:>5} {:>9.2f} {:>13} {:>10.0f} {:>10.0f} {:>8} {:>8} {:>7} {:>5}  {}\n", c.workers,
                     c.job_size, c.jobs, c.median_s, Interval(c), c.ledgers_per_s, c.rows_per_s,
                     c.speedup > 0 ? fmt::format("{:.2f}x", c.speedup) : std::string("-"), c.attempts, c.retries,
                     c.peak_connections, verdict);
  }
  s += RecommendationLine(r.recommendation) + "\n";
  if (!r.recommendation.noise.empty()) s += r.recommendation.noise + "\n";
  s += UslLine(r) + "\n";
  if (!r.reference_schema.empty()) s += fmt::format("reference schema kept: \"{}\"\n", r.reference_schema);
  for (const auto& c : r.cells)
    for (const auto& rep : c.repeats)
      if (rep.kept) s += fmt::format("kept: \"{}\" ({})\n", rep.schema, verify::ToString(c.verdict));
  return s;
}

json SweepReportToJson(const SweepReport& r) {
  json j;
  bool all_identical = std::all_of(r.cells.begin(), r.cells.end(), [](const SweepCell& c) { return c.verdict == verify::CellVerdict::kIdentical; });
  j["all_identical"] = all_identical;
  j["run_id"] = r.run_id;
  j["range"] = {{"from", r.options.range.from}, {"to", r.options.range.to}};
  j["workers"] = r.options.workers;
  j["job_sizes"] = r.options.job_sizes;
  j["repeat"] = r.options.repeat;
  j["engine"] = dump::ToString(r.engine);
  j["ingest_cmd"] = OptString(r.options.plan.ingest_cmd);
  j["baseline"] = OptString(r.options.baseline);
  j["injected_bug"] = OptString(r.options.hooks.bug);
  j["reference"] = {{"source", r.reference},
                    {"seconds", r.reference_s},
                    {"runs_s", r.reference_runs_s},
                    {"warmup_s", r.reference_runs_s.empty() ? json(nullptr) : json(r.reference_warmup_s)},
                    {"schema", OptString(r.reference_schema)}};
  json cells = json::array();
  for (const auto& c : r.cells) cells.push_back(CellJson(c));
  j["cells"] = cells;
  const auto& rec = r.recommendation;
  j["recommendation"] = {{"found", rec.found},
                         {"workers", rec.found ? json(rec.workers) : json(nullptr)},
                         {"job_size", rec.found ? json(rec.job_size) : json(nullptr)},
                         {"median_s", rec.median_s},
                         {"ledgers_per_s", rec.ledgers_per_s},
                         {"speedup", rec.speedup},
                         {"reason", rec.reason},
                         {"noise_estimate", rec.noise_estimate},
                         {"within_noise", rec.within_noise},
                         {"noise", OptString(rec.noise)},
                         {"every_parallel_divergent", rec.every_parallel_divergent},
                         {"divergent_cells", rec.divergent}};
  json usl = UslFitToJson(r.usl);
  usl["job_size"] = r.usl_job_size ? json(r.usl_job_size) : json(nullptr);
  j["usl"] = usl;
  if (r.target) j["target"] = r.target->ToJson();
  return j;
}

std::string RenderSweepCsv(const SweepReport& r) {
  std::string s =
      "workers,job_size,jobs,verdict,first_divergent_ledger,median_s,min_s,max_s,spread_s,ledgers_per_s,rows_per_s,"
      "speedup,attempts,retries,peak_connections,recommended,error,samples,ledgers_per_s_min,ledgers_per_s_max,"
      "within_noise\n";
  for (const auto& c : r.cells) {
    bool chosen = r.recommendation.found && r.recommendation.workers == c.workers &&
                  r.recommendation.job_size == c.job_size;
    const auto& close = r.recommendation.within_noise;
    bool within_noise = std::find(close.begin(), close.end(), c.Name()) != close.end();
    s += fmt::format("{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.2f},{:.2f},{:.4f},{},{},{},{},{},{},{:.2f},{:.2f},{}\n",
                     c.workers,
                     c.job_size, c.jobs, verify::ToString(c.verdict),
                     c.first_divergent_ledger ? std::to_string(*c.first_divergent_ledger) : std::string(), c.median_s,
                     c.min_s, c.max_s, c.spread_s, c.ledgers_per_s, c.rows_per_s, c.speedup, c.attempts, c.retries,
                     c.peak_connections, chosen ? "true" : "false", CsvField(c.error), c.samples, c.ledgers_per_s_min,
                     c.ledgers_per_s_max, within_noise ? "true" : "false");
  }
  return s;
}

std::string RenderSweepHtml(const SweepReport& r) {
  const auto& rec = r.recommendation;
  std::string h = fmt::format("<p class=\"muted\"><b>ledgerdiff</b> sweep &#183; run <code>{}</code> &#183; {} ledgers ({}) "
                   "&#183; repeat {} &#183; reference: {}</p>\n",
                   Esc(r.run_id), r.options.range.size(), Esc(r.options.range.str()), r.options.repeat,
                   Esc(r.reference));
  if (r.target) h += fmt::format("<p class=\"muted\">target: {}</p>\n", Esc(r.target->Describe()));
  bool good = rec.found && !rec.every_parallel_divergent;
  h += fmt::format("<div class=\"banner {}\">{}</div>\n", good ? "ok" : "bad", Esc(RecommendationLine(rec)));
  if (!rec.noise.empty()) h += fmt::format("<p class=\"noise\">{}</p>\n", Esc(rec.noise));
  if (const std::string& bug = r.options.hooks.bug; !bug.empty())
    h += fmt::format("<p>Injected bug <code>{}</code> in parallel cells.</p>\n", Esc(bug));
  h += "<h2>Ledgers per second, workers &#215; job size</h2>\n" + Heatmap(r);
  h += "<p class=\"muted\">Darker is faster, on a scale from 0 to the fastest identical cell; red cells diverged "
       "from the reference (first divergent ledger shown), grey cells failed; the green outline is the "
       "recommendation.</p>\n";
  h += fmt::format("<h2>Throughput against workers at jobs of {}</h2>\n", r.usl_job_size) + ThroughputCurve(r);
  h += "<p class=\"muted\">" + Esc(UslLine(r)) + "</p>\n";
  h += "<h2>Cells</h2>\n<div class=\"wide\"><table class=\"cells\">\n<tr><th>workers</th><th>job size</th><th>jobs</th><th>median s</th><th>min-max "
       "s</th><th>ledgers/s</th><th>min-max ledgers/s</th><th>rows/s</th><th>speed-up</th><th>attempts</th><th>retries</th><th>peak "
       "connections</th><th>verdict</th></tr>\n";
  for (const auto& c : r.cells) {
    std::string verdict(verify::ToString(c.verdict));
    if (c.first_divergent_ledger) verdict += fmt::format(" at ledger {}", *c.first_divergent_ledger);
    if (!c.error.empty()) verdict += ": " + c.error;
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td><td>{:.0f}</td><td>{}</td>"
                     "<td>{:.0f}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"v {}\">{}</td></tr>\n",
                     c.workers, c.job_size, c.jobs, c.median_s, Interval(c), c.ledgers_per_s,
                     c.HasNoiseEstimate() ? fmt::format("{:.0f}-{:.0f}", c.ledgers_per_s_min, c.ledgers_per_s_max)
                                          : std::string("-"),
                     c.rows_per_s,
                     c.speedup > 0 ? fmt::format("{:.2f}x", c.speedup) : std::string("-"), c.attempts, c.retries,
                     c.peak_connections, verify::ToString(c.verdict), Esc(verdict));
  }
  h += "</table></div>\n";
  return HtmlPage("ledgerdiff sweep " + r.options.range.str(), h);
}

Status WriteSweepHtml(const SweepReport& report, const std::string& dir) {
  return WriteHtmlReport(RenderSweepHtml(report), dir);
}

}  // namespace ledgerdiff::report
