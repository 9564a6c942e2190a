// The timeline and throughput charts of an ingestion run (contracts in svg_chart.h).
#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdint>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "report/escape.h"

namespace ledgerdiff::report {

using ingest::AttemptRow;
using ingest::IngestReport;

const char* OutcomeColor(ingest::AttemptOutcome outcome) {
  switch (outcome) {
    case ingest::AttemptOutcome::kDone: return "#2da44e";
    case ingest::AttemptOutcome::kFailed: return "#cf222e";
    case ingest::AttemptOutcome::kLost: return "#f0883e";
    case ingest::AttemptOutcome::kFenced: return "#8250df";
    case ingest::AttemptOutcome::kInterrupted: return "#8c959f";
    case ingest::AttemptOutcome::kCancelled: return "#57606a";
    case ingest::AttemptOutcome::kRunning: return "#0969da";
  }
  return "#57606a";  // not reached
}

namespace {

// Compact, deterministic SVG coordinates.
std::string N(double v) {
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over `span`.
double NiceStep(double span, int target) {
  if (span <= 0) return 1;
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw * 0.999) return m * mag;
  return 10 * mag;
}

std::string TickLabel(double v, double step) {
  int decimals = step >= 1 ? 0 : std::min(3, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", v, decimals);
}

std::string RateLabel(double v) {
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.0f}k", v / 1e3);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  if (v >= 10 || v == 0) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

double EndOf(const AttemptRow& a, double tmax) { return a.end_s >= 0 ? a.end_s : tmax; }

}  // namespace

double TimeSpan(const IngestReport& run) {
  double t = run.wall_s;
  for (const auto& a : run.timeline) t = std::max({t, a.start_s, a.end_s});
  return t > 0 ? t : 1;
}

namespace {

constexpr double kSvgWidth = 1180;
constexpr double kPlotLeft = 92;
constexpr double kPlotRight = 18;

struct XAxis {
  double tmax;
  double scale;  // px per second
  double X(double t) const { return kPlotLeft + t * scale; }
};

// Vertical grid and second ticks along the bottom of a plot spanning [top, bottom].
std::string TimeAxis(const XAxis& ax, double top, double bottom) {
  std::string s;
  double step = NiceStep(ax.tmax, 10);
  s += fmt::format("<g class=\"axis\" font-size=\"11\" fill=\"#59636e\">\n");
  for (int i = 0;; ++i) {
    double t = i * step;
    if (t > ax.tmax * 1.0001) break;
    double x = ax.X(t);
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#d1d9e0\" stroke-width=\"1\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{0}\" y2=\"{3}\" stroke=\"#59636e\"/>"
        "<text x=\"{0}\" y=\"{4}\" text-anchor=\"middle\">{5}</text>\n",
        N(x), N(top), N(bottom), N(bottom + 5), N(bottom + 18), TickLabel(t, step));
  }
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#59636e\"/>\n", N(kPlotLeft), N(bottom),
                   N(ax.X(ax.tmax)), N(bottom));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">seconds since run start</text>\n</g>\n",
                   N(ax.X(ax.tmax)), N(bottom + 34));
  return s;
}

std::string AttemptTitle(const AttemptRow& a, const std::string& lane, double tmax) {
  double end = EndOf(a, tmax);
  std::string t = fmt::format("job {} [{}] attempt {}, {:.1f}s, {}", a.job_id, a.range.str(), a.attempt,
                              std::max(0.0, end - a.start_s), ingest::ToString(a.outcome));
  t += fmt::format("\nlane {}, worker {}, {:.1f}s \xe2\x86\x92 {}", lane, a.worker, a.start_s,
                   a.end_s >= 0 ? fmt::format("{:.1f}s", a.end_s) : std::string("still running"));
  if (!a.error.empty()) t += "\n" + Truncate(a.error, 300);
  return t;
}

// The timeline of one ingestion run: one lane per worker slot, one bar per attempt.

// Average-line labels: font size, and the clearance kept between a label's glyphs and any line.
constexpr double kLabelFont = 11;
constexpr double kLineClearance = 2;

struct AverageLine {
  double y;
  const char* color;
  std::string label;
};

// Vertical extent of a label's glyphs drawn on `baseline`: ascenders above, descenders below.
std::pair<double, double> LabelExtent(double baseline) { return {baseline - kLabelFont, baseline + 0.3 * kLabelFont}; }

