#include "dump/shard.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "dump/checkpoint.h"
#include "dump/digest_job.h"
#include "dump/summary_builder.h"

namespace ledgerdiff::dump {

Result<uint32_t> ResolveShardIndex(std::optional<int64_t> flag, uint32_t count) {
  int64_t index = -1;
  std::string from = "--shard";
  if (flag) {
    index = *flag;
  } else {
    for (const char* name : kShardIndexVariables) {
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
          "--shards needs the shard index: --shard K, or $JOB_COMPLETION_INDEX (Kubernetes Indexed Job), "
          "$AWS_BATCH_JOB_ARRAY_INDEX (AWS Batch array job) or $SLURM_ARRAY_TASK_ID (Slurm job array)");
  }
  if (index < 0 || index >= int64_t{count})
    return Status::Usagef("{} {} is out of range: --shards {} numbers shards 0..{}", from, index, count, count - 1);
  return static_cast<uint32_t>(index);
}

Result<uint32_t> CheckShardAndResumeFlags(const ShardAndResumeFlags& flags, const std::optional<LedgerRange>& range) {
  if (flags.shard && flags.shards == 0) return Status::Usage("--shard K needs --shards N");
  if (flags.resume && flags.out.empty())
    return Status::Usage("--resume needs --out FILE (its checkpoint is FILE.partial)");
  if (!flags.out.empty() && flags.out != "-") {
    std::error_code ec;
    const std::string checkpoint = CheckpointPath(flags.out);
    if (std::filesystem::exists(checkpoint, ec)) LD_RETURN_IF_ERROR(CheckRegularFile(checkpoint, "checkpoint " + checkpoint));
  }
  if (flags.shards == 0) return 0;
  if (!range) return Status::Usage("--shards needs --range FROM:TO (every shard must split the same range)");
  if (flags.out.empty()) return Status::Usage("--shards needs --out PART (the partial manifest that `manifest merge` joins)");
  LD_ASSIGN_OR_RETURN(const uint32_t index, ResolveShardIndex(flags.shard, flags.shards));
  LD_RETURN_IF_ERROR(ShardSlice(*range, flags.shards, index).status());
  return index;
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

// Whether writing `out` would overwrite `part`: the same file (device and inode, through any
// link), or, when either does not exist yet, the same path once made absolute and normal.
bool SameFile(const std::string& out, const std::string& part) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out, ec) && fs::exists(part, ec)) {
    const bool same = fs::equivalent(out, part, ec);
    if (!ec) return same;
  }
  const fs::path a = fs::weakly_canonical(fs::absolute(out, ec), ec);
  std::error_code ec2;
  const fs::path b = fs::weakly_canonical(fs::absolute(part, ec2), ec2);
  if (ec || ec2) return fs::absolute(out).lexically_normal() == fs::absolute(part).lexically_normal();
  return a == b;
}

// The first way part `p` (header h) comes from another source than `p0` (header h0): the
// one-line reason, or "" when they are the same source (dump/source_identity.h).
std::string SourceMismatch(const std::string& p, const ManifestHeader& h, const std::string& p0,
                           const ManifestHeader& h0) {
  auto one = [&](const SourceIdentity& a, const SourceIdentity& b, const char* side) -> std::string {
    auto d = CompareSourceIdentity(a, b);
    if (!d) return "";
    return fmt::format("{}: {}{} but {}: {}{}: parts of different sources; nothing merged", p, side, d->a, p0, side,
                       d->b);
  };
  if (h.engine != h0.engine)
    return fmt::format("{} was digested by engine {}, {} by engine {}: their digests of the same rows differ; "
                       "nothing merged",
                       p, ToString(h.engine), p0, ToString(h0.engine));
  if (!h.comparison) return one(h.identity, h0.identity, "");
  std::string left = one(h.identity, h0.identity, "left side ");
  if (!left.empty()) return left;
  return one(*h.right_identity, *h0.right_identity, "right side ");
}

