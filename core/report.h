#pragma once
// Reporting: the library never writes to stdout and renders no result. Long-running work talks
// to a Reporter (progress and notes for people, on stderr); each command returns a result value
// that the CLI renders as text, JSON, JUnit, Markdown or HTML with report/'s renderers. Three
// lines reach stderr without a Reporter, where none exists: the interruption notice of the
// signal handler (core/process.h), the removal of killed runs' leftover directories (before any
// command's work, core/tempdir.h), and a worker process's own failure (ingest/worker.h: its
// stderr is its log).

#include <chrono>
#include <cstdio>
#include <deque>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/stage_timer.h"
#include "core/status.h"

namespace ledgerdiff {

enum class OutputFormat { kText, kJson };

// Where a phase stands. `done` / `total` are what the line shows (ledgers); `work_done` /
// `work_total` are what the ETA weighs them by, since ledgers do not cost the same: rows per
// ledger grow along a range (issue 22).
// CONTRACT for producers: work is one estimate of the phase's cost (e.g. rows) in which
// work_total and work_done are measured alike (both from the same plan or statistics, never
// an estimated total against counted rows), so a bias common to both cancels in the ETA;
// work_done only grows and equals work_total once done == total. work_total 0: unknown (then
// work_done is 0 too and the ETA counts units).
struct Progress {
  std::string phase;            // "serial ingest", "digest left", ...
  uint64_t done = 0;            // units done
  uint64_t total = 0;           // units in all (0: unknown)
  std::string unit = "ledgers";
  double rate_per_s = 0;        // units per second since the phase started
  uint64_t work_done = 0;       // estimated work (rows) of the units done
  uint64_t work_total = 0;      // estimated work of all the units (0: unknown)
  std::vector<std::string> workers;  // what each worker does now ("w1 job 3 [201-300]")
};

// ---- The whole command's progress (issue 46): one fraction and one ETA over all its phases.

// One phase of a command as planned before its work begins. `cost` is its estimated cost in
// any unit the plan uses for all its phases (e.g. rows times a per-row prior): only the ratios
// between phases matter, since the seconds a unit of cost takes are learned as the phases run.
struct PlannedPhase {
  std::string name;                  // "serial ingest": what the command's line calls it
  std::vector<std::string> reports;  // the Progress::phase names it reports under (both digests)
  double cost = 0;
};
using CommandPlan = std::vector<PlannedPhase>;

// Where a whole command stands: the share of its planned cost done, the seconds left of it
// (-1 while unknown), and the planned phase in progress (1-based `index` of `count`; 0: none yet).
struct CommandEstimate {
  double fraction = 0;
  double eta_s = -1;
  std::string phase;
  size_t index = 0, count = 0;
};

// The command's ETA from its plan and its phases' progress. Phases run in the plan's order (a
// phase that begins ends those before it; one never seen was skipped); a phase ends when every
// Progress::phase it reports under reports done >= total. Seconds left:
//   the phase in progress: its own ETA (RecentRate: the work still to come over its recent
//     rate), the latest of its reports', aged to now; else its cost left times the pace;
//   each phase not begun: its cost times the pace,
// where the pace (seconds per unit of cost) is the time the begun phases took over the cost they
// did. Pure (no clock): StderrReporter feeds it and shows it.
class CommandEta {
 public:
  explicit CommandEta(CommandPlan plan = {});
  bool planned() const { return !plan_.empty(); }
  // Records `p` at `t_s` (seconds on any monotonic clock) with its phase's own ETA (-1:
  // unknown); progress under a name the plan does not hold is not the command's.
  void Update(const Progress& p, double t_s, double phase_eta_s);
  // `of`: the update a log line shows; when no phase is in progress (it ended the one it is
  // of), the estimate still names that phase, so a phase's last line says whose it is.
  CommandEstimate Estimate(double t_s, const Progress* of = nullptr) const;

