#pragma once
// The follower behind RunFollow (verify/follow.h), one object per run, its steps in files of
// their own concern:
//   follow.cc              the run: open the state directory, cycle, retry runtime failures
//   follow_cycle.cc        one cycle: heads, kept ledgers, the frontier, the new ledgers compared
//   follow_scrub.cc        the scrub: verified ledgers compared again with their segments
//   follow_divergences.cc  open divergences: recorded, re-checked (--recheck too), closed
//   follow_state_tables.cc the state tables compared every --state-interval
// Internal to verify/: nothing outside follow*.cc includes it.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/stage_timer.h"
#include "core/status.h"
#include "dump/lookup_map.h"
#include "dump/profile.h"
#include "verify/follow.h"
#include "verify/follow_lock.h"
#include "verify/follow_sides.h"
#include "verify/follow_state.h"

namespace ledgerdiff::verify {

// Parts of a cycle's scrub and recheck stages (FollowCycle::stages, after kFollowCycleStages):
// ChangedSinceVerified's reads of a side against a segment (both sides at once), summed, as diff reports
// them: the digest (connection, snapshot, lookup maps, the slice's digest and its comparison with
// the segment) and the checks (a second connection in that snapshot: rows without a ledger, lookup
// tables, invariants).
inline constexpr const char* kFollowStageRescanDigest = "rescan_digest";
inline constexpr const char* kFollowStageRescanChecks = "rescan_checks";

// The finding of a verify-range that diverged over `range`: its first divergent ledger (the
// range's first when it names none) and the tables divergent there.
FollowFinding DivergenceFinding(VerifyRangeReport report, const LedgerRange& range);

class Follower {
 public:
  // `options` outlives the follower.
  Follower(const ValidFollowOptions& options, Reporter& reporter,
           const std::function<void(const FollowCycle&)>& on_cycle);

  // The cycles (RunFollow's contract).
  Result<FollowReport> Run();

 private:
  // Creates or reopens DIR, takes its lock, loads (or starts) the state and checks it is of these
  // sides and profile.
  Status Open();

  // One cycle; `period` is the seconds since the previous cycle's start (the scrub's pace). On an
  // error state_ is left half-changed: Run restores the state of before the cycle.
  Status Cycle(FollowCycle& cycle, double period);

  // follow_cycle.cc
  // Reads what each side still holds of the compared ledgers kept:compared_through (its lowest
  // ledger there and how many it holds, from ReadHeads' snapshot). Ledgers gone from both sides
  // from the bottom up were reaped (Horizon's retention): the covered range starts after them,
  // their segments go. Any other compared ledger a side no longer holds is a finding.
  Status CheckKept(const Heads& hl, const Heads& hr, FollowCycle& cycle);

  // verify-range over the new ledgers; an identical stretch becomes a segment.
  // Windowed tables (dump/profile.h TimeWindow, issue 41): a bucket is compared once, when its
  // window has closed on both sides, so a bucket that later ledgers of its minute rewrite is never
  // compared half-filled, nor flagged by the scrub as changed once it fills. The frontier stops
  // before the first ledger of through+1..frontier that filed a bucket still open at the earlier
  // of the two sides' close times of their gap-free heads; `settled_before` is that instant, with
  // which the comparison reads (every bucket before the frontier is settled by it).
  Result<Ledger> HoldForOpenWindows(const Heads& hl, const Heads& hr, Ledger through, Ledger frontier,
                                    std::optional<int64_t>& settled_before);

  // verify-range over the new ledgers `range` (buckets settled before `settled_before`), its left
  // manifest a new segment; different, a finding (kFoundInNewLedgers) that opens a divergence.
  Status CompareNew(const LedgerRange& range, const std::optional<int64_t>& settled_before, FollowCycle& cycle);

  // Joins the last two segments while the older is at most twice the newer: a binary counter, so
  // that k cycles leave O(log k) segments and each ledger is rewritten O(log k) times.
  Status JoinSegments();

  // follow_scrub.cc
  // Re-digests the next slice of the verified range on both sides and compares it with the
  // stored segments. The slice is sized so that the whole verified range is scrubbed once per
  // scrub period at this cycle's pace: ledgers = verified * period / scrub_period.
  Status Scrub(FollowCycle& cycle, double period);

