#pragma once
// Comparing two sides (schemas or manifests): first divergent ledger, divergent tables, and the
// row-level diff of that ledger.
//
// Each side is read once for its per-ledger digests (both sides concurrently); only the first
// divergent ledger's rows are read again, from the sides that are schemas. Computing is separate
// from rendering: DiffSources returns a DiffReport; report/diff_text_json.h renders it.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/side.h"
#include "core/status.h"
#include "core/target.h"
#include "diff/checks.h"
#include "dump/digest.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {
class DigestJob;  // dump/digest_job.h
}  // namespace ledgerdiff::dump

namespace ledgerdiff::diff {

// One side of a comparison: a schema in a database, read by a digest, or a manifest file that
// a digest wrote. What a side is, is its alternative (std::holds_alternative / std::visit).
struct SchemaSource {
  std::string conninfo;
  std::string schema;
};
struct ManifestSource {
  std::string path;
};
using Source = std::variant<SchemaSource, ManifestSource>;

// "schema \"s\" (host=... password redacted)" or "manifest PATH".
std::string Describe(const Source& source);

// Parses a side given on the command line:
//   file:PATH, or an existing PATH ending in .ldm  -> a manifest file
//   postgresql://...#SCHEMA (or postgres://)       -> SCHEMA in that database
//   CONNINFO::SCHEMA (e.g. "host=/tmp dbname=b::public") -> SCHEMA in that database
//   SCHEMA                                         -> SCHEMA in `default_database`
// `default_database` is the command's resolved database (--db, LEDGERDIFF_DB, or "" for libpq's
// defaults: the PG* environment); nullopt when none was resolved, which refuses the last form.
Result<Source> ParseSource(const std::string& text, const std::optional<std::string>& default_database);
// True when the text names a side that needs no --db (manifest or explicit database).
bool SourceNeedsDefaultDatabase(const std::string& text);

struct DiffOptions {
  std::optional<LedgerRange> range;  // default: the manifest's range, else the union of schemas'
  // Ledgers of the range a side does not hold (DiffReport::coverage) make the verdict
  // "incomplete" (exit 1) unless this is set; they are listed either way.
  bool allow_gaps = false;
  uint32_t max_rows = 20;            // per table and kind of row difference
  bool all = false;                  // keep every divergent ledger per table (intervals)
  int jobs = 1;                      // digest connections per schema side
  // Accept a comparison of zero rows on both sides as identical (else a Usage error: a gate
  // must not pass on nothing, e.g. a wrong --range or a forgotten --db): the range holding no
  // ledger on either side is then not "incomplete" either.
  bool allow_empty = false;
  // Zero rows on both sides is not a Usage error, but coverage still counts (a verify-range
  // shard's slice may lie beyond the data: it is incomplete, and the merge says so).
  bool empty_slice = false;
  // With a range, which of each schema side's rows outside it are counted (rows_outside_range):
  //   kAll: before, after and without a ledger; a warning (the counts scan whole tables);
  //   kWithoutLedger: only rows whose ledger is NULL (an index lookup), and a table where their
  //     number differs between two schema sides is an outside_range_difference (divergent): for
  //     sides that grow past every range by design (verify-range --follow), whose rows after the
  //     range are expected and whose whole-table counts would cost more than the range.
  // Without a range every row outside is counted and decides the verdict, whatever this says.
  enum class OutsideRows { kAll, kWithoutLedger };
  OutsideRows outside_rows = OutsideRows::kAll;
  // How schema sides are digested (dump::DigestEngine); nullopt: a manifest side's engine, else
  // kDefaultEngine. Two manifests of different engines, or an engine that is not a manifest
  // side's, are a Usage error naming both (their digests of the same rows differ).
  std::optional<dump::DigestEngine> engine;
  // dump::DigestOptions::resolve_on_client. The lookup and invariant checks take the
  // references the client resolution saw; with false they scan the tables (same results).
  bool resolve_on_client = true;
  // Per schema side (0 left, 1 right): dump::DigestOptions::lookup_cache, kept by the caller
  // across diffs of the same two sources (verify-range --follow's cycles); nullptr reads whole.
  std::array<dump::LookupCache*, 2> lookup_caches{};
  // verify-range --out: the resumable job (dump/digest_job.h) both schema sides run through
  // (DigestJob::RunSide: side 0 left, 1 right, restricted to the tables and columns both sides
  // have): it replays the ledgers its checkpoint holds, checkpoints what is digested and writes
  // the left side's chunks into its manifest. Roots cover the whole range either way.
  // REQUIRES: both sides schemas; the job's range is the diff's; fewer ledgers resumed than the
  // range holds (the digest's snapshot serves the row diff). nullptr: the sides are digested.
  dump::DigestJob* job = nullptr;
  // Two live sides (verify-range): windowed tables (dump::TimeWindow) compare only the rows whose
  // window closed at or before this instant (epoch ms), the same cutoff on both sides; the
  // others are counted as unsettled (DiffReport::unsettled). nullopt: every row (finished copies).
  std::optional<int64_t> settled_before_ms;
  // Two databases of the profile's kind (verify-range): a table the profile marks required that
  // neither side has is listed (DiffReport::missing_tables) and makes the verdict incomplete,
  // unless named here (--allow-missing-table).
  bool require_profile_tables = false;
  std::vector<std::string> allow_missing_tables;
  // A ledger of an explicit range that one side holds (its ledger-table row) and the other has
  // not written at all (no row of any table): a gap on one side.
  //   kDiverges: its rows are compared and differ (diff, verify: one job wrote both sides over
  //     the range, so a ledger one side lacks is a wrong write, the first divergent ledger);
  //   kIncomplete: not compared; the coverage names it missing on that side and the verdict is
  //     incomplete unless something else differs (verify-range: two databases that ingest on
  //     their own, one of which has not written that ledger yet).
  // Without a range, or without the ledger table on both sides, every ledger is compared.
  enum class OneSidedGap { kDiverges, kIncomplete };
  OneSidedGap one_sided_gap = OneSidedGap::kDiverges;
};

// A windowed table's rows left out as unsettled (DiffOptions::settled_before_ms), per side.
struct UnsettledCount {
  std::string table;
  uint64_t left = 0, right = 0;
};

// Rows of one side's compared table that the range leaves out: a warning, except without
// --range (see DiffReport::outside_range_differences).
struct OutsideRows {
  std::string table;
  Side side = Side::kLeft;
  uint64_t before = 0, after = 0, no_ledger = 0;
};

using RowValues = std::vector<std::optional<std::string>>;  // std::nullopt is SQL NULL

struct ColumnChange {
  std::string column;
  std::optional<std::string> left, right;
};

struct ChangedRow {
  RowValues key;  // values of the table's natural key columns
  std::vector<ColumnChange> changes;
  // The side's row is stored flipped relative to its canonical orientation (a trade whose
  // base/counter the canonical query swapped): the values shown are the canonical ones.
  bool left_stored_flipped = false, right_stored_flipped = false;
};

// A column both sides have whose type class (dump::ColumnClass) differs, e.g. jsonb on the left
// and json on the right; DiffReport::schema_differences names it too. Its table's digests differ
// at every ledger holding a row of it, while the row diff, reading rows as text, may find none
// that differs.
struct ColumnClassDifference {
  std::string column;
  std::string left, right;  // each side's class, as dump::ColumnClassName names it
};

// Row-level diff of one table at the first divergent ledger (multiset semantics: a row twice on
// one side and once on the other is one extra row).
struct TableRowDiff {
  std::string table;
  std::vector<std::string> columns;  // canonical columns (values in RowValues follow them)
  std::vector<std::string> key;
  bool left_available = true;   // false: the side is a manifest, its rows cannot be shown
  bool right_available = true;
  std::vector<RowValues> only_left, only_right;  // at most max_rows each
  // Parallel to only_left / only_right (shorter: the rest false): the row is stored flipped.
  std::vector<bool> only_left_stored_flipped, only_right_stored_flipped;
  std::vector<ChangedRow> changed;               // at most max_rows
  uint64_t only_left_total = 0, only_right_total = 0, changed_total = 0;
  // The table's common columns of another type class, in the table's column order (whether or
  // not a row differs): what explains a divergent table whose row diff is empty.
  std::vector<ColumnClassDifference> class_differences;
  // No row is missing, extra or changed (also when a side's rows are not available).
  bool NoRowDiffers() const { return only_left_total == 0 && only_right_total == 0 && changed_total == 0; }
  bool OnlyLeftStoredFlipped(size_t i) const { return i < only_left_stored_flipped.size() && only_left_stored_flipped[i]; }
  bool OnlyRightStoredFlipped(size_t i) const {
    return i < only_right_stored_flipped.size() && only_right_stored_flipped[i];
  }
};

// What a row diff says of a row shown in canonical orientation while stored flipped; "" when it
// is not. One side's row: "row shown in canonical orientation; stored flipped". A changed row
// names the side(s): "...; stored flipped on the left" (`left_name`), "... on both sides".
std::string StoredFlippedNote(bool stored_flipped);
std::string StoredFlippedNote(const ChangedRow& row, const std::string& left_name = "left",
                              const std::string& right_name = "right");

struct TableAtLedger {
  std::string table;
  uint64_t left_rows = 0, right_rows = 0;
};

struct TableComparison {
  std::string table;
  uint64_t left_rows = 0, right_rows = 0;  // over the compared range
  uint64_t divergent_ledgers = 0;
  std::vector<LedgerRange> divergent;      // every divergent ledger as intervals (with `all`)
  std::string left_root, right_root;       // "" when not available (compact manifest sub-range)
};

// Which ledgers one side holds over the compared range: the ledgers with a row in the ledger
// table (core/history_tables.h kLedgerTable), read off the digest's per-ledger row counts (no query of its own, so a
// manifest side has a coverage too).
struct SideCoverage {
  uint64_t held = 0;                  // ledgers of the range with a ledger-table row
  std::optional<Ledger> first, last;  // the first and last of them
  // Ledgers the side must hold and does not: with --range every ledger of the range; without,
  // the gaps between `first` and `last` (the range's ends beyond them are in `not_held`).
  // The first kMaxCoverageRanges intervals; `missing_ranges` counts them all.
  std::vector<LedgerRange> missing;
  uint64_t missing_ledgers = 0, missing_ranges = 0;
  // Without --range: the inferred range's ends beyond first/last (the other side's data), which
  // the row comparison covers; not counted as missing.
  std::vector<LedgerRange> not_held;
  // Rows of other tables at ledgers without a ledger-table row (a stray row far past the data,
  // a ledger whose header row was lost): per table, its rows and (first intervals of) ledgers.
  struct Orphans {
    std::string table;
    uint64_t rows = 0, ledgers = 0;
    std::vector<LedgerRange> at;  // the first kMaxCoverageRanges intervals
  };
  std::vector<Orphans> orphans;
};
inline constexpr size_t kMaxCoverageRanges = 100;
inline constexpr size_t kDivergentSample = 10;

struct Coverage {
  // False when the ledger table is not compared on both sides (a profile without it): then
  // nothing is known of coverage and it never makes a verdict incomplete.
  bool checked = false;
  std::string table;             // kLedgerTable when checked
  bool explicit_range = false;   // --range given: every ledger of it must be held
  bool allow_gaps = false;       // --allow-gaps: missing ledgers are listed, not a failure
  SideCoverage left, right;
  bool complete() const { return !checked || (left.missing_ledgers == 0 && right.missing_ledgers == 0); }
};

enum class Verdict { kIdentical, kDivergent, kIncomplete };
const char* VerdictName(Verdict v);  // "identical" | "divergent" | "incomplete"

struct DiffReport {
  std::string left, right;  // descriptions
  LedgerRange range;
  std::string profile;
  dump::DigestEngine engine = dump::DigestEngine::kText;  // what computed both sides' digests
  // identical: nothing differs and coverage is complete (or --allow-gaps). divergent: something
  // differs (takes precedence). incomplete: nothing differs, but a side lacks ledgers of the range,
  // or a required table is on neither side (missing_tables).
  Verdict verdict = Verdict::kDivergent;
  bool identical = false;  // verdict == kIdentical
  Coverage coverage;
  std::optional<Ledger> first_divergent_ledger;
  std::vector<TableAtLedger> divergent_tables;  // at the first divergent ledger
  std::vector<TableRowDiff> rows;               // row diffs of those tables
  uint64_t ledgers_compared = 0;
  uint64_t rows_compared_left = 0, rows_compared_right = 0;
  std::vector<TableComparison> tables;          // every compared table
  std::vector<std::string> excluded_columns;    // "table.column"
  std::vector<std::string> lookup_tables;       // of both sides
  std::vector<std::string> uncompared_tables;   // of both sides (union)
  std::vector<std::string> uncompared_left, uncompared_right;
  std::vector<std::string> tables_only_left, tables_only_right;  // any table present on one side only
  std::vector<std::string> schema_differences;  // tables/columns present on one side only: divergence
  std::vector<std::string> schema_notes;        // class-equal widenings (timestamp/timestamptz...)
  std::vector<OutsideRows> rows_outside_range;  // per side and table, when not 0
  // Not compared: rows of windowed tables whose window had not closed (DiffOptions::
  // settled_before_ms, echoed here; every windowed table compared listed, with 0s too).
  std::optional<int64_t> settled_before_ms;
  std::vector<UnsettledCount> unsettled;
  // Required tables of the profile that neither side has: listed, and the verdict is incomplete
  // unless allowed (then they are in allowed_missing_tables instead).
  std::vector<std::string> missing_tables, allowed_missing_tables;
  // When each schema side's digest took its snapshot (nullopt for a manifest side).
  std::optional<dump::SourceSnapshot> left_snapshot, right_snapshot;
  // Without --range the range is meant to hold every row; a compared table whose rows outside it
  // (NULL ledger; or written after the range was chosen) number differently on the two schema
  // sides cannot be identical: each such table is listed here, and any makes the result divergent.
  std::vector<std::string> outside_range_differences;
  std::vector<LookupComparison> lookups;        // per lookup table (schema sides)
  std::vector<InvariantResult> invariants;      // per side and invariant (schema sides)
  std::vector<std::string> notes;
  std::string left_root, right_root;            // "" when not available
  bool all = false;
  uint64_t divergent_ledgers = 0;               // ledgers where any table differs
  std::vector<Ledger> divergent_sample;         // the first kDivergentSample of them, in order
  // Where the time went: both sides digested and compared (streamed together), then the row
  // diff of the first divergent ledger (its rows read again).
  double digest_seconds = 0, row_diff_seconds = 0;
  // The two sides' databases (or manifest files), set by the commands that compare (diff,
  // verify-range): text "target: left ...; right ...", JSON "target" {left, right}. Unset in a
  // verify's diff (the verify names its target once).
  std::optional<TargetPair> targets;
};

// Compares `left` and `right` under profile `spec`. identical means: no ledger differs, no
// table or column is on one side only, without --range no compared table holds a different
// number of rows outside the range on the two sides, lookup tables hold the same natural keys and keep their
// identity rules, and no side breaks an invariant of the profile.
// Errors (exit 2): unreachable database, missing schema, unreadable / corrupt manifest, range
// outside a manifest, nothing compared (zero rows on both sides) unless options.allow_empty.
Result<DiffReport> DiffSources(const Source& left, const Source& right, const dump::ProfileSpec& spec,
                               const DiffOptions& options, Reporter& reporter);

// Multiset row diff of one ledger's canonical rows (both in canonical order), matched on `key`
// (indexes into the columns). `left_flipped` / `right_flipped` (parallel to the rows, or empty:
// none) tell which rows are stored flipped; the flag never makes rows differ, it is carried to
// the rows shown. Exposed for tests.
void DiffRows(const std::vector<RowValues>& left, const std::vector<RowValues>& right, const std::vector<size_t>& key,
              const std::vector<std::string>& columns, uint32_t max_rows, TableRowDiff& out,
              const std::vector<bool>& left_flipped = {}, const std::vector<bool>& right_flipped = {});


}  // namespace ledgerdiff::diff
