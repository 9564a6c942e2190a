#pragma once
// The follower's state directory (verify/follow.h): DIR/state.json and DIR/segments/*.ldm.
//
// A state file is untrusted input (a hand edit, a corrupted disk, a hostile file): it is read
// with bounds on its size and nesting (dump/bounded_json.h), every number within its range (a
// ledger 1..2^31-1, history_ledgers.sequence being an integer; counts 0..2^63-1) and the values
// consistent with one another before anything uses them. A violation is a Usage error (exit 2)
// of one line naming the file and the key.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/side.h"
#include "core/status.h"
#include "dump/digest.h"

namespace ledgerdiff::verify {

inline constexpr const char* kFollowStateFile = "state.json";
inline constexpr const char* kFollowSegmentsDir = "segments";
inline constexpr const char* kFollowLockFile = "lock";
// The highest ledger history_ledgers.sequence (a 32-bit signed integer) can hold.
inline constexpr Ledger kHighestLedger = 2147483647;

struct FollowSegment {
  LedgerRange range;
  std::string file;  // under DIR/segments: always FollowSegmentName(range)
};

// "0000000002-0000000061.ldm"
std::string FollowSegmentName(const LedgerRange& r);

// A divergence the follower found and has not seen resolved: kept in the state across cycles and
// restarts (the verdict stays divergent while one is open) until a later comparison of its
// ledgers finds both sides equal to what was verified (FollowState::open_divergences).
struct OpenDivergence {
  LedgerRange ledgers;              // its first divergent ledger through the end of what found it
  std::string how;                  // kFoundInNewLedgers, kFoundByScrub, kFoundGone, kFoundByRecheck, kFoundInState
  SideSet sides = SideSet::kNone;   // the scrub, gone: who; kNone: new ledgers, a recheck, the state
  std::vector<std::string> tables;  // at its first ledger
  int64_t found_at = 0;             // Unix seconds
  uint64_t cycle = 0;               // the cycle that found it
  // kFoundInState: the keys that differ (all of them, in every table; `tables` names the tables).
  uint64_t differing_keys = 0;
};
inline constexpr const char* kFoundInNewLedgers = "new-ledgers";
inline constexpr const char* kFoundByScrub = "scrub";
inline constexpr const char* kFoundGone = "gone";
inline constexpr const char* kFoundByRecheck = "recheck";  // verify-range --follow --recheck A:B
// The state tables compared at a common ledger differ (issue 45). Its `ledgers` are that state
// ledger alone (L:L, not a history ledger: it may lie anywhere); at most one is open, always
// last in open_divergences; it closes when a later state comparison at a common ledger agrees.
inline constexpr const char* kFoundInState = "state";
// A divergence closed: what was open, and when and how it closed.
struct ClosedDivergence {
  OpenDivergence divergence;
  int64_t closed_at = 0;
  uint64_t cycle = 0;               // the cycle that closed it
  std::string why;                  // one line: what compared equal
};
inline constexpr size_t kMaxOpenDivergences = 1000;  // more found are counted, not kept
inline constexpr size_t kMaxClosedDivergences = 20;  // the latest closed ones

// DIR/state.json. INVARIANT (checked by ParseFollowState): 1 <= from <= compared_through + 1 <=
// 2^31; from - 1 <= reaped_through <= compared_through; first_divergence within
// from..compared_through; Kept() <= scrub_next <= compared_through + 1; divergences <= cycles,
// at least 1 with a first divergence; a cycle ran when a ledger was compared; the segments are
// consecutive through `compared_through`, the first one holds the first ledger not reaped (none
// when every compared ledger was reaped), each named FollowSegmentName of its range, and every
// file they name is complete (written before the state that names it).
struct FollowState {
  Ledger from = 0;
  Ledger compared_through = 0;             // from - 1: nothing compared yet
  // Compared ledgers gone from both sides since (retention), from `from` through this one
  // (from - 1: none). Segments wholly below it are dropped; nothing below it is checked again.
  Ledger reaped_through = 0;
  std::optional<Ledger> first_divergence;  // the first divergent ledger found (--keep-going)
  uint64_t cycles = 0, divergences = 0;
  Ledger scrub_next = 0;                   // the next verified ledger the scrub checks
  std::vector<FollowSegment> segments;
  // Ordered by first ledger, at most one per first ledger, at most kMaxOpenDivergences; when
  // first_divergence is set one of them starts there. `closed`: the latest, oldest first.
  // A kFoundInState divergence, when open, is the last (after the history ones, outside their order).
  std::vector<OpenDivergence> open_divergences;
  std::vector<ClosedDivergence> closed_divergences;
  // The follower's state comparison (--state-interval): the last ledger at which both sides'
  // state tables compared equal and when (Unix seconds; 0: never), and when state was last
  // compared at a common ledger, whatever it found (0: never).
  std::optional<Ledger> state_last_agreed_ledger;
  int64_t state_last_agreed_at = 0;
  int64_t state_last_compared_at = 0;
  nlohmann::json left, right;              // sides: identity (dump/source_identity.h), schema
  std::string profile;
  dump::DigestEngine engine = dump::DigestEngine::kText;  // its segments' engine