// The baseline for the label of the average line at `y`: above the line if that is clear, else
// below, else further away, step by step. Clear: no average line within kLineClearance of the
// glyphs, no overlap with a label already placed, inside the chart above the time axis.
double PlaceAverageLabel(double y, const std::vector<AverageLine>& lines, const std::vector<double>& placed,
                         double bottom) {
  auto clear = [&](double baseline) {
    auto [lo, hi] = LabelExtent(baseline);
    if (lo < 0 || hi > bottom - 1) return false;
    for (const auto& l : lines)
      if (l.y >= lo - kLineClearance && l.y <= hi + kLineClearance) return false;
    for (double other : placed) {
      auto [olo, ohi] = LabelExtent(other);
      if (lo < ohi + 1 && olo < hi + 1) return false;
    }
    return true;
  };
  const double above = y - kLineClearance - 0.3 * kLabelFont - 0.7;  // descenders clear of the line
  const double below = y + kLineClearance + kLabelFont + 1;           // ascenders clear of the line
  const double step = 1.3 * kLabelFont + 2;
  for (int k = 0; k < 16; ++k) {
    if (clear(above - k * step)) return above - k * step;
    if (clear(below + k * step)) return below + k * step;
  }
  return above;  // unreachable for the two averages drawn; keeps the old place
}

}  // namespace

