#include "ingest/detector.h"

#include "core/enum_names.h"

namespace ledgerdiff::ingest {

std::string_view ToString(Detector detector) {
  switch (detector) {
    case Detector::kHeartbeatTimeout: return "heartbeat_timeout";
    case Detector::kProcessExit: return "process_exit";
    case Detector::kLostConnection: return "lost_connection";
    case Detector::kOrchestratorRestart: return "orchestrator_restart";
    case Detector::kAttemptError: return "attempt_error";
  }
  return "";  // not reached: every enumerator is handled above (-Wswitch names a new one)
}

std::optional<Detector> ParseDetector(std::string_view text) { return ParseEnum(kDetectors, text); }

}  // namespace ledgerdiff::ingest
