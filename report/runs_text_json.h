// Renderers of a distributed run's status (`runs`, `wait`, `cancel`): text and JSON (keys
// documented in ingest/README.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/target.h"
#include "ingest/distributed.h"

namespace ledgerdiff::report {

// A run's status; "target": `target`, the database holding the job table, and the run's schema.
nlohmann::json RunStatusToJson(const ingest::RunStatus& status, const Target& target);
// One line per run, then what needs attention (stale and failed jobs, no live worker, why the
// run failed), indented.
std::string RunStatusText(const ingest::RunStatus& status);

}  // namespace ledgerdiff::report
