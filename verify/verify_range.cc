#include "verify/verify.h"
// verify-range: two live databases' history compared over a range (one shot, a shard's slice, or
// a follower's cycle), then their state tables at a common ledger (state_compare.h). verify.cc
// holds verify, which ingests both sides itself.

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/database.h"
#include "core/redact.h"
#include "core/report.h"
#include "core/text.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "dump/shard.h"

namespace ledgerdiff::verify {

Result<ValidVerifyRangeOptions> ValidateVerifyRangeOptions(VerifyRangeOptions o) {
  if (o.left.empty() || o.right.empty()) return Status::Usage("verify-range needs --left CONNINFO and --right CONNINFO");
  if (o.diff.jobs < 1) return Status::Usage("--jobs must be at least 1");
  LD_RETURN_IF_ERROR(ValidateSchemaName(o.left_schema));
  LD_RETURN_IF_ERROR(ValidateSchemaName(o.right_schema));
  LD_RETURN_IF_ERROR(dump::CheckShardAndResumeFlags({o.shard, o.shards, o.resume, o.out}, o.range).status());
  if (!(o.state.wait_s >= 0 && o.state.wait_s <= kMaxStateWaitSeconds))
    return Status::Usagef("--state-wait {} is not within 0..{} seconds", o.state.wait_s, kMaxStateWaitSeconds);
  if (o.shards > 0 && (o.state.wait_s != 0 || o.state.mode == StateMode::kSkip))
    return Status::Usage("--skip-state and --state-wait do not apply to a shard: a sharded run compares history only");
  LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, dump::LoadProfileSpec(o.table_profile));
  return ValidVerifyRangeOptions(std::move(o), std::make_shared<const dump::ProfileSpec>(std::move(spec)));
}

ValidVerifyRangeOptions ValidVerifyRangeOptions::ForCycle(const VerifyRangeCycle& cycle) const {
  VerifyRangeOptions v = o_;
  v.state.mode = StateMode::kOff;  // history here; state at most every --state-interval (CompareStateIfDue)
  v.range = cycle.range;
  v.out = cycle.out;
  v.shards = 0;
  v.resume = false;
  v.diff.outside_rows = diff::DiffOptions::OutsideRows::kWithoutLedger;
  v.diff.settled_before_ms = cycle.settled_before_ms;
  v.diff.lookup_caches = cycle.lookup_caches;
  v.diff.allow_empty = v.diff.allow_empty || cycle.allow_empty;
  return ValidVerifyRangeOptions(std::move(v), spec_);
}

namespace {

// One side as a resume must find it again, and as its manifest records it: its database and
// schema (dump::SourceIdentity) and, for the resume, the fingerprint of its tables and columns
// under the profile.
Result<dump::DigestJobSide> ReadSideIdentity(const diff::SchemaSource& side, const dump::ProfileSpec& spec) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(side.conninfo, "ledgerdiff verify-range", pg::Access::kReadOnly));
  auto profile = dump::ResolveProfile(*conn, side.schema, spec);
  if (!profile.ok()) return profile.status().With(diff::Describe(side));
  dump::DigestJobSide id;
  LD_ASSIGN_OR_RETURN(id.identity, dump::ReadSourceIdentity(*conn, side.schema));
  id.fingerprint = dump::ProfileFingerprint(*profile);
  return id;
}

}  // namespace

namespace {

// What a verify-range manifest records of the diff `d` that ran with `dopt`: every field of
// dump::ComparisonOutcome, the verdict's options as the diff applied them.
dump::ComparisonOutcome ComparisonOutcomeOf(const diff::DiffReport& d, const diff::DiffOptions& dopt,
                                            bool shard_part) {
  return {.identical = d.identical,
          .first_divergent_ledger = d.first_divergent_ledger,
          .divergent_ledgers = d.divergent_ledgers,
          .ledgers_compared = d.ledgers_compared,
          .rows_left = d.rows_compared_left,
          .rows_right = d.rows_compared_right,
          .allow_empty = dopt.allow_empty,
          .coverage_checked = d.coverage.checked,
          .missing_left = d.coverage.left.missing_ledgers,
          .missing_right = d.coverage.right.missing_ledgers,
          .allow_gaps = dopt.allow_gaps,
          .left_snapshot = shard_part ? d.left_snapshot : std::nullopt,
          .right_snapshot = shard_part ? d.right_snapshot : std::nullopt};
}

// verify-range over the ledger to look at: the first divergent one, else the first missing one,
// else the range (a schema, lookup or invariant difference).
std::string LookAgainCommand(const VerifyRangeOptions& o, const diff::DiffReport& d) {
  LedgerRange at = d.range;
  const diff::Coverage& cov = d.coverage;
  if (d.first_divergent_ledger) {
    at = {*d.first_divergent_ledger, *d.first_divergent_ledger};
  } else if (!cov.left.missing.empty() || !cov.right.missing.empty()) {
    // Incomplete: every missing span of either side, from the first to the last (the coverage
    // lists them; this checks them all again once they are filled).
    Ledger first = d.range.to, last = d.range.from;
    for (const auto* side : {&cov.left, &cov.right})
      if (!side->missing.empty()) {
        first = std::min(first, side->missing.front().from);
        // Past kMaxCoverageRanges the list stops short: the range's end bounds the rest.
        last = std::max(last, side->missing_ranges > side->missing.size() ? d.range.to : side->missing.back().to);
      }
    at = {first, last};
  }
  std::string cmd = fmt::format("ledgerdiff verify-range --range {} --left {} --right {}", at.str(),
                                ShellQuote(RedactConninfo(o.left)), ShellQuote(RedactConninfo(o.right)));
  if (o.left_schema != "public") cmd += " --left-schema " + ShellQuote(o.left_schema);
  if (o.right_schema != "public") cmd += " --right-schema " + ShellQuote(o.right_schema);
  if (o.table_profile != "horizon") cmd += " --profile " + ShellQuote(o.table_profile);
  if (o.diff.allow_gaps) cmd += " --allow-gaps";
  return cmd + " --max-rows 1000";
}

}  // namespace

