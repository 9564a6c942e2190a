#include "verify/verify.h"
// verify-range: two live databases' history compared over a range (one shot, a shard's slice, or
// a follower's cycle), then their state tables at a common ledger (state_compare.h). verify.cc
// holds verify, which ingests both sides itself.

#include <filesystem>

#include <fmt/format.h>

#include "core/database.h"
#include "core/redact.h"
#include "core/report.h"
#include "core/text.h"
#include "dump/checkpoint.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "dump/shard.h"
#include "ledgerdiff/version.h"

namespace ledgerdiff::verify {

Status ValidateVerifyRangeOptions(const VerifyRangeOptions& o) {
  if (o.left.empty() || o.right.empty()) return Status::Usage("verify-range needs --left CONNINFO and --right CONNINFO");
  if (o.jobs < 1) return Status::Usage("--jobs must be at least 1");
  LD_RETURN_IF_ERROR(ValidateSchemaName(o.left_schema));
  LD_RETURN_IF_ERROR(ValidateSchemaName(o.right_schema));
  LD_RETURN_IF_ERROR(dump::CheckShardAndResumeFlags({o.shard, o.shards, o.resume, o.out}, o.range).status());
  if (!(o.state.wait_s >= 0 && o.state.wait_s <= kMaxStateWaitSeconds))
    return Status::Usagef("--state-wait {} is not within 0..{} seconds", o.state.wait_s, kMaxStateWaitSeconds);
  if (o.shards > 0 && (o.state.wait_s != 0 || o.state.mode == StateMode::kSkip))
    return Status::Usage("--skip-state and --state-wait do not apply to a shard: a sharded run compares history only");
  return dump::LoadProfileSpec(o.table_profile).status();
}

namespace {

// Writes the left side's chunks as they stream through the diff; the header waits for the first
// chunk because the tables and columns both sides have are known only once the diff has them.
class ComparisonManifest {
 public:
  ComparisonManifest(std::string path, std::string source, dump::SourceIdentity left, dump::SourceIdentity right,
                     LedgerRange range, std::optional<dump::ShardInfo> shard, dump::DigestEngine engine)
      : engine_(engine),
        path_(std::move(path)),
        source_(std::move(source)),
        left_(std::move(left)),
        right_(std::move(right)),
        range_(range),
        shard_(shard) {}
  Status Add(const dump::ResolvedProfile& common, const dump::Chunk& chunk) {
    if (!writer_) {
      dump::ManifestHeader header =
          dump::NewManifestHeader(source_, dump::ManifestDetail::kFull, range_, common, shard_, engine_);
      header.comparison = true;
      header.identity = left_;
      header.right_identity = right_;
      LD_ASSIGN_OR_RETURN(writer_, dump::ManifestWriter::Create(path_, header));
      builder_.emplace(common, range_, source_);
    }
    builder_->Add(chunk);
    return writer_->Add(chunk);
  }
  Result<dump::DigestSummary> Finish(const dump::ComparisonOutcome& outcome) {
    if (!writer_) return Status::Runtimef("manifest {}: the diff read no ledger", path_);
    dump::DigestSummary summary = builder_->Finish();
    LD_ASSIGN_OR_RETURN(summary.manifest_bytes, writer_->Finish(summary, outcome));
    summary.manifest_path = path_;
    summary.manifest_detail = dump::ManifestDetailName(dump::ManifestDetail::kFull);
    summary.engine = engine_;
    return summary;
  }

