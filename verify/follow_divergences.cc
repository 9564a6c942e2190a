#include "verify/follower.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

}  // namespace

FollowFinding DivergenceFinding(VerifyRangeReport report, const LedgerRange& range) {
  FollowFinding f;
  f.ledger = report.diff.first_divergent_ledger.value_or(range.from);
  for (const auto& t : report.diff.divergent_tables) f.tables.push_back(t.table);
  f.report = std::move(report);
  return f;
}

void Follower::OpenDivergenceOf(const FollowFinding& f, const LedgerRange& ledgers, const char* how) {
  auto& open = state_.open_divergences;
  auto at = std::lower_bound(open.begin(), open.end(), ledgers.from,
                             [](const OpenDivergence& d, Ledger l) { return d.ledgers.from < l; });
  OpenDivergence d{ledgers, how, f.sides, f.tables, static_cast<int64_t>(std::time(nullptr)), state_.cycles + 1};
  if (at != open.end() && at->ledgers.from == ledgers.from) {
    d.found_at = at->found_at;  // open since it was first found
    d.cycle = at->cycle;
    d.ledgers.to = std::max(d.ledgers.to, at->ledgers.to);
    *at = std::move(d);
  } else if (open.size() < kMaxOpenDivergences) {
    open.insert(at, std::move(d));
  }
}

void Follower::ClearChecked(const LedgerRange& checked, const std::string& why, FollowCycle& cycle) {
  auto& open = state_.open_divergences;
  for (auto it = open.begin(); it != open.end();) {
    if (it->ledgers.from < checked.from || it->ledgers.from > checked.to) {
      ++it;
    } else if (it->ledgers.to <= checked.to) {
      Close(*it, why, cycle);
      it = open.erase(it);
    } else {
      it->ledgers.from = checked.to + 1;  // the rest is still to be compared
      ++it;
    }
  }
  // Shrunk ones may now start where another does: one per first ledger, the widest.
  std::stable_sort(open.begin(), open.end(),
                   [](const OpenDivergence& a, const OpenDivergence& b) { return a.ledgers.from < b.ledgers.from; });
  for (size_t i = 1; i < open.size();) {
    if (open[i].ledgers.from == open[i - 1].ledgers.from) {
      open[i - 1].ledgers.to = std::max(open[i - 1].ledgers.to, open[i].ledgers.to);
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  RecomputeFirstDivergence();
}

void Follower::Close(const OpenDivergence& d, const std::string& why, FollowCycle& cycle) {
  ClosedDivergence c{d, static_cast<int64_t>(std::time(nullptr)), state_.cycles + 1, why};
  reporter_.Note(fmt::format("divergence at ledgers {} (found {} in cycle {}) closed: {}", d.ledgers.str(), d.how,
                             d.cycle, why));
  cycle.closed.push_back(c);
  auto& closed = state_.closed_divergences;
  closed.push_back(std::move(c));
  if (closed.size() > kMaxClosedDivergences) closed.erase(closed.begin());
}

void Follower::RecomputeFirstDivergence() {
  if (!state_.first_divergence) return;
  state_.first_divergence.reset();
  for (const auto& d : state_.open_divergences)
    if (d.ledgers.from >= state_.from && d.ledgers.from <= state_.compared_through) {
      state_.first_divergence = d.ledgers.from;
      break;
    }
}

Status Follower::Recheck(const LedgerRange& r, FollowCycle& cycle) {
  if (r.from < state_.Kept() || r.to > state_.compared_through)
    return Status::Usagef("--recheck {}: the state holds compared ledgers {}:{} only (below {} reaped)", r.str(),
                          state_.Kept(), state_.compared_through, state_.Kept());
  const std::string fresh = (fs::path(segments_dir_) / (FollowSegmentName(r) + ".partial-recheck")).string();
  auto report = RunVerifyRange(sides_.ForCycle({.range = r, .out = fresh}), reporter_);
  std::error_code ec;
  if (!report.ok()) fs::remove(fresh, ec);
  LD_RETURN_IF_ERROR(report.status());
  VerifyRangeReport& rr = *report;
  cycle.rows_left += rr.diff.rows_compared_left;
  cycle.rows_right += rr.diff.rows_compared_right;
  if (rr.diff.identical) {
    const Status replaced = ReplaceSegmentLedgers(o_.state_dir, state_, r, fresh);
    fs::remove(fresh, ec);
    LD_RETURN_IF_ERROR(replaced);
    cycle.rechecked = FollowCycle::Recheck{r, kFollowRecheckIdentical};
    ClearChecked(r, fmt::format("--recheck {}: both sides compared equal afresh", r.str()), cycle);
    return Status::Ok();
  }
  fs::remove(fresh, ec);
  cycle.rechecked = FollowCycle::Recheck{r, kFollowRecheckDivergent};
  cycle.finding = DivergenceFinding(std::move(rr), r);
  OpenDivergenceOf(*cycle.finding, {cycle.finding->ledger, r.to}, kFoundByRecheck);
  if (o_.keep_going && (!state_.first_divergence || cycle.finding->ledger < *state_.first_divergence))
    state_.first_divergence = cycle.finding->ledger;
  return Status::Ok();
}

Status Follower::RecheckOpen(FollowCycle& cycle) {
  const Ledger kept = state_.Kept();
  std::vector<OpenDivergence> check;
  for (const auto& d : state_.open_divergences) {
    if (d.ledgers.to < kept) {
      check.push_back(d);  // closed below
    } else if (d.ledgers.from >= kept && d.ledgers.to <= state_.compared_through && check.size() < kRechecksPerCycle) {
      check.push_back(d);
    }
  }
  for (const auto& d : check) {
    if (d.ledgers.to < kept) {
      ClearChecked(d.ledgers, fmt::format("ledgers {} reaped on both sides (retention)", d.ledgers.str()), cycle);
      continue;
    }
    bool equal = true;
    for (const auto& seg : state_.segments) {
      const Ledger from = std::max(seg.range.from, d.ledgers.from), to = std::min(seg.range.to, d.ledgers.to);
      if (from > to) continue;
      LD_ASSIGN_OR_RETURN(std::optional<Change> change, ChangedSinceVerified(seg, {from, to}, cycle));
      if (change) {
        equal = false;
        break;
      }
    }
    if (equal)
      ClearChecked(d.ledgers, fmt::format("ledgers {} compared again: both sides hold what was verified", d.ledgers.str()),
                  cycle);
  }
  return Status::Ok();
}

}  // namespace ledgerdiff::verify
