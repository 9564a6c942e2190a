// Fuzzes the follower's state file (verify/follow_state.h): the input is the bytes of a
// DIR/state.json that `verify-range --follow --state DIR` reads at start (ParseFollowState).
//
// Properties: no crash, no sanitizer report, no allocation beyond -malloc_limit_mb; a bad file is
// a usage error (exit 2) naming the file, on one line; an accepted state keeps the invariant
// FollowState states (every ledger within 1..2^31-1, the values consistent, the segments
// consecutive through compared_through and named after their ranges) and reads back from its own
// JSON (FollowStateToJson) as the same state.

#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "verify/follow_state.h"

using namespace ledgerdiff;
using namespace ledgerdiff::verify;

namespace {

void CheckInvariant(const FollowState& s) {
  LD_FUZZ_CHECK(s.from >= 1 && s.from <= kHighestLedger, "from {}", s.from);
  LD_FUZZ_CHECK(s.compared_through + 1 >= s.from && s.compared_through <= kHighestLedger, "compared_through {} from {}",
                s.compared_through, s.from);
  LD_FUZZ_CHECK(s.reaped_through + 1 >= s.from && s.reaped_through <= s.compared_through, "reaped_through {}",
                s.reaped_through);
  LD_FUZZ_CHECK(!s.first_divergence || (*s.first_divergence >= s.from && *s.first_divergence <= s.compared_through),
                "first_divergence {}", *s.first_divergence);
  LD_FUZZ_CHECK(s.scrub_next >= s.Kept() && s.scrub_next <= s.compared_through + 1, "scrub_next {} kept {} through {}",
                s.scrub_next, s.Kept(), s.compared_through);
  LD_FUZZ_CHECK(s.divergences <= s.cycles && s.cycles < (uint64_t{1} << 63), "divergences {} cycles {}", s.divergences,
                s.cycles);
  LD_FUZZ_CHECK(!s.first_divergence || s.divergences >= 1, "a first divergence with no divergence");
  uint64_t next = s.segments.empty() ? uint64_t{s.compared_through} + 1 : s.segments.front().range.from;
  LD_FUZZ_CHECK(next >= s.from && next <= s.Kept(), "segments start at {}, kept {}", next, s.Kept());
  for (const auto& seg : s.segments) {
    LD_FUZZ_CHECK(seg.range.from == next && seg.range.to >= seg.range.from, "segment {} after {}", seg.range.str(), next);
    LD_FUZZ_CHECK(seg.file == FollowSegmentName(seg.range) && seg.file.find('/') == std::string::npos,
                  "segment file {}", seg.file);
    next = uint64_t{seg.range.to} + 1;
  }
  LD_FUZZ_CHECK(next == uint64_t{s.compared_through} + 1, "segments end at {}, state at {}", next - 1,
                s.compared_through);
  LD_FUZZ_CHECK(s.left.is_object() && s.right.is_object(), "sides not objects");
  // The state divergence (issue 45): at most one, the last, of one state ledger.
  for (size_t i = 0; i < s.open_divergences.size(); ++i) {
    const OpenDivergence& d = s.open_divergences[i];
    if (d.how != kFoundInState) continue;
    LD_FUZZ_CHECK(i + 1 == s.open_divergences.size(), "a state divergence at {} of {}", i, s.open_divergences.size());
    LD_FUZZ_CHECK(d.ledgers.from == d.ledgers.to && d.ledgers.from >= 1, "state divergence ledgers {}", d.ledgers.str());
  }
  LD_FUZZ_CHECK(s.state_last_agreed_ledger.has_value() == (s.state_last_agreed_at != 0) &&
                    s.state_last_agreed_at <= s.state_last_compared_at,
                "state last agreed at {}, compared at {}", s.state_last_agreed_at, s.state_last_compared_at);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "/fuzz/state/state.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = ParseFollowState(text, path);
  if (!s.ok()) {
    fuzz::CheckBadInput(s.status(), path, "ParseFollowState");
    LD_FUZZ_CHECK(s.status().message().find('\n') == std::string::npos, "a message of more than one line: {}",
                  s.status().message());
    return 0;
  }
  CheckInvariant(*s);
  const std::string again = FollowStateToJson(*s).dump(2);
  auto back = ParseFollowState(again, path);
  LD_FUZZ_CHECK(back.ok(), "its own JSON does not read back: {}", back.status().message());
  LD_FUZZ_CHECK(FollowStateToJson(*back).dump(2) == again, "its own JSON reads back as another state");
  return 0;
}
