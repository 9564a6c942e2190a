#include "verify/follower.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/stage_timer.h"
#include "diff/diff.h"
#include "dump/profile.h"

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

}  // namespace

Status Follower::Scrub(FollowCycle& cycle, double period) {
  // The verified range: a divergence kept going past (--keep-going) ends it.
  const Ledger end = state_.VerifiedThrough();
  const Ledger from = state_.Kept();  // reaped ledgers are not scrubbed
  if (end < from) return Status::Ok();
  if (state_.scrub_next > end || state_.scrub_next < from) state_.scrub_next = from;  // a new pass
  const double verified = static_cast<double>(end + 1 - from);
  uint64_t budget = static_cast<uint64_t>(std::ceil(verified * std::max(period, 0.0) / o_.scrub_period_s));
  budget = std::clamp<uint64_t>(budget, 1, o_.max_cycle_ledgers);
  const Ledger first = state_.scrub_next;
  while (budget > 0 && state_.scrub_next <= end) {
    const FollowSegment* seg = nullptr;
    for (const auto& s : state_.segments)
      if (s.range.from <= state_.scrub_next && state_.scrub_next <= s.range.to) seg = &s;
    if (!seg) return Status::Runtimef("follow state: no segment holds verified ledger {}", state_.scrub_next);
    const LedgerRange slice{state_.scrub_next,
                            std::min<Ledger>({seg->range.to, end, static_cast<Ledger>(state_.scrub_next + budget - 1)})};
    state_.scrub_next = slice.to + 1;
    cycle.scrubbed = LedgerRange{first, slice.to};
    LD_RETURN_IF_ERROR(ScrubSlice(*seg, slice, cycle));
    budget -= slice.size();
    if (cycle.finding) break;
  }
  if (!cycle.finding && state_.scrub_next > first)
    ClearChecked({first, state_.scrub_next - 1},
                fmt::format("the scrub found ledgers {}:{} on both sides as verified", first, state_.scrub_next - 1),
                cycle);
  return Status::Ok();
}

Status Follower::ScrubSlice(const FollowSegment& seg, const LedgerRange& slice, FollowCycle& cycle) {
  LD_ASSIGN_OR_RETURN(std::optional<Change> change, ChangedSinceVerified(seg, slice, cycle));
  if (!change) return Status::Ok();
  const std::optional<Ledger> changed = change->ledger;
  FollowFinding f;
  f.changed_after_verified = true;
  f.ledger = *changed;
  f.sides = change->sides;
  f.tables.assign(change->tables.begin(), change->tables.end());
  // The rows: the two sides at that ledger (identical when both changed alike: then only the
  // stored manifest knows the ledger as it was verified).
  // allow_empty: the ledger gone from both sides, its coverage, not a usage error.
  NullReporter quiet;
  LD_ASSIGN_OR_RETURN(f.report,
                      RunVerifyRange(sides_.ForCycle({.range = {*changed, *changed}, .allow_empty = true}), quiet));
  cycle.finding = std::move(f);
  OpenDivergenceOf(*cycle.finding, {*changed, slice.to}, kFoundByScrub);
  if (!o_.keep_going) {
    state_.scrub_next = *changed;  // a restart checks it again first
  } else if (!state_.first_divergence || *changed < *state_.first_divergence) {
    state_.first_divergence = *changed;
  }
  return Status::Ok();
}

Result<std::optional<Follower::Change>> Follower::ChangedSinceVerified(const FollowSegment& seg,
                                                                       const LedgerRange& slice, FollowCycle& cycle) {
  const dump::ProfileSpec& spec = spec_;
  const diff::Source stored = diff::ManifestSource{(fs::path(segments_dir_) / seg.file).string()};
  diff::DiffOptions d;
  d.range = slice;
  d.jobs = o_.sides.diff.jobs;
  d.max_rows = 0;
  d.allow_gaps = o_.sides.diff.allow_gaps;
  d.allow_empty = true;
  d.outside_rows = diff::DiffOptions::OutsideRows::kWithoutLedger;
  // Both sides at once, each against the segment with its own lookup cache (the maps extended
  // in this snapshot as the new ledgers' are, not read whole again); merged left then right.
  const std::array<std::pair<const std::string*, const std::string*>, 2> sides_in = {
      std::pair{&o_.sides.left, &o_.sides.left_schema}, std::pair{&o_.sides.right, &o_.sides.right_schema}};
  std::array<std::optional<Result<diff::DiffReport>>, 2> reports;
  {
    auto run = [&](int i) {
      diff::DiffOptions di = d;
      di.lookup_caches = {nullptr, &lookup_caches_[i]};
      NullReporter quiet;
      reports[i].emplace(
          diff::DiffSources(stored, diff::SchemaSource{*sides_in[i].first, *sides_in[i].second}, spec, di, quiet));
    };
    std::jthread right([&] { run(1); });
    run(0);
  }
  std::optional<Ledger> changed;
  std::set<std::string> tables;
  SideSet sides = SideSet::kNone;
  for (int i = 0; i < 2; ++i) {
    LD_ASSIGN_OR_RETURN(diff::DiffReport r, std::move(*reports[i]));
    AddStageSeconds(cycle.stages, kFollowStageRescanDigest, r.digest_seconds);
    AddStageSeconds(cycle.stages, kFollowStageRescanChecks, r.row_diff_seconds);
    (i == 0 ? cycle.rows_left : cycle.rows_right) += r.rows_compared_right;
    if (r.identical) continue;
    const Ledger at = r.first_divergent_ledger.value_or(slice.from);
    if (changed && at > *changed) continue;
    if (!changed || at < *changed) {
      sides = SideSet::kNone;
      tables.clear();
    }
    changed = at;
    sides = With(sides, SideAt(i));
    for (const auto& t : r.divergent_tables) tables.insert(t.table);
    if (r.divergent_tables.empty())
      for (const auto& s : r.schema_differences) tables.insert(s);
  }
  if (!changed) return std::optional<Change>();
  return std::optional<Change>(Change{*changed, sides, std::move(tables)});
}

}  // namespace ledgerdiff::verify
