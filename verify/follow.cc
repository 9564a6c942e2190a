#include "verify/follow.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

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
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The directory's lock, held for the follower's life (released by the kernel on any exit).
class DirLock {
 public:
  static Result<std::unique_ptr<DirLock>> Acquire(const std::string& dir) {
    const std::string path = (fs::path(dir) / "lock").string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return Status::Usagef("--state {}: cannot open {}: {}", dir, path, std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const std::string holder = Holder(fd);
      ::close(fd);
      return Status::Usagef("--state {} is in use by another verify-range --follow ({}its lock {} is held)", dir,
                            holder.empty() ? "" : holder + "; ", path);
    }
    // Who holds it, for the next one refused: "pid 123 on host db1 since 2026-12-07T08:00:00Z".
    const std::string me = fmt::format("pid {} on host {} since {}\n", ::getpid(), HostName(), IsoTimeNow());
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
      // Only the refusal's message loses its holder; the lock itself holds.
    }
    auto lock = std::unique_ptr<DirLock>(new DirLock);
    lock->fd_ = fd;
    return lock;
  }
  ~DirLock() { ::close(fd_); }

 private:
  // The holder line its holder wrote (untrusted: at most one line of 200 printable bytes), or "".
  static std::string Holder(int fd) {
    char buf[201];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return "";
    std::string line(buf, static_cast<size_t>(n));
    line = line.substr(0, line.find('\n'));
    for (char c : line)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return "";
    return "held by " + line;
  }
  static std::string HostName() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) return "unknown";
    return host;
  }

  DirLock() = default;
  int fd_ = -1;
};

class Follower {
 public:
  Follower(const FollowOptions& o, Reporter& reporter, const std::function<void(const FollowCycle&)>& on_cycle)
      : o_(o), reporter_(reporter), on_cycle_(on_cycle), segments_dir_((fs::path(o.state_dir) / kFollowSegmentsDir).string()) {}

  Result<FollowReport> Run() {
    // A runtime failure (a server restarting, a lost connection) is retried with backoff until
    // it has lasted give_up_after_s; anything else ends the run.
    double backoff = 1;
    bool failing = false;
    Clock::time_point failing_since;
    auto retry = [&](const Status& st, const std::string& what) -> Status {
      if (st.kind() != Status::Kind::kRuntime) return st;
      if (!failing) failing_since = Clock::now();
      failing = true;
      const double failed_for = SecondsSince(failing_since);
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
    Clock::time_point last_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                                      std::chrono::duration<double>(o_.interval_s));
    for (uint64_t run = 0; o_.max_cycles == 0 || run < o_.max_cycles;) {
      const Clock::time_point start = Clock::now();
      FollowCycle cycle;
      cycle.number = state_.cycles + 1;
      const double period = std::chrono::duration<double>(start - last_start).count();
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
      if (failing) cycle.retry = fmt::format("recovered after {:.1f} s of failures", SecondsSince(failing_since));
      failing = false;
      backoff = 1;
      last_start = start;
      ++run;
      cycle.seconds = SecondsSince(start);
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
      const double wait = o_.interval_s - SecondsSince(start);
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    return report;
  }

 private:
  // Creates or reopens DIR, takes its lock, loads (or starts) the state and checks it is of these
  // sides and profile.
  Status Open() {
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
      auto l = SideRecord(o_.sides.left, o_.sides.left_schema);
      if (!l.ok()) return l.status().With("left");
      auto r = SideRecord(o_.sides.right, o_.sides.right_schema);
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
      state_.engine = o_.sides.engine;
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
      if (state_.engine != o_.sides.engine)
        return Status::Usagef("--state {} was verified with engine {}, not {} (its segments' digests would not compare)",
                              o_.state_dir, dump::ToString(state_.engine), dump::ToString(o_.sides.engine));
      if (o_.from != 0 && o_.from != state_.from)
        return Status::Usagef("--state {} follows from ledger {}, not {} (give --from {} or another directory)",
                              o_.state_dir, state_.from, o_.from, state_.from);
      reporter_.Note(fmt::format("continuing from {}: verified through ledger {}, {} cycles before", o_.state_dir,
                                 state_.VerifiedThrough(), state_.cycles));
    }
    RemoveUnreferencedSegments(o_.state_dir, state_);
    return Status::Ok();
  }

