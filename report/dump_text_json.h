// Renderers of dump's results: a digest's summary and a manifest's contents, as text and JSON
// (keys documented in dump/README.md and README.md), and a verify-range outcome's one line.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/target.h"
#include "dump/digest.h"
#include "dump/digest_job.h"
#include "dump/dump.h"
#include "dump/manifest.h"
#include "dump/shard.h"

namespace ledgerdiff::report {

// A summary: per table rows, ledgers with rows, root; overall root; exclusions.
std::string RenderDigestText(const dump::DigestSummary& summary);
nlohmann::json DigestSummaryToJson(const dump::DigestSummary& summary);

// Header, coverage (ledgers with entries, shard), roots and outcome of a manifest (ReadManifestInfo).
std::string RenderManifestText(const dump::ManifestInfo& info);
nlohmann::json ManifestInfoToJson(const dump::ManifestInfo& info);

// `digest --shards N --shard K`: the part's summary, led by which shard of which range it is.
std::string RenderDigestShardText(const dump::DigestSummary& summary, const dump::ShardInfo& shard);
nlohmann::json DigestShardToJson(const dump::DigestSummary& summary, const dump::ShardInfo& shard);

// `digest --append`: what was kept and appended, then the whole manifest's summary.
std::string RenderAppendedText(const dump::AppendedManifest& appended, const std::string& path);
nlohmann::json AppendedToJson(const dump::AppendedManifest& appended);

// `manifest merge`: how many parts went where, the joined outcome of verify-range parts, the
// merged manifest's summary.
std::string RenderMergedText(const dump::MergedManifest& merged, size_t parts, const std::string& out);
nlohmann::json MergedToJson(const dump::MergedManifest& merged, size_t parts);

// `dump --out DIR`: the target, rows written per table, the excluded columns.
std::string RenderDumpText(const dump::DumpSummary& summary, const Target& target);

// "identical over N ledgers (R rows left, R rows right)" / "divergent: first divergent ledger L, ...".
std::string RenderComparisonOutcome(const dump::ComparisonOutcome& outcome);

}  // namespace ledgerdiff::report
