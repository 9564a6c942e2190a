#pragma once
// verify-range's comparison of the state tables (issue 45): what Horizon serves now (accounts,
// signers, trust lines, offers, ...), compared when both databases' state stands at the same
// ledger.
//
// Each side is read in its own REPEATABLE READ READ ONLY snapshot together with its state ledger
// (dump/state_digest.h). When the ledgers are equal, every state table both sides have is
// compared by its digest per bucket of its key's hash; for the buckets that differ, and only for
// them, the rows are read and matched by key: each differing key is named with its columns, as
// only left, only right, or changed. Whole tables are never shipped to find a difference.
//
// A differing bucket of more than StateOptions::split_rows rows (on either side) is split into its
// sub-buckets (dump/state_digest.h: by more digits of the same md5, up to 256 per split), whose
// server-side digests are compared, and so on down until each differing bucket holds at most
// split_rows rows; only those are read. One digest statement per side and depth covers every
// bucket split at that depth. The differences found are those of reading the top-level buckets
// whole; only the rows shipped change (StateComparison::rows_shipped_*). The two sides' statements
// run at once (a thread for the left side's), each on its own snapshot's connection.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ledger_range.h"
#include "core/status.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/profile.h"

namespace ledgerdiff::verify {

// kCompare: state ledgers that differ make the verdict incomplete. kSkip (--skip-state): they
// are reported and accepted. kOff: nothing is read (the follower's cycles, a shard's slice).
enum class StateMode { kCompare, kSkip, kOff };

// The default of StateOptions::split_rows: 10,000 rows read per side at most for a bucket (a few
// MB) before a split's digest statement (one scan of the table per side) is cheaper.
inline constexpr uint32_t kStateSplitRows = 10000;
// A split that leaves a sub-bucket with all of its parent's rows on both sides (rows of one key:
// a declared key that is not unique) makes no progress: that bucket is read. Below this depth in
// any case (256^6 sub-buckets per bucket).
inline constexpr uint32_t kStateMaxSplitDepth = 6;

struct StateOptions {
  StateMode mode = StateMode::kCompare;
  // --state-wait: read both sides again (every kStateRetrySeconds) until their state ledgers
  // are equal or this many seconds have passed. 0: one read.
  double wait_s = 0;
  uint32_t max_rows = 20;  // differences listed per table (all are counted)
  // --state-split-rows: a differing bucket holding more rows than this on either side is split
  // into sub-buckets rather than read (>= 1).
  uint32_t split_rows = kStateSplitRows;
};
inline constexpr double kStateRetrySeconds = 0.25;
inline constexpr double kMaxStateWaitSeconds = 86400;

// identical / divergent: compared at a common ledger. incomplete: not compared (the ledgers
// differ, or state rows without a recorded ledger) and that makes the verdict incomplete.
// not_compared: nothing to compare (no state table declared, or neither side records a state
// ledger and no state table holds a row); no effect on the verdict. skipped: not compared,
// accepted by --skip-state.
enum class StateVerdict { kIdentical, kDivergent, kIncomplete, kNotCompared, kSkipped };
const char* ToString(StateVerdict v);  // "identical", "divergent", "incomplete", "not compared", "skipped"

struct StateTableResult {
  std::string table;
  uint64_t left_rows = 0, right_rows = 0;
  bool identical = false;
  std::string left_digest, right_digest;  // dump::StateTableDigest::Hex
};

enum class StateDifferenceKind { kOnlyLeft, kOnlyRight, kChanged };
const char* ToString(StateDifferenceKind k);  // "only left", "only right", "changed"

struct StateDifference {
  std::string table;
  std::vector<std::string> key_columns;
  diff::RowValues key;
  StateDifferenceKind kind = StateDifferenceKind::kChanged;
  std::vector<std::string> columns;  // every canonical column; left/right follow it
  std::optional<diff::RowValues> left, right;  // absent on the side that lacks the key
};

struct StateComparison {
  std::optional<Ledger> ledger_left, ledger_right;
  bool compared = false;
  StateVerdict verdict = StateVerdict::kNotCompared;
  std::vector<StateTableResult> tables;       // compared tables, by name
  std::vector<StateDifference> differences;   // by table, then key; at most max_rows per table
  uint64_t differing_rows = 0;                // all of them
  std::vector<std::string> one_sided_tables;  // state tables only one side has (a schema difference)
  // Every state table a side has (compared or not): what this comparison answers for, so that
  // the report's "not compared (no ledger mapping)" leaves them out (TakeStateTablesOffUncompared).
  std::vector<std::string> state_tables;
  std::string note;                           // why not compared, one line; "" when compared
  // What a comparison found besides differing keys: a declared key held by several rows, a table
  // whose digests differ without a differing key.
  std::vector<std::string> notes;
  uint32_t reads = 0;                         // snapshot pairs read (more than one: --state-wait retried)
  // What the comparison shipped, per side: the rows (and their COPY text's bytes) read to be
  // matched by key (the rows of the differing buckets), and the digest statements run (per table,
  // then one per depth of sub-buckets). split_depth: the deepest sub-buckets compared (0: no split).
  uint64_t rows_shipped_left = 0, rows_shipped_right = 0;
  uint64_t bytes_shipped_left = 0, bytes_shipped_right = 0;
  uint32_t digest_queries = 0;  // both sides
  uint32_t split_depth = 0;
  double seconds = 0;  // the comparison of the tables (digests, sub-buckets, rows), both snapshots open
};

// Compares the state of `left` and `right` under `spec`'s state tables and ledger source.
// REQUIRES: options.mode != kOff. Errors: a side unreachable (Runtime), a state ledger that is
// not a ledger number (Usage).
Result<StateComparison> CompareState(const diff::SchemaSource& left, const diff::SchemaSource& right,
                                     const dump::ProfileSpec& spec, dump::DigestEngine engine,
                                     const StateOptions& options);

// Removes `state.state_tables` from the diff's lists of tables without a ledger mapping: the
// state line reports on them.
void TakeStateTablesOffUncompared(const StateComparison& state, diff::DiffReport& report);

// The verdict of a comparison whose history diff says `history` and whose state says `state`:
// a divergence anywhere is divergent (history first), then incomplete, then identical.
diff::Verdict CombineVerdicts(diff::Verdict history, const std::optional<StateComparison>& state);

}  // namespace ledgerdiff::verify