// "shard 1 (ledgers 202:401), shard 4 (...)" for the shards of `count` missing from `present`
// (sorted), at most kNamed of them named; never a loop over `count`.
Result<std::string> MissingShards(const std::map<uint32_t, size_t>& present, const ShardInfo& ref) {
  constexpr uint64_t kNamed = 8;
  std::string text;
  uint64_t missing = 0, named = 0;
  auto add_gap = [&](uint64_t from, uint64_t to) -> Status {  // shards from..to-1 are missing
    for (uint64_t k = from; k < to && named < kNamed; ++k, ++named) {
      LD_ASSIGN_OR_RETURN(LedgerRange r, ShardSlice(ref.full_range, ref.count, static_cast<uint32_t>(k)));
      text += fmt::format("{}shard {} (ledgers {})", text.empty() ? "" : ", ", k, RangeText(r));
    }
    missing += to - from;
    return Status::Ok();
  };
  uint64_t next = 0;
  for (const auto& [index, slot] : present) {
    LD_RETURN_IF_ERROR(add_gap(next, index));
    next = uint64_t{index} + 1;
  }
  LD_RETURN_IF_ERROR(add_gap(next, ref.count));
  if (missing > named) text += fmt::format(" and {} more", missing - named);
  return text;
}

// `sum` += `add`, or a Usage error naming `field` and `path` when the sum leaves 64 bits (counts
// read from parts are untrusted: a wrapped sum would show a small, plausible number).
Status AddCount(uint64_t& sum, uint64_t add, std::string_view field, const std::string& path) {
  if (__builtin_add_overflow(sum, add, &sum))
    return Status::Usagef("{}: {} summed over the parts passes 2^64-1 (this part adds {}); nothing merged", path,
                          field, add);
  return Status::Ok();
}

// Adds the outcome of the next part (in ledger order, read from `path`) to `joined`. Each part's
// outcome was checked against its own slice when it was read (dump/manifest.cc).
Status JoinOutcome(ComparisonOutcome& joined, const ComparisonOutcome& part, bool first_part, const std::string& path) {
  joined.identical = joined.identical && part.identical;
  if (part.first_divergent_ledger && !joined.first_divergent_ledger)  // parts in ledger order
    joined.first_divergent_ledger = part.first_divergent_ledger;
  LD_RETURN_IF_ERROR(AddCount(joined.divergent_ledgers, part.divergent_ledgers, "comparison.divergent_ledgers", path));
  LD_RETURN_IF_ERROR(AddCount(joined.ledgers_compared, part.ledgers_compared, "comparison.ledgers_compared", path));
  LD_RETURN_IF_ERROR(AddCount(joined.rows_left, part.rows_left, "comparison.rows_left", path));
  LD_RETURN_IF_ERROR(AddCount(joined.rows_right, part.rows_right, "comparison.rows_right", path));
  joined.allow_empty = part.allow_empty;
  // Coverage is known for the whole range only when every part recorded it.
  joined.coverage_checked = (first_part || joined.coverage_checked) && part.coverage_checked;
  LD_RETURN_IF_ERROR(AddCount(joined.missing_left, part.missing_left, "comparison.coverage.missing_left", path));
  LD_RETURN_IF_ERROR(AddCount(joined.missing_right, part.missing_right, "comparison.coverage.missing_right", path));
  joined.allow_gaps = part.allow_gaps;
  return Status::Ok();
}

// The rows of every table and in all, summed over the parts' entries as the merged summary sums
// them (SummaryBuilder), checked: a crafted part's counts must not wrap the merged totals.
class RowSums {
 public:
  explicit RowSums(const ResolvedProfile& profile) : profile_(profile), tables_(profile.tables.size()) {}
  Status Add(const Chunk& chunk, const std::string& path) {
    for (size_t i = 0; i < chunk.counts.size(); ++i) {
      const size_t t = i % chunk.tables;
      LD_RETURN_IF_ERROR(AddCount(tables_[t], chunk.counts[i], "rows of table " + profile_.tables[t].name, path));
      LD_RETURN_IF_ERROR(AddCount(total_, chunk.counts[i], "rows", path));
    }
    return Status::Ok();
  }

 private:
  const ResolvedProfile& profile_;
  std::vector<uint64_t> tables_;
  uint64_t total_ = 0;
};

struct MergePart {
  std::string path;
  std::unique_ptr<ManifestReader> reader;
};