// The instant the windowed tables of both sides are settled at: the earlier of the two sides'
// close times of their last ledger at or before `to` (the whole range's end, for a shard too).
// A side that holds no such ledger settles nothing.
Result<int64_t> SettledBefore(const diff::SchemaSource& left, const diff::SchemaSource& right, Ledger to) {
  int64_t earliest = dump::kNothingSettled;
  bool first = true;
  for (const diff::SchemaSource* side : {&left, &right}) {
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(side->conninfo, "ledgerdiff verify-range", pg::Access::kReadOnly));
    auto close = dump::LastLedgerCloseMs(*conn, side->schema, to);
    if (!close.ok()) return close.status().With(diff::Describe(*side));
    const int64_t at = close->value_or(dump::kNothingSettled);
    earliest = first ? at : std::min(earliest, at);
    first = false;
  }
  return earliest;
}

namespace {

// What verify-range's phases cost per byte on disk (dump::ReadCostEstimate), relative to one
// core's digest of a history byte: the command's ETA weighs the phases not begun yet by them
// (CommandEta), learning the seconds a unit takes as the phases run. Measured on verify-range
// --range 2:20001 over two schemas of `ingest --range 2:20001 --state-rows 100000` (2 cores,
// defaults, 2.6 GB of history and 28 MB of state a side; two runs, report/README): the digests
// took 36.8 s, the row diff after them (identical sides: its lookups and invariants) 3.7-4.3 s,
// 0.050-0.054 of a digest's cost per byte; the state tables 1.1 s, 2.8 per byte (a state row's
// md5 by the server costs more than its bytes' share of a digest). The row diff's cost is not
// spread over cores: 0.052 of the digests' bytes over OnCores(4), which is 2 / kCoresPerStream on
// those 2 cores, so 0.078 per byte.
constexpr double kRangeRowDiffCostPerByte = 0.078;
constexpr double kRangeStateCostPerByte = 2.8;

// verify-range's phases as this run will take them, each under the progress names it reports:
// both sides' digests at once; the row diff of the divergent tables, the manifest and the
// reports after them (which report nothing but are waited for); the state tables' comparison
// when it runs (silent too). An error when a side's catalog cannot be read: the run goes on
// without the command's ETA (its own errors are the answer) and says why.
Result<CommandPlan> VerifyRangeCommandPlan(const VerifyRangeOptions& o, const dump::ProfileSpec& spec,
                                           const LedgerRange& compared, bool state) {
  dump::ReadCostEstimate both;
  const diff::SchemaSource sides[] = {{o.left, o.left_schema}, {o.right, o.right_schema}};
  for (const diff::SchemaSource& side : sides) {
    LD_ASSIGN_OR_RETURN(auto conn,
                        pg::Connection::Open(side.conninfo, "ledgerdiff verify-range", pg::Access::kReadOnly));
    LD_ASSIGN_OR_RETURN(const dump::ResolvedProfile profile, dump::ResolveProfile(*conn, side.schema, spec));
    LD_ASSIGN_OR_RETURN(const dump::ReadCostEstimate cost, dump::EstimateReadCost(*conn, side.schema, profile, compared));
    both.history_bytes += cost.history_bytes;
    both.state_bytes += cost.state_bytes;
  }
  CommandPlan plan;
  plan.push_back({"digests", {"digest left", "digest right"}, both.history_bytes / OnCores(2.0 * o.diff.jobs)});
  plan.push_back({"row diff", {}, both.history_bytes * kRangeRowDiffCostPerByte});
  if (state) plan.push_back({"state tables", {}, both.state_bytes * kRangeStateCostPerByte / OnCores(2)});
  return plan;
}

}  // namespace