 private:
  struct Report {
    bool seen = false, finished = false;
    double fraction = 0;
    double eta_s = -1, eta_at_s = 0;
  };
  struct Phase {
    double begun_s = -1, ended_s = -1;  // -1: not yet
    bool skipped = false;
    std::vector<Report> reports;  // as the plan lists them
  };
  double FractionOf(size_t i) const;
  size_t PhaseOf(const Progress& p) const;
  CommandPlan plan_;
  std::vector<Phase> phases_;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // A note for a log: one line, no trailing newline.
  virtual void Note(std::string_view line) = 0;
  // A progress update; may be called often (the reporter throttles).
  virtual void Update(const Progress& progress) = 0;
  // A line about one step of the progress ("job 3 [201-300] done by w1"), for a log: a reporter
  // may throttle it with its progress lines, or leave it out (quiet). Default: Note(line).
  virtual void Event(std::string_view line) { Note(line); }
  // The command's phases, before its work begins: progress then also shows one fraction and
  // one ETA for the whole `command` ("verify"); see CommandEta. Default: ignored.
  virtual void Plan(std::string_view command, const CommandPlan& plan) {
    (void)command;
    (void)plan;
  }
  // Ends the live progress display (before final output).
  virtual void Done() {}
  // True when progress is shown live (a terminal): then per-job notes are not needed.
  virtual bool live() const { return false; }
};

// The rate of recent work in one phase: units (and work, Progress::work_done) per second over
// the samples of the last `window` seconds (the whole phase until it is that old). The ETA comes
// from it, not from the phase's average, so a slow start does not make the ETA lie later; and
// from the work still to come when the phase knows it, not from the units, so units that grow
// costlier along the phase (rows per ledger) do not make it lie either.
class RecentRate {
 public:
  explicit RecentRate(double window_s = 30) : window_s_(window_s) {}
  // Records `done` units and `work_done` work (0: the phase measures none) at time `t_s`
  // (seconds on any monotonic clock); a new phase, or a count that went back, starts afresh.
  void Add(const std::string& phase, double t_s, uint64_t done, uint64_t work_done = 0);
  double rate() const;       // units/s; 0 while unknown
  double work_rate() const;  // work/s; 0 while unknown
  // Seconds left; -1 while unknown. With `work_total` (> 0) the work still to come over the
  // recent work rate (unknown while no work was measured in the window); without, the units
  // still to come over the recent unit rate.
  double Eta(uint64_t total, uint64_t work_total = 0) const;

 private:
  struct Sample {
    double t_s;
    uint64_t done, work_done;
  };
  // Per second between the window's first and last samples of the count `of` (0: unknown).
  double PerSecond(uint64_t Sample::*of) const;
  double window_s_;
  std::string phase_;
  std::deque<Sample> samples_;
};

// The live status block of a terminal, as text: one line per phase in progress, in the order the
// phases began (left and right digests, running at once, get a line each), each followed by its
// workers ("  w1 job 3 [201-300]"). A phase leaves the block when it reports done >= total.
// Pure (no clock, no terminal): StderrReporter draws its frames.
class LiveBlock {
 public:
  // Records `p` with the rate and ETA measured for its phase (0 / -1: unknown).
  void Update(const Progress& p, double rate, double eta_s);
  // The block's lines, each ending in '\n'; "" when no phase is in progress.
  std::string Frame() const;

 private:
  struct Entry {
    Progress last;
    double rate = 0, eta_s = -1;
  };
  std::vector<Entry> phases_;  // in progress, oldest first
};

// Writes notes to stderr. On a terminal, progress is one live status block redrawn at most 10
// times a second, one line per phase in progress (with its workers), and events are left out (the
// block shows the workers); otherwise (a CI log) at most one progress line or event every
// `log_interval_s` seconds in all, whatever the phases and jobs: a phase's lines begin once it
// has run an interval, phases in progress at once take turns (the one longest without a line
// first), an event is printed when the interval since the last line has passed, else dropped:
//   2026-11-30T23:40:05Z parallel ingest: 1,500 / 5,000 ledgers (30.0%), 410 ledgers/s, ETA 8.5 s
// The rate and ETA come from the recent work of the phase (RecentRate): the rate in ledgers,
// the ETA from the work (rows) still to come when the producer estimates it. `quiet`: no notes,
// events nor progress at all.
class StderrReporter : public Reporter {
 public:
  // How progress is shown: a live block redrawn in place (a terminal), or log lines.
  enum class Display { kLogLines, kLiveBlock };
  explicit StderrReporter(bool quiet = false, double log_interval_s = kDefaultLogIntervalS);
  static constexpr double kDefaultLogIntervalS = 10;
  // For tests: the display forced, lines to `out`.
  StderrReporter(bool quiet, Display display, double log_interval_s, std::FILE* out);
  void Note(std::string_view line) override;
  void Update(const Progress& progress) override;
  void Event(std::string_view line) override;
  void Plan(std::string_view command, const CommandPlan& plan) override;
  void Done() override;
  bool live() const override { return tty_ && !quiet_; }