// Opens every part; each must be a full partial manifest. The output must not be one of the parts
// (the rename at the end would replace it): checked before anything is read or written.
Result<std::vector<MergePart>> OpenMergeParts(const std::vector<std::string>& parts, const std::string& out) {
  if (parts.empty()) return Status::Usage("manifest merge needs at least one part");
  for (const auto& path : parts)
    if (SameFile(out, path))
      return Status::Usagef("--out {} is the part {}: write the merged manifest to another file; nothing merged", out,
                            path);
  std::vector<MergePart> opened;
  for (const auto& path : parts) {
    // Open validates the whole header (ManifestHeaderFromJson): a shard's index, count and slice
    // are within bounds before anything is sized by them.
    LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
    const ManifestHeader& h = reader->header();
    if (!h.shard) return Status::Usagef("{} is not a partial manifest (write parts with digest --shards N)", path);
    if (h.detail != ManifestDetail::kFull)
      return Status::Usagef("{} is a compact partial manifest; parts must be full", path);
    opened.push_back({path, std::move(reader)});
  }
  return opened;
}

// The parts as one: shard index -> part (sized by the parts, never by a count read), and the
// sources' joined identity.
struct MergePlan {
  std::map<uint32_t, size_t> slot;
  SourceIdentity identity;
  std::optional<SourceIdentity> right_identity;
};

// Every part must be of the same command, sources, split, range, profile, tables and tool
// version as the first; every shard present once.
Result<MergePlan> PlanMerge(const std::vector<MergePart>& opened) {
  const ManifestHeader& ref = opened[0].reader->header();
  const ShardInfo& rs = *ref.shard;
  MergePlan plan{{}, ref.identity, ref.right_identity};
  for (size_t i = 0; i < opened.size(); ++i) {
    const ManifestHeader& h = opened[i].reader->header();
    const ShardInfo& s = *h.shard;
    const std::string& p = opened[i].path;
    const std::string& p0 = opened[0].path;
    if (h.comparison != ref.comparison)
      return Status::Usagef("{} is a {} part, {} a {} part: parts of different commands", p,
                            h.comparison ? "verify-range" : "digest", p0, ref.comparison ? "verify-range" : "digest");
    if (std::string why = SourceMismatch(p, h, p0, ref); !why.empty()) return Status::Usage(why);
    plan.identity = JoinSourceIdentity(plan.identity, h.identity);
    if (plan.right_identity) plan.right_identity = JoinSourceIdentity(*plan.right_identity, *h.right_identity);
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
    // The reader checked that the part's range is its slice.
    if (auto it = plan.slot.find(s.index); it != plan.slot.end())
      return Status::Usagef("duplicate shard {} of {}: {} and {}", s.index, s.count, opened[it->second].path, p);
    plan.slot[s.index] = i;
  }
  if (plan.slot.size() != rs.count) {
    LD_ASSIGN_OR_RETURN(std::string missing, MissingShards(plan.slot, rs));
    return Status::Usagef("missing {} (of {} shards); nothing merged", missing, rs.count);
  }
  return plan;
}

}  // namespace

