#pragma once
// The rows the job table (ingest/job_table.h) hands out, as plain values: what reports and
// renderers need from a run without the SQL protocol that produces them.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/ledger_range.h"
#include "ingest/detector.h"

namespace ledgerdiff::ingest {

// The states and outcomes the job table stores as text. Strings exist only at the edges (SQL,
// JSON, text): ToString and Parse*; a switch over them has no default, so -Wswitch names every
// place a new value must be handled.
// A job: pending -> running -> done | failed (out of retries) | cancelled (`ledgerdiff cancel`);
// running -> pending again when an attempt is requeued.
enum class JobState { kPending, kRunning, kDone, kFailed, kCancelled };
inline constexpr std::array<JobState, 5> kJobStates = {JobState::kPending, JobState::kRunning, JobState::kDone,
                                                       JobState::kFailed, JobState::kCancelled};
// A run: running -> done | failed | cancelled (final); aborted: written by older releases only.
enum class RunState { kRunning, kDone, kFailed, kCancelled, kAborted };
inline constexpr std::array<RunState, 5> kRunStates = {RunState::kRunning, RunState::kDone, RunState::kFailed,
                                                       RunState::kCancelled, RunState::kAborted};
// How an attempt ended: done; failed (its worker reported an error); lost (its worker died or
// went silent); fenced (taken from its worker, which then reported); interrupted (requeued by an
// orchestrator's resume or shutdown); cancelled (its run was); running: not ended.
enum class AttemptOutcome { kRunning, kDone, kFailed, kLost, kFenced, kInterrupted, kCancelled };
inline constexpr std::array<AttemptOutcome, 7> kAttemptOutcomes = {
    AttemptOutcome::kRunning, AttemptOutcome::kDone,        AttemptOutcome::kFailed,   AttemptOutcome::kLost,
    AttemptOutcome::kFenced,  AttemptOutcome::kInterrupted, AttemptOutcome::kCancelled};

std::string_view ToString(JobState state);
std::string_view ToString(RunState state);
std::string_view ToString(AttemptOutcome outcome);
// The value `text` names, or nullopt when it names none.
std::optional<JobState> ParseJobState(std::string_view text);
std::optional<RunState> ParseRunState(std::string_view text);
std::optional<AttemptOutcome> ParseAttemptOutcome(std::string_view text);

struct JobRow {
  uint32_t job_id;
  LedgerRange range;
  JobState state;
  uint32_t attempt;
  std::string worker;
  int worker_pid;
  int backend_pid;
  std::string error;  // the last attempt's error (a failed job: why it failed)
  int64_t rows;       // rows the job committed (done jobs), 0 otherwise
  std::string stage;  // last stage the worker reported ("hold:<table>" while held)
  // ListJobs only: seconds since the last heartbeat by the database clock (-1: none), and
  // whether the claiming session (backend_pid) still exists.
  double heartbeat_age_s = -1;
  bool session_alive = true;
  // RequeueLost only: what caught the lost attempt.
  std::optional<Detector> detector;
};

struct AttemptRow {
  uint32_t job_id;
  uint32_t attempt;
  std::string worker;
  double start_s;  // seconds since the run's creation
  double end_s;    // -1 while running
  AttemptOutcome outcome;
  std::string error;
  LedgerRange range;
  int slot = 0;  // the worker's lane 1..N (a replacement keeps its lane); 0 when not recorded
  std::optional<Detector> detector;  // what caught a failed attempt (none: done, stopped or running)
};

}  // namespace ledgerdiff::ingest
