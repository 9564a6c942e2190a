#include "verify/follower.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/history_tables.h"
#include "core/pg.h"
#include "core/stage_timer.h"
#include "dump/digest.h"
#include "dump/shard.h"
#include "verify/follow_sides.h"

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

}  // namespace

Status Follower::Cycle(FollowCycle& cycle, double period) {
  StageTable& stages = cycle.stages;
  for (const char* stage : kFollowCycleStages) AddStageSeconds(stages, stage, 0);  // every cycle names them all
  // The state divergence stays out of the history's ordered list while the history is compared.
  std::optional<OpenDivergence> state_open = TakeStateDivergence();
  const Ledger through = state_.compared_through;
  const uint64_t window = uint64_t{o_.max_cycle_ledgers} + o_.settle;
  const Ledger kept = state_.Kept();
  StageTimer heads(stages, kFollowStageHeads);
  RemoveUnreferencedSegments(o_.state_dir, state_);
  auto hl = ReadHeads(sessions_[0], o_.sides.left_schema, through, window, kept);
  if (!hl.ok()) return hl.status().With("left");
  auto hr = ReadHeads(sessions_[1], o_.sides.right_schema, through, window, kept);
  if (!hr.ok()) return hr.status().With("right");
  heads.Stop();
  cycle.head_left = hl->max;
  cycle.head_right = hr->max;
  // What was compared must still be there: reaped from both sides, or a finding at once.
  if (kept <= through) LD_RETURN_IF_ERROR(TimeStage(stages, kFollowStageKept, [&] { return CheckKept(*hl, *hr, cycle); }));
  LD_RETURN_IF_ERROR(TimeStage(stages, kFollowStageRecheck, [&] {
    if (!cycle.finding && o_.recheck && !recheck_done_) LD_RETURN_IF_ERROR(Recheck(*o_.recheck, cycle));
    if (!cycle.finding) LD_RETURN_IF_ERROR(RecheckOpen(cycle));
    return Status::Ok();
  }));
  // Each side's usable frontier: its gap-free run, less its newest `settle` ledgers.
  auto usable = [&](const Heads& h) -> Ledger {
    const Ledger settled = h.max && *h.max >= Ledger{o_.settle} ? *h.max - o_.settle : 0;
    return std::max(through, std::min(h.contiguous, settled));
  };
  Ledger frontier = std::min(usable(*hl), usable(*hr));
  if (o_.until) frontier = std::min(frontier, std::max(*o_.until, through));
  frontier = std::min<Ledger>(frontier, through + o_.max_cycle_ledgers);
  std::optional<int64_t> settled_before;
  LD_ASSIGN_OR_RETURN(frontier, TimeStage(stages, kFollowStageWindows, [&] {
                        return HoldForOpenWindows(*hl, *hr, through, frontier, settled_before);
                      }));
  if (frontier > through && (!cycle.finding || o_.keep_going))
    LD_RETURN_IF_ERROR(TimeStage(stages, kFollowStageNew,
                                 [&] { return CompareNew({through + 1, frontier}, settled_before, cycle); }));
  if (!cycle.finding || o_.keep_going)
    LD_RETURN_IF_ERROR(TimeStage(stages, kFollowStageScrub, [&] { return Scrub(cycle, period); }));
  bool state_raised = false;
  LD_RETURN_IF_ERROR(
      TimeStage(stages, kFollowStageState, [&] { return CompareStateIfDue(cycle, state_open, state_raised); }));
  if (state_open) state_.open_divergences.push_back(*state_open);  // last, outside the history's order
  ++state_.cycles;
  cycle.number = state_.cycles;
  cycle.first = state_.from;
  cycle.reaped_through = state_.reaped_through;
  if (cycle.finding || state_raised) ++state_.divergences;
  cycle.divergences_total = state_.divergences;
  cycle.open = state_.open_divergences;
  StageTimer write_state(stages, kFollowStageWriteState);
  LD_RETURN_IF_ERROR(SaveFollowState(o_.state_dir, state_));
  RemoveUnreferencedSegments(o_.state_dir, state_);
  write_state.Stop();
  cycle.frontier = state_.VerifiedThrough();
  // A ledger found different is not verified, whatever the state says of the stretch it is in.
  if (cycle.finding && cycle.finding->ledger > 0) cycle.frontier = std::min(cycle.frontier, cycle.finding->ledger - 1);
  const Ledger head = std::max(hl->max.value_or(0), hr->max.value_or(0));
  cycle.lag_ledgers = head > cycle.frontier ? head - cycle.frontier : 0;
  // The lag's parts (issue 43: one name per number).
  cycle.behind_left = head - std::min(head, hl->max.value_or(0));
  cycle.behind_right = head - std::min(head, hr->max.value_or(0));
  cycle.gap_left = hl->gap_ledgers;
  cycle.gap_right = hr->gap_ledgers;
  const Ledger compared = std::max(state_.compared_through, cycle.frontier);
  cycle.held_back_ledgers = compared - cycle.frontier;
  const Ledger both = std::min(hl->max.value_or(0), hr->max.value_or(0));
  cycle.backlog_ledgers = both > compared ? both - compared : 0;
  const auto& closed = hl->max && head == *hl->max ? hl->closed_at_max : hr->closed_at_max;
  if (closed && cycle.frontier >= state_.from) {
    StageTimer lag(stages, kFollowStageLag);
    if (auto at = ClosedAt(sessions_[0], o_.sides.left_schema, cycle.frontier)) cycle.lag_seconds = std::max(0.0, *closed - *at);
  }
  const Ledger verified_end = state_.VerifiedThrough();
  const Ledger verified_from = state_.Kept();
  const uint64_t verified = verified_end >= verified_from ? verified_end + 1 - verified_from : 0;
  cycle.scrub_coverage =
      verified ? std::min(1.0, static_cast<double>(state_.scrub_next - std::min(state_.scrub_next, verified_from)) /
                                   static_cast<double>(verified))
               : 0;
  return Status::Ok();
}