Result<MergedManifest> MergeManifests(const std::vector<std::string>& parts, const std::string& out,
                                      ManifestDetail detail) {
  LD_ASSIGN_OR_RETURN(std::vector<MergePart> opened, OpenMergeParts(parts, out));
  LD_ASSIGN_OR_RETURN(const MergePlan plan, PlanMerge(opened));
  const ManifestHeader& ref = opened[0].reader->header();
  const ShardInfo& rs = *ref.shard;
  // The merged header: shard 0's (its source text), of the whole range, with the sources' joined
  // identity, so that the parts' order on the command line does not change a byte.
  ManifestHeader header = opened[plan.slot.at(0)].reader->header();
  header.range = rs.full_range;
  header.shard.reset();
  header.detail = detail;
  header.identity = plan.identity;
  header.right_identity = plan.right_identity;
  LD_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Create(out, header));
  SummaryBuilder builder(header.profile, rs.full_range, header.source);
  RowSums sums(header.profile);
  std::optional<ComparisonOutcome> outcome;
  if (ref.comparison) outcome = ComparisonOutcome{};
  std::vector<PartSnapshots> snapshots;
  bool first_part = true;
  Chunk chunk;
  for (const auto& [index, i] : plan.slot) {
    ManifestReader& reader = *opened[i].reader;
    for (;;) {
      LD_ASSIGN_OR_RETURN(bool more, reader.Next(chunk));
      if (!more) break;
      LD_RETURN_IF_ERROR(sums.Add(chunk, opened[i].path));
      builder.Add(chunk);
      LD_RETURN_IF_ERROR(writer->Add(chunk));
    }
    if (!outcome) continue;
    const ComparisonOutcome& part = *reader.comparison();
    LD_RETURN_IF_ERROR(JoinOutcome(*outcome, part, first_part, opened[i].path));
    if (part.left_snapshot && part.right_snapshot)
      snapshots.push_back({opened[i].path, *part.left_snapshot, *part.right_snapshot});
    first_part = false;
  }
  if (outcome && outcome->rows_left == 0 && outcome->rows_right == 0 && !outcome->allow_empty)
    return Status::Usagef(
        "the parts compared zero rows on both sides over ledgers {} (a wrong --range or "
        "database?); nothing merged (verify-range --allow-empty accepts an empty range)",
        RangeText(rs.full_range));
  DigestSummary summary = builder.Finish();
  summary.engine = header.engine;
  LD_ASSIGN_OR_RETURN(uint64_t size, writer->Finish(summary, outcome));
  summary.manifest_path = out;
  summary.manifest_bytes = size;
  summary.manifest_detail = ManifestDetailName(detail);
  return MergedManifest{std::move(summary), outcome, std::move(snapshots)};
}

}  // namespace ledgerdiff::dump

namespace ledgerdiff::dump {

Result<MergedManifest> ConcatenateManifests(const std::vector<std::string>& parts, const std::string& out) {
  if (parts.empty()) return Status::Usage("nothing to concatenate");
  for (const auto& path : parts)
    if (SameFile(out, path))
      return Status::Usagef("{} is one of the manifests to concatenate: write them to another file", out);
  std::vector<std::unique_ptr<ManifestReader>> readers;
  for (const auto& path : parts) {
    LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
    const ManifestHeader& h = reader->header();
    if (h.shard || h.detail != ManifestDetail::kFull)
      return Status::Usagef("{} is {}: only whole full-detail manifests are concatenated", path,
                            h.shard ? "a partial manifest" : "a compact manifest");
    if (!readers.empty()) {
      const ManifestHeader& prev = readers.back()->header();
      const std::string& p0 = parts[readers.size() - 1];
      if (h.range.from != prev.range.to + 1)
        return Status::Usagef("{} starts at ledger {}, not right after {} (which ends at {})", path, h.range.from, p0,
                              prev.range.to);
      if (h.comparison != prev.comparison || h.profile.name != prev.profile.name ||
          h.fingerprint != prev.fingerprint || h.tool_version != prev.tool_version)
        return Status::Usagef("{} and {} differ in kind, profile, tables or tool version", path, p0);
      if (std::string why = SourceMismatch(path, h, p0, prev); !why.empty()) return Status::Usage(why);
    }
    readers.push_back(std::move(reader));
  }
  ManifestHeader header = readers.front()->header();
  header.range.to = readers.back()->header().range.to;
  for (const auto& r : readers) {
    header.identity = JoinSourceIdentity(header.identity, r->header().identity);
    if (header.right_identity) header.right_identity = JoinSourceIdentity(*header.right_identity, *r->header().right_identity);
  }
  LD_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Create(out, header));
  SummaryBuilder builder(header.profile, header.range, header.source);
  RowSums sums(header.profile);
  std::optional<ComparisonOutcome> outcome;
  if (header.comparison) outcome = ComparisonOutcome{};
  Chunk chunk;
  for (size_t i = 0; i < readers.size(); ++i) {
    for (;;) {
      LD_ASSIGN_OR_RETURN(bool more, readers[i]->Next(chunk));
      if (!more) break;
      LD_RETURN_IF_ERROR(sums.Add(chunk, parts[i]));
      builder.Add(chunk);
      LD_RETURN_IF_ERROR(writer->Add(chunk));
    }
    if (outcome) LD_RETURN_IF_ERROR(JoinOutcome(*outcome, *readers[i]->comparison(), i == 0, parts[i]));
  }
  DigestSummary summary = builder.Finish();
  summary.engine = header.engine;
  LD_ASSIGN_OR_RETURN(uint64_t size, writer->Finish(summary, outcome));
  summary.manifest_path = out;
  summary.manifest_bytes = size;
  summary.manifest_detail = ManifestDetailName(ManifestDetail::kFull);
  return MergedManifest{std::move(summary), outcome, {}};
}