std::vector<TimelineLane> TimelineLanes(const IngestReport& run) {
  // Lane key: {0, slot} for a known slot, {1, n} for the n-th distinct worker name without one.
  std::map<std::pair<int, int>, TimelineLane> by_key;
  std::map<std::string, int> unslotted;
  for (const auto& a : run.timeline) {
    std::pair<int, int> key{0, a.slot};
    if (a.slot <= 0) key = {1, unslotted.emplace(a.worker, static_cast<int>(unslotted.size())).first->second};
    TimelineLane& lane = by_key[key];
    lane.slot = std::max(a.slot, 0);
    lane.attempts.push_back(&a);
  }
  std::vector<TimelineLane> lanes;
  lanes.reserve(by_key.size());
  int last_label = 0;  // slotted lanes are wSLOT (as their workers' names start); the others count on
  for (auto& [key, lane] : by_key) {
    last_label = key.first == 0 ? std::max(last_label, key.second) : last_label + 1;
    lane.label = fmt::format("w{}", key.first == 0 ? key.second : last_label);
    std::stable_sort(lane.attempts.begin(), lane.attempts.end(), [](const AttemptRow* x, const AttemptRow* y) {
      return std::tie(x->start_s, x->job_id, x->attempt) < std::tie(y->start_s, y->job_id, y->attempt);
    });
    lane.name = lane.attempts.front()->worker;
    for (const AttemptRow* a : lane.attempts) {
      if (a->worker == lane.name) continue;
      auto [it, fresh] = lane.replacements.emplace(a->worker, a->start_s);
      if (!fresh) it->second = std::min(it->second, a->start_s);
    }
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

std::string LaneTitle(const TimelineLane& lane) {
  std::string t = fmt::format("lane {}: worker {}", lane.label, lane.name);
  if (lane.slot > 0) t += fmt::format(" (slot {})", lane.slot);
  std::vector<std::pair<double, std::string>> by_start;
  for (const auto& [name, start] : lane.replacements) by_start.emplace_back(start, name);
  std::sort(by_start.begin(), by_start.end());
  for (const auto& [start, name] : by_start) t += fmt::format("\nreplaced by {} at {:.1f}s", name, start);
  return t;
}

namespace {

// How a timeline is laid out: lanes (and their bars) get lower as lanes grow in number; up to
// kDetailedAttempts attempts every attempt is its own labelled bar, beyond that runs of done
// attempts closer than a pixel merge into one bar.
struct TimelineLayout {
  XAxis ax;
  double lane_h, bar_h, top, bottom, height;
  bool detailed;
  std::map<uint32_t, uint32_t> rows_per_job;  // attempt rows per job id
  // A job that needed more than one attempt (by attempt number or by attempt rows).
  bool Retried(const AttemptRow& a) const {
    auto it = rows_per_job.find(a.job_id);
    return a.attempt > 1 || (it != rows_per_job.end() && it->second > 1);
  }
};

TimelineLayout TimelineLayoutOf(const IngestReport& run, size_t lanes) {
  const double tmax = TimeSpan(run);
  TimelineLayout l{XAxis{tmax, (kSvgWidth - kPlotLeft - kPlotRight) / tmax}, 0, 0, 0, 0, 0, false, {}};
  for (const auto& a : run.timeline) ++l.rows_per_job[a.job_id];
  l.lane_h = lanes > 24 ? 16 : lanes > 12 ? 22 : 30;
  l.bar_h = l.lane_h - (l.lane_h >= 30 ? 10 : 4);
  l.top = 10;
  l.bottom = l.top + l.lane_h * static_cast<double>(lanes);
  l.height = l.bottom + 44;
  l.detailed = run.timeline.size() <= kDetailedAttempts;
  return l;
}

// Lane label: wN (short, so it always fits left of the plot), its replacement count when any,
// and the full worker identities in the tooltip.
std::string TimelineLaneLabel(const TimelineLane& lane, double y0, double lane_h) {
  const std::string title = "<title>" + Esc(LaneTitle(lane)) + "</title>";
  if (lane.replacements.empty())
    return fmt::format("<text class=\"lane-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"12\" "
                       "font-weight=\"600\" fill=\"#1f2328\">{}{}</text>\n",
                       N(kPlotLeft - 10), N(y0 + lane_h / 2 + 4), title, Esc(lane.label));
  std::string more = fmt::format("+{} replaced", lane.replacements.size());
  return fmt::format("<text class=\"lane-label\" x=\"{0}\" y=\"{1}\" text-anchor=\"end\" font-size=\"12\" "
                     "font-weight=\"600\" fill=\"#1f2328\">{5}{2}<tspan x=\"{0}\" dy=\"{3}\" font-size=\"9\" "
                     "font-weight=\"400\" fill=\"#9a6700\">{4}</tspan></text>\n",
                     N(kPlotLeft - 10), N(y0 + lane_h / 2 - (lane_h >= 22 ? 1 : 0)), Esc(lane.label),
                     lane_h >= 22 ? "10" : "8", Esc(more), title);
}

// When the layout is not detailed: the run of done, unretried attempts starting at attempts[i]
// whose bars lie closer than a pixel, appended to `s` as one bar. Returns the index past the run,
// or i when no run of two or more starts there (nothing appended).
size_t TimelineMergedRun(const std::vector<const AttemptRow*>& attempts, size_t i, const TimelineLayout& l,
                         double yb, std::string& s) {
  const AttemptRow& a = *attempts[i];
  const double tmax = l.ax.tmax;
  if (l.detailed || a.outcome != ingest::AttemptOutcome::kDone || l.Retried(a)) return i;
  const double x = l.ax.X(a.start_s);
  double xe = x + std::max(1.0, l.ax.X(EndOf(a, tmax)) - x);
  double t_end = EndOf(a, tmax);
  uint32_t jmin = a.job_id, jmax = a.job_id;
  size_t j = i + 1;
  while (j < attempts.size()) {
    const AttemptRow& b = *attempts[j];
    if (b.outcome != ingest::AttemptOutcome::kDone || l.Retried(b) || l.ax.X(b.start_s) > xe + 1.0) break;
    xe = std::max(xe, std::max(l.ax.X(b.start_s) + 1.0, l.ax.X(EndOf(b, tmax))));
    t_end = std::max(t_end, EndOf(b, tmax));
    jmin = std::min(jmin, b.job_id);
    jmax = std::max(jmax, b.job_id);
    ++j;
  }
  if (j == i + 1) return i;
  s += fmt::format(
      "<rect class=\"att done merged\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
      "<title>{} done attempts, jobs {} to {}, {:.1f}s to {:.1f}s</title></rect>\n",
      N(x), N(yb), N(xe - x), N(l.bar_h), OutcomeColor(ingest::AttemptOutcome::kDone), j - i, jmin, jmax, a.start_s,
      t_end);
  return j;
}

// One attempt's bar with its tooltip, and in a detailed layout its job as text when it fits.
std::string TimelineAttemptBar(const AttemptRow& a, const std::string& lane, const TimelineLayout& l, double yb) {
  const double tmax = l.ax.tmax;
  const double x = l.ax.X(a.start_s);
  double w = std::max(1.0, l.ax.X(EndOf(a, tmax)) - x);
  const bool re = l.Retried(a);
  if (a.outcome != ingest::AttemptOutcome::kDone) w = std::max(w, 3.0);  // keep every failure visible
  // Thin bars keep their colour; wider ones of retried jobs get an outline.
  std::string stroke = re && w >= 6 ? " stroke=\"#1f2328\" stroke-width=\"1.5\"" : "";
  std::string extra = a.end_s < 0 ? " fill-opacity=\"0.55\"" : "";
  std::string s = fmt::format(
      "<rect class=\"att {}{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"{}\"{}{}>",
      Attr(std::string(ingest::ToString(a.outcome))), re ? " retried" : "", N(x), N(yb), N(w), N(l.bar_h),
      OutcomeColor(a.outcome), stroke, extra);
  s += "<title>" + Esc(AttemptTitle(a, lane, tmax)) + "</title></rect>\n";
  if (!l.detailed || l.bar_h < 14) return s;
  std::string text;
  std::string retry = a.attempt > 1 ? fmt::format(" \xe2\x86\xbb{}", a.attempt) : "";
  if (w >= 130) text = fmt::format("job {} [{}]{}", a.job_id, a.range.str(), retry);
  else if (w >= 64) text = fmt::format("job {}{}", a.job_id, retry);
  else if (w >= 40) text = fmt::format("{}{}", a.job_id, retry);
  else if (w >= 18) text = fmt::format("{}", a.job_id);
  if (!text.empty())
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" font-weight=\"600\" fill=\"#fff\" "
                     "pointer-events=\"none\">{}</text>\n",
                     N(x + 4), N(yb + l.bar_h / 2 + 3.5), Esc(text));
  return s;
}

// One lane: its stripe (every other lane), label, bars, and a mark where a replacement worker
// took over.
std::string TimelineLaneSvg(const TimelineLane& lane, size_t lane_index, const TimelineLayout& l) {
  const double y0 = l.top + l.lane_h * static_cast<double>(lane_index);
  const double yb = y0 + (l.lane_h - l.bar_h) / 2;
  std::string s =
      fmt::format("<g class=\"lane\" data-lane=\"{}\" data-worker=\"{}\">\n", Attr(lane.label), Attr(lane.name));
  if (lane_index % 2 == 1)
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f8fa\" opacity=\"0.7\"/>\n",
                     N(kPlotLeft), N(y0), N(kSvgWidth - kPlotLeft - kPlotRight), N(l.lane_h));
  s += TimelineLaneLabel(lane, y0, l.lane_h);
  for (size_t i = 0; i < lane.attempts.size();) {
    if (const size_t past = TimelineMergedRun(lane.attempts, i, l, yb, s); past > i) {
      i = past;
      continue;
    }
    s += TimelineAttemptBar(*lane.attempts[i], lane.label, l, yb);
    ++i;
  }
  for (const auto& [name, start] : lane.replacements) {
    double x = l.ax.X(start);
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#9a6700\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"3 2\"><title>lane {5}: {3} replaces a dead or frozen worker at "
                     "{4:.1f}s</title></line>\n",
                     N(x - 1), N(y0 + 1), N(y0 + l.lane_h - 1), Esc(name), start, Esc(lane.label));
  }
  return s + "</g>\n";
}

}  // namespace