  VerifyRangeOptions CycleOptions(const LedgerRange& range) const {
    VerifyRangeOptions v = o_.sides;
    v.state.mode = StateMode::kOff;  // history here; state at most every --state-interval (CompareStateIfDue)
    v.range = range;
    v.out.clear();
    v.shards = 0;
    v.resume = false;
    // Both sides grow past every cycle's range: only rows without a ledger are counted (and compared).
    v.outside_rows = diff::DiffOptions::OutsideRows::kWithoutLedger;
    return v;
  }

  Status Cycle(FollowCycle& cycle, double period) {
    RemoveUnreferencedSegments(o_.state_dir, state_);
    // The state divergence stays out of the history's ordered list while the history is compared.
    std::optional<OpenDivergence> state_open = TakeStateDivergence();
    const Ledger through = state_.compared_through;
    const uint64_t window = uint64_t{o_.max_cycle_ledgers} + o_.settle;
    const Ledger kept = state_.Kept();
    auto hl = ReadHeads(o_.sides.left, o_.sides.left_schema, through, window, kept);
    if (!hl.ok()) return hl.status().With("left");
    auto hr = ReadHeads(o_.sides.right, o_.sides.right_schema, through, window, kept);
    if (!hr.ok()) return hr.status().With("right");
    cycle.head_left = hl->max;
    cycle.head_right = hr->max;
    // What was compared must still be there: reaped from both sides, or a finding at once.
    if (kept <= through) LD_RETURN_IF_ERROR(CheckKept(*hl, *hr, cycle));
    if (!cycle.finding && o_.recheck && !recheck_done_) LD_RETURN_IF_ERROR(Recheck(*o_.recheck, cycle));
    if (!cycle.finding) LD_RETURN_IF_ERROR(RecheckOpen(cycle));
    // Each side's usable frontier: its gap-free run, less its newest `settle` ledgers.
    auto usable = [&](const Heads& h) -> Ledger {
      const Ledger settled = h.max && *h.max >= Ledger{o_.settle} ? *h.max - o_.settle : 0;
      return std::max(through, std::min(h.contiguous, settled));
    };
    Ledger frontier = std::min(usable(*hl), usable(*hr));
    if (o_.until) frontier = std::min(frontier, std::max(*o_.until, through));
    frontier = std::min<Ledger>(frontier, through + o_.max_cycle_ledgers);
    std::optional<int64_t> settled_before;
    LD_ASSIGN_OR_RETURN(frontier, HoldForOpenWindows(*hl, *hr, through, frontier, settled_before));
    if (frontier > through && (!cycle.finding || o_.keep_going))
      LD_RETURN_IF_ERROR(CompareNew({through + 1, frontier}, settled_before, cycle));
    if (!cycle.finding || o_.keep_going) LD_RETURN_IF_ERROR(Scrub(cycle, period));
    bool state_raised = false;
    LD_RETURN_IF_ERROR(CompareStateIfDue(cycle, state_open, state_raised));
    if (state_open) state_.open_divergences.push_back(*state_open);  // last, outside the history's order
    ++state_.cycles;
    cycle.number = state_.cycles;
    cycle.first = state_.from;
    cycle.reaped_through = state_.reaped_through;
    if (cycle.finding || state_raised) ++state_.divergences;
    cycle.divergences_total = state_.divergences;
    cycle.open = state_.open_divergences;
    LD_RETURN_IF_ERROR(SaveFollowState(o_.state_dir, state_));
    RemoveUnreferencedSegments(o_.state_dir, state_);
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
      if (auto at = ClosedAt(o_.sides.left, o_.sides.left_schema, cycle.frontier)) cycle.lag_seconds = std::max(0.0, *closed - *at);
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

  std::optional<OpenDivergence> TakeStateDivergence() {
    auto& open = state_.open_divergences;
    if (open.empty() || open.back().how != kFoundInState) return std::nullopt;
    std::optional<OpenDivergence> d = std::move(open.back());
    open.pop_back();
    return d;
  }

  // Whether a state comparison is due: none yet, or --state-interval passed since the last
  // attempt of this run (the first of a run: since the state's last comparison, across restarts).
  bool StateDue() const {
    if (last_state_attempt_) return SecondsSince(*last_state_attempt_) >= o_.state_interval_s;
    if (state_.state_last_compared_at == 0) return true;
    return static_cast<double>(std::time(nullptr) - state_.state_last_compared_at) >= o_.state_interval_s;
  }

  // --state-interval (issue 45): when due, the state tables are compared if both sides' state
  // stands at the same ledger, each read in its own snapshot (CompareState). Different ledgers
  // are no finding: noted, and tried again next cycle. Compared equal, the state divergence
  // `open` (if any) closes and the last agreed ledger moves; different, it opens (`raised`) or,
  // already open, is updated to this ledger.
  Status CompareStateIfDue(FollowCycle& cycle, std::optional<OpenDivergence>& open, bool& raised) {
    if (!spec_) {
      LD_ASSIGN_OR_RETURN(spec_, dump::LoadProfileSpec(o_.sides.table_profile));
    }
    cycle.state_followed = o_.sides.state.mode != StateMode::kSkip && !spec_->state_tables.empty();
    if (cycle.state_followed && StateDue()) {
      StateOptions so = o_.sides.state;
      so.mode = StateMode::kCompare;
      so.wait_s = 0;  // a follower tries again next cycle
      auto compared = CompareState(diff::SchemaSource{o_.sides.left, o_.sides.left_schema},
                                   diff::SchemaSource{o_.sides.right, o_.sides.right_schema}, *spec_, o_.sides.engine, so);
      // Never before the last comparison (a wall clock stepped back would leave state.json's
      // last agreement after its last comparison, which the state's checks refuse).
      const int64_t now = std::max(static_cast<int64_t>(std::time(nullptr)), state_.state_last_compared_at);
      if (!compared.ok()) {
        if (compared.status().kind() == Status::Kind::kRuntime) return compared.status().With("state");
        // Bad input on a side (a state ledger that is no ledger number): said, not again before the interval.
        StateComparison c;
        c.note = compared.status().message();
        cycle.state = std::move(c);
        last_state_attempt_ = Clock::now();
      } else {
        StateComparison& c = *compared;
        if (!c.compared) {
          if (c.verdict == StateVerdict::kNotCompared) {
            last_state_attempt_ = Clock::now();  // nothing to compare: not again before the interval
          } else {
            auto text = [](const std::optional<Ledger>& l) { return l ? std::to_string(*l) : std::string("none"); };
            c.note = fmt::format("ledgers {} vs {} (tried again next cycle)", text(c.ledger_left),
                                 text(c.ledger_right));
          }
          c.verdict = StateVerdict::kNotCompared;  // never incomplete: not a finding
        } else {
          last_state_attempt_ = Clock::now();
          state_.state_last_compared_at = now;
          const Ledger at = *c.ledger_left;
          if (c.verdict == StateVerdict::kIdentical) {
            state_.state_last_agreed_ledger = at;
            state_.state_last_agreed_at = now;
            if (open) {
              Close(*open, fmt::format("state compared equal at ledger {}", at), cycle);
              open.reset();
            }
          } else {
            std::vector<std::string> tables;
            for (const auto& t : c.tables)
              if (!t.identical) tables.push_back(t.table);
            OpenDivergence d{{at, at}, kFoundInState, "", tables, now, state_.cycles + 1, c.differing_rows};
            if (open) {
              d.found_at = open->found_at;  // open since it was first found
              d.cycle = open->cycle;
            } else {
              raised = true;
              reporter_.Note(fmt::format("state differs at ledger {}: {} in {}", at,
                                         FormatCountOf(c.differing_rows, "differing key"), fmt::join(tables, ", ")));
            }
            open = std::move(d);
          }
        }
        cycle.state = std::move(c);
      }
    }
    cycle.state_last_agreed_ledger = state_.state_last_agreed_ledger;
    cycle.state_last_agreed_at = state_.state_last_agreed_at;
    cycle.state_last_compared_at = state_.state_last_compared_at;
    cycle.state_divergent = open.has_value();
    return Status::Ok();
  }

  // Reads what each side still holds of the compared ledgers kept:compared_through (its lowest
  // ledger there and how many it holds, from ReadHeads' snapshot). Ledgers gone from both sides
  // from the bottom up were reaped (Horizon's retention): the covered range starts after them,
  // their segments go. Any other compared ledger a side no longer holds is a finding.
  Status CheckKept(const Heads& hl, const Heads& hr, FollowCycle& cycle) {
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
    std::vector<std::string> sides;
    for (auto [h, conninfo, schema, side] :
         {std::tuple{&hl, &o_.sides.left, &o_.sides.left_schema, "left"},
          std::tuple{&hr, &o_.sides.right, &o_.sides.right_schema, "right"}}) {
      // This side holds nothing below `from` down to `kept` (from is at most its lowest ledger
      // there): its count of kept:compared is its count of from:compared.
      if (h->held >= expected) continue;
      LD_ASSIGN_OR_RETURN(Ledger missing, FirstMissing(*conninfo, *schema, from, compared));
      if (missing > compared) missing = from;  // fewer rows, none missing: they came back since
      if (first && missing > *first) continue;
      if (!first || missing < *first) sides.clear();
      first = missing;
      most = std::max(most, expected - h->held);
      sides.push_back(side);
    }
    if (!first) return Status::Ok();
    FollowFinding f;
    f.changed_after_verified = true;
    f.gone = true;
    f.gone_ledgers = most;
    f.ledger = *first;
    f.sides = sides.size() == 2 ? "both" : sides[0];
    f.tables = {kLedgerTable};
    NullReporter quiet;
    VerifyRangeOptions v = CycleOptions({*first, *first});
    v.allow_empty = true;  // gone from both: the report shows the coverage, not a usage error
    LD_ASSIGN_OR_RETURN(f.report, RunVerifyRange(v, quiet));
    cycle.finding = std::move(f);
    OpenDivergenceOf(*cycle.finding, {*first, compared}, kFoundGone);
    if (!o_.keep_going) {
      state_.scrub_next = std::max(std::min(state_.scrub_next, *first), from);
    } else if (!state_.first_divergence || *first < *state_.first_divergence) {
      state_.first_divergence = *first;
    }
    return Status::Ok();
  }

  // verify-range over the new ledgers; an identical stretch becomes a segment.
  // Windowed tables (dump/profile.h TimeWindow, issue 41): a bucket is compared once, when its
  // window has closed on both sides, so a bucket that later ledgers of its minute rewrite is never
  // compared half-filled, nor flagged by the scrub as changed once it fills. The frontier stops
  // before the first ledger of through+1..frontier that filed a bucket still open at the earlier
  // of the two sides' close times of their gap-free heads; `settled_before` is that instant, with
  // which the comparison reads (every bucket before the frontier is settled by it).
  Result<Ledger> HoldForOpenWindows(const Heads& hl, const Heads& hr, Ledger through, Ledger frontier,
                                    std::optional<int64_t>& settled_before) {
    if (frontier <= through) return frontier;
    if (!spec_) {
      LD_ASSIGN_OR_RETURN(spec_, dump::LoadProfileSpec(o_.sides.table_profile));
    }
    if (!dump::HasWindowedTable(*spec_)) return frontier;
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
                          dump::FirstUnsettledLedger(*conns[i], sides[i].schema, *spec_, {through + 1, frontier}, cutoff));
      if (open) held = std::min(held, *open - 1);
    }
    settled_before = cutoff;
    return std::max(held, through);
  }

  Status CompareNew(const LedgerRange& range, const std::optional<int64_t>& settled_before, FollowCycle& cycle) {
    VerifyRangeOptions v = CycleOptions(range);
    v.settled_before_ms = settled_before;
    const std::string name = FollowSegmentName(range);
    v.out = (fs::path(segments_dir_) / name).string();
    v.lookup_caches = {&lookup_caches_[0], &lookup_caches_[1]};
    LD_ASSIGN_OR_RETURN(VerifyRangeReport r, RunVerifyRange(v, reporter_));
    cycle.compared = range;
    cycle.rows_left += r.diff.rows_compared_left;
    cycle.rows_right += r.diff.rows_compared_right;
    if (!r.diff.identical) {
      FollowFinding f;
      f.ledger = r.diff.first_divergent_ledger.value_or(range.from);
      for (const auto& t : r.diff.divergent_tables) f.tables.push_back(t.table);
      f.report = std::move(r);
      cycle.finding = std::move(f);
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

  // Joins the last two segments while the older is at most twice the newer: a binary counter, so
  // that k cycles leave O(log k) segments and each ledger is rewritten O(log k) times.
  Status JoinSegments() {
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

  // Re-digests the next slice of the verified range on both sides and compares it with the
  // stored segments. The slice is sized so that the whole verified range is scrubbed once per
  // scrub period at this cycle's pace: ledgers = verified * period / scrub_period.
  Status Scrub(FollowCycle& cycle, double period) {
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

  // Records the divergence `f` found over `ledgers` as open (one per first ledger: found again,
  // it is updated, not added).
  void OpenDivergenceOf(const FollowFinding& f, const LedgerRange& ledgers, const char* how) {
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

  // `checked` compared equal (both sides as verified, or with each other): the open divergences
  // that start in it lose their ledgers through its end, and close when none is left; the first
  // divergence (the frontier's stop, --keep-going) moves to the next one still open.
  void ClearChecked(const LedgerRange& checked, const std::string& why, FollowCycle& cycle) {
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

  void Close(const OpenDivergence& d, const std::string& why, FollowCycle& cycle) {
    ClosedDivergence c{d, static_cast<int64_t>(std::time(nullptr)), state_.cycles + 1, why};
    reporter_.Note(fmt::format("divergence at ledgers {} (found {} in cycle {}) closed: {}", d.ledgers.str(), d.how,
                               d.cycle, why));
    cycle.closed.push_back(c);
    auto& closed = state_.closed_divergences;
    closed.push_back(std::move(c));
    if (closed.size() > kMaxClosedDivergences) closed.erase(closed.begin());
  }

  void RecomputeFirstDivergence() {
    if (!state_.first_divergence) return;
    state_.first_divergence.reset();
    for (const auto& d : state_.open_divergences)
      if (d.ledgers.from >= state_.from && d.ledgers.from <= state_.compared_through) {
        state_.first_divergence = d.ledgers.from;
        break;
      }
  }

  // --recheck A:B (issue 43: after a re-ingest of both sides the segments hold the old rows):
  // verify-range over A:B on both sides afresh. Equal, A:B's ledgers in the segments are replaced
  // by what the sides hold now and the open divergences in A:B close; different, the segments keep
  // what was verified and a divergence opens (a finding, kFoundByRecheck). The frontier is not moved.
  Status Recheck(const LedgerRange& r, FollowCycle& cycle) {
    if (r.from < state_.Kept() || r.to > state_.compared_through)
      return Status::Usagef("--recheck {}: the state holds compared ledgers {}:{} only (below {} reaped)", r.str(),
                            state_.Kept(), state_.compared_through, state_.Kept());
    VerifyRangeOptions v = CycleOptions(r);
    const std::string fresh = (fs::path(segments_dir_) / (FollowSegmentName(r) + ".partial-recheck")).string();
    v.out = fresh;
    auto report = RunVerifyRange(v, reporter_);
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
    FollowFinding f;
    f.ledger = rr.diff.first_divergent_ledger.value_or(r.from);
    for (const auto& t : rr.diff.divergent_tables) f.tables.push_back(t.table);
    f.report = std::move(rr);
    cycle.finding = std::move(f);
    OpenDivergenceOf(*cycle.finding, {cycle.finding->ledger, r.to}, kFoundByRecheck);
    if (o_.keep_going && (!state_.first_divergence || cycle.finding->ledger < *state_.first_divergence))
      state_.first_divergence = cycle.finding->ledger;
    return Status::Ok();
  }

  // The way back (issue 43): each open divergence whose ledgers were stored (verified, or kept
  // going past) is compared again, both sides against what was verified, at most
  // kRechecksPerCycle a cycle; equal on both sides, it is closed and the frontier moves on.
  // Divergences reaped on both sides are closed too. One still different stays open (not a new
  // finding).
  static constexpr size_t kRechecksPerCycle = 8;
  Status RecheckOpen(FollowCycle& cycle) {
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

  // The first ledger of `slice` (within segment `seg`) where a side no longer holds what was
  // verified (the segment), which sides, and the tables there; nullopt when both still do.
  struct Change {
    Ledger ledger = 0;
    std::vector<std::string> sides;
    std::set<std::string> tables;
  };
  Result<std::optional<Change>> ChangedSinceVerified(const FollowSegment& seg, const LedgerRange& slice,
                                                     FollowCycle& cycle) {
    if (!spec_) {
      LD_ASSIGN_OR_RETURN(spec_, dump::LoadProfileSpec(o_.sides.table_profile));
    }
    const dump::ProfileSpec& spec = *spec_;
    const diff::Source stored = diff::ManifestSource{(fs::path(segments_dir_) / seg.file).string()};
    diff::DiffOptions d;
    d.range = slice;
    d.jobs = o_.sides.jobs;
    d.max_rows = 0;
    d.allow_gaps = o_.sides.allow_gaps;
    d.allow_empty = true;
    d.outside_rows = diff::DiffOptions::OutsideRows::kWithoutLedger;
    std::optional<Ledger> changed;
    std::set<std::string> tables;
    std::vector<std::string> sides;
    NullReporter quiet;
    for (auto [conninfo, schema, side] : {std::tuple{&o_.sides.left, &o_.sides.left_schema, "left"},
                                          std::tuple{&o_.sides.right, &o_.sides.right_schema, "right"}}) {
      LD_ASSIGN_OR_RETURN(diff::DiffReport r,
                          diff::DiffSources(stored, diff::SchemaSource{*conninfo, *schema}, spec, d, quiet));
      if (side[0] == 'l')
        cycle.rows_left += r.rows_compared_right;
      else
        cycle.rows_right += r.rows_compared_right;
      if (r.identical) continue;
      const Ledger at = r.first_divergent_ledger.value_or(slice.from);
      if (changed && at > *changed) continue;
      if (!changed || at < *changed) {
        sides.clear();
        tables.clear();
      }
      changed = at;
      sides.push_back(side);
      for (const auto& t : r.divergent_tables) tables.insert(t.table);
      if (r.divergent_tables.empty())
        for (const auto& s : r.schema_differences) tables.insert(s);
    }
    if (!changed) return std::optional<Change>();
    return std::optional<Change>(Change{*changed, std::move(sides), std::move(tables)});
  }

  Status ScrubSlice(const FollowSegment& seg, const LedgerRange& slice, FollowCycle& cycle) {
    LD_ASSIGN_OR_RETURN(std::optional<Change> change, ChangedSinceVerified(seg, slice, cycle));
    if (!change) return Status::Ok();
    const std::optional<Ledger> changed = change->ledger;
    FollowFinding f;
    f.changed_after_verified = true;
    f.ledger = *changed;
    f.sides = change->sides.size() == 2 ? "both" : change->sides[0];
    f.tables.assign(change->tables.begin(), change->tables.end());
    // The rows: the two sides at that ledger (identical when both changed alike: then only the
    // stored manifest knows the ledger as it was verified).
    VerifyRangeOptions v = CycleOptions({*changed, *changed});
    v.allow_empty = true;  // the ledger gone from both sides: its coverage, not a usage error
    NullReporter quiet;
    LD_ASSIGN_OR_RETURN(f.report, RunVerifyRange(v, quiet));
    cycle.finding = std::move(f);
    OpenDivergenceOf(*cycle.finding, {*changed, slice.to}, kFoundByScrub);
    if (!o_.keep_going) {
      state_.scrub_next = *changed;  // a restart checks it again first
    } else if (!state_.first_divergence || *changed < *state_.first_divergence) {
      state_.first_divergence = *changed;
    }
    return Status::Ok();
  }

  const FollowOptions& o_;
  Reporter& reporter_;
  const std::function<void(const FollowCycle&)>& on_cycle_;
  const std::string segments_dir_;
  std::unique_ptr<DirLock> lock_;
  std::optional<dump::ProfileSpec> spec_;  // loaded at the first cycle that needs it
  bool recheck_done_ = false;
  std::optional<Clock::time_point> last_state_attempt_;  // this run's last state comparison (or nothing to compare)
  FollowState state_;
  // Each side's lookup rows, kept from one cycle's new ledgers to the next (dump::LookupCache:
  // every cycle checks, in its snapshot, the content hash of the rows kept; the scrub reads
  // whole tables).
  dump::LookupCache lookup_caches_[2];
};

}  // namespace

Status ValidateFollowOptions(const FollowOptions& o) {
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
  LD_RETURN_IF_ERROR(ValidateVerifyRangeOptions(v));
  // The state directory and its state before any connection: bad input is exit 2 at once, not
  // a failure retried until --give-up-after.
  LD_RETURN_IF_ERROR(CheckFollowStateDir(o.state_dir));
  if (!has_state) return Status::Ok();
  LD_ASSIGN_OR_RETURN(const FollowState state, LoadFollowState(o.state_dir));
  if (o.recheck && state.compared_through < state.Kept())
    return Status::Usagef("--recheck {}: --state {} holds no compared ledgers", o.recheck->str(), o.state_dir);
  if (o.recheck && (o.recheck->from < state.Kept() || o.recheck->to > state.compared_through))
    return Status::Usagef("--recheck {}: --state {} has compared ledgers {}:{} only (recheck lies at or below its "
                          "frontier{})",
                          o.recheck->str(), o.state_dir, state.Kept(), state.compared_through,
                          state.Kept() > state.from ? fmt::format("; ledgers before {} were reaped", state.Kept()) : "");
  return Status::Ok();
}

Result<FollowReport> RunFollow(const FollowOptions& options, Reporter& reporter,
                               const std::function<void(const FollowCycle&)>& on_cycle) {
  LD_RETURN_IF_ERROR(ValidateFollowOptions(options));
  LD_RETURN_IF_ERROR(dump::LoadProfileSpec(options.sides.table_profile).status());
  Follower follower(options, reporter, on_cycle);
  return follower.Run();
}

}  // namespace ledgerdiff::verify