 private:
  dump::DigestEngine engine_;
  std::string path_, source_;
  dump::SourceIdentity left_, right_;
  LedgerRange range_;
  std::optional<dump::ShardInfo> shard_;
  std::unique_ptr<dump::ManifestWriter> writer_;
  std::optional<dump::SummaryBuilder> builder_;
};

// One side as a resume must find it again, and as its manifest records it: its database and
// schema (dump::SourceIdentity) and, for the resume, the fingerprint of its tables and columns
// under the profile.
struct SideIdentity {
  dump::SourceIdentity source;
  nlohmann::json job;  // the source's JSON and "profile_fingerprint"
};
Result<SideIdentity> ReadSideIdentity(const diff::SchemaSource& side, const dump::ProfileSpec& spec) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(side.conninfo, "ledgerdiff verify-range", pg::Access::kReadOnly));
  auto profile = dump::ResolveProfile(*conn, side.schema, spec);
  if (!profile.ok()) return profile.status().With(diff::Describe(side));
  SideIdentity id;
  LD_ASSIGN_OR_RETURN(id.source, dump::ReadSourceIdentity(*conn, side.schema));
  id.job = dump::SourceIdentityToJson(id.source);
  id.job["profile_fingerprint"] = dump::ProfileFingerprint(*profile);
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
  if (o.allow_gaps) cmd += " --allow-gaps";
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

Result<VerifyRangeReport> RunVerifyRange(const VerifyRangeOptions& o, Reporter& reporter) {
  LD_RETURN_IF_ERROR(ValidateVerifyRangeOptions(o));
  LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, dump::LoadProfileSpec(o.table_profile));
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
  diff::DiffOptions dopt;
  dopt.range = compared;
  dopt.jobs = o.jobs;
  dopt.max_rows = o.max_rows;
  dopt.all = o.all;
  dopt.allow_gaps = o.allow_gaps;
  dopt.allow_empty = o.allow_empty;
  dopt.engine = o.engine;
  dopt.outside_rows = o.outside_rows;
  dopt.lookup_caches = o.lookup_caches;
  dopt.empty_slice = report.shard.has_value();  // a slice may be empty; the merge checks the whole
  dopt.require_profile_tables = true;
  dopt.one_sided_gap = diff::DiffOptions::OneSidedGap::kIncomplete;  // two live databases: not written yet
  dopt.allow_missing_tables = o.allow_missing_tables;
  if (o.settled_before_ms) {
    dopt.settled_before_ms = o.settled_before_ms;
  } else if (dump::HasWindowedTable(spec)) {
    LD_ASSIGN_OR_RETURN(dopt.settled_before_ms, SettledBefore(left, right, o.range.to));
  }
  std::optional<ComparisonManifest> manifest;
  std::unique_ptr<dump::Checkpoint> checkpoint;
  if (!o.out.empty()) {
    nlohmann::json job = {{"command", "verify-range"},
                          {"tool_version", kVersion},
                          {"range", {{"from", compared.from}, {"to", compared.to}}},
                          {"profile", spec.name},
                          {"engine", dump::ToString(o.engine)},
                          {"shard", report.shard ? nlohmann::json{{"index", report.shard->index},
                                                                  {"count", report.shard->count}}
                                                 : nlohmann::json()}};
    LD_ASSIGN_OR_RETURN(SideIdentity left_id, ReadSideIdentity(left, spec));
    LD_ASSIGN_OR_RETURN(SideIdentity right_id, ReadSideIdentity(right, spec));
    job["left"] = left_id.job;
    job["right"] = right_id.job;
    report.checkpoint = dump::CheckpointPath(o.out);
    if (o.resume) {
      // The last ledger is digested again in any case: the row diff, lookups and invariants read
      // the digest's snapshot.
      LD_ASSIGN_OR_RETURN(checkpoint, dump::Checkpoint::Resume(report.checkpoint, job, compared, 2, compared.size() - 1));
      report.ledgers_resumed = checkpoint->resumed_ledgers();
      reporter.Note(fmt::format("resuming from checkpoint {}: {} of {} ledgers compared before, comparing {}",
                                report.checkpoint, FormatCount(report.ledgers_resumed), FormatCount(compared.size()),
                                checkpoint->remainder()->str()));
      if (checkpoint->dropped_torn_record()) reporter.Note("checkpoint: a torn last record was dropped");
    } else {
      LD_ASSIGN_OR_RETURN(checkpoint, dump::Checkpoint::Create(report.checkpoint, job, compared, 2));
    }
    dopt.resumed_ledgers = report.ledgers_resumed;
    dopt.replay = [&](int side, const dump::ChunkSink& sink) { return checkpoint->Replay(side, 0, sink); };
    dopt.digested_chunks = [&](int side, const dump::Chunk& c) { return checkpoint->Append(side, c); };
    manifest.emplace(o.out, diff::Describe(left), left_id.source, right_id.source, compared, report.shard, o.engine);
    dopt.left_chunks = [&](const dump::ResolvedProfile& common, const dump::Chunk& c) {
      return manifest->Add(common, c);
    };
  }
  auto diffed = diff::DiffSources(left, right, spec, dopt, reporter);
  if (!diffed.ok() && checkpoint) {
    // A usage error (nothing compared: a wrong range or database) is the run's answer, not an
    // interruption: nothing to resume.
    if (diffed.status().kind() == Status::Kind::kUsage) (void)checkpoint->Remove();
    return checkpoint->Explain(diffed.status());
  }
  if (!diffed.ok()) return diffed.status();
  report.diff = std::move(diffed).value();
  if (!report.diff.identical) report.look_again = LookAgainCommand(o, report.diff);
  if (manifest) {
    LD_ASSIGN_OR_RETURN(report.manifest, manifest->Finish(ComparisonOutcomeOf(report.diff, dopt, report.shard.has_value())));
    LD_RETURN_IF_ERROR(checkpoint->Remove());
  }
  // The state after the history's manifest is complete: the manifest records the history alone.
  if (o.state.mode != StateMode::kOff && !report.shard) {
    StateOptions state = o.state;
    state.max_rows = o.max_rows;
    LD_ASSIGN_OR_RETURN(report.state, CompareState(left, right, spec, o.engine, state));
    TakeStateTablesOffUncompared(*report.state, report.diff);
  }
  return report;
}


}  // namespace ledgerdiff::verify