std::string TimelineSvg(const IngestReport& run) {
  const std::vector<TimelineLane> lanes = TimelineLanes(run);
  const TimelineLayout l = TimelineLayoutOf(run, lanes.size());
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"timeline of {} attempts on {} worker lanes\" "
      "font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\">\n",
      N(kSvgWidth), N(l.height), N(kSvgWidth), N(l.height), run.timeline.size(), lanes.size());
  s += TimeAxis(l.ax, l.top, l.bottom);
  for (size_t i = 0; i < lanes.size(); ++i) s += TimelineLaneSvg(lanes[i], i, l);
  s += "</svg>\n";
  return s;
}

// Ledgers per second over time, from the done attempts: each done attempt's ledgers are spread
// over its duration and summed per time bucket.
std::string ThroughputSvg(const IngestReport& run, const std::optional<IngestReport>& serial) {
  const double tmax = TimeSpan(run);
  const XAxis ax{tmax, (kSvgWidth - kPlotLeft - kPlotRight) / tmax};
  constexpr int kBuckets = 60;
  const double bw = tmax / kBuckets;
  std::vector<double> ledgers(kBuckets, 0);
  uint64_t done_ledgers = 0;
  for (const auto& a : run.timeline) {
    if (a.outcome != ingest::AttemptOutcome::kDone || a.end_s < 0) continue;
    double n = static_cast<double>(a.range.size());
    done_ledgers += a.range.size();
    double s0 = std::max(0.0, a.start_s), s1 = std::max(s0, a.end_s);
    if (s1 - s0 < 1e-9) {
      int b = std::clamp(static_cast<int>(s1 / bw), 0, kBuckets - 1);
      ledgers[b] += n;
      continue;
    }
    int b0 = std::clamp(static_cast<int>(s0 / bw), 0, kBuckets - 1);
    int b1 = std::clamp(static_cast<int>(s1 / bw), 0, kBuckets - 1);
    for (int b = b0; b <= b1; ++b) {
      double lo = std::max(s0, b * bw), hi = std::min(s1, (b + 1) * bw);
      if (hi > lo) ledgers[b] += n * (hi - lo) / (s1 - s0);
    }
  }
  std::vector<double> rate(kBuckets);
  double peak = 0;
  for (int b = 0; b < kBuckets; ++b) {
    rate[b] = ledgers[b] / bw;
    peak = std::max(peak, rate[b]);
  }
  double avg = run.wall_s > 0 ? static_cast<double>(done_ledgers) / run.wall_s : 0;
  double serial_avg = serial && serial->ok ? serial->ledgers_per_s() : 0;
  double ymax_raw = std::max({peak, avg, serial_avg, 1.0}) * 1.08;
  double ystep = NiceStep(ymax_raw, 4);
  double ymax = std::ceil(ymax_raw / ystep) * ystep;

  const double top = 14, plot_h = 190, bottom = top + plot_h, height = bottom + 44;
  auto Y = [&](double v) { return bottom - v / ymax * plot_h; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"throughput\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"ledgers per second over time\" "
      "font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\">\n",
      N(kSvgWidth), N(height), N(kSvgWidth), N(height));
  // Y axis.
  s += "<g class=\"yaxis\" font-size=\"11\" fill=\"#59636e\">\n";
  for (double v = 0; v <= ymax * 1.0001; v += ystep) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#eaeef2\"/>"
                     "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
                     N(kPlotLeft), N(Y(v)), N(ax.X(tmax)), N(kPlotLeft - 8), N(Y(v) + 4), RateLabel(v));
  }
  s += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">ledgers/s</text>\n",
                   N((top + bottom) / 2));
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#59636e\"/>\n</g>\n", N(kPlotLeft),
                   N(top), N(bottom));
  s += TimeAxis(ax, top, bottom);
  // The rate as a step area.
  std::string path = fmt::format("M{} {}", N(ax.X(0)), N(bottom));
  for (int b = 0; b < kBuckets; ++b)
    path += fmt::format(" L{} {} L{} {}", N(ax.X(b * bw)), N(Y(rate[b])), N(ax.X((b + 1) * bw)), N(Y(rate[b])));
  path += fmt::format(" L{} {} Z", N(ax.X(tmax)), N(bottom));
  s += fmt::format("<path class=\"rate\" d=\"{}\" fill=\"#0969da\" fill-opacity=\"0.18\" stroke=\"#0969da\" "
                   "stroke-width=\"1.6\" stroke-linejoin=\"round\"/>\n",
                   path);
  for (int b = 0; b < kBuckets; ++b)
    if (rate[b] > 0)
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\"><title>{:.1f}s to "
                       "{:.1f}s: {} ledgers/s</title></rect>\n",
                       N(ax.X(b * bw)), N(Y(rate[b])), N(ax.X((b + 1) * bw) - ax.X(b * bw)), N(bottom - Y(rate[b])),
                       b * bw, (b + 1) * bw, RateLabel(rate[b]));
  // The averages: lines first, then each label where it crosses no line and no earlier label.
  std::vector<AverageLine> averages;
  if (avg > 0) averages.push_back({Y(avg), "#0550ae", fmt::format("parallel average {} ledgers/s", RateLabel(avg))});
  if (serial_avg > 0)
    averages.push_back(
        {Y(serial_avg), "#6e7781", fmt::format("serial average {} ledgers/s", RateLabel(serial_avg))});
  for (const auto& line : averages)
    s += fmt::format("<line class=\"average\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" "
                     "stroke-width=\"1.3\" stroke-dasharray=\"6 4\"/>\n",
                     N(kPlotLeft), N(line.y), N(ax.X(tmax)), line.color);
  std::vector<double> placed;
  for (const auto& line : averages) {
    double baseline = PlaceAverageLabel(line.y, averages, placed, bottom);
    placed.push_back(baseline);
    s += fmt::format("<text class=\"average\" x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"{}\" "
                     "font-weight=\"600\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">"
                     "{}</text>\n",
                     N(ax.X(tmax) - 4), N(baseline), N(kLabelFont), line.color, Esc(line.label));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace ledgerdiff::report
