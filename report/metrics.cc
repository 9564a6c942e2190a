#include "report/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace ledgerdiff::report {

namespace {

// The exposition format's escapes: backslash and newline everywhere, the double quote too in a
// label value (a HELP text may hold it as it is).
enum class Escaped { kHelp, kLabelValue };
std::string Escape(const std::string& v, Escaped what) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && what == Escaped::kLabelValue) out += "\\\"";
    else out += c;
  }
  return out;
}

Metric Gauge(std::string name, std::string help, double value) {
  return {std::move(name), "gauge", std::move(help), {{{}, value}}};
}

}  // namespace

std::string RenderPrometheus(const std::vector<Metric>& metrics) {
  std::string out;
  for (const Metric& m : metrics) {
    if (m.samples.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, Escape(m.help, Escaped::kHelp), m.name, m.type);
    for (const MetricSample& s : m.samples) {
      std::string labels;
      for (const auto& [k, v] : s.labels) labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, Escape(v, Escaped::kLabelValue));
      out += fmt::format("{}{} {}\n", m.name, labels.empty() ? "" : "{" + labels + "}", s.value);
    }
  }
  return out;
}

std::optional<double> SampleValue(const std::string& exposition, const std::string& name) {
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0 || line[name.size()] != ' ') continue;
    const std::string value = line.substr(name.size() + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && (*end == '\0' || *end == ' ')) return v;
  }
  return std::nullopt;
}

std::vector<Metric> GateMetrics(const std::string& command, const std::string& verdict, bool passed, double seconds,
                                std::time_t now, const std::string& previous) {
  std::vector<Metric> out;
  out.push_back({"ledgerdiff_verdict", "gauge", "1 for the verdict of the last run (identical, divergent, ...)",
                 {{{{"command", command}, {"verdict", verdict}}, 1}}});
  out.push_back(Gauge("ledgerdiff_cycle_duration_seconds", "Wall time of the last run", seconds));
  out.push_back(Gauge("ledgerdiff_last_run_timestamp_seconds", "When the last run ended (Unix time)",
                      static_cast<double>(now)));
  std::optional<double> success = passed ? std::optional<double>(static_cast<double>(now))
                                         : SampleValue(previous, "ledgerdiff_last_success_timestamp_seconds");
  if (success)
    out.push_back(Gauge("ledgerdiff_last_success_timestamp_seconds",
                        "When a run last passed (Unix time); kept from the previous file by a run that did not pass",
                        *success));
  return out;
}

Ledger VerifiedThrough(const diff::DiffReport& d) {
  if (d.range.from == 0) return 0;
  Ledger through = d.range.to;
  if (d.first_divergent_ledger) through = std::min<Ledger>(through, *d.first_divergent_ledger - 1);
  if (!d.coverage.allow_gaps)
    for (const auto* side : {&d.coverage.left, &d.coverage.right})
      if (!side->missing.empty()) through = std::min<Ledger>(through, side->missing.front().from - 1);
  return std::max<Ledger>(through, d.range.from - 1);
}

namespace {
// One declaration of "behind" for every gate (issue 43: each lag number has one name).
Metric HeadBehind(double left, double right) {
  return {"ledgerdiff_head_behind_ledgers", "gauge", "How many ledgers the side's head is behind the other side's (0: not behind)",
          {{{{"side", "left"}}, left}, {{{"side", "right"}}, right}}};
}
}  // namespace

