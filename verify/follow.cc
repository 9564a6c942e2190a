#include "verify/follower.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/history_tables.h"
#include "core/pg.h"
#include "core/process.h"
#include "core/stage_timer.h"
#include "core/text.h"
#include "dump/digest.h"
#include "dump/profile.h"
#include "dump/shard.h"
#include "dump/source_identity.h"
#include "verify/follow_sides.h"
#include "verify/follow_state.h"

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

}  // namespace

Follower::Follower(const ValidFollowOptions& valid, Reporter& reporter,
                   const std::function<void(const FollowCycle&)>& on_cycle)
    : o_(valid.get()),
      sides_(valid.sides()),
      spec_(valid.sides().spec()),
      reporter_(reporter),
      on_cycle_(on_cycle),
      segments_dir_((fs::path(o_.state_dir) / kFollowSegmentsDir).string()),
      sessions_{SideSession(o_.sides.left), SideSession(o_.sides.right)} {}

Result<FollowReport> Follower::Run() {
  // A runtime failure (a server restarting, a lost connection) is retried with backoff until
  // it has lasted give_up_after_s; anything else ends the run.
  double backoff = 1;
  std::optional<Stopwatch> failing;  // since the first failure of the current run of them
  auto retry = [&](const Status& st, const std::string& what) -> Status {
    if (st.kind() != Status::Kind::kRuntime) return st;
    if (!failing) failing.emplace();
    const double failed_for = failing->Seconds();
    if (failed_for > o_.give_up_after_s)
      return Status::Runtimef("verify-range --follow: failing for {:.0f} s (--give-up-after {:.0f}): {}",
                              failed_for, o_.give_up_after_s, st.message());
    reporter_.Note(fmt::format("{} failed: {}; retrying in {:.0f} s (giving up after {:.0f} s)", what, st.message(),
                               backoff, o_.give_up_after_s));
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 30.0);
    return Status::Ok();
  };
  for (;;) {
    const Status opened = Open();
    if (opened.ok()) break;
    LD_RETURN_IF_ERROR(retry(opened, "starting"));
  }
  ScopedCleanup said([this] {
    const auto& open = state_.open_divergences;
    return fmt::format("the follow state in {} holds what was verified (through ledger {}, after {}{}); run the "
                       "same command to continue",
                       o_.state_dir, state_.VerifiedThrough(), FormatCountOf(state_.cycles, "cycle"),
                       open.empty() ? std::string()
                                    : fmt::format("; {} open, the first at ledgers {}",
                                                  FormatCountOf(open.size(), "divergence"), open.front().ledgers.str()));
  });
  FollowReport report;
  bool found = false;
  // The scrub's pace: the period since the last finished cycle's start; before the first, as if
  // one had started an interval before the loop.
  const Stopwatch loop;
  std::optional<Stopwatch> last_start;
  for (uint64_t run = 0; o_.max_cycles == 0 || run < o_.max_cycles;) {
    const Stopwatch start;
    FollowCycle cycle;
    cycle.number = state_.cycles + 1;
    const double period = last_start ? last_start->Seconds() : o_.interval_s + loop.Seconds();
    const FollowState before = state_;
    const auto state_attempt_before = last_state_attempt_;
    Status st = Cycle(cycle, period);
    if (!st.ok()) {
      state_ = before;  // what is on disk: the cycle is done again
      last_state_attempt_ = state_attempt_before;  // and its state comparison with it
      LD_RETURN_IF_ERROR(retry(st, fmt::format("cycle {}", cycle.number)));
      continue;
    }
    // --recheck: once, by the run's first finished cycle that got to it (a cycle that found
    // verified ledgers gone first leaves it to the next, with --keep-going).
    if (cycle.rechecked) recheck_done_ = true;
    if (failing) cycle.retry = fmt::format("recovered after {:.1f} s of failures", failing->Seconds());
    failing.reset();
    backoff = 1;
    last_start = start;
    ++run;
    cycle.seconds = start.Seconds();
    report.cycles.push_back(cycle);
    report.first = state_.from;
    report.frontier = cycle.frontier;
    found = found || cycle.finding.has_value();
    report.diverged = found || !cycle.open.empty();  // found by this run, or still open
    report.cycles_total = cycle.number;
    report.open_divergences = cycle.open.size();
    if (on_cycle_) on_cycle_(report.cycles.back());
    if (cycle.finding && !o_.keep_going) break;
    if (o_.until && state_.compared_through >= *o_.until) {
      report.reached_until = true;
      break;
    }
    if (o_.max_cycles && run >= o_.max_cycles) break;
    const double wait = o_.interval_s - start.Seconds();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  return report;
}

