#pragma once
// verify: serial vs parallel in one command, the CI gate.
//
// Creates two fresh tool-owned schemas named after a run id, ingests the range serially into
// one (or takes a saved baseline manifest instead) and with N workers into the other, digests
// both, diffs them and returns the verdict. Schemas are dropped after a pass (unless `keep`) and
// kept after a divergence, with the exact `ledgerdiff diff` command to look again.

#include <array>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/stage_timer.h"
#include "core/status.h"
#include "core/target.h"
#include "diff/diff.h"
#include "verify/state_compare.h"
#include "dump/manifest.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff::verify {

// The ingestion engine's types, under the names the proofs and their renderers always used.
using ingest::AttemptRow;
using ingest::IngestOptions;
using ingest::IngestReport;
using ingest::JobRow;

// Where a database that would have died with the process was kept (see keep_database).
using ledgerdiff::KeptDatabase;

// A verify's verdict: its diff's, or kError when the run failed before the diff finished.
enum class VerifyVerdict { kIdentical, kDivergent, kIncomplete, kError };
std::string_view ToString(VerifyVerdict verdict);  // "identical" | "divergent" | "incomplete" | "error"
// verify's exit code for a finished run: 0 identical, else 1 (a divergence, missing ledgers, or an
// ingestion that failed: an answer about the ingester, as `worker` and `wait` give for a failed
// run). The environment failing is an error Status instead (exit 3).
int ExitCodeOf(VerifyVerdict verdict);

struct VerifyOptions {
  // verify's defaults of `diff`: two digest connections per side.
  static diff::DiffOptions DefaultComparison() {
    diff::DiffOptions d;
    d.jobs = 2;
    return d;
  }

  // The parallel side's plan (the serial side runs it with one worker); its `schema` is unused:
  // verify names its own.
  ingest::IngestPlan plan;
  ingest::TestHooks hooks;  // the parallel side's only (an injected bug)
  std::string table_profile = "horizon";  // digest profile: horizon | auto | FILE
  // table_profile's spec, when the caller loaded it already (the CLI's check, selftest for its
  // cases): ValidateVerifyOptions takes it instead of reading the profile again. nullptr: loaded there.
  std::shared_ptr<const dump::ProfileSpec> profile_spec;
  // How both sides are compared (diff/diff.h), as the flags say: jobs (connections per digest
  // side, the --save-baseline digest's too), max_rows and engine (nullopt: the baseline
  // manifest's, else dump::kDefaultEngine). RunVerify sets the range (the plan's) and `all`.
  diff::DiffOptions diff = DefaultComparison();
  bool keep = false;                  // keep the schemas after a pass too
  std::string save_baseline;          // write the serial side's manifest here
  std::string baseline;               // compare against this manifest; no serial ingest
  // How a user reaches this database again, for the look-again command: e.g.
  // "--keep-db /tmp/x" or "--db 'host=...'". Empty: the database is gone after the run.
  std::string reconnect_flags;
  // Set when the database is an embedded cluster: called when the schemas are to be kept (a
  // divergence, a failed parallel ingest, --keep); makes a throwaway cluster outlive the process
  // (a --keep-db cluster does already) and returns where it stays. Unset: a named database.
  std::function<Result<KeptDatabase>()> keep_database;
  // The database is the embedded default, removed when this process exits (unless
  // keep_database() is called): an interrupted run leaves nothing to resume or drop.
  bool database_removed_on_exit = false;
  // Reuse an existing serial schema (self-test runs many parallel sides against one serial).
  std::string reuse_serial_schema;
  std::string run_id;  // empty: a new one
  // Continue an interrupted verify (its run id): finished ingestion jobs are not redone; the
  // range, seed and density come from the job table.
  std::string resume_run;
  // The parallel side is done by `ledgerdiff worker --run ID` processes started elsewhere
  // (ingest::RunWithExternalWorkers); verify registers the run and waits, up to workers_timeout_s
  // (0: no limit).
  bool workers_external = false;
  double workers_timeout_s = 0;
};

