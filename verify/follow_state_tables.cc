#include "verify/follower.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/text.h"
#include "verify/state_compare.h"

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

}  // namespace

std::optional<OpenDivergence> Follower::TakeStateDivergence() {
  auto& open = state_.open_divergences;
  if (open.empty() || open.back().how != kFoundInState) return std::nullopt;
  std::optional<OpenDivergence> d = std::move(open.back());
  open.pop_back();
  return d;
}

bool Follower::StateDue() const {
  if (last_state_attempt_) return last_state_attempt_->Seconds() >= o_.state_interval_s;
  if (state_.state_last_compared_at == 0) return true;
  return static_cast<double>(std::time(nullptr) - state_.state_last_compared_at) >= o_.state_interval_s;
}

Status Follower::CompareStateIfDue(FollowCycle& cycle, std::optional<OpenDivergence>& open, bool& raised) {
  cycle.state_followed = o_.sides.state.mode != StateMode::kSkip && !spec_.state_tables.empty();
  if (cycle.state_followed && StateDue()) {
    StateOptions so = o_.sides.state;
    so.mode = StateMode::kCompare;
    so.wait_s = 0;  // a follower tries again next cycle
    auto compared =
        CompareState(diff::SchemaSource{o_.sides.left, o_.sides.left_schema},
                     diff::SchemaSource{o_.sides.right, o_.sides.right_schema}, spec_, o_.sides.engine(), so);
    // Never before the last comparison (a wall clock stepped back would leave state.json's
    // last agreement after its last comparison, which the state's checks refuse).
    const int64_t now = std::max(static_cast<int64_t>(std::time(nullptr)), state_.state_last_compared_at);
    if (!compared.ok()) {
      if (compared.status().kind() == Status::Kind::kRuntime) return compared.status().With("state");
      // Bad input on a side (a state ledger that is no ledger number): said, not again before the interval.
      StateComparison c;
      c.note = compared.status().message();
      cycle.state = std::move(c);
      last_state_attempt_.emplace();
    } else {
      StateComparison& c = *compared;
      if (!c.compared) {
        if (c.verdict == StateVerdict::kNotCompared) {
          last_state_attempt_.emplace();  // nothing to compare: not again before the interval
        } else {
          auto text = [](const std::optional<Ledger>& l) { return l ? std::to_string(*l) : std::string("none"); };
          c.note = fmt::format("ledgers {} vs {} (tried again next cycle)", text(c.ledger_left),
                               text(c.ledger_right));
        }
        c.verdict = StateVerdict::kNotCompared;  // never incomplete: not a finding
      } else {
        last_state_attempt_.emplace();
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
          OpenDivergence d{{at, at}, kFoundInState, SideSet::kNone, tables, now, state_.cycles + 1, c.differing_rows};
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

}  // namespace ledgerdiff::verify