  // The first ledger of `slice` (within segment `seg`) where a side no longer holds what was
  // verified (the segment), which sides, and the tables there; nullopt when both still do.
  struct Change {
    Ledger ledger = 0;
    SideSet sides = SideSet::kNone;
    std::set<std::string> tables;
  };
  Result<std::optional<Change>> ChangedSinceVerified(const FollowSegment& seg, const LedgerRange& slice,
                                                     FollowCycle& cycle);

  // A changed ledger in `slice` of `seg` is a finding (with the rows of both sides at it) and opens a divergence.
  Status ScrubSlice(const FollowSegment& seg, const LedgerRange& slice, FollowCycle& cycle);

  // follow_divergences.cc
  // Records the divergence `f` found over `ledgers` as open (one per first ledger: found again,
  // it is updated, not added).
  void OpenDivergenceOf(const FollowFinding& f, const LedgerRange& ledgers, const char* how);

  // `checked` compared equal (both sides as verified, or with each other): the open divergences
  // that start in it lose their ledgers through its end, and close when none is left; the first
  // divergence (the frontier's stop, --keep-going) moves to the next one still open.
  void ClearChecked(const LedgerRange& checked, const std::string& why, FollowCycle& cycle);

  // Moves `d` to the closed divergences (noted, and listed in `cycle`), saying `why`.
  void Close(const OpenDivergence& d, const std::string& why, FollowCycle& cycle);

  // The first divergence is the lowest open one within the compared ledgers (if there was one).
  void RecomputeFirstDivergence();

  // --recheck A:B (issue 43: after a re-ingest of both sides the segments hold the old rows):
  // verify-range over A:B on both sides afresh. Equal, A:B's ledgers in the segments are replaced
  // by what the sides hold now and the open divergences in A:B close; different, the segments keep
  // what was verified and a divergence opens (a finding, kFoundByRecheck). The frontier is not moved.
  Status Recheck(const LedgerRange& r, FollowCycle& cycle);

  // The way back (issue 43): each open divergence whose ledgers were stored (verified, or kept
  // going past) is compared again, both sides against what was verified, at most
  // kRechecksPerCycle a cycle; equal on both sides, it is closed and the frontier moves on.
  // Divergences reaped on both sides are closed too. One still different stays open (not a new
  // finding).
  static constexpr size_t kRechecksPerCycle = 8;
  Status RecheckOpen(FollowCycle& cycle);

  // follow_state_tables.cc
  // The open state divergence (kFoundInState, kept last in the list), taken out of the list.
  std::optional<OpenDivergence> TakeStateDivergence();

  // Whether a state comparison is due: none yet, or --state-interval passed since the last
  // attempt of this run (the first of a run: since the state's last comparison, across restarts).
  bool StateDue() const;

  // --state-interval (issue 45): when due, the state tables are compared if both sides' state
  // stands at the same ledger, each read in its own snapshot (CompareState). Different ledgers
  // are no finding: noted, and tried again next cycle. Compared equal, the state divergence
  // `open` (if any) closes and the last agreed ledger moves; different, it opens (`raised`) or,
  // already open, is updated to this ledger.
  Status CompareStateIfDue(FollowCycle& cycle, std::optional<OpenDivergence>& open, bool& raised);

  const FollowOptions& o_;
  const ValidVerifyRangeOptions& sides_;  // each cycle's verify-range: sides_.ForCycle
  const dump::ProfileSpec& spec_;         // sides_'s, loaded by validation
  Reporter& reporter_;
  const std::function<void(const FollowCycle&)>& on_cycle_;
  const std::string segments_dir_;
  std::unique_ptr<DirLock> lock_;
  bool recheck_done_ = false;
  std::optional<Stopwatch> last_state_attempt_;  // since this run's last state comparison (or nothing to compare)
  FollowState state_;
  // Each side's lookup rows, kept from one cycle to the next for the new ledgers and the scrub
  // (dump::LookupCache: every digest checks, in its snapshot, the content hash of the rows kept
  // and reads whole a table whose kept rows changed). The scrub's two sides run at once, each on
  // its own cache.
  dump::LookupCache lookup_caches_[2];
  // Each side's session for the follower's own statements (its identity, heads, first missing
  // ledger, close time), held across cycles and checked before each use (SideSession).
  SideSession sessions_[2];
};

}  // namespace ledgerdiff::verify
