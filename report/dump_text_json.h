// Renderers of dump's results: a digest's summary and a manifest's contents, as text and JSON
// (keys documented in dump/README.md and README.md), and a verify-range outcome's one line.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/shard.h"

namespace ledgerdiff::report {

// A summary: per table rows, ledgers with rows, root; overall root; exclusions.
std::string RenderDigestText(const dump::DigestSummary& summary);
nlohmann::json DigestSummaryToJson(const dump::DigestSummary& summary);

// Header, coverage (ledgers with entries, shard), roots and outcome of a manifest (ReadManifestInfo).
std::string RenderManifestText(const dump::ManifestInfo& info);
nlohmann::json ManifestInfoToJson(const dump::ManifestInfo& info);

// "identical over N ledgers (R rows left, R rows right)" / "divergent: first divergent ledger L, ...".
std::string RenderComparisonOutcome(const dump::ComparisonOutcome& outcome);

}  // namespace ledgerdiff::report
