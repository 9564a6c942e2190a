#pragma once
// Sharded digests: shard K of N digests a deterministic contiguous slice of a range into a
// partial manifest; MergeManifests joins the N parts into the manifest a single digest of the
// whole range writes (same entries, same table roots, same overall root).
//
// Partial manifest: a full-detail manifest (dump/manifest.h) of the slice whose header also
// holds "shard": {index, count, full_range}; its trailer roots are the slice's own. Full detail
// because the table roots hash every (ledger, count, 128-bit digest) in order: the merge replays
// those entries through one RootBuilder.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/status.h"
#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/shard_slice.h"

namespace ledgerdiff::dump {

// The schedulers' array index variables, in the order they are read: Kubernetes Indexed Job, AWS
// Batch array job, Slurm job array (an array submitted as --array=0-(N-1), deploy/slurm/).
inline constexpr const char* kShardIndexVariables[] = {"JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX",
                                                       "SLURM_ARRAY_TASK_ID"};

// The shard index: `flag` when given, else the first of kShardIndexVariables that is set; Usage
// error when none is set, not a number, or >= count.
Result<uint32_t> ResolveShardIndex(std::optional<int64_t> flag, uint32_t count);

// The flags of a digest that may be sharded or resumed (digest, verify-range), checked alike
// before any server starts. Usage errors naming the flag: --shard needs --shards; --resume needs
// --out (its checkpoint is OUT.partial, which must be a regular file when it exists); --shards
// needs --out (the part `manifest merge` joins) and a range every shard splits the same way; the
// shard's index resolves (ResolveShardIndex) and its slice exists (ShardSlice). Returns the
// shard's index (0 when not sharded).
struct ShardAndResumeFlags {
  std::optional<int64_t> shard;  // --shard K, when given
  uint32_t shards = 0;           // --shards N; 0: not sharded
  bool resume = false;           // --resume
  std::string out;               // --out; "-" is standard output (no checkpoint)
};
Result<uint32_t> CheckShardAndResumeFlags(const ShardAndResumeFlags& flags, const std::optional<LedgerRange>& range);

// Digests slice `index` of `count` of `range` of `schema` into the partial manifest `path`.
// REQUIRES: options.range unset (the slice is set here).
Result<DigestSummary> DigestShardToManifest(const std::string& conninfo, const std::string& schema,
                                            const ProfileSpec& spec, DigestOptions options, const LedgerRange& range,
                                            uint32_t count, uint32_t index, const std::string& path,
                                            Reporter& reporter);

// Joins partial manifests into `out` (detail `detail`). The parts must fit: every one a partial
// manifest of full detail with the same full range, count, profile fingerprint, profile name and
// tool version, its slice exactly ShardSlice(full_range, count, index); every index present once;
// all of one kind (digest parts, or verify-range parts whose outcomes are joined: identical when
// every part is, the first divergent ledger the smallest, counts summed); all of one source: equal
// source identities (dump/source_identity.h; verify-range parts: per side), a system identifier
// compared only where both parts hold one, so parts digested on hot standbys of one primary fit.
// The merged header is shard 0's, of the whole range, with the parts' joined identity: the order
// of `parts` does not change a byte.
// Usage errors (exit 2, nothing written): `out` is one of the parts (the same file, through any
// link, or the same path), checked before anything is read; a missing shard (named with its slice;
// at most 8 named); a duplicate; a mismatch (naming both files and, for sources, what differs:
// "part-1.ldm: database \"new\" but part-0.ldm: database \"old\""); verify-range parts that
// compared zero rows on both sides in all (unless they were run with --allow-empty). A part beyond
// the format's bounds (dump/manifest.h) fails as it is opened, before anything is sized by it.
// Every part is untrusted input (issue 44): its comparison outcome is checked as it is read
// (counts within its own slice, a first divergent ledger inside it and present exactly when a
// ledger diverged, never "identical" with a divergent ledger or with missing ledgers and no
// --allow-gaps), and every sum over the parts (rows of each table, the outcome's counts) is
// checked: a sum past 2^64-1 is a Usage error naming the field and the part, never a wrap.
// When each verify-range part read its two sides (ComparisonOutcome's snapshots).
struct PartSnapshots {
  std::string part;  // its path
  SourceSnapshot left, right;
};

struct MergedManifest {
  DigestSummary summary;                        // of the merged manifest
  std::optional<ComparisonOutcome> comparison;  // verify-range parts
  // verify-range parts that recorded their snapshots, in ledger order. Parts of one side read at
  // different WAL positions saw different committed data: a change committed between two parts'
  // reads may be in one part's ledgers and not in another's, and the merge says so.
  std::vector<PartSnapshots> snapshots;
  bool same_snapshots() const {
    for (const auto& p : snapshots)
      if (p.left.lsn != snapshots.front().left.lsn || p.right.lsn != snapshots.front().right.lsn) return false;
    return true;
  }
};
Result<MergedManifest> MergeManifests(const std::vector<std::string>& parts, const std::string& out,
                                      ManifestDetail detail);

// Joins whole full-detail manifests of consecutive ranges (each starting right after the one
// before) into `out`: the manifest one digest (or one verify-range) of the joined range writes,
// byte for byte, its outcome joined as MergeManifests joins parts'. verify-range --follow keeps
// its verified range in such segments and joins them as they grow. Usage errors (nothing
// written): `out` is one of them, a gap or overlap, another kind, profile, tool version or source.
Result<MergedManifest> ConcatenateManifests(const std::vector<std::string>& parts, const std::string& out);

// Writes to `out` the ledgers `range` of the whole full-detail manifest `path`: the manifest one
// digest of `range` writes, byte for byte (its entries, roots, header with that range; "appended"
// stretches clipped to it), so that ConcatenateManifests of consecutive cuts gives `path` back.
// verify-range --follow --recheck replaces a stretch of a segment with it. `path` is read whole
// (its checksum verified). A comparison's outcome, known only for the whole range, is cut
// conservatively: verdict, allow_empty, allow_gaps and coverage_checked as `path`'s; its ledger
// counts at most the cut's size; the first divergent ledger (and divergent ledgers) only when it
// lies in `range`; rows_left the entries' rows, rows_right too when `path` was identical, else
// `path`'s; no snapshots. A cut is never more identical than its source.
// Usage errors (nothing written): `out` is `path`; `path` is compact, a partial manifest or
// unreadable; `range` not within its range.
Result<MergedManifest> CutManifest(const std::string& path, const LedgerRange& range, const std::string& out);


}  // namespace ledgerdiff::dump