Status Follower::Open() {
  std::error_code ec;
  LD_RETURN_IF_ERROR(CheckFollowStateDir(o_.state_dir));
  fs::create_directories(segments_dir_, ec);
  if (ec || !fs::is_directory(o_.state_dir) || fs::is_symlink(segments_dir_))
    return Status::Usagef("--state {}: cannot make the state directory there{}", o_.state_dir,
                          ec ? ": " + ec.message() : "");
  if (!lock_) {
    LD_ASSIGN_OR_RETURN(lock_, DirLock::Acquire(o_.state_dir));
  }
  // Under the lock: what another follower may have left between the check and the lock.
  LD_RETURN_IF_ERROR(CheckFollowStateDir(o_.state_dir));
  nlohmann::json left, right;
  {
    auto l = SideRecord(sessions_[0], o_.sides.left_schema);
    if (!l.ok()) return l.status().With("left");
    auto r = SideRecord(sessions_[1], o_.sides.right_schema);
    if (!r.ok()) return r.status().With("right");
    left = *l;
    right = *r;
  }
  const std::string path = (fs::path(o_.state_dir) / kFollowStateFile).string();
  if (!fs::exists(path, ec)) {
    if (o_.from == 0) return Status::Usagef("--follow needs --from A: --state {} holds no state yet", o_.state_dir);
    state_.from = o_.from;
    state_.compared_through = o_.from - 1;
    state_.reaped_through = o_.from - 1;  // none
    state_.scrub_next = o_.from;
    state_.left = left;
    state_.right = right;
    state_.profile = o_.sides.table_profile;
    state_.engine = o_.sides.engine();
    LD_RETURN_IF_ERROR(SaveFollowState(o_.state_dir, state_));
    reporter_.Note(fmt::format("following from ledger {}; state in {}", o_.from, o_.state_dir));
  } else {
    LD_ASSIGN_OR_RETURN(state_, LoadFollowState(o_.state_dir));
    for (auto [stored, now, side] : {std::tuple{&state_.left, &left, "left"}, std::tuple{&state_.right, &right, "right"}}) {
      std::string why;
      try {
        why = SideMismatch(*stored, *now, side);
      } catch (const std::exception& e) {
        return Status::Usagef("{}: not a follow state: {}", path, e.what());
      }
      if (!why.empty())
        return Status::Usagef("--state {} follows other databases: {}; give another --state directory", o_.state_dir,
                              why);
    }
    if (state_.profile != o_.sides.table_profile)
      return Status::Usagef("--state {} was verified with profile {}, not {}", o_.state_dir, state_.profile,
                            o_.sides.table_profile);
    if (state_.engine != o_.sides.engine())
      return Status::Usagef("--state {} was verified with engine {}, not {} (its segments' digests would not compare)",
                            o_.state_dir, dump::ToString(state_.engine), dump::ToString(o_.sides.engine()));
    if (o_.from != 0 && o_.from != state_.from)
      return Status::Usagef("--state {} follows from ledger {}, not {} (give --from {} or another directory)",
                            o_.state_dir, state_.from, o_.from, state_.from);
    reporter_.Note(fmt::format("continuing from {}: verified through ledger {}, {} cycles before", o_.state_dir,
                               state_.VerifiedThrough(), state_.cycles));
  }
  RemoveUnreferencedSegments(o_.state_dir, state_);
  return Status::Ok();
}