  Ledger VerifiedThrough() const {
    return first_divergence ? std::min(compared_through, *first_divergence - 1) : compared_through;
  }
  // The first ledger still held (not reaped).
  Ledger Kept() const { return std::max(from, reaped_through + 1); }
};

nlohmann::json FollowStateToJson(const FollowState& s);
// The state in `text` (the bytes of the file `path`, named in errors). Errors: Usage, one line
// "PATH: ..." naming the key at fault. Never throws; any bytes are safe (fuzzed: tests/fuzz).
Result<FollowState> ParseFollowState(std::string_view text, const std::string& path);

// Checks the state directory `dir` before the follower uses it (it may not exist yet). Errors
// (Usage): DIR or DIR/segments not a directory or a symbolic link; DIR/state.json or DIR/lock a
// symbolic link or not a regular file; a non-empty DIR that is not a follow state directory
// (like --keep-db: DIR holds only state.json, lock, segments and the temporary files of their
// atomic writes, and state.json unless DIR/segments is empty); an entry of DIR/segments not
// named like a segment or its leftovers, or a symbolic link.
Status CheckFollowStateDir(const std::string& dir);
// Loads DIR/state.json (a regular file, not a symbolic link), checked as ParseFollowState does,
// and checks each segment the state names is a regular file in DIR/segments.
Result<FollowState> LoadFollowState(const std::string& dir);
Status SaveFollowState(const std::string& dir, const FollowState& s);
// Removes the entries of DIR/segments the state does not name that are a segment's leftovers (a
// segment not yet recorded, a checkpoint, a temporary file): what an interrupted cycle left. Call
// under the directory's lock. Other entries are left alone (CheckFollowStateDir refuses them).
void RemoveUnreferencedSegments(const std::string& dir, const FollowState& s);
// Replaces the ledgers `r` of the segments of `s` in DIR with those of the whole full-detail
// manifest `fresh` (of exactly `r`, of the same sides, profile and tool version): each segment
// overlapping `r` is rewritten under its own name, atomically, as its ledgers before `r`, fresh's
// within it and its ledgers after `r` (dump::CutManifest, dump::ConcatenateManifests); the state
// itself is unchanged. Interrupted, a segment holds its old or its new ledgers, never a mix.
// REQUIRES: `r` within the segments' ledgers; under the directory's lock.
Status ReplaceSegmentLedgers(const std::string& dir, const FollowState& s, const LedgerRange& r,
                             const std::string& fresh);

// What `follow-status` shows of a state directory, read without a database and without taking
// its lock (a follower starting meanwhile is never refused because of it).
struct FollowStatus {
  std::string dir;
  FollowState state;
  // The holder line the last follower to take the lock wrote ("pid 123 on host db1 since T");
  // "" when none was written. `holder_running`: on this host, whether that pid is alive (it may
  // be another process by now); nullopt on another host or without a line.
  std::string holder;
  std::optional<bool> holder_running;
  uint64_t segment_bytes = 0;
};
// Errors: Usage (exit 2) for a directory that is not a follow state (CheckFollowStateDir,
// LoadFollowState) or holds none yet.
Result<FollowStatus> ReadFollowStatus(const std::string& dir);

}  // namespace ledgerdiff::verify