Status Follower::CheckKept(const Heads& hl, const Heads& hr, FollowCycle& cycle) {
  const Ledger compared = state_.compared_through;
  const Ledger kept = state_.Kept();
  // The lowest ledger both sides hold (a side that holds none from `kept` on lost them all).
  if (hl.lowest && hr.lowest) {
    const Ledger reaped_to = std::min<Ledger>(std::min(*hl.lowest, *hr.lowest) - 1, compared);
    if (reaped_to >= kept) {
      cycle.reaped = LedgerRange{kept, reaped_to};
      state_.reaped_through = reaped_to;
      auto& segs = state_.segments;
      segs.erase(std::remove_if(segs.begin(), segs.end(), [&](const FollowSegment& g) { return g.range.to <= reaped_to; }),
                 segs.end());
      if (state_.scrub_next <= reaped_to) state_.scrub_next = reaped_to + 1;
      reporter_.Note(fmt::format("ledgers {} reaped on both sides (retention): no longer compared",
                                 cycle.reaped->str()));
    }
  }
  const Ledger from = state_.Kept();
  if (from > compared) return Status::Ok();
  const uint64_t expected = uint64_t{compared} - from + 1;
  std::optional<Ledger> first;
  uint64_t most = 0;
  SideSet sides = SideSet::kNone;
  for (auto [h, session, schema, side] :
       {std::tuple{&hl, &sessions_[0], &o_.sides.left_schema, Side::kLeft},
        std::tuple{&hr, &sessions_[1], &o_.sides.right_schema, Side::kRight}}) {
    // This side holds nothing below `from` down to `kept` (from is at most its lowest ledger
    // there): its count of kept:compared is its count of from:compared.
    if (h->held >= expected) continue;
    LD_ASSIGN_OR_RETURN(Ledger missing, FirstMissing(*session, *schema, from, compared));
    if (missing > compared) missing = from;  // fewer rows, none missing: they came back since
    if (first && missing > *first) continue;
    if (!first || missing < *first) sides = SideSet::kNone;
    first = missing;
    most = std::max(most, expected - h->held);
    sides = With(sides, side);
  }
  if (!first) return Status::Ok();
  FollowFinding f;
  f.changed_after_verified = true;
  f.gone = true;
  f.gone_ledgers = most;
  f.ledger = *first;
  f.sides = sides;
  f.tables = {kLedgerTable};
  NullReporter quiet;
  // allow_empty: gone from both, the report shows the coverage, not a usage error.
  LD_ASSIGN_OR_RETURN(f.report,
                      RunVerifyRange(sides_.ForCycle({.range = {*first, *first}, .allow_empty = true}), quiet));
  cycle.finding = std::move(f);
  OpenDivergenceOf(*cycle.finding, {*first, compared}, kFoundGone);
  if (!o_.keep_going) {
    state_.scrub_next = std::max(std::min(state_.scrub_next, *first), from);
  } else if (!state_.first_divergence || *first < *state_.first_divergence) {
    state_.first_divergence = *first;
  }
  return Status::Ok();
}