// Checks everything before any database is touched (the CLI calls it before it starts a server,
// RunVerify at its entry); returns the digest profile the run uses: options.profile_spec, else
// table_profile loaded.
Result<dump::ProfileSpec> ValidateVerifyOptions(const VerifyOptions& options);

// The schemas a verify run works in, as RunVerify names them: the serial side's
// ld_<run>_serial (none with a baseline; the reused one when given) and ld_<run>_parallel.
// The run is options.resume_run, else options.run_id. REQUIRES: one of them is set.
std::vector<std::string> VerifySchemas(const VerifyOptions& options);

// What verify's (and sweep's) phases cost per row, relative to the serial ingestion of a row by
// the built-in generator: the command's ETA weighs the phases not begun yet by them (CommandEta), learning
// the seconds a unit takes as the phases run. Measured by ci/eta_error.py on verify --range
// 2:20001 (2 cores, embedded server, defaults; three runs, report/README): a parallel ingestion
// scales with the streams its workers get (OnCores); a digest reads a row in 0.16-0.22 of the
// time the serial ingestion wrote it, per stream; the diff, the schemas' drop and the server's
// stop after the digests take 5-7%. At load ~3 (2026-12-08): the parallel ingestion took 0.77 of
// the serial one's time (this model: 0.75), the digests 0.28 (0.30).
inline constexpr double kDigestCostPerRow = 0.2;
inline constexpr double kFinishCostPerRow = 0.055;
// The rows an ingestion of `range` by `plan` writes, as the plans cost them: the generator's
// estimate; an external ingester's are unknown, so its ledgers stand in (the same on every
// phase, so the phases' weights hold).
double PlannedRows(const ingest::IngestPlan& plan, const LedgerRange& range);
// How many times one stream's speed `threads` busy streams reach on this machine: at least one,
// at most its cores over kCoresPerStream. A stream is a client (an ingest worker, a digest
// worker) and the server backend it keeps busy on the same machine (the embedded default, a
// local --db): it takes more than one core, so on 2 cores four ingest workers write 1.29-1.47x a
// serial ingestion's rows per second, not 2x (verify 2:20001 and 2:5001, report/README).
inline constexpr double kCoresPerStream = 1.5;
double OnCores(double threads);

// A verify run's phases as RunVerify takes them (serial ingest unless reused or a baseline,
// parallel ingest, a baseline's digest, the digests, "diff and clean-up"), each under the
// progress names it reports and costed by the generator's rows and per-row priors: its plan
// (Reporter::Plan), and selftest's for each of its cases. REQUIRES: options.run_id is set.
CommandPlan VerifyPhases(const VerifyOptions& options);

// How to drop the schemas a run leaves in a database that outlives it: `ledgerdiff drop`
// refuses what ledgerdiff did not create, --cancel gives up the run an interrupt left marked
// running, and the run's own flags (VerifyOptions::reconnect_flags) reach the database.
std::string DropSchemasCommand(const std::string& reconnect_flags, const std::vector<std::string>& schemas);

// A baseline names an existing regular file; checked before any server starts (a FIFO would
// block the baseline's reader, a directory fail late). Usage errors naming --baseline.
Status CheckBaselineFile(const std::string& path);

// What a baseline manifest must share with the run compared against it (verify --baseline,
// sweep --baseline), all checked before anything is ingested: the file reads whole (a truncated
// or corrupt baseline fails first), then it covers `range`, was made with `spec`'s profile by
// this release, with `engine` when the run names one, and, when both it and the run are the
// built-in ingester's, of the same density and seed (manifest header key "workload": against
// another one every ledger would be divergent). Usage errors naming the baseline; `who` names the run ("this run",
// "this sweep") and `does` what it does with its range ("verifies", "ingests").
Status CheckBaselineFits(const std::string& path, const LedgerRange& range, const dump::ProfileSpec& spec,
                         std::optional<dump::DigestEngine> engine, const ingest::IngestPlan& plan,
                         std::string_view who, std::string_view does);

