#include "ingest/job_rows.h"

namespace ledgerdiff::ingest {

namespace {

template <typename Enum, size_t N>
std::optional<Enum> ParseName(const std::array<Enum, N>& all, std::string_view text) {
  for (Enum e : all)
    if (ToString(e) == text) return e;
  return std::nullopt;
}

}  // namespace

std::string_view ToString(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "pending";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "";  // not reached: every enumerator is handled above (-Wswitch names a new one)
}

std::string_view ToString(RunState state) {
  switch (state) {
    case RunState::kRunning:
      return "running";
    case RunState::kDone:
      return "done";
    case RunState::kFailed:
      return "failed";
    case RunState::kCancelled:
      return "cancelled";
    case RunState::kAborted:
      return "aborted";
  }
  return "";  // not reached
}

std::string_view ToString(AttemptOutcome outcome) {
  switch (outcome) {
    case AttemptOutcome::kRunning:
      return "running";
    case AttemptOutcome::kDone:
      return "done";
    case AttemptOutcome::kFailed:
      return "failed";
    case AttemptOutcome::kLost:
      return "lost";
    case AttemptOutcome::kFenced:
      return "fenced";
    case AttemptOutcome::kInterrupted:
      return "interrupted";
    case AttemptOutcome::kCancelled:
      return "cancelled";
  }
  return "";  // not reached
}

std::optional<JobState> ParseJobState(std::string_view text) { return ParseName(kJobStates, text); }
std::optional<RunState> ParseRunState(std::string_view text) { return ParseName(kRunStates, text); }
std::optional<AttemptOutcome> ParseAttemptOutcome(std::string_view text) { return ParseName(kAttemptOutcomes, text); }

}  // namespace ledgerdiff::ingest
