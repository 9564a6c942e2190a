#pragma once
// sweep: choose workers and job size by measurement, with proof that each setting is correct.
//
// The serial reference is ingested and digested once into a manifest (or read from
// `baseline`). Each cell of the grid (workers x job size) ingests the range `repeat` times into
// a fresh tool-owned schema, diffs it against the reference and records wall time (median and
// interval: min-max over the repeats), throughput, attempts, retries, peak connections and the
// verdict. A cell's schemas are dropped after it unless `keep` or it diverged. A failing ingester
// fails its cell only.
//
// INVARIANT: the recommendation is never a cell with a divergent or failed repeat.
// INVARIANT: the recommendation is a cell with more workers than another identical cell only when
// it is faster beyond the noise (its interval does not overlap that cell's), or when no noise was
// measured (one repeat), which the recommendation then says.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/status.h"
#include "core/target.h"
#include "dump/canonical.h"
#include "dump/profile.h"
#include "ingest/plan.h"
#include "verify/usl.h"

namespace ledgerdiff::verify {

struct SweepOptions {
  LedgerRange range;
  std::vector<uint32_t> workers;    // distinct, each 1..64
  std::vector<uint32_t> job_sizes;  // distinct, each 1..range size
  uint32_t repeat = 3;              // 1..20; 3 by default: one repeat measures no noise
  // The workload with its one set of defaults (retries, backoff, job timeout, seed, density,
  // ingester). Its range, schema, workers and job size are set per cell.
  ingest::IngestPlan plan;
  ingest::TestHooks hooks;  // acts on parallel cells (workers > 1) only: an injected bug
  std::string table_profile = "horizon";
  // table_profile's spec, when the caller loaded it already (the CLI's check): ValidateSweepOptions
  // takes it instead of reading the profile again. nullptr: loaded there.
  std::shared_ptr<const dump::ProfileSpec> profile_spec;
  std::string baseline;    // reference manifest; empty: a serial ingest
  bool keep = false;
  int digest_jobs = 2;
  // How the reference and the cells are digested; nullopt: the baseline's, else dump::kDefaultEngine.
  std::optional<dump::DigestEngine> engine;
  std::string run_id;  // empty: a new one
};

// Parses "1,2,4": positive integers, no empty items. Usage errors name `flag`.
Result<std::vector<uint32_t>> ParseUintList(const std::string& text, const std::string& flag);

// Checks everything before any database is touched: empty lists, duplicates, zero or absurd
// values, a job size larger than the range, more workers than jobs in a cell, a baseline that
// does not match (CheckBaselineFits). Returns the digest profile the sweep uses:
// options.profile_spec, else table_profile loaded.
Result<dump::ProfileSpec> ValidateSweepOptions(const SweepOptions& options);

struct SweepRepeat {
  bool ok = false;         // the ingestion finished (false: `error`)
  bool identical = false;
  std::optional<Ledger> first_divergent_ledger;
  double wall_s = 0;
  uint64_t rows = 0;
  uint32_t attempts = 0;
  uint32_t retried_jobs = 0;
  uint32_t peak_connections = 0;  // sampled from pg_stat_activity
  std::string schema;
  bool kept = false;
  std::string error;
};

// A cell's verdict over its repeats: divergent if any repeat diverged, else failed if any failed.
enum class CellVerdict { kIdentical, kDivergent, kFailed };
std::string_view ToString(CellVerdict verdict);

struct SweepCell {
  uint32_t workers = 0;
  uint32_t job_size = 0;
  uint32_t jobs = 0;
  bool bug_injected = false;
  std::vector<SweepRepeat> repeats;
  // Over repeats that finished (`samples` of them). The interval is [min_s, max_s]; with fewer
  // than 2 samples it measures no noise (HasNoiseEstimate).
  uint32_t samples = 0;
  double median_s = 0, min_s = 0, max_s = 0;
  double spread_s = 0;  // max - min
  double ledgers_per_s = 0, rows_per_s = 0;  // at the median
  double ledgers_per_s_min = 0, ledgers_per_s_max = 0;  // at max_s and min_s: the interval in ledgers/s
  double speedup = 0;   // reference serial time / median (0 when unknown)
  uint32_t attempts = 0, retries = 0, peak_connections = 0;
  CellVerdict verdict = CellVerdict::kFailed;  // a cell never summarized did not pass
  std::optional<Ledger> first_divergent_ledger;  // lowest over repeats
  std::string error;    // first failure

  std::string Name() const;  // "4x250" (workers x job size)
  bool HasNoiseEstimate() const { return samples >= 2; }
  // "4x250 3.10 s (2.95-3.40)", or "4x250 3.10 s (one repeat)".
  std::string Describe() const;
};

struct SweepRecommendation {
  bool found = false;
  uint32_t workers = 0, job_size = 0;
  double median_s = 0, ledgers_per_s = 0, speedup = 0;
  std::string reason;
  // False when the cells compared were measured once (--repeat 1): the choice may be noise.
  bool noise_estimate = false;
  // The identical cells whose interval overlaps the fastest's (the fastest first, then by
  // median), when there are two or more: the difference between them is within noise and the
  // one with the fewest workers was chosen. Empty when the winner is clear.
  std::vector<std::string> within_noise;
  // One line on how the choice relates to the noise: clear winner, within noise (naming the
  // cells), or no noise estimate. Empty when nothing was recommended.
  std::string noise;
  bool every_parallel_divergent = false;
  std::vector<std::string> divergent;  // "2x50 at ledger 120" for every divergent cell
};

struct SweepReport {
  SweepOptions options;           // as asked: range, grid, repeat, workload (ingester, bug), baseline
  std::string run_id;             // options.run_id, or the new one when that was empty
  std::string reference;          // "serial ingest (1 worker, jobs of N)" or "manifest PATH"
  // The serial reference is measured like a cell: one untimed warm-up ingest (so the reference is
  // not the only cold measurement of the run), then `repeat` timed ones. reference_s is their
  // median; all 0 / empty with a baseline.
  double reference_s = 0;
  std::vector<double> reference_runs_s;  // the timed ingests, in order
  double reference_warmup_s = 0;         // the warm-up ingest's wall time (not in the median)
  std::string reference_schema;   // kept when a cell diverged or with keep; "" when dropped
  dump::DigestEngine engine = dump::kDefaultEngine;  // what digested the reference and the cells
  std::vector<SweepCell> cells;   // workers-major, in the order given
  SweepRecommendation recommendation;
  uint32_t usl_job_size = 0;      // the job size the fit uses
  UslFit usl;
  // What the command worked on (Target::Line in text, "target" in JSON); unset: not shown.
  std::optional<Target> target;

  // 0 every cell identical and a recommendation; 1 a cell diverged or failed.
  int exit_code() const;
};

// Fills a cell's aggregates from its repeats (`reference_s` 0: speed-up unknown).
void SummarizeCell(SweepCell& cell, const LedgerRange& range, double reference_s);
// Among the cells whose every repeat is identical: the fastest (lowest median) when its interval
// overlaps no other such cell's; otherwise, among the cells whose interval overlaps the fastest's,
// the one with the fewest workers (then the lower median). With one repeat per cell there is no
// interval: the fastest, with a caveat. Pure (tests).
SweepRecommendation Recommend(const std::vector<SweepCell>& cells);
// The USL fit of ledgers/s against workers at `job_size` over identical cells.
UslFit FitCells(const std::vector<SweepCell>& cells, uint32_t job_size);

Result<SweepReport> RunSweep(const std::string& conninfo, const SweepOptions& options, Reporter& reporter);

}  // namespace ledgerdiff::verify
