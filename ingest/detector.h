#pragma once
// What caught a failed attempt: the mechanism that ended it, recorded with the attempt in the
// job table (`attempts.detector`) by whoever ended it. Chaos (verify/chaos.h) proves each one:
// a fault counts only when the detector its kind exists to test caught it.
//
//   heartbeat_timeout     no heartbeat for the job timeout: a frozen worker (RequeueLost, by the
//                         orchestrator or a distributed worker's lease keeper)
//   process_exit          the orchestrator reaped the worker process of the attempt: killed, or it
//                         aborted (RequeueLost with the dead worker's name)
//   lost_connection       the attempt's database session ended: seen by the orchestrator or a lease
//                         keeper (its backend is gone from pg_stat_activity) or by the worker itself
//                         (its connection broke and it failed the attempt, FailJob)
//   orchestrator_restart  a resumed orchestrator found the attempt of a previous orchestrator
//                         instance's worker (which died with that orchestrator) and requeued it
//   attempt_error         the worker reported its attempt failed with an error (FailJob), its
//                         connection intact: an ingester error, an injected failure
// Attempts that did not fail (done), were stopped (interrupted, cancelled) or are running have no
// detector. Strings exist only at the edges (SQL, JSON): ToString and ParseDetector.

#include <array>
#include <optional>
#include <string_view>

namespace ledgerdiff::ingest {

enum class Detector {
  kHeartbeatTimeout,
  kProcessExit,
  kLostConnection,
  kOrchestratorRestart,
  kAttemptError,
};

// Every detector, in the order reports list them.
inline constexpr std::array<Detector, 5> kDetectors = {Detector::kHeartbeatTimeout, Detector::kProcessExit,
                                                       Detector::kLostConnection, Detector::kOrchestratorRestart,
                                                       Detector::kAttemptError};

// "heartbeat_timeout", "process_exit", "lost_connection", "orchestrator_restart", "attempt_error".
std::string_view ToString(Detector detector);
// The inverse of ToString; nullopt for any other text.
std::optional<Detector> ParseDetector(std::string_view text);

}  // namespace ledgerdiff::ingest