 private:
  void ClearLive();
  bool tty_;
  bool quiet_;
  double log_interval_s_;
  std::FILE* out_;
  // Phases may run at once (left and right digests): each keeps its own rate and log clock.
  struct Phase {
    RecentRate rate;
    Progress last;
    std::chrono::steady_clock::time_point last_line{};
    bool logged = false;
  };
  std::mutex mu_;
  int live_lines_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  std::chrono::steady_clock::time_point last_log_line_{};  // off a terminal: of any phase or event
  std::map<std::string, Phase> phases_;
  LiveBlock live_;  // what a terminal shows
  std::string command_;
  CommandEta overall_;  // planned: lines end with the command's fraction and ETA
};

// One progress line (without the timestamp): "phase: 1,500 / 5,000 ledgers (30.0%), 410
// ledgers/s, ETA 8.5 s". `rate`, `eta_s` as measured by the caller (0 / -1: left out).
std::string FormatProgressLine(const Progress& p, double rate, double eta_s);
// The whole command's part of a line: "verify 34% (parallel ingest, phase 2 of 4), ETA 3 min 5 s"
// (the ETA left out while unknown).
std::string FormatCommandProgress(std::string_view command, const CommandEstimate& e);
// The current UTC time as ISO 8601, "2026-11-30T23:40:05Z".
std::string IsoTimeNow();

// ---- The report sink: every gate (verify, verify-range, selftest, chaos, sweep) speaks CI the
// same way. A command builds a GateSummary (its checks as CI sees them) and hands it, with its
// renderers, to EmitGateReports, which writes --junit / --markdown / --report DIR, prints GitHub
// annotations and appends the Markdown to $GITHUB_STEP_SUMMARY.

// One check of a gate: a JUnit test case, a row of the Markdown summary, an annotation.
struct GateCheck {
  enum class State { kPass, kFail, kError, kWarning };
  std::string name;     // "history_trades", "round 2", "skip-ledger@150"
  State state = State::kPass;
  std::string message;  // one line; why it failed (may be empty on a pass)
  std::string detail;   // more lines (row diff, faults), may be empty
};

struct GateSummary {
  std::string command;  // "chaos"
  std::string verdict;  // as the command prints it: "identical", "valid", "PASSED" ...
  bool passed = false;
  // What the command worked on (core/database.h Target::Describe, TargetPair::Describe); "" when
  // unknown. JUnit: a "target" property; Markdown and HTML: the first fact.
  std::string target;
  std::vector<std::pair<std::string, std::string>> facts;  // label, value: range, workers, ...
  std::vector<GateCheck> checks;
  std::vector<std::pair<std::string, std::string>> next_steps;  // what to run next: label, command
  std::string text;  // the text rendering (JUnit system-out)
};

// Where the reports go: the --junit FILE, --markdown FILE, --report DIR flags.
struct ReportFiles {
  std::string junit, markdown, report_dir;
  std::string metrics;  // --metrics FILE: Prometheus text format (report/metrics.h)
};

// What CI the process runs under: GitHub annotations when GITHUB_ACTIONS=true; the step summary
// file from GITHUB_STEP_SUMMARY.
struct CiEnvironment {
  bool github_annotations = false;
  std::string step_summary;
  static CiEnvironment FromEnvironment();
};

// A gate's summary and its renderings, made only when asked for.
struct GateReports {
  GateSummary summary;
  std::function<std::string()> junit;               // JUnit XML
  std::function<std::string()> markdown;            // Markdown (also the step summary)
  std::function<Status(const std::string&)> html;   // writes DIR/index.html
  // Prometheus text, given what the file held before ("" when none: a run that did not pass keeps
  // the previous last-success time) and the time of writing (the sink reads the clock).
  std::function<std::string(const std::string& previous, std::time_t now)> metrics;
};

// The GitHub workflow commands for `s`: one ::error per failed or errored check, one ::warning
// per warning, one ::error for a failed gate with no failing check. Data is escaped (%, CR, LF;
// in properties also : and ,) so it cannot end the command.
std::vector<std::string> GithubAnnotations(const GateSummary& s);
// Writes the files asked for, then (under CI) prints the annotations on `annotations_out` and
// appends the Markdown to the step summary. Every sink is tried even when one fails; errors: a
// Runtime error naming each file that could not be written (its paths were checked before any
// work, cli's WritableFile, so a failure here is the environment's: exit 3).
Status EmitGateReports(const GateReports& reports, const ReportFiles& files, const CiEnvironment& ci,
                       std::FILE* annotations_out = stderr);

class NullReporter : public Reporter {
 public:
  void Note(std::string_view) override {}
  void Update(const Progress&) override {}
};

// The reporter of work nested in a planned command (selftest's verifies): everything goes to
// `to` but the nested work's own plan, which would replace the command's.
class NestedReporter : public Reporter {
 public:
  explicit NestedReporter(Reporter& to) : to_(to) {}
  void Note(std::string_view line) override { to_.Note(line); }
  void Update(const Progress& progress) override { to_.Update(progress); }
  void Event(std::string_view line) override { to_.Event(line); }
  void Done() override { to_.Done(); }
  bool live() const override { return to_.live(); }

 private:
  Reporter& to_;
};

// "1.2 s", "3 min 4 s"
std::string FormatDuration(double seconds);
// The one number formatter of text output. 1234567 -> "1,234,567"
std::string FormatCount(uint64_t n);
// A count with its noun, singular for 1: (1, "worker") -> "1 worker", (2, "worker") -> "2 workers",
// (1500, "ledger") -> "1,500 ledgers". `plural` for a noun that does not take an "s"
// ((2, "entry", "entries") -> "2 entries").
std::string FormatCountOf(uint64_t n, std::string_view noun, std::string_view plural = {});

// Escapes text for XML/HTML attribute and element content.
std::string XmlEscape(std::string_view s);

}  // namespace ledgerdiff