// The parallel-side job that wrote a ledger: its done attempt whose range holds the ledger.
struct WritingJob {
  uint32_t job = 0;
  uint32_t attempt = 0;
  std::string worker;
  LedgerRange range;
  std::string position;  // first | last | inner: where the ledger sits in the job (boundary bugs hit first/last)
};
// The done attempt of `run` whose range contains `ledger` (the latest, should there be several);
// nullopt when no done attempt covers it. A one-ledger job counts as "first".
std::optional<WritingJob> FindWritingJob(const IngestReport& run, Ledger ledger);

struct VerifyReport {
  std::string run_id;
  LedgerRange range;
  uint32_t workers = 0;
  uint32_t job_size = 0;
  std::string serial_schema;    // empty with a baseline
  std::string parallel_schema;
  std::string baseline;         // manifest used instead of a serial ingest
  std::optional<IngestReport> serial;
  IngestReport parallel;
  diff::DiffReport diff;
  StageTable phases;  // where the time went: serial ingest, parallel ingest, save baseline, digests, diff
  std::optional<WritingJob> first_divergent_job;  // the parallel job that wrote the first divergent ledger
  double speedup = 0;           // serial ingest time / parallel ingest time
  bool identical = false;
  bool schemas_kept = false;     // the schemas outlive this process (look_again works)
  std::string look_again;       // the exact diff command, when schemas are kept
  std::string kept_cluster;     // the embedded cluster directory kept for look_again
  std::string remove_command;   // how to remove kept_cluster when done
  std::string evidence_gone;    // why nothing was kept although it should have been
  std::string saved_baseline;   // path written by --save-baseline
  std::string bug;
  std::string error;            // ingestion failure (then the verdict is "error")
  // What the command worked on (Target::Line in text, "target" in JSON); unset: not shown.
  std::optional<Target> target;

  VerifyVerdict verdict() const;
  // serial_schema (when there is one) and parallel_schema.
  std::vector<std::string> schemas() const;
};

// Runs a whole verify against the database at `conninfo`. Ingestion failures (jobs out of
// retries) return a report with `error` set; the caller exits 2.
Result<VerifyReport> RunVerify(const std::string& conninfo, const VerifyOptions& options, Reporter& reporter);

// verify-range: the read-only cut-over check between two databases. Digests the range on
// both sides (each from one consistent snapshot, both sides concurrently) and diffs them;
// writes nothing to either database (works against a read-only hot standby).
// Sharded (deploy/k8s/cutover): shard K of N compares only dump::ShardSlice(range, N, K) and
// writes a partial manifest (`out`); `manifest merge` of the N parts gives the outcome and the
// manifest of the unsharded run with `out` (same entries, roots, identical / first divergent
// ledger / counts).
struct VerifyRangeOptions {
  // verify-range's defaults of `diff`: two digest connections per side, dump::kDefaultEngine.
  static diff::DiffOptions DefaultComparison() {
    diff::DiffOptions d;
    d.jobs = 2;
    d.engine = dump::kDefaultEngine;
    return d;
  }

  LedgerRange range;
  std::string left, right;  // conninfos
  std::string left_schema = "public", right_schema = "public";
  std::string table_profile = "horizon";
  // How the two sides are compared (diff/diff.h), as the flags say: jobs, max_rows, all,
  // allow_gaps, allow_empty (zero rows on both sides: identical instead of a Usage error), engine
  // (how both sides are digested), outside_rows (verify-range --follow counts only the rows
  // without a ledger), lookup_caches, allow_missing_tables (--allow-missing-table: required tables
  // of the profile that neither side has, accepted as missing) and settled_before_ms (the instant
  // windowed tables are settled at; nullopt: the earlier of the two sides' close times of their
  // last ledger at or before range.to, each side's own history_ledgers; the follower passes the
  // earlier of the two heads' instead). RunVerifyRange sets what verify-range decides itself:
  // range (the compared slice), empty_slice, require_profile_tables, one_sided_gap and job.
  diff::DiffOptions diff = DefaultComparison();
  uint32_t shards = 0;       // 0: unsharded
  std::optional<int64_t> shard;  // default: dump/shard.h kShardIndexVariables
  // Write the left side's manifest of the compared range (full detail; the tables and columns
  // both sides have) with the comparison's outcome (dump::ComparisonOutcome). Required with shards.
  // Both sides' digests are checkpointed in OUT.partial (dump/checkpoint.h) as they complete.
  std::string out;
  // Continue the interrupted run whose checkpoint is OUT.partial (same range, shard, profile,
  // schemas and databases): its ledgers are compared from it, not digested again.
  bool resume = false;
  // The state tables (verify/state_compare.h): compared once the history is, unless kOff; a
  // sharded run never compares them (the merge has no state to join).
  StateOptions state;
  // The one-shot command: hand the reporter verify-range's phases (Reporter::Plan), so its lines
  // carry one ETA for the whole command. A follower's cycles do not (their runs are not a command).
  bool plan = false;

