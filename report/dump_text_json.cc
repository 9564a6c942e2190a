// Renderers of dump's results (report/dump_text_json.h).
#include "report/dump_text_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/report.h"
#include "core/text.h"
#include "dump/source_identity.h"

namespace ledgerdiff::report {

using dump::ComparisonOutcome;
using dump::DigestSummary;
using dump::ManifestHeader;
using dump::ManifestInfo;

std::string RenderDigestText(const DigestSummary& s) {
  std::string out = s.target ? s.target->Line() + "\n" : "";
  out += fmt::format("digest of {}, ledgers {} ({} ledgers), profile {}, engine {}\n", s.source, s.range.str(),
                     FormatCount(s.range.size()), s.profile.name, dump::ToString(s.engine));
  size_t w = 5;
  for (const auto& t : s.tables) w = std::max(w, t.table.size());
  out += fmt::format("  {:<{}}  {:>12}  {:>12}  {}\n", "table", w, "rows", "ledgers", "root (sha-256)");
  for (const auto& t : s.tables)
    out += fmt::format("  {:<{}}  {:>12}  {:>12}  {}\n", t.table, w, FormatCount(t.rows),
                       FormatCount(t.ledgers_with_rows), t.root);
  out += fmt::format("root {}  ({} rows in {})\n", s.root, FormatCount(s.rows), FormatDuration(s.seconds));
  auto excluded = s.profile.ExcludedColumns();
  out += fmt::format("excluded columns: {}\n", excluded.empty() ? "none" : fmt::format("{}", fmt::join(excluded, ", ")));
  if (!s.profile.lookup_tables.empty())
    out += fmt::format("lookup tables (resolved; diff compares them as natural-key sets): {}\n", fmt::join(s.profile.lookup_tables, ", "));
  if (!s.profile.uncompared_tables.empty())
    out += fmt::format("tables without a ledger mapping (not compared): {}\n",
                       fmt::join(s.profile.uncompared_tables, ", "));
  if (!s.appended.empty()) {
    // Which ledgers were read when: the first digest read up to the first appended stretch.
    std::vector<std::string> parts{fmt::format("ledgers {} by the digest that wrote the file",
                                               LedgerRange{s.range.from, s.appended.front().range.from - 1}.str())};
    for (const auto& a : s.appended) parts.push_back(fmt::format("ledgers {} appended at {}", a.range.str(), a.at));
    out += fmt::format("read in {} digests: {}\n", parts.size(), fmt::join(parts, "; "));
  }
  if (s.ledgers_resumed)
    out += fmt::format("resumed from checkpoint {}: {} taken from it, {} digested\n", s.checkpoint,
                       FormatCountOf(s.ledgers_resumed, "ledger"), FormatCount(s.range.size() - s.ledgers_resumed));
  if (!s.manifest_path.empty())
    out += fmt::format("manifest {} ({} detail): {} bytes, {:.1f} bytes/ledger; 50M ledgers would weigh {:.2f} GB\n",
                       s.manifest_path, s.manifest_detail, FormatCount(s.manifest_bytes),
                       static_cast<double>(s.manifest_bytes) / static_cast<double>(s.range.size()),
                       static_cast<double>(s.manifest_bytes) / static_cast<double>(s.range.size()) * 50e6 / 1e9);
  return out;
}

nlohmann::json DigestSummaryToJson(const DigestSummary& s) {
  nlohmann::json j;
  j["source"] = s.source;
  j["range"] = {{"from", s.range.from}, {"to", s.range.to}};
  j["ledgers"] = s.range.size();
  j["profile"] = s.profile.name;
  j["engine"] = dump::ToString(s.engine);
  j["rows"] = s.rows;
  j["root"] = s.root;
  j["seconds"] = s.seconds;
  j["tables"] = nlohmann::json::array();
  for (const auto& t : s.tables)
    j["tables"].push_back({{"table", t.table}, {"rows", t.rows}, {"ledgers_with_rows", t.ledgers_with_rows}, {"root", t.root}});
  j["excluded_columns"] = s.profile.ExcludedColumns();
  if (!s.appended.empty()) {
    j["appended"] = nlohmann::json::array();
    for (const auto& a : s.appended)
      j["appended"].push_back({{"from", a.range.from}, {"to", a.range.to}, {"at", a.at}});
  }
  j["lookup_tables"] = s.profile.lookup_tables;
  j["uncompared_tables"] = s.profile.uncompared_tables;
  if (!s.manifest_path.empty()) {
    double bpl = static_cast<double>(s.manifest_bytes) / static_cast<double>(s.range.size());
    j["manifest"] = {{"path", s.manifest_path},
                     {"detail", s.manifest_detail},
                     {"bytes", s.manifest_bytes},
                     {"bytes_per_ledger", bpl},
                     {"bytes_for_50m_ledgers", bpl * 50e6}};
  }
  if (!s.checkpoint.empty()) {
    j["resume"] = {{"checkpoint", s.checkpoint},
                   {"ledgers_resumed", s.ledgers_resumed},
                   {"ledgers_digested", s.range.size() - s.ledgers_resumed}};
  }
  if (s.target) j["target"] = s.target->ToJson();
  return j;
}

std::string RenderManifestText(const ManifestInfo& info) {
  const ManifestHeader& h = info.header;
  std::string s = fmt::format("manifest {} ({} bytes, format {}, detail {}, ledgerdiff {})\n",
                              info.summary.manifest_path, FormatCount(info.summary.manifest_bytes), dump::kManifestVersion,
                              dump::ManifestDetailName(h.detail), h.tool_version);
  s += fmt::format("  source: {}\n", h.source);
  if (h.right_identity)
    s += fmt::format("  source identity: left {}\n                   right {}\n", dump::DescribeSourceIdentity(h.identity),
                     dump::DescribeSourceIdentity(*h.right_identity));
  else
    s += fmt::format("  source identity: {}\n", dump::DescribeSourceIdentity(h.identity));
  s += fmt::format("  profile: {} (fingerprint {})\n", h.profile.name, h.fingerprint);
  if (h.shard)
    s += fmt::format("  coverage: ledgers {} ({} ledgers) = shard {} of {} of range {} (partial: merge it)\n",
                     h.range.str(), h.range.size(), h.shard->index, h.shard->count, h.shard->full_range.str());
  else
    s += fmt::format("  coverage: ledgers {} ({} ledgers, complete)\n", h.range.str(), h.range.size());
  if (info.comparison) s += "  comparison (verify-range): " + RenderComparisonOutcome(*info.comparison) + "\n";
  return s + RenderDigestText(info.summary);
}

nlohmann::json ManifestInfoToJson(const ManifestInfo& info) {
  const ManifestHeader& h = info.header;
  nlohmann::json j;
  j["path"] = info.summary.manifest_path;
  j["bytes"] = info.summary.manifest_bytes;
  j["format_version"] = dump::kManifestVersion;
  j["tool_version"] = h.tool_version;
  j["detail"] = dump::ManifestDetailName(h.detail);
  j["source"] = h.source;
  j["source_identity"] = dump::ManifestIdentityToJson(h);
  j["profile"] = h.profile.name;
  j["fingerprint"] = h.fingerprint;
  j["range"] = {{"from", h.range.from}, {"to", h.range.to}};
  j["complete"] = !h.shard.has_value();
  if (h.shard)
    j["shard"] = {{"index", h.shard->index},
                  {"count", h.shard->count},
                  {"full_range", {{"from", h.shard->full_range.from}, {"to", h.shard->full_range.to}}}};
  else
    j["shard"] = nullptr;
  j["comparison"] = info.comparison ? dump::ComparisonOutcomeToJson(*info.comparison) : nlohmann::json(nullptr);
  j["digest"] = DigestSummaryToJson(info.summary);
  return j;
}

std::string RenderComparisonOutcome(const ComparisonOutcome& c) {
  const std::string gaps =
      c.coverage_checked && (c.missing_left || c.missing_right)
          ? fmt::format("; ledgers missing: {} left, {} right{}", FormatCount(c.missing_left),
                        FormatCount(c.missing_right), c.allow_gaps ? " (accepted by --allow-gaps)" : "")
          : "";
  if (c.identical)
    return fmt::format("identical over {} ledgers ({} rows left, {} rows right){}", FormatCount(c.ledgers_compared),
                       FormatCount(c.rows_left), FormatCount(c.rows_right), gaps);
  if (c.incomplete()) {
    // The ledgers each side holds: those compared less those it misses (a reader checked that
    // neither count exceeds the range, dump/manifest.cc).
    const uint64_t held_left = c.ledgers_compared - std::min(c.missing_left, c.ledgers_compared);
    const uint64_t held_right = c.ledgers_compared - std::min(c.missing_right, c.ledgers_compared);
    const std::string held = held_left == held_right
                                 ? fmt::format("the {} held", FormatCountOf(held_left, "ledger"))
                                 : fmt::format("the ledgers held ({} left, {} right)", FormatCount(held_left),
                                               FormatCount(held_right));
    return fmt::format("incomplete: {} of {} are identical ({} rows left, {} rows right){}", held,
                       FormatCount(c.ledgers_compared), FormatCount(c.rows_left), FormatCount(c.rows_right), gaps);
  }
  const std::string where = c.first_divergent_ledger
                                ? fmt::format("first divergent ledger {}", *c.first_divergent_ledger)
                                : std::string("no ledger differs (tables, columns, lookups or invariants do)");
  return fmt::format("divergent: {}, {} divergent ledgers of {} ({} rows left, {} rows right){}", where,
                     FormatCount(c.divergent_ledgers), FormatCount(c.ledgers_compared), FormatCount(c.rows_left),
                     FormatCount(c.rows_right), gaps);
}

std::string RenderDigestShardText(const DigestSummary& summary, const dump::ShardInfo& shard) {
  return fmt::format("shard {} of {} of range {}:{} (partial manifest: merge with `ledgerdiff manifest merge`)\n",
                     shard.index, shard.count, shard.full_range.from, shard.full_range.to) +
         RenderDigestText(summary);
}

nlohmann::json DigestShardToJson(const DigestSummary& summary, const dump::ShardInfo& shard) {
  nlohmann::json j = DigestSummaryToJson(summary);
  j["shard"] = {{"index", shard.index},
                {"count", shard.count},
                {"full_range", {{"from", shard.full_range.from}, {"to", shard.full_range.to}}}};
  return j;
}

std::string RenderAppendedText(const dump::AppendedManifest& a, const std::string& path) {
  return (a.appended ? fmt::format("appended ledgers {} to {} (ledgers {} taken from it)\n", a.appended->str(), path,
                                   a.kept.str())
                     : fmt::format("nothing to append: {} already covers ledgers {}\n", path, a.kept.str())) +
         RenderDigestText(a.summary);
}

nlohmann::json AppendedToJson(const dump::AppendedManifest& a) {
  nlohmann::json j = DigestSummaryToJson(a.summary);
  j["append"] = {{"kept", {{"from", a.kept.from}, {"to", a.kept.to}}},
                 {"appended", a.appended ? nlohmann::json{{"from", a.appended->from}, {"to", a.appended->to}}
                                         : nlohmann::json()}};
  return j;
}

std::string RenderMergedText(const dump::MergedManifest& merged, size_t parts, const std::string& out) {
  std::string text = fmt::format("merged {} parts into {}\n", parts, out);
  if (merged.comparison) text += "comparison (verify-range): " + RenderComparisonOutcome(*merged.comparison) + "\n";
  if (!merged.snapshots.empty() && !merged.same_snapshots()) {
    text += "the parts were read at different snapshots: a change committed between two parts' reads can be in one "
            "part's ledgers and not in another's:\n";
    for (const auto& p : merged.snapshots)
      text += fmt::format("  {}: left at WAL {} ({}), right at WAL {} ({})\n", p.part, p.left.lsn, p.left.at,
                          p.right.lsn, p.right.at);
  }
  return text + RenderDigestText(merged.summary);
}

nlohmann::json MergedToJson(const dump::MergedManifest& merged, size_t parts) {
  nlohmann::json j = DigestSummaryToJson(merged.summary);
  j["parts"] = parts;
  if (merged.comparison) j["comparison"] = dump::ComparisonOutcomeToJson(*merged.comparison);
  if (!merged.snapshots.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : merged.snapshots)
      list.push_back({{"part", p.part},
                      {"left", {{"lsn", p.left.lsn}, {"at", p.left.at}}},
                      {"right", {{"lsn", p.right.lsn}, {"at", p.right.at}}}});
    j["snapshots"] = {{"same", merged.same_snapshots()}, {"parts", list}};
  }
  return j;
}

std::string RenderDumpText(const dump::DumpSummary& summary, const Target& target) {
  std::string text = target.Line() + "\n";
  for (const auto& [table, rows] : summary.tables) text += fmt::format("{}: {} rows\n", table, FormatCount(rows));
  return text + fmt::format("excluded columns: {}\n", fmt::join(summary.excluded_columns, ", "));
}

}  // namespace ledgerdiff::report
