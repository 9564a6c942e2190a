#include "ingest/job_rows.h"

#include "core/enum_names.h"

namespace ledgerdiff::ingest {

std::string_view ToString(JobState state) {
  switch (state) {
    case JobState::kPending: return "pending";
    case JobState::kRunning: return "running";
    case JobState::kDone: return "done";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "";  // not reached: every enumerator is handled above (-Wswitch names a new one)
}

std::string_view ToString(RunState state) {
  switch (state) {
    case RunState::kRunning: return "running";
    case RunState::kDone: return "done";
    case RunState::kFailed: return "failed";
    case RunState::kCancelled: return "cancelled";
    case RunState::kAborted: return "aborted";
  }
  return "";  // not reached
}

std::string_view ToString(AttemptOutcome outcome) {
  switch (outcome) {
    case AttemptOutcome::kRunning: return "running";
    case AttemptOutcome::kDone: return "done";
    case AttemptOutcome::kFailed: return "failed";
    case AttemptOutcome::kLost: return "lost";
    case AttemptOutcome::kFenced: return "fenced";
    case AttemptOutcome::kInterrupted: return "interrupted";
    case AttemptOutcome::kCancelled: return "cancelled";
  }
  return "";  // not reached
}

std::optional<JobState> ParseJobState(std::string_view text) { return ParseEnum(kJobStates, text); }
std::optional<RunState> ParseRunState(std::string_view text) { return ParseEnum(kRunStates, text); }
std::optional<AttemptOutcome> ParseAttemptOutcome(std::string_view text) { return ParseEnum(kAttemptOutcomes, text); }

}  // namespace ledgerdiff::ingest