Result<MergedManifest> CutManifest(const std::string& path, const LedgerRange& range, const std::string& out) {
  if (SameFile(out, path)) return Status::Usagef("{} is the manifest to cut: write the cut to another file", out);
  LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
  const ManifestHeader& h = reader->header();
  if (h.shard || h.detail != ManifestDetail::kFull)
    return Status::Usagef("{} is {}: only whole full-detail manifests are cut", path,
                          h.shard ? "a partial manifest" : "a compact manifest");
  if (range.from > range.to || range.from < h.range.from || range.to > h.range.to)
    return Status::Usagef("ledgers {} are not within {}'s range {}", RangeText(range), path, RangeText(h.range));
  ManifestHeader header = h;
  header.range = range;
  header.appended.clear();
  for (const AppendedStretch& a : h.appended) {
    const LedgerRange clipped{std::max(a.range.from, range.from), std::min(a.range.to, range.to)};
    if (clipped.from <= clipped.to) header.appended.push_back({clipped, a.at});
  }
  LD_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Create(out, header));
  SummaryBuilder builder(header.profile, range, header.source);
  RowSums sums(header.profile);
  Chunk chunk;
  for (;;) {
    LD_ASSIGN_OR_RETURN(bool more, reader->Next(chunk));
    if (!more) break;  // read to the end: the checksum is verified
    const LedgerRange part{std::max(chunk.range.from, range.from), std::min(chunk.range.to, range.to)};
    if (part.from > part.to) continue;
    Chunk cut = Chunk::Empty(part, chunk.tables);
    for (size_t i = 0; i < chunk.ledgers.size(); ++i)
      if (part.contains(chunk.ledgers[i]))
        cut.Append(chunk.ledgers[i], &chunk.counts[chunk.At(i, 0)], &chunk.digests[chunk.At(i, 0)]);
    LD_RETURN_IF_ERROR(sums.Add(cut, path));
    builder.Add(cut);
    LD_RETURN_IF_ERROR(writer->Add(cut));
  }
  DigestSummary summary = builder.Finish();
  summary.engine = header.engine;
  std::optional<ComparisonOutcome> outcome;
  if (header.comparison) {
    const ComparisonOutcome& whole = *reader->comparison();
    ComparisonOutcome c;
    const uint64_t n = range.size();
    c.identical = whole.identical;
    c.allow_empty = whole.allow_empty;
    c.allow_gaps = whole.allow_gaps;
    c.coverage_checked = whole.coverage_checked;
    c.ledgers_compared = std::min(whole.ledgers_compared, n);
    c.missing_left = std::min(whole.missing_left, n);
    c.missing_right = std::min(whole.missing_right, n);
    if (whole.first_divergent_ledger && range.contains(*whole.first_divergent_ledger)) {
      c.first_divergent_ledger = whole.first_divergent_ledger;
      c.divergent_ledgers = std::max<uint64_t>(1, std::min(whole.divergent_ledgers, c.ledgers_compared));
      c.ledgers_compared = std::max(c.ledgers_compared, c.divergent_ledgers);
    }
    uint64_t rows = 0;
    for (const TableSummary& t : summary.tables) rows += t.rows;
    c.rows_left = rows;
    c.rows_right = whole.identical ? rows : whole.rows_right;
    outcome = c;
  }
  LD_ASSIGN_OR_RETURN(uint64_t size, writer->Finish(summary, outcome));
  summary.manifest_path = out;
  summary.manifest_bytes = size;
  summary.manifest_detail = ManifestDetailName(ManifestDetail::kFull);
  return MergedManifest{std::move(summary), outcome, {}};
}

}  // namespace ledgerdiff::dump
