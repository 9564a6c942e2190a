#pragma once
// The ingestion plan: what to ingest, where, and how hard to try. One struct with one set of
// defaults that every command holds (ingest, verify, selftest, chaos, sweep) and that the job
// table stores as a run's spec, so a worker anywhere can carry out any job of the run; beside
// it, the test hooks a test run plants in its workers.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/status.h"
#include "fixtures/generator.h"

namespace ledgerdiff::ingest {

// What a fault point does. kAbort kills the worker (std::abort) inside its open data transaction,
// as a segfault would, at any stage; kFail makes the attempt fail with an error before anything
// is written, so it is only at stage "start". Spelled "abort" and "fail" in flags and run specs.
enum class CrashAction { kAbort, kFail };
std::string_view ToString(CrashAction action);
std::optional<CrashAction> ParseCrashAction(std::string_view text);

// The fault and hold points' stage before anything of the job is written (the others are tables).
inline constexpr std::string_view kStartStage = "start";

// Fault point inside a worker, for chaos and tests: at (job, attempt), after `stage` (a table
// name, or kStartStage before anything is written), `action`.
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
// Jobs per run: the job table holds a row per job and every orchestrator, worker and report
// lists them (plan --range 1:2147483647 --job-size 1 would be 2^31 rows, and the split alone runs
// out of memory). A range needs a --job-size of at least MinJobSizeFor(range).
inline constexpr uint64_t kMaxJobsPerRun = 1'000'000;
uint32_t MinJobSizeFor(const LedgerRange& range);
// The job size of a serial side that an external ingester carries out (verify's serial side,
// chaos's baseline, sweep's reference): its template over the whole range at once, as it runs
// unparallelised; a range beyond kMaxJobSize ledgers in jobs of that size, one after another.
uint32_t WholeRangeJobSize(const LedgerRange& range);
inline constexpr uint32_t kMaxRetries = 100;
inline constexpr double kMaxRetryBackoffS = 3600;
inline constexpr double kMinJobTimeoutS = 2;
inline constexpr double kMaxJobTimeoutS = 86400;

// The workload and how hard to try: what every worker of a run needs to carry out any job of
// it. Built and validated once (by the CLI or the library's entry point) and passed by const
// reference; the commands' options hold one. The defaults are here, in one place (shown by every
// command's --help).
struct IngestPlan {
  LedgerRange range;
  std::string schema;            // target schema (verify and chaos name their own)
  uint32_t workers = 4;          // worker processes; 1 is the serial path
  uint32_t job_size = 250;       // ledgers per job (the last job may be shorter)
  uint32_t retries = 3;          // retries of a failed job
  double retry_backoff_s = 0.5;  // first retry delay, doubled per retry
  double job_timeout_s = 30;     // seconds without heartbeat before a worker is declared hung
  uint64_t seed = 1;             // generator seed
  fixtures::Density density = fixtures::Density::kStellar;  // generated ledger density
  // The ingester: empty is the built-in reference ingester; otherwise an external command
  // template run per job (see ingest/ingest_command.h).
  std::string ingest_cmd;

  // Checks the plan before any database is touched: Usage errors naming the flag.
  // `check_schema`: false when the schema comes from elsewhere (resume, verify, chaos).
  Status Validate(bool check_schema = true) const;
  // The heartbeat period a worker uses: min(1 s, job timeout / 4).
  double heartbeat_s() const;

  // Flat JSON object; the keys are the job table's run spec format (ingest/README.md).
  nlohmann::json ToJson() const;
  static Result<IngestPlan> FromJson(const nlohmann::json& j);
};

// What a test run plants in its workers to prove that the checks catch it: a misbehaving
// built-in ingester, the unsafe commit protocol, faults and holds at given stages. Set only by
// tests, selftest, chaos and the self-test flags (--inject-bug, --crash-at, --hold, ...); never
// part of a production plan. The job table stores them only for a test run: a run spec carries
// "test_run": true and "test_hooks" exactly when `active()`.
struct TestHooks {
  std::string bug;                   // "kind@ledger" (built-in ingester misbehaves there) or empty
  uint32_t unsafe_commit_every = 0;  // chaos negative control; 0: the safe protocol
  std::vector<CrashPoint> crash_points;
  std::vector<HoldPoint> hold_points;

  bool active() const;
  // Usage errors naming the flag: the bug's kind and ledger (inside `plan`'s range, with
  // something to act on in the built-in ingester's content there).
  Status Validate(const IngestPlan& plan) const;

  nlohmann::json ToJson() const;
  // Reads the spec's "test_hooks" object; none (a production run) is no hooks.
  static Result<TestHooks> FromRunSpec(const nlohmann::json& spec);
};

}  // namespace ledgerdiff::ingest