std::vector<Metric> ComparisonMetrics(const diff::DiffReport& d) {
  std::vector<Metric> out;
  out.push_back(Gauge("ledgerdiff_verified_through_ledger",
                      "Every ledger from the range's first to this one was compared and found equal",
                      static_cast<double>(VerifiedThrough(d))));
  Metric head{"ledgerdiff_head_ledger", "gauge", "The highest ledger of the range each side holds", {}};
  const std::pair<const char*, const diff::SideCoverage*> sides[] = {{"left", &d.coverage.left},
                                                                    {"right", &d.coverage.right}};
  for (const auto& [name, side] : sides)
    if (side->last) head.samples.push_back({{{"side", name}}, static_cast<double>(*side->last)});
  out.push_back(head);
  if (d.coverage.left.last && d.coverage.right.last) {
    const double left = static_cast<double>(*d.coverage.left.last), right = static_cast<double>(*d.coverage.right.last);
    out.push_back(HeadBehind(std::max(0.0, right - left), std::max(0.0, left - right)));
  }
  out.push_back(Gauge("ledgerdiff_divergent_ledgers", "Ledgers where any table differs, in the last run",
                      static_cast<double>(d.divergent_ledgers)));
  out.push_back({"ledgerdiff_rows_compared", "gauge", "History rows compared in the last run, per side",
                 {{{{"side", "left"}}, static_cast<double>(d.rows_compared_left)},
                  {{{"side", "right"}}, static_cast<double>(d.rows_compared_right)}}});
  out.push_back({"ledgerdiff_missing_ledgers", "gauge", "Ledgers of the range a side does not hold",
                 {{{{"side", "left"}}, static_cast<double>(d.coverage.left.missing_ledgers)},
                  {{{"side", "right"}}, static_cast<double>(d.coverage.right.missing_ledgers)}}});
  return out;
}

std::vector<Metric> StateMetrics(const verify::StateComparison& s) {
  std::vector<Metric> out;
  out.push_back(Gauge("ledgerdiff_state_compared",
                      "1 when the state tables were compared at a common ledger, 0 when not (ledgers apart, skipped, "
                      "nothing to compare)",
                      s.compared ? 1.0 : 0.0));
  if (!s.compared) return out;
  const bool divergent = s.verdict == verify::StateVerdict::kDivergent;
  out.push_back(Gauge("ledgerdiff_state_divergent", "1 when the state tables compared at a common ledger differ, else 0",
                      divergent ? 1.0 : 0.0));
  out.push_back(Gauge("ledgerdiff_state_differing_rows", "State rows that differ (by key) at the common ledger",
                      static_cast<double>(s.differing_rows)));
  if (!divergent && s.ledger_left)
    out.push_back(Gauge("ledgerdiff_state_last_agreed_ledger",
                        "The state ledger at which both sides' state tables compared equal",
                        static_cast<double>(*s.ledger_left)));
  return out;
}

std::vector<Metric> ChaosMetrics(const verify::ChaosReport& r) {
  // Sorted label sets: the same run writes the same file.
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> faults;
  std::map<std::string, uint32_t> rounds;
  for (const auto& round : r.rounds) {
    const std::string verdict = round.inconclusive ? "inconclusive" : round.valid ? "valid" : "invalid";
    ++rounds[verdict];
    for (const auto& f : round.faults)
      ++faults[{std::string(verify::ToString(f.plan.kind)), f.detector ? std::string(ingest::ToString(*f.detector)) : "none", verdict}];
  }
  Metric by_fault{"ledgerdiff_chaos_faults_total", "counter",
                  "Planned faults of the last chaos run by kind, the detector that caught them (none: not caught) "
                  "and their round's verdict",
                  {}};
  for (const auto& [key, n] : faults) {
    const auto& [kind, detector, verdict] = key;
    by_fault.samples.push_back({{{"kind", kind}, {"detector", detector}, {"verdict", verdict}}, static_cast<double>(n)});
  }
  Metric by_round{"ledgerdiff_chaos_rounds_total", "counter", "Rounds of the last chaos run by verdict", {}};
  for (const auto& [verdict, n] : rounds) by_round.samples.push_back({{{"verdict", verdict}}, static_cast<double>(n)});
  return {by_fault, by_round};
}

