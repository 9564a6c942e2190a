#pragma once
// Elapsed time, measured one way (issue 42: mold's `Timer t(ctx, "pass")`): the steady clock, in
// seconds as a double. SecondsSince is the codebase's one definition of elapsed time; Stopwatch
// holds a start; StageTimer adds a scope's seconds to a named stage of a StageTable, the
// {name, seconds} list that a report carries (verify's phases, a follow cycle's stages) and the
// renderers print in its order.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ledgerdiff {

using SteadyClock = std::chrono::steady_clock;

// Seconds from `start` to now on the steady clock.
inline double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Started when constructed (or restarted); reads the seconds since.
class Stopwatch {
 public:
  double Seconds() const { return SecondsSince(start_); }
  SteadyClock::time_point started() const { return start_; }
  void Restart() { start_ = SteadyClock::now(); }

 private:
  SteadyClock::time_point start_ = SteadyClock::now();
};

// One stage's seconds ("serial ingest", "scrub").
struct StageSeconds {
  std::string name;
  double seconds = 0;
};

// Stages in the order first recorded, one entry per name.
using StageTable = std::vector<StageSeconds>;

// Adds `seconds` to stage `name` (appended when the table has no such stage).
inline void AddStageSeconds(StageTable& table, std::string_view name, double seconds) {
  for (auto& s : table)
    if (s.name == name) {
      s.seconds += seconds;
      return;
    }
  table.push_back({std::string(name), seconds});
}

// The seconds of stage `name`; 0 when the table has none.
inline double StageSecondsOf(const StageTable& table, std::string_view name) {
  for (const auto& s : table)
    if (s.name == name) return s.seconds;
  return 0;
}

// Times a scope: the seconds from construction to Stop(), or to destruction when not stopped, are
// added once to stage `name` of `table` (which must outlive it).
class StageTimer {
 public:
  StageTimer(StageTable& table, std::string name) : table_(table), name_(std::move(name)) {}
  ~StageTimer() { Stop(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  // Records the stage (the first call only); returns its seconds.
  double Stop() {
    if (!stopped_) {
      seconds_ = watch_.Seconds();
      stopped_ = true;
      AddStageSeconds(table_, name_, seconds_);
    }
    return seconds_;
  }

 private:
  StageTable& table_;
  std::string name_;
  Stopwatch watch_;
  bool stopped_ = false;
  double seconds_ = 0;
};

// Runs `step` (a callable without arguments) timed as stage `name` of `table`; returns its result.
template <typename Step>
decltype(auto) TimeStage(StageTable& table, std::string name, Step&& step) {
  StageTimer timer(table, std::move(name));
  return std::forward<Step>(step)();
}

}  // namespace ledgerdiff
