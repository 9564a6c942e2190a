#include "dump/shard.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace ledgerdiff::dump {

Result<LedgerRange> ShardSlice(const LedgerRange& range, uint32_t count, uint32_t index) {
  if (count == 0) return Status::Usage("--shards must be at least 1");
  if (count > range.size())
    return Status::Usagef("--shards {} is more than the {} ledgers of range {}:{}", count, range.size(), range.from,
                          range.to);
  if (index >= count) return Status::Usagef("shard {} does not exist: --shards {} numbers them 0..{}", index, count, count - 1);
  const uint64_t base = range.size() / count, extra = range.size() % count;
  const uint64_t start = uint64_t{range.from} + index * base + std::min<uint64_t>(index, extra);
  const uint64_t size = base + (index < extra ? 1 : 0);
  return LedgerRange{static_cast<Ledger>(start), static_cast<Ledger>(start + size - 1)};
}

Result<uint32_t> ResolveShardIndex(std::optional<int64_t> flag, uint32_t count) {
  int64_t index = -1;
  std::string from = "--shard";
  if (flag) {
    index = *flag;
  } else {
    for (const char* name : {"JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"}) {
      const char* v = std::getenv(name);
      if (!v || !*v) continue;
      const std::string_view text(v);
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
      if (ec != std::errc() || end != text.data() + text.size() || index < 0)
        return Status::Usagef("${}={} is not a shard index (a number from 0)", name, text);
      from = std::string("$") + name;
      break;
    }
    if (index < 0)
      return Status::Usage(
          "--shards needs the shard index: --shard K, or $JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or "
          "$AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch array job)");
  }
  if (index < 0 || index >= int64_t{count})
    return Status::Usagef("{} {} is out of range: --shards {} numbers shards 0..{}", from, index, count, count - 1);
  return static_cast<uint32_t>(index);
}

Result<DigestSummary> DigestShardToManifest(const std::string& conninfo, const std::string& schema,
                                            const ProfileSpec& spec, DigestOptions options, const LedgerRange& range,
                                            uint32_t count, uint32_t index, const std::string& path,
                                            Reporter& reporter) {
  LD_ASSIGN_OR_RETURN(LedgerRange slice, ShardSlice(range, count, index));
  options.range = slice;
  options.phase = fmt::format("digest shard {}/{}", index, count);
  return DigestToManifest(conninfo, schema, spec, options, path, ManifestDetail::kFull, reporter,
                          ShardInfo{index, count, range});
}

namespace {

std::string RangeText(const LedgerRange& r) { return fmt::format("{}:{}", r.from, r.to); }

}  // namespace