Result<ValidFollowOptions> ValidateFollowOptions(FollowOptions o) {
  if (o.state_dir.empty()) return Status::Usage("--follow needs --state DIR (where what was verified is kept)");
  // history_ledgers.sequence is a 32-bit signed integer in Horizon's schema (kHighestLedger).
  for (const std::optional<Ledger>& l : {std::optional<Ledger>(o.from), o.until})
    if (l && *l > kHighestLedger)
      return Status::Usagef("--from/--range/--until: ledger {} is past {}, the highest ledger history_ledgers.sequence "
                            "(an integer) can hold",
                            *l, kHighestLedger);
  std::error_code ec;
  const bool has_state = fs::exists(fs::symlink_status(fs::path(o.state_dir) / kFollowStateFile, ec));
  if (o.recheck) {
    if (o.recheck->from < 1 || o.recheck->to > kHighestLedger || o.recheck->from > o.recheck->to)
      return Status::Usagef("--recheck {}: not a range A:B with 1 <= A <= B <= {}", o.recheck->str(), kHighestLedger);
    if (!has_state)
      return Status::Usagef("--recheck {}: --state {} holds no state yet (nothing was verified to check again)",
                            o.recheck->str(), o.state_dir);
  }
  if (o.from == 0 && !has_state)
    return Status::Usagef("--follow needs the first ledger, --from A (or --range A:): --state {} holds no state yet",
                          o.state_dir);
  if (o.until && *o.until < o.from)
    return Status::Usagef("--until {} is before the first ledger {}", *o.until, o.from);
  if (!(o.interval_s >= 0) || o.interval_s > 86400)
    return Status::Usagef("--interval {} is not a number of seconds from 0 to 86400", o.interval_s);
  if (!(o.give_up_after_s >= 0)) return Status::Usagef("--give-up-after {} is not a number of seconds", o.give_up_after_s);
  if (!(o.scrub_period_s > 0)) return Status::Usagef("--scrub-period {} is not a positive number of seconds", o.scrub_period_s);
  if (o.settle > 1000000) return Status::Usagef("--settle {} ledgers is more than 1,000,000", o.settle);
  if (!(o.state_interval_s >= 0) || o.state_interval_s > kMaxStateIntervalSeconds)
    return Status::Usagef("--state-interval {} is not a number of seconds from 0 to {:.0f}", o.state_interval_s,
                          kMaxStateIntervalSeconds);
  if (!o.sides.out.empty() || o.sides.shards || o.sides.resume)
    return Status::Usage("--follow keeps its own manifests in --state: --out, --shards and --resume do not apply");
  VerifyRangeOptions v = o.sides;
  v.range = {std::max<Ledger>(o.from, 1), std::max<Ledger>(o.from, 1)};
  LD_ASSIGN_OR_RETURN(ValidVerifyRangeOptions sides, ValidateVerifyRangeOptions(std::move(v)));
  // The state directory and its state before any connection: bad input is exit 2 at once, not
  // a failure retried until --give-up-after.
  LD_RETURN_IF_ERROR(CheckFollowStateDir(o.state_dir));
  if (!has_state) return ValidFollowOptions(std::move(o), std::move(sides));
  LD_ASSIGN_OR_RETURN(const FollowState state, LoadFollowState(o.state_dir));
  if (o.recheck && state.compared_through < state.Kept())
    return Status::Usagef("--recheck {}: --state {} holds no compared ledgers", o.recheck->str(), o.state_dir);
  if (o.recheck && (o.recheck->from < state.Kept() || o.recheck->to > state.compared_through))
    return Status::Usagef("--recheck {}: --state {} has compared ledgers {}:{} only (recheck lies at or below its "
                          "frontier{})",
                          o.recheck->str(), o.state_dir, state.Kept(), state.compared_through,
                          state.Kept() > state.from ? fmt::format("; ledgers before {} were reaped", state.Kept()) : "");
  return ValidFollowOptions(std::move(o), std::move(sides));
}

Result<FollowReport> RunFollow(const ValidFollowOptions& options, Reporter& reporter,
                               const std::function<void(const FollowCycle&)>& on_cycle) {
  Follower follower(options, reporter, on_cycle);
  return follower.Run();
}

}  // namespace ledgerdiff::verify
