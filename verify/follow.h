#pragma once
// verify-range --follow: continuous verification of two live histories before a cut-over.
//
// Each cycle takes the frontier F, the highest ledger both sides hold without a gap from the
// first ledger to verify (less the --settle window), and runs verify-range over the ledgers
// after the previous frontier through F: every check of verify-range (lookups as sets,
// invariants, coverage, rows outside the range) runs on what is new. The left side's manifest of
// each verified stretch is kept in the state directory (segments, joined as they grow, so their
// number stays logarithmic in the cycles) and a scrub compares the next slice of the verified
// range on both sides against it: a ledger that changed after it was verified is a divergence.
//
// State directory (one follower at a time: an exclusive flock on DIR/lock):
//   DIR/state.json         what was verified (replaced atomically after every cycle)
//   DIR/segments/*.ldm     the left side's manifests of the verified range, consecutive
// The state records both sides (conninfos with passwords redacted, schemas, profile): a restart
// against other databases or another profile is refused. A cycle interrupted (SIGKILL, SIGTERM,
// a lost server) leaves the state of the cycle before; its partial files are removed at start.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/stage_timer.h"
#include "core/status.h"
#include "verify/follow_state.h"
#include "verify/state_compare.h"
#include "verify/verify.h"

namespace ledgerdiff::verify {

struct FollowOptions {
  // Sides, profile and comparison (sides.diff) as verify-range's; each cycle runs them over its
  // own range (ValidVerifyRangeOptions::ForCycle): `range`, `out`, `shards` and `resume` are not
  // given (validation refuses them).
  VerifyRangeOptions sides;
  std::string state_dir;
  Ledger from = 0;                 // the first ledger to verify (a restart takes it from the state)
  std::optional<Ledger> until;     // stop once verified through it (else run until signalled)
  double interval_s = 30;          // between the starts of two cycles
  uint32_t settle = 0;             // ignore each side's newest N ledgers
  bool keep_going = false;         // report a divergence and continue past it (else stop, exit 1)
  double give_up_after_s = 300;    // a runtime failure that lasts longer: exit 3
  double scrub_period_s = 86400;   // re-verify every verified ledger at least this often
  uint64_t max_cycles = 0;         // 0: no limit (tests stop after N cycles)
  uint32_t max_cycle_ledgers = 100000;  // a cycle verifies at most this many new ledgers
  // --recheck A:B: the run's first cycle (the next one when it found verified ledgers gone first,
  // with keep_going) compares both sides afresh over these compared ledgers
  // (within the state's kept..compared_through), as if new; equal, they replace what the segments
  // hold of them and close the open divergences there; different, they open one (a finding).
  std::optional<LedgerRange> recheck;
  // --state-interval: compare the state tables (verify/state_compare.h) at most this often, in the
  // first cycle after it that finds both sides' state ledgers equal (a cycle that finds them
  // different tries again next cycle; 0: every cycle). --skip-state (sides.state.mode kSkip):
  // never. A profile without state tables: never.
  double state_interval_s = 600;
};
inline constexpr double kMaxStateIntervalSeconds = 7 * 86400;
class ValidFollowOptions;
// Checks everything before any database is touched (the sides as verify-range's over the first
// ledger, the state directory and the state in it) and loads the digest profile once: the only
// way to a ValidFollowOptions. Usage errors.
Result<ValidFollowOptions> ValidateFollowOptions(FollowOptions options);

// FollowOptions that ValidateFollowOptions accepted, with their sides validated (and the profile
// they loaded): every cycle of the run derives its verify-range from sides(), reading no file again.
class ValidFollowOptions {
 public:
  const FollowOptions& get() const { return o_; }
  const ValidVerifyRangeOptions& sides() const { return sides_; }

 private:
  ValidFollowOptions(FollowOptions o, ValidVerifyRangeOptions sides) : o_(std::move(o)), sides_(std::move(sides)) {}
  friend Result<ValidFollowOptions> ValidateFollowOptions(FollowOptions options);