  // How both sides are digested: diff.engine (nullopt digests with dump::kDefaultEngine).
  dump::DigestEngine engine() const { return diff.engine.value_or(dump::kDefaultEngine); }
};

// What a follower's cycle (verify/follow.h) decides for one verify-range of its sides; nothing
// here is checked by validation.
struct VerifyRangeCycle {
  LedgerRange range{};
  std::string out{};                           // the cycle's manifest; "" none
  std::optional<int64_t> settled_before_ms{};  // nullopt: RunVerifyRange's default
  std::array<dump::LookupCache*, 2> lookup_caches{};
  bool allow_empty = false;  // zero rows on both sides is identical, whatever the options say
};

class ValidVerifyRangeOptions;
// Checks everything before any database is touched and loads the digest profile: the only way
// to a ValidVerifyRangeOptions. Usage errors.
Result<ValidVerifyRangeOptions> ValidateVerifyRangeOptions(VerifyRangeOptions options);

// VerifyRangeOptions that ValidateVerifyRangeOptions accepted, with the profile it loaded: the
// run sees that one spec (the profile's file is read once per validation, not per run or cycle).
class ValidVerifyRangeOptions {
 public:
  const VerifyRangeOptions& get() const { return o_; }
  const dump::ProfileSpec& spec() const { return *spec_; }

  // These options for a follower's cycle: the same sides, profile and comparison, unsharded,
  // not resumed, history only (the follower compares state itself), counting only the rows
  // without a ledger outside the range (both sides grow past every cycle's range), with what
  // `cycle` decides. The profile is shared, not loaded again.
  ValidVerifyRangeOptions ForCycle(const VerifyRangeCycle& cycle) const;

 private:
  ValidVerifyRangeOptions(VerifyRangeOptions o, std::shared_ptr<const dump::ProfileSpec> spec)
      : o_(std::move(o)), spec_(std::move(spec)) {}
  friend Result<ValidVerifyRangeOptions> ValidateVerifyRangeOptions(VerifyRangeOptions options);

  VerifyRangeOptions o_;
  std::shared_ptr<const dump::ProfileSpec> spec_;
};

struct VerifyRangeReport {
  diff::DiffReport diff;  // over the compared range (the shard's slice)
  std::optional<dump::ShardInfo> shard;
  std::optional<dump::DigestSummary> manifest;  // written to options.out
  std::string checkpoint;         // OUT.partial (deleted once the manifest is complete); "" without out
  uint64_t ledgers_resumed = 0;   // ledgers of the compared range taken from the checkpoint
  // Not identical: a verify-range over the first divergent (or missing) ledger with every row
  // shown; conninfos with their passwords redacted.
  std::string look_again;
  // The state comparison; nullopt when it was off (StateOptions::kOff, a shard).
  std::optional<StateComparison> state;
  // The history's verdict and the state's, combined (CombineVerdicts): what the exit code says.
  diff::Verdict verdict() const { return CombineVerdicts(diff.verdict, state); }
};
// A shard's slice that compares zero rows on both sides is not an error (the merge checks the
// whole range).
Result<VerifyRangeReport> RunVerifyRange(const ValidVerifyRangeOptions& options, Reporter& reporter);

}  // namespace ledgerdiff::verify
