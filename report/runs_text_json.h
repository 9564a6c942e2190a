// Renderers of the distributed path's commands (`plan`, `worker`, `wait`, `runs`, `cancel`,
// `drop`): text and JSON (keys documented in ingest/README.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/target.h"
#include "ingest/distributed.h"

namespace ledgerdiff::report {

// A run's status; "target": `target`, the database holding the job table, and the run's schema.
nlohmann::json RunStatusToJson(const ingest::RunStatus& status, const Target& target);
// One line per run, then what needs attention (stale and failed jobs, no live worker, why the
// run failed), indented.
std::string RunStatusText(const ingest::RunStatus& status);

// `runs`: the target line, then RunStatusText of each run (or "no runs"); as JSON an array of
// RunStatusToJson, each run with its own target (`targets[i]` for `runs[i]`).
std::string RenderRunListText(const std::vector<ingest::RunStatus>& runs, const Target& target);
nlohmann::json RunListToJson(const std::vector<ingest::RunStatus>& runs, const std::vector<Target>& targets);

// `plan`: comment lines, then the run id alone on the last line (deploy/ reads it).
// `reconnect_flags`: what a worker needs to reach the database ("" when nothing).
std::string RenderPlanText(const ingest::RunSpec& spec, size_t jobs, const Target& target,
                           const std::string& reconnect_flags);
// `worker`: the line of a worker that found the run complete.
std::string RenderRunCompleteText(const std::string& run_id);

// `cancel`: what was fenced and what stays, with the commands to reuse or drop the schema.
std::string RenderCancelText(const ingest::CancelReport& cancelled, const Target& target,
                             const std::string& reconnect_flags);
nlohmann::json CancelReportToJson(const ingest::CancelReport& cancelled, const Target& target);

// `drop`: the runs it cancelled, the schemas it dropped, and those already gone.
struct DropOutcome {
  std::vector<std::string> cancelled_runs, dropped, absent;
};
std::string RenderDropText(const DropOutcome& drop, const Target& target);
nlohmann::json DropOutcomeToJson(const DropOutcome& drop, const Target& target);

}  // namespace ledgerdiff::report
