#pragma once
// The ingestion plan: what to ingest, where, and how hard to try. One struct with one set of
// defaults that every command embeds (ingest, verify, selftest, chaos) and that the job table
// stores as a run's spec, so a worker anywhere can carry out any job of the run.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::ingest {

// What a fault point does. kAbort kills the worker (std::abort) inside its open data transaction,
// as a segfault would, at any stage; kFail makes the attempt fail with an error before anything
// is written, so it is only at stage "start". Spelled "abort" and "fail" in flags and run specs.
enum class CrashAction { kAbort, kFail };
std::string_view ToString(CrashAction action);
std::optional<CrashAction> ParseCrashAction(std::string_view text);

// Fault point inside a worker, for chaos and tests: at (job, attempt), after `stage` (a table
// name, or "start" before anything is written), `action`.
// INVARIANT: action == kFail implies stage == "start" (ParseFaultPoint and FromJson refuse the rest).
struct CrashPoint {
  uint32_t job_id;
  uint32_t attempt;
  std::string stage;
  CrashAction action = CrashAction::kAbort;
};

// Hold point (chaos): at (job, attempt), after `stage`, the worker waits `seconds` inside its
// open data transaction, with its stage reported as "hold:<stage>", so that a fault injected
// from outside hits a job in the middle.
struct HoldPoint {
  uint32_t job_id;
  uint32_t attempt;
  std::string stage;
  double seconds;
};

// Parses "JOB:ATTEMPT:STAGE:ACTION" (e.g. "3:1:history_effects:abort", "2:1:start:fail"); "fail"
// at a stage other than "start" is a usage error (it would never fire).
Result<CrashPoint> ParseFaultPoint(const std::string& text);
// Parses "JOB:ATTEMPT:STAGE:SECONDS" (e.g. "3:1:history_operations:2.5").
Result<HoldPoint> ParseHoldPoint(const std::string& text);

// Bounds checked by IngestPlan::Validate (and by sweep for each of its --workers).
inline constexpr uint32_t kMaxWorkers = 64;
inline constexpr uint32_t kMaxJobSize = 10'000'000;
inline constexpr uint32_t kMaxRetries = 100;
inline constexpr double kMaxRetryBackoffS = 3600;
inline constexpr double kMinJobTimeoutS = 2;
inline constexpr double kMaxJobTimeoutS = 86400;

// The defaults, in one place (shown by every command's --help).
struct IngestPlan {
  LedgerRange range;
  std::string schema;               // target schema (verify and chaos name their own)
  uint32_t workers = 4;             // worker processes; 1 is the serial path
  uint32_t job_size = 250;          // ledgers per job (the last job may be shorter)
  uint32_t retries = 3;             // retries of a failed job
  double retry_backoff_s = 0.5;     // first retry delay, doubled per retry
  double job_timeout_s = 30;        // seconds without heartbeat before a worker is declared hung
  uint64_t seed = 1;                // generator seed
  std::string density = "stellar";  // generated ledger density: stellar | flat
  // The ingester: empty is the built-in reference ingester; otherwise an external command
  // template run per job (see ingest/ingest_command.h).
  std::string ingest_cmd;
  std::string bug;                   // "kind@ledger" (built-in ingester misbehaves there) or empty
  uint32_t unsafe_commit_every = 0;  // chaos negative control; 0: the safe protocol
  std::vector<CrashPoint> crash_points;
  std::vector<HoldPoint> hold_points;

  // Checks the plan before any database is touched: Usage errors naming the flag.
  // `check_schema`: false when the schema comes from elsewhere (resume, verify, chaos).
  Status Validate(bool check_schema = true) const;
  // The heartbeat period a worker uses: min(1 s, job timeout / 4).
  double heartbeat_s() const;

  // Flat JSON object; the keys are the job table's run spec format (ingest/README.md).
  nlohmann::json ToJson() const;
  static Result<IngestPlan> FromJson(const nlohmann::json& j);
};

}  // namespace ledgerdiff::ingest