Result<VerifyRangeReport> RunVerifyRange(const ValidVerifyRangeOptions& valid, Reporter& reporter) {
  const VerifyRangeOptions& o = valid.get();
  const dump::ProfileSpec& spec = valid.spec();
  VerifyRangeReport report;
  LedgerRange compared = o.range;
  if (o.shards > 0) {
    LD_ASSIGN_OR_RETURN(uint32_t index, dump::ResolveShardIndex(o.shard, o.shards));
    LD_ASSIGN_OR_RETURN(compared, dump::ShardSlice(o.range, o.shards, index));
    report.shard = dump::ShardInfo{index, o.shards, o.range};
    reporter.Note(
        fmt::format("verify-range shard {} of {}: ledgers {} of {}", index, o.shards, compared.str(), o.range.str()));
  }
  const diff::SchemaSource left{o.left, o.left_schema};
  const diff::SchemaSource right{o.right, o.right_schema};
  diff::DiffOptions dopt = o.diff;
  dopt.range = compared;
  dopt.empty_slice = report.shard.has_value();  // a slice may be empty; the merge checks the whole
  dopt.require_profile_tables = true;
  dopt.one_sided_gap = diff::DiffOptions::OneSidedGap::kIncomplete;  // two live databases: not written yet
  dopt.job = nullptr;
  if (!dopt.settled_before_ms && dump::HasWindowedTable(spec)) {
    LD_ASSIGN_OR_RETURN(dopt.settled_before_ms, SettledBefore(left, right, o.range.to));
  }
  const bool compare_state = o.state.mode != StateMode::kOff && !report.shard;
  if (o.plan) {
    if (Result<CommandPlan> plan = VerifyRangeCommandPlan(o, spec, compared, compare_state); plan.ok())
      reporter.Plan("verify-range", *plan);
    else
      reporter.Note(fmt::format("verify-range: no ETA for the whole command (its estimate could not read the "
                                "catalog: {}); each phase shows its own",
                                plan.status().message()));
  }
  std::unique_ptr<dump::DigestJob> job;
  if (!o.out.empty()) {
    LD_ASSIGN_OR_RETURN(dump::DigestJobSide left_id, ReadSideIdentity(left, spec));
    LD_ASSIGN_OR_RETURN(dump::DigestJobSide right_id, ReadSideIdentity(right, spec));
    // The last ledger is digested again in any case on a resume: the row diff, lookups and
    // invariants read the digest's snapshot.
    dump::DigestJobSpec job_spec;
    job_spec.kind = dump::DigestJobKind::kComparison;
    job_spec.out = o.out;
    job_spec.checkpoint = true;
    job_spec.resume = o.resume;
    job_spec.max_resumed = compared.size() - 1;
    job_spec.range = compared;
    job_spec.profile = spec.name;
    job_spec.engine = o.engine();
    job_spec.shard = report.shard;
    job_spec.source = diff::Describe(left);
    job_spec.sides = {std::move(left_id), std::move(right_id)};
    LD_ASSIGN_OR_RETURN(job, dump::DigestJob::Open(std::move(job_spec), nullptr, reporter));
    report.checkpoint = job->checkpoint_path();
    report.ledgers_resumed = job->resumed_ledgers();
    dopt.job = job.get();
  }
  auto diffed = diff::DiffSources(left, right, spec, dopt, reporter);
  if (!diffed.ok() && job) {
    // A usage error (nothing compared: a wrong range or database) is the run's answer, not an
    // interruption: nothing to resume.
    if (diffed.status().kind() == Status::Kind::kUsage) (void)job->Remove();
    return job->Explain(diffed.status());
  }
  if (!diffed.ok()) return diffed.status();
  report.diff = std::move(diffed).value();
  if (!report.diff.identical) report.look_again = LookAgainCommand(o, report.diff);
  if (job) {
    LD_ASSIGN_OR_RETURN(report.manifest, job->Finish(ComparisonOutcomeOf(report.diff, dopt, report.shard.has_value())));
  }
  // The state after the history's manifest is complete: the manifest records the history alone.
  if (compare_state) {
    StateOptions state = o.state;
    state.max_rows = o.diff.max_rows;
    LD_ASSIGN_OR_RETURN(report.state, CompareState(left, right, spec, o.engine(), state));
    TakeStateTablesOffUncompared(*report.state, report.diff);
  }
  return report;
}


}  // namespace ledgerdiff::verify