Result<MergedManifest> MergeManifests(const std::vector<std::string>& parts, const std::string& out,
                                      ManifestDetail detail) {
  if (parts.empty()) return Status::Usage("manifest merge needs at least one part");
  struct Part {
    std::string path;
    std::unique_ptr<ManifestReader> reader;
  };
  std::vector<Part> opened;
  for (const auto& path : parts) {
    LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
    const ManifestHeader& h = reader->header();
    if (!h.shard) return Status::Usagef("{} is not a partial manifest (write parts with digest --shards N)", path);
    if (h.detail != ManifestDetail::kFull)
      return Status::Usagef("{} is a compact partial manifest; parts must be full", path);
    opened.push_back({path, std::move(reader)});
  }
  const ManifestHeader& ref = opened[0].reader->header();
  const ShardInfo& rs = *ref.shard;
  std::vector<int> slot(rs.count, -1);
  for (size_t i = 0; i < opened.size(); ++i) {
    const ManifestHeader& h = opened[i].reader->header();
    const ShardInfo& s = *h.shard;
    const std::string& p = opened[i].path;
    const std::string& p0 = opened[0].path;
    if (h.comparison != ref.comparison)
      return Status::Usagef("{} is a {} part, {} a {} part: parts of different commands", p,
                            h.comparison ? "verify-range" : "digest", p0, ref.comparison ? "verify-range" : "digest");
    if (s.count != rs.count)
      return Status::Usagef("{} is shard {} of {}, {} of {}: parts of different splits", p, s.index, s.count, p0, rs.count);
    if (s.full_range.from != rs.full_range.from || s.full_range.to != rs.full_range.to)
      return Status::Usagef("{} covers range {}, {} range {}: parts of different digests", p, RangeText(s.full_range), p0,
                            RangeText(rs.full_range));
    if (h.profile.name != ref.profile.name)
      return Status::Usagef("{} has profile {}, {} profile {}", p, h.profile.name, p0, ref.profile.name);
    if (h.fingerprint != ref.fingerprint)
      return Status::Usagef("{} and {} digested different tables or columns (schema fingerprints {} and {})", p, p0,
                            h.fingerprint.substr(0, 12), ref.fingerprint.substr(0, 12));
    if (h.tool_version != ref.tool_version)
      return Status::Usagef("{} was written by ledgerdiff {}, {} by {}", p, h.tool_version, p0, ref.tool_version);
    LD_ASSIGN_OR_RETURN(LedgerRange expected, ShardSlice(s.full_range, s.count, s.index));
    if (h.range.from != expected.from || h.range.to != expected.to)
      return Status::Usagef("{} claims shard {} of {} but holds ledgers {} (expected {})", p, s.index, s.count,
                            RangeText(h.range), RangeText(expected));
    if (slot[s.index] >= 0)
      return Status::Usagef("duplicate shard {} of {}: {} and {}", s.index, s.count, opened[slot[s.index]].path, p);
    slot[s.index] = static_cast<int>(i);
  }
  std::string missing;
  for (uint32_t k = 0; k < rs.count; ++k) {
    if (slot[k] >= 0) continue;
    LD_ASSIGN_OR_RETURN(LedgerRange r, ShardSlice(rs.full_range, rs.count, k));
    missing += fmt::format("{}shard {} (ledgers {})", missing.empty() ? "" : ", ", k, RangeText(r));
  }
  if (!missing.empty()) return Status::Usagef("missing {} (of {} shards); nothing merged", missing, rs.count);

  ManifestHeader header = ref;
  header.range = rs.full_range;
  header.shard.reset();
  header.detail = detail;
  LD_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Create(out, header));
  SummaryBuilder builder(ref.profile, rs.full_range, ref.source);
  std::optional<ComparisonOutcome> outcome;
  if (ref.comparison) outcome = ComparisonOutcome{};
  Chunk chunk;
  for (uint32_t k = 0; k < rs.count; ++k) {
    ManifestReader& reader = *opened[slot[k]].reader;
    for (;;) {
      LD_ASSIGN_OR_RETURN(bool more, reader.Next(chunk));
      if (!more) break;
      builder.Add(chunk);
      LD_RETURN_IF_ERROR(writer->Add(chunk));
    }
    if (!outcome) continue;
    const ComparisonOutcome& part = *reader.comparison();
    outcome->identical = outcome->identical && part.identical;
    if (part.first_divergent_ledger && !outcome->first_divergent_ledger)  // parts in ledger order
      outcome->first_divergent_ledger = part.first_divergent_ledger;
    outcome->divergent_ledgers += part.divergent_ledgers;
    outcome->ledgers_compared += part.ledgers_compared;
    outcome->rows_left += part.rows_left;
    outcome->rows_right += part.rows_right;
    outcome->allow_empty = part.allow_empty;
  }
  if (outcome && outcome->rows_left == 0 && outcome->rows_right == 0 && !outcome->allow_empty)
    return Status::Usagef(
        "the parts compared zero rows on both sides over ledgers {} (a wrong --range or "
        "database?); nothing merged (verify-range --allow-empty accepts an empty range)",
        RangeText(rs.full_range));
  DigestSummary summary = builder.Finish();
  LD_ASSIGN_OR_RETURN(uint64_t size, writer->Finish(summary, outcome));
  summary.manifest_path = out;
  summary.manifest_bytes = size;
  summary.manifest_detail = ManifestDetailName(detail);
  return MergedManifest{std::move(summary), outcome};
}

std::string RenderManifestText(const ManifestInfo& info) {
  const ManifestHeader& h = info.header;
  std::string s = fmt::format("manifest {} ({} bytes, format {}, detail {}, ledgerdiff {})\n",
                              info.summary.manifest_path, info.summary.manifest_bytes, kManifestVersion,
                              ManifestDetailName(h.detail), h.tool_version);
  s += fmt::format("  source: {}\n  profile: {} (fingerprint {})\n", h.source, h.profile.name, h.fingerprint);
  if (h.shard)
    s += fmt::format("  coverage: ledgers {} ({} ledgers) = shard {} of {} of range {} (partial: merge it)\n",
                     RangeText(h.range), h.range.size(), h.shard->index, h.shard->count, RangeText(h.shard->full_range));
  else
    s += fmt::format("  coverage: ledgers {} ({} ledgers, complete)\n", RangeText(h.range), h.range.size());
  if (info.comparison) s += "  comparison (verify-range): " + RenderComparisonOutcome(*info.comparison) + "\n";
  return s + RenderDigestText(info.summary);
}

nlohmann::json ManifestInfoToJson(const ManifestInfo& info) {
  const ManifestHeader& h = info.header;
  nlohmann::json j;
  j["path"] = info.summary.manifest_path;
  j["bytes"] = info.summary.manifest_bytes;
  j["format_version"] = kManifestVersion;
  j["tool_version"] = h.tool_version;
  j["detail"] = ManifestDetailName(h.detail);
  j["source"] = h.source;
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
  j["comparison"] = info.comparison ? ComparisonOutcomeToJson(*info.comparison) : nlohmann::json(nullptr);
  j["digest"] = DigestSummaryToJson(info.summary);
  return j;
}

}  // namespace ledgerdiff::dump
