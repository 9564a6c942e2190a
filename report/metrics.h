#pragma once
// --metrics FILE: a run's outcome in the Prometheus text exposition format (version 0.0.4), for
// node_exporter's textfile collector or any scraper of a file. The file is replaced atomically
// (core/atomic_file.h), so a collector never reads half of it. Every metric is documented in
// report/README.md (name, type, labels); a test parses the file with prometheus_client's parser.

#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diff/diff.h"
#include "verify/chaos.h"
#include "verify/follow.h"

namespace ledgerdiff::report {

struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;  // name, value (escaped when rendered)
  double value = 0;
};

struct Metric {
  std::string name;  // ledgerdiff_...
  std::string type;  // gauge | counter
  std::string help;
  std::vector<MetricSample> samples;
};

// The exposition text: # HELP, # TYPE, then the samples, metric by metric in the given order.
std::string RenderPrometheus(const std::vector<Metric>& metrics);

// The value of an unlabelled sample `name` in an exposition text (the file a previous run
// wrote); nullopt when absent or unreadable.
std::optional<double> SampleValue(const std::string& exposition, const std::string& name);

// What every gate's file holds: ledgerdiff_verdict{command, verdict} (1 for the verdict of this
// run), ledgerdiff_cycle_duration_seconds, ledgerdiff_last_run_timestamp_seconds and
// ledgerdiff_last_success_timestamp_seconds (now when `passed`, else the value `previous` held:
// a failed run does not erase when the last success was).
std::vector<Metric> GateMetrics(const std::string& command, const std::string& verdict, bool passed, double seconds,
                                std::time_t now, const std::string& previous);

// A comparison's figures (verify-range; verify's diff of its two sides): verified through which
// ledger, each side's head, the lag, divergent ledgers, rows compared per side.
std::vector<Metric> ComparisonMetrics(const diff::DiffReport& d);

// A one-shot verify-range's state comparison (issue 45): whether it was compared at a common
// ledger, and when it was, whether it differs, its ledger when it agrees, the differing rows.
std::vector<Metric> StateMetrics(const verify::StateComparison& s);

// Chaos: ledgerdiff_chaos_faults_total{kind, detector, verdict} (each planned fault by its kind,
// the detector that caught it or "none", and its round's verdict) and rounds by verdict.
std::vector<Metric> ChaosMetrics(const verify::ChaosReport& r);

// verify-range --follow: what the cycles of this process compared so far (the _total counters).
struct FollowTotals {
  uint64_t rows_left = 0, rows_right = 0;
  void Add(const verify::FollowCycle& c) {
    rows_left += c.rows_left;
    rows_right += c.rows_right;
  }
};
// After every cycle: verified through, each side's head, the lag in ledgers and seconds,
// cycles that found a divergence over the state's life (a counter kept in the state), the open
// divergences, rows compared by this process, the scrub's coverage of the
// verified range in its current pass.
// Open divergences (issue 43): how many, the first one's ledger, the oldest one's age at `now`.
std::vector<Metric> FollowMetrics(const verify::FollowCycle& c, const FollowTotals& totals, std::time_t now);

// The highest ledger L such that every ledger from the range's first to L was compared and found
// equal (range.from - 1 when none): the first divergent and the first missing ledger stop it.
Ledger VerifiedThrough(const diff::DiffReport& d);

}  // namespace ledgerdiff::report
