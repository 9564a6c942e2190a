#pragma once
// SVG charts of an ingestion run, drawn into the HTML report: the timeline (one lane per worker
// slot, one bar per job attempt) and the throughput (ledgers per second over time).
//
// INVARIANT: pure functions of the run: coordinates are printed with one decimal, so the same
// run draws the same bytes. Every data string (worker names, errors) is escaped.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ingest/ingest_report.h"

namespace ledgerdiff::report {

// The attempt outcomes the job table records, in legend order.
inline constexpr ingest::AttemptOutcome kLegendOutcomes[] = {
    ingest::AttemptOutcome::kDone,        ingest::AttemptOutcome::kFailed,    ingest::AttemptOutcome::kLost,
    ingest::AttemptOutcome::kFenced,      ingest::AttemptOutcome::kInterrupted, ingest::AttemptOutcome::kCancelled,
    ingest::AttemptOutcome::kRunning};

// Fill colour of an attempt outcome (done green, failed red, lost orange, fenced purple,
// interrupted grey, cancelled dark grey, running blue).
const char* OutcomeColor(ingest::AttemptOutcome outcome);

// Above this many attempts the timeline merges neighbouring done attempts of a lane that are
// closer than a pixel (failed, lost, fenced and interrupted ones always stay individual).
inline constexpr size_t kDetailedAttempts = 1500;

// Seconds the run's charts span: the wall time or the latest attempt start or end; > 0.
double TimeSpan(const ingest::IngestReport& run);

// One lane of the timeline: a worker slot, the worker that held it first and the replacement
// workers that took it over after a death or a freeze.
struct TimelineLane {
  int slot = 0;         // AttemptRow::slot; 0 when the rows carry no slot
  std::string label;    // "w1", "w2", ...: see TimelineLanes
  std::string name;     // the lane's first worker (the earliest attempt): its full identity
  std::vector<const ingest::AttemptRow*> attempts;  // by start time, then job, then attempt
  std::map<std::string, double> replacements;       // other worker of the lane -> its first start
};

// The lanes of a run. Attempts with slot N > 0 share lane N (lanes in slot order); an attempt
// with slot 0 (unknown) gets the lane of its worker name, one lane per distinct name in order of
// first appearance in run.timeline, after the slotted lanes. Worker names are never parsed.
// Labels: a slotted lane is wSLOT (slots run 1..N, as the orchestrator's worker names begin), the
// unslotted lanes count on from the highest label before them; so a run's lanes read w1...wN. The
// label is the lane's, not a worker's: worker names (w1@host:pid:start, host-pid-ms) are long and
// differ only in their tails, so the chart shows labels, and the tooltips and the HTML lane key
// (html.cc) give the identities.
// INVARIANT: every attempt of run.timeline is in exactly one lane; pointers point into `run`.
std::vector<TimelineLane> TimelineLanes(const ingest::IngestReport& run);

// The tooltip of a lane: its label, its first worker's full identity and the replacements with
// the second each took over.
std::string LaneTitle(const TimelineLane& lane);

// <svg class="timeline">: one <g class="lane" data-lane="LABEL" data-worker="NAME"> per
// TimelineLanes entry, labelled LABEL at the left with LaneTitle as its tooltip, one
// <rect class="att OUTCOME[ retried]"> per attempt (or per merged run of done attempts, see
// kDetailedAttempts) with a <title> tooltip, a dashed marker where a replacement takes over.
std::string TimelineSvg(const ingest::IngestReport& run);

// <svg class="throughput">: the done attempts' ledgers spread over their durations, in 60 time
// buckets, as a step area; dashed lines at the parallel average (done ledgers / wall time) and,
// when `serial` finished, the serial average.
// INVARIANT: no dashed average line crosses an average label: each label sits above or below
// its line, clear of every average line and of the other label.
std::string ThroughputSvg(const ingest::IngestReport& run, const std::optional<ingest::IngestReport>& serial);

}  // namespace ledgerdiff::report