  FollowOptions o_;
  ValidVerifyRangeOptions sides_;
};

// A divergence found by a cycle: a new stretch that differs, a verified ledger that changed, or
// verified ledgers gone from one side (or from both, not from the bottom: not a reaping).
struct FollowFinding {
  bool changed_after_verified = false;  // found by the scrub, or gone (below)
  // Verified ledgers a side no longer holds (its history_ledgers rows in the verified range,
  // counted at the start of every cycle); `ledger` is the first of them, `sides` who lost them.
  bool gone = false;
  uint64_t gone_ledgers = 0;            // how many (the most of either side)
  Ledger ledger = 0;
  SideSet sides = SideSet::kNone;       // the scrub, gone: who changed or lost them
  std::vector<std::string> tables;      // at that ledger
  VerifyRangeReport report;             // verify-range over the new stretch (or the changed ledger)
};

// A cycle's stages, in the order it runs them: heads (the heads statement on both sides, leftover
// segment files removed), kept (verified ledgers a side no longer holds), recheck (--recheck and
// the open divergences compared again), windows (the frontier held before open time-windowed
// buckets), new_ledgers (verify-range over the new ledgers, their segment written and joined),
// scrub, state (the state tables, when due), write_state (state.json replaced, unreferenced
// segments removed) and lag (the frontier's close time read for lag_seconds).
inline constexpr const char* kFollowStageHeads = "heads";
inline constexpr const char* kFollowStageKept = "kept";
inline constexpr const char* kFollowStageRecheck = "recheck";
inline constexpr const char* kFollowStageWindows = "windows";
inline constexpr const char* kFollowStageNew = "new_ledgers";
inline constexpr const char* kFollowStageScrub = "scrub";
inline constexpr const char* kFollowStageState = "state";
inline constexpr const char* kFollowStageWriteState = "write_state";
inline constexpr const char* kFollowStageLag = "lag";
inline constexpr const char* kFollowCycleStages[] = {
    kFollowStageHeads, kFollowStageKept,       kFollowStageRecheck, kFollowStageWindows, kFollowStageNew,
    kFollowStageScrub, kFollowStageState, kFollowStageWriteState, kFollowStageLag};

inline constexpr const char* kFollowRecheckIdentical = "identical";
inline constexpr const char* kFollowRecheckDivergent = "divergent";

struct FollowCycle {
  uint64_t number = 0;                 // 1, 2, ... over the state's life
  Ledger first = 0;                    // the state's first ledger: frontier < first, nothing verified yet
  std::optional<Ledger> head_left, head_right;  // the last ledger of each side's gap-free run
  Ledger frontier = 0;                 // verified through (from - 1: nothing yet)
  std::optional<LedgerRange> compared;  // the new ledgers compared by this cycle
  std::optional<LedgerRange> scrubbed;  // the verified ledgers re-checked by this cycle
  // --recheck A:B, in the run's first cycle: the ledgers compared afresh on both sides and the
  // verdict, kFollowRecheckIdentical (the segments now hold them) or kFollowRecheckDivergent.
  struct Recheck {
    LedgerRange ledgers;
    std::string verdict;
  };
  std::optional<Recheck> rechecked;
  // Retention: verified ledgers gone from both sides from the bottom up (Horizon's reaper) are
  // reaped, no longer compared or scrubbed: those this cycle found, and all through now
  // (reaped_through < first: none).
  std::optional<LedgerRange> reaped;
  Ledger reaped_through = 0;
  uint64_t rows_left = 0, rows_right = 0;  // compared by this cycle (new and scrub)
  // The lag: how many ledgers the frontier trails the higher head (max(head) - frontier), the
  // sum of: how far each side's head is behind the other's (`behind_*`, one of them 0), the
  // ledgers an open divergence holds back (compared, not verified: `held_back_ledgers`), and the
  // ledgers both heads have passed that are not compared yet (`backlog_ledgers`), of which
  // `gap_*` are missing on that side (after its gap-free run, within the next window).
  uint64_t lag_ledgers = 0;
  uint64_t behind_left = 0, behind_right = 0;
  uint64_t gap_left = 0, gap_right = 0;
  uint64_t held_back_ledgers = 0;
  uint64_t backlog_ledgers = 0;
  std::optional<double> lag_seconds;   // closed_at(max head) - closed_at(frontier), when known
  double seconds = 0;
  // Where the cycle's seconds went, every stage of kFollowCycleStages in its order (0: not run).
  StageTable stages;
  double scrub_coverage = 0;           // share of the verified range scrubbed in the current pass
  std::string retry;                   // a runtime failure this cycle retried: its message
  std::optional<FollowFinding> finding;
  uint64_t divergences_total = 0;      // cycles that found a divergence, over the state's life
  // After this cycle: the divergences still open (the state's, found by this cycle or before),
  // and those this cycle closed. The verdict is divergent while one is open.
  std::vector<OpenDivergence> open;
  std::vector<ClosedDivergence> closed;
  // The state comparison this cycle tried (--state-interval due): compared at a common ledger
  // (identical or divergent: a kFoundInState divergence opens, or stays open, or closes), or not
  // (the ledgers differ: not a finding, tried again next cycle; its note says why). nullopt: not due.
  std::optional<StateComparison> state;
  // After this cycle (the state's, kept across restarts): when state last agreed and at which
  // ledger (0 / nullopt: never), when it was last compared, and whether a state divergence is open.
  std::optional<Ledger> state_last_agreed_ledger;
  int64_t state_last_agreed_at = 0;
  int64_t state_last_compared_at = 0;
  bool state_divergent = false;
  bool state_followed = false;  // the follower compares state (a profile with state tables, no --skip-state)
};

struct FollowReport {
  std::vector<FollowCycle> cycles;  // of this run
  Ledger first = 0;                 // the state's first ledger (frontier < first: nothing verified)
  Ledger frontier = 0;
  bool reached_until = false;
  bool diverged = false;            // some cycle of this run found a divergence, or one is still open
  uint64_t cycles_total = 0;        // the state's cycles at the end, over its life
  size_t open_divergences = 0;      // open at the end
};

// Runs cycles until `until` is verified, max_cycles ran, a divergence stops it (not keep_going),
// or a signal ends the process (the state of the last finished cycle is on disk). `on_cycle` is
// called after every cycle (the CLI prints its line and writes the metrics file).
// Errors: Usage (exit 2) for a state directory of other sides or in use; Runtime
// (exit 3) when a failure lasts longer than give_up_after_s.
Result<FollowReport> RunFollow(const ValidFollowOptions& options, Reporter& reporter,
                               const std::function<void(const FollowCycle&)>& on_cycle);

}  // namespace ledgerdiff::verify