Result<Ledger> Follower::HoldForOpenWindows(const Heads& hl, const Heads& hr, Ledger through, Ledger frontier,
                                            std::optional<int64_t>& settled_before) {
  if (frontier <= through) return frontier;
  if (!dump::HasWindowedTable(spec_)) return frontier;
  struct SideHead {
    const std::string& conninfo;
    const std::string& schema;
    Ledger head;
  };
  const SideHead sides[] = {{o_.sides.left, o_.sides.left_schema, hl.contiguous},
                            {o_.sides.right, o_.sides.right_schema, hr.contiguous}};
  std::vector<std::unique_ptr<pg::Connection>> conns;
  int64_t cutoff = INT64_MAX;
  for (const SideHead& side : sides) {
    LD_ASSIGN_OR_RETURN(auto conn,
                        pg::Connection::Open(side.conninfo, "ledgerdiff verify-range --follow", pg::Access::kReadOnly));
    LD_ASSIGN_OR_RETURN(std::optional<int64_t> close, dump::LastLedgerCloseMs(*conn, side.schema, side.head));
    cutoff = std::min(cutoff, close.value_or(dump::kNothingSettled));
    conns.push_back(std::move(conn));
  }
  Ledger held = frontier;
  for (size_t i = 0; i < conns.size(); ++i) {
    LD_ASSIGN_OR_RETURN(std::optional<Ledger> open,
                        dump::FirstUnsettledLedger(*conns[i], sides[i].schema, spec_, {through + 1, frontier}, cutoff));
    if (open) held = std::min(held, *open - 1);
  }
  settled_before = cutoff;
  return std::max(held, through);
}

Status Follower::CompareNew(const LedgerRange& range, const std::optional<int64_t>& settled_before,
                            FollowCycle& cycle) {
  const std::string name = FollowSegmentName(range);
  LD_ASSIGN_OR_RETURN(VerifyRangeReport r,
                      RunVerifyRange(sides_.ForCycle({.range = range,
                                                      .out = (fs::path(segments_dir_) / name).string(),
                                                      .settled_before_ms = settled_before,
                                                      .lookup_caches = {&lookup_caches_[0], &lookup_caches_[1]}}),
                                     reporter_));
  cycle.compared = range;
  cycle.rows_left += r.diff.rows_compared_left;
  cycle.rows_right += r.diff.rows_compared_right;
  if (!r.diff.identical) {
    cycle.finding = DivergenceFinding(std::move(r), range);
    OpenDivergenceOf(*cycle.finding, {cycle.finding->ledger, range.to}, kFoundInNewLedgers);
    if (!o_.keep_going) return Status::Ok();  // not verified: the next run compares it again
    if (!state_.first_divergence) state_.first_divergence = cycle.finding->ledger;
  } else {
    ClearChecked(range, fmt::format("ledgers {} compared equal on both sides", range.str()), cycle);
  }
  state_.segments.push_back({range, name});
  state_.compared_through = range.to;
  return JoinSegments();
}

Status Follower::JoinSegments() {
  auto& segs = state_.segments;
  while (segs.size() >= 2 && segs[segs.size() - 2].range.size() <= 2 * segs.back().range.size()) {
    const FollowSegment& a = segs[segs.size() - 2];
    const FollowSegment& b = segs.back();
    const LedgerRange joined{a.range.from, b.range.to};
    const std::string name = FollowSegmentName(joined);
    const fs::path dir(segments_dir_);
    LD_RETURN_IF_ERROR(dump::ConcatenateManifests({(dir / a.file).string(), (dir / b.file).string()},
                                                  (dir / name).string())
                           .status());
    segs.pop_back();
    segs.back() = {joined, name};
  }
  return Status::Ok();
}

}  // namespace ledgerdiff::verify