std::vector<Metric> FollowMetrics(const verify::FollowCycle& c, const FollowTotals& totals, std::time_t now) {
  std::vector<Metric> out;
  // Nothing compared yet (waiting for the first ledger): no frontier is claimed.
  if (c.frontier >= c.first)
    out.push_back(Gauge("ledgerdiff_verified_through_ledger",
                        "Every ledger from the first followed to this one was compared and found equal",
                        static_cast<double>(c.frontier)));
  if (c.reaped_through >= c.first)
    out.push_back(Gauge("ledgerdiff_reaped_through_ledger",
                        "Verified ledgers from the first followed to this one are gone from both sides (retention) and "
                        "no longer compared",
                        static_cast<double>(c.reaped_through)));
  Metric head{"ledgerdiff_head_ledger", "gauge", "The highest ledger each side holds", {}};
  if (c.head_left) head.samples.push_back({{{"side", "left"}}, static_cast<double>(*c.head_left)});
  if (c.head_right) head.samples.push_back({{{"side", "right"}}, static_cast<double>(*c.head_right)});
  out.push_back(head);
  out.push_back(Gauge("ledgerdiff_lag_ledgers",
                      "Ledgers the verified frontier trails the higher head: behind + held back + backlog",
                      static_cast<double>(c.lag_ledgers)));
  out.push_back(HeadBehind(static_cast<double>(c.behind_left), static_cast<double>(c.behind_right)));
  out.push_back({"ledgerdiff_gap_ledgers", "gauge",
                 "Ledgers missing on the side after its gap-free run, up to its head (within the next cycle's window)",
                 {{{{"side", "left"}}, static_cast<double>(c.gap_left)}, {{{"side", "right"}}, static_cast<double>(c.gap_right)}}});
  out.push_back(Gauge("ledgerdiff_held_back_ledgers", "Ledgers compared but not verified because an open divergence holds them",
                      static_cast<double>(c.held_back_ledgers)));
  out.push_back(Gauge("ledgerdiff_backlog_ledgers", "Ledgers both heads have passed that are not compared yet",
                      static_cast<double>(c.backlog_ledgers)));
  if (c.lag_seconds)
    out.push_back(Gauge("ledgerdiff_lag_seconds",
                        "Seconds between the close of the higher head's ledger and of the frontier's", *c.lag_seconds));
  out.push_back({"ledgerdiff_follow_divergences_found_total", "counter",
                 "Cycles that found a divergence since the follower's state was created (kept across restarts)",
                 {{{}, static_cast<double>(c.divergences_total)}}});
  out.push_back(Gauge("ledgerdiff_open_divergences",
                      "Divergences found and not resolved since (the verdict is divergent while one is open)",
                      static_cast<double>(c.open.size())));
  if (!c.open.empty()) {
    // The first history divergence's ledger (a state divergence's ledger is a state ledger, below).
    if (c.open.front().how != verify::kFoundInState)
      out.push_back(Gauge("ledgerdiff_first_open_divergent_ledger", "The first ledger of the first open divergence",
                          static_cast<double>(c.open.front().ledgers.from)));
    int64_t oldest = c.open.front().found_at;
    for (const auto& d : c.open) oldest = std::min(oldest, d.found_at);
    out.push_back(Gauge("ledgerdiff_oldest_open_divergence_age_seconds",
                        "Seconds since the oldest open divergence was found",
                        std::max(0.0, static_cast<double>(now - oldest))));
  }
  // The state comparison (--state-interval, issue 45): only when the follower compares state.
  if (c.state_followed) {
    out.push_back(Gauge("ledgerdiff_state_divergent",
                        "1 while the state tables compared at a common ledger differ (a divergence open until a later "
                        "comparison agrees), else 0",
                        c.state_divergent ? 1.0 : 0.0));
    if (c.state_last_agreed_ledger) {
      out.push_back(Gauge("ledgerdiff_state_last_agreed_ledger",
                          "The last state ledger at which both sides' state tables compared equal",
                          static_cast<double>(*c.state_last_agreed_ledger)));
      out.push_back(Gauge("ledgerdiff_state_last_agreed_timestamp_seconds",
                          "When both sides' state tables last compared equal (Unix seconds)",
                          static_cast<double>(c.state_last_agreed_at)));
    }
    if (c.state_last_compared_at)
      out.push_back(Gauge("ledgerdiff_state_last_compared_timestamp_seconds",
                          "When the state tables were last compared at a common ledger, whatever they showed (Unix "
                          "seconds)",
                          static_cast<double>(c.state_last_compared_at)));
  }
  out.push_back({"ledgerdiff_rows_compared_total", "counter", "History rows compared by this follower process, per side",
                 {{{{"side", "left"}}, static_cast<double>(totals.rows_left)},
                  {{{"side", "right"}}, static_cast<double>(totals.rows_right)}}});
  out.push_back(Gauge("ledgerdiff_scrub_coverage_ratio",
                      "Share of the verified range the scrub re-verified in its current pass (0 to 1)", c.scrub_coverage));
  return out;
}

}  // namespace ledgerdiff::report
