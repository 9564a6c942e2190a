#pragma once
// Every gate as CI sees it: the GateSummary (core/report.h) of verify, verify-range, selftest,
// chaos and sweep, and the JUnit XML, Markdown and HTML of any GateSummary. verify keeps its
// richer renderers (junit.h, markdown.h, html.h) and uses its summary for annotations only;
// sweep keeps its HTML (sweep.h); chaos adds its rounds x faults timeline to the page.
//
// INVARIANT: pure functions of their inputs (same input, same bytes); every data string is
// escaped for its format.

#include <string>

#include "core/database.h"
#include "core/report.h"
#include "diff/diff.h"
#include "verify/chaos.h"
#include "verify/selftest.h"
#include "verify/sweep.h"
#include "verify/verify.h"
#include "report/metrics.h"

namespace ledgerdiff::report {

// The summaries. verify: a failing check per divergent table (with the job behind the first
// divergent ledger), per lookup or invariant problem; an errored check for a failed ingestion;
// next steps: look again, remove the kept cluster.
GateSummary VerifyGate(const verify::VerifyReport& report);
// verify-range: one check per compared table, the soundness problems, as verify; coverage (each
// side's ledgers, a failing check when ledgers are missing), the divergent ledgers (the first
// ten, then a count); next step: `look_again` (a command), when not identical.
GateSummary VerifyRangeGate(const diff::DiffReport& report, const std::string& look_again = "");
// selftest: one check per case ("skip-ledger@150": caught at its ledger or not).
GateSummary SelftestGate(const verify::SelftestReport& report);
// chaos: one check per round (valid, invalid with its anomalies, or unknown: a fault never
// fired, a failure); next step: the replay command.
GateSummary ChaosGate(const verify::ChaosReport& report);
// sweep: one check per cell (divergent or failed cells fail); the recommendation as a fact.
GateSummary SweepGate(const verify::SweepReport& report);

// JUnit XML: one <testsuite name="ledgerdiff.COMMAND"> with the facts as properties, one
// <testcase> per check (failure / error; a warning passes with its message in system-out),
// the text rendering in the suite's system-out.
std::string RenderGateJUnit(const GateSummary& s);
// Markdown: verdict heading, facts, a table of the checks (failing ones first, with details
// collapsible), the next steps as shell blocks.
std::string RenderGateMarkdown(const GateSummary& s);
// One self-contained HTML page: banner (the verdict in capitals and a headline: the first
// failing check's name and message, else how many checks passed), facts, `extra_html` (trusted
// markup made by report/), the checks, next steps.
std::string RenderGateHtml(const GateSummary& s, const std::string& extra_html = "");

// Chaos's Jepsen-style timeline: one row per round, one column per fault kind, each cell the
// planned fault with what happened and the detector that caught it (or why it does not count),
// the round's detector counts, anomalies and verdict; a last row with the totals.
std::string ChaosTimelineHtml(const verify::ChaosReport& report);

// The GateReports the report sink writes for each command. REQUIRES: `report` outlives the
// returned value (the renderers refer to it).
GateReports VerifyReports(const verify::VerifyReport& report);
// verify-range of a diff without a state comparison: the VerifyRangeReport overload's reports of
// a report holding `report` and `look_again`.
GateReports VerifyRangeReports(const diff::DiffReport& report, const std::string& look_again = "");
// A one-shot verify-range with its state comparison (verify/state_compare.h): the summary is
// VerifyRangeGate's with a "state" fact and check (pass: identical, or nothing to compare; fail:
// divergent or incomplete; warning: skipped by --skip-state) and the combined verdict; JUnit,
// Markdown and HTML are RenderVerifyRangeJUnit, RenderVerifyRangeMarkdown and
// RenderVerifyRangeHtml (verify's renderers, issue 46), which hold a copy of `report`.
GateReports VerifyRangeReports(const verify::VerifyRangeReport& report);
// Adds the state's fact and check to `s` and sets its verdict to `combined`.
void AddStateCheck(const verify::StateComparison& state, diff::Verdict combined, GateSummary& s);
GateReports SelftestReports(const verify::SelftestReport& report);
GateReports ChaosReports(const verify::ChaosReport& report);
GateReports SweepReports(const verify::SweepReport& report);
// verify-range --follow, after each cycle: only the metrics (the cycle's verdict, time, last
// success, FollowMetrics); a divergence's other reports are VerifyRangeReports of its diff.
GateReports FollowCycleReports(const verify::FollowCycle& cycle, const FollowTotals& totals);
// verify-range --follow that stopped without a finding (--until reached, --cycles ran, a signal):
// the JUnit, Markdown and HTML of its run (no metrics: those are per cycle). One passing check
// "verified through" (failing when nothing was verified yet: incomplete), one failing check per
// cycle that found a divergence kept going past. `stopped_by` says why it stopped ("--until
// reached", "SIGTERM"). Holds copies: `run` and `options` need not outlive it.
GateSummary FollowGate(const verify::FollowReport& run, const verify::FollowOptions& options,
                       const std::string& stopped_by);
GateReports FollowReports(const verify::FollowReport& run, const verify::FollowOptions& options,
                          const std::string& stopped_by);

// The lines chaos and sweep add when they kept schemas in an embedded cluster that would have
// gone with the process: where it stays and how to reach and remove it (`kept`), or why nothing
// could be kept (`kept` an error). Text lines, and the JSON key "kept_cluster" or "evidence_gone".
struct KeptClusterLines {
  std::string text;
  nlohmann::json json;  // an object of the one key
};
KeptClusterLines RenderKeptCluster(const Result<KeptDatabase>& kept);

}  // namespace ledgerdiff::report
