#include "dump/manifest.h"

#include <openssl/evp.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/process.h"
#include "dump/checkpoint.h"
#include "ledgerdiff/version.h"

namespace ledgerdiff::dump {

namespace {

constexpr char kMagic[8] = {'L', 'D', 'G', 'R', 'D', 'I', 'F', 'F'};
constexpr size_t kMaxJson = 64u << 20;

EVP_MD_CTX* Sha(void* p) { return static_cast<EVP_MD_CTX*>(p); }

void PutVarint(std::string& s, uint64_t n) { AppendLeb128(s, n); }
void PutU32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t GetU32(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

}  // namespace

std::string ProfileFingerprint(const ResolvedProfile& profile) {
  const std::string js = ResolvedProfileToJson(profile).dump();
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(js.data(), js.size(), md, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

const char* ManifestDetailName(ManifestDetail d) { return d == ManifestDetail::kFull ? "full" : "compact"; }

// ---- writer ----

Result<std::unique_ptr<ManifestWriter>> ManifestWriter::Create(const std::string& path, const ManifestHeader& header) {
  std::unique_ptr<ManifestWriter> w(new ManifestWriter());
  w->path_ = path;
  w->header_ = header;
  w->header_.fingerprint = ProfileFingerprint(header.profile);
  w->next_ = header.range.from;
  LD_ASSIGN_OR_RETURN(w->file_, AtomicFile::Create(path));
  w->sha_ = EVP_MD_CTX_new();
  EVP_DigestInit_ex(Sha(w->sha_), EVP_sha256(), nullptr);
  nlohmann::json j;
  j["format"] = "ledgerdiff-manifest";
  j["tool_version"] = header.tool_version.empty() ? std::string(kVersion) : header.tool_version;
  j["source"] = header.source;
  j["detail"] = ManifestDetailName(header.detail);
  j["range"] = {{"from", header.range.from}, {"to", header.range.to}};
  j["profile"] = ResolvedProfileToJson(header.profile);
  j["excluded_columns"] = header.profile.ExcludedColumns();
  j["fingerprint"] = w->header_.fingerprint;
  if (header.shard)
    j["shard"] = {{"index", header.shard->index},
                  {"count", header.shard->count},
                  {"full_range", {{"from", header.shard->full_range.from}, {"to", header.shard->full_range.to}}}};
  if (header.comparison) j["comparison"] = "verify-range";
  std::string js = j.dump();
  std::string head(kMagic, 8);
  PutU32(head, kManifestVersion);
  PutU32(head, static_cast<uint32_t>(js.size()));
  head += js;
  LD_RETURN_IF_ERROR(w->Write(head.data(), head.size()));
  return w;
}

ManifestWriter::~ManifestWriter() {
  if (sha_) EVP_MD_CTX_free(Sha(sha_));
}

Status ManifestWriter::Write(const void* data, size_t n) {
  EVP_DigestUpdate(Sha(sha_), data, n);
  return file_->Write(data, n);
}

Status ManifestWriter::Add(const Chunk& c) {
  if (c.range.from != next_ || !c.full) return Status::Runtimef("manifest {}: chunks out of order", path_);
  buf_.clear();
  for (Ledger l = c.range.from;; ++l) {
    size_t base = c.Index(l, 0);
    if (header_.detail == ManifestDetail::kCompact) {
      buf_.append(reinterpret_cast<const char*>(c.combined[l - c.range.from].bytes.data()), 16);
      for (size_t t = 0; t < c.tables; ++t) {
        PutVarint(buf_, c.counts[base + t]);
        if (c.counts[base + t]) {
          uint32_t tag = c.digests[base + t].Tag();
          for (int i = 3; i >= 0; --i) buf_.push_back(static_cast<char>((tag >> (8 * i)) & 0xff));
        }
      }
    } else {
      for (size_t t = 0; t < c.tables; ++t) {
        PutVarint(buf_, c.counts[base + t]);
        if (c.counts[base + t]) buf_.append(reinterpret_cast<const char*>(c.digests[base + t].bytes.data()), 16);
      }
    }
    if (l == c.range.to) break;
  }
  next_ = c.range.to + 1;
  return Write(buf_.data(), buf_.size());
}

Result<uint64_t> ManifestWriter::Finish(const DigestSummary& s, const std::optional<ComparisonOutcome>& outcome) {
  if (next_ != header_.range.to + 1) return Status::Runtimef("manifest {}: entries incomplete", path_);
  if (outcome.has_value() != header_.comparison)
    return Status::Runtimef("manifest {}: a comparison's outcome belongs with a comparison's header", path_);
  nlohmann::json j;
  if (outcome) j["comparison"] = ComparisonOutcomeToJson(*outcome);
  j["root"] = s.root;
  j["rows"] = s.rows;
  j["tables"] = nlohmann::json::array();
  for (const auto& t : s.tables)
    j["tables"].push_back({{"table", t.table}, {"rows", t.rows}, {"ledgers_with_rows", t.ledgers_with_rows}, {"root", t.root}});
  std::string js = j.dump();
  std::string tail;
  PutU32(tail, static_cast<uint32_t>(js.size()));
  tail += js;
  LD_RETURN_IF_ERROR(Write(tail.data(), tail.size()));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(Sha(sha_), md, &n);
  LD_RETURN_IF_ERROR(file_->Write(md, n));
  const uint64_t size = file_->size();
  LD_RETURN_IF_ERROR(file_->Commit());
  return size;
}

// ---- reader ----

ManifestReader::~ManifestReader() {
  if (f_) std::fclose(f_);
  if (sha_) EVP_MD_CTX_free(Sha(sha_));
}

Status ManifestReader::Fill(size_t need) {
  if (buf_.size() - pos_ >= need) return Status::Ok();
  // Hash what has been consumed, keep the rest.
  buf_.erase(0, pos_);
  pos_ = 0;
  char tmp[1 << 16];
  while (buf_.size() < need) {
    size_t n = std::fread(tmp, 1, sizeof tmp, f_);
    if (n == 0) return Status::Usagef("manifest {} is truncated", path_);
    buf_.append(tmp, n);
  }
  return Status::Ok();
}

Status ManifestReader::ReadBytes(void* out, size_t n) {
  LD_RETURN_IF_ERROR(Fill(n));
  std::memcpy(out, buf_.data() + pos_, n);
  EVP_DigestUpdate(Sha(sha_), buf_.data() + pos_, n);
  pos_ += n;
  return Status::Ok();
}

Result<uint64_t> ManifestReader::ReadVarint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    unsigned char b;
    LD_RETURN_IF_ERROR(ReadBytes(&b, 1));
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  return Status::Usagef("manifest {} is corrupted (bad count)", path_);
}

Result<std::unique_ptr<ManifestReader>> ManifestReader::Open(const std::string& path) {
  std::unique_ptr<ManifestReader> r(new ManifestReader());
  r->path_ = path;
  r->f_ = std::fopen(path.c_str(), "rb");
  if (!r->f_) return Status::Usagef("manifest {}: cannot read: {}", path, std::strerror(errno));
  r->sha_ = EVP_MD_CTX_new();
  EVP_DigestInit_ex(Sha(r->sha_), EVP_sha256(), nullptr);
  unsigned char head[16];
  if (!r->ReadBytes(head, 16).ok() || std::memcmp(head, kMagic, 8) != 0)
    return Status::Usagef("{} is not a ledgerdiff manifest", path);
  uint32_t version = GetU32(head + 8), len = GetU32(head + 12);
  if (version != kManifestVersion)
    return Status::Usagef("manifest {}: format version {} is not supported (this ledgerdiff reads version {}); "
                          "re-save it with this version (ledgerdiff digest --out, or verify --save-baseline)",
                          path, version, kManifestVersion);
  if (len > kMaxJson) return Status::Usagef("manifest {} is corrupted (header length)", path);
  std::string js(len, '\0');
  LD_RETURN_IF_ERROR(r->ReadBytes(js.data(), len));
  try {
    auto j = nlohmann::json::parse(js);
    if (j.at("format") != "ledgerdiff-manifest") return Status::Usagef("{} is not a ledgerdiff manifest", path);
    r->header_.tool_version = j.at("tool_version").get<std::string>();
    r->header_.source = j.at("source").get<std::string>();
    r->header_.detail = j.at("detail") == "full" ? ManifestDetail::kFull : ManifestDetail::kCompact;
    r->header_.range = {j.at("range").at("from").get<Ledger>(), j.at("range").at("to").get<Ledger>()};
    if (r->header_.range.to < r->header_.range.from)
      return Status::Usagef("manifest {} is corrupted (range)", path);
    auto p = ResolvedProfileFromJson(j.at("profile"));
    if (!p.ok()) return p.status().With("manifest " + path);
    r->header_.profile = std::move(p).value();
    r->header_.fingerprint = ProfileFingerprint(r->header_.profile);
    if (j.contains("fingerprint") && j.at("fingerprint").get<std::string>() != r->header_.fingerprint)
      return Status::Usagef("manifest {} is corrupted (profile fingerprint)", path);
    if (j.contains("shard")) {
      const auto& js = j.at("shard");
      ShardInfo s;
      s.index = js.at("index").get<uint32_t>();
      s.count = js.at("count").get<uint32_t>();
      s.full_range = {js.at("full_range").at("from").get<Ledger>(), js.at("full_range").at("to").get<Ledger>()};
      if (s.count == 0 || s.index >= s.count || s.full_range.to < s.full_range.from)
        return Status::Usagef("manifest {} is corrupted (shard)", path);
      r->header_.shard = s;
    }
    r->header_.comparison = j.contains("comparison");
  } catch (const std::exception& e) {
    return Status::Usagef("manifest {} is corrupted (header: {})", path, e.what());
  }
  r->next_ = r->header_.range.from;
  r->summary_.source = "manifest " + path;
  r->summary_.range = r->header_.range;
  r->summary_.profile = r->header_.profile;
  r->summary_.manifest_path = path;
  r->summary_.manifest_detail = ManifestDetailName(r->header_.detail);
  return r;
}

Result<bool> ManifestReader::Next(Chunk& out, uint32_t max_ledgers) {
  if (done_) return false;
  const LedgerRange& range = header_.range;
  if (entries_done_ || next_ > range.to) {
    LD_RETURN_IF_ERROR(Finish());
    done_ = true;
    return false;
  }
  const size_t T = header_.profile.tables.size();
  const bool full = header_.detail == ManifestDetail::kFull;
  Ledger to = static_cast<Ledger>(std::min<uint64_t>(range.to, uint64_t{next_} + max_ledgers - 1));
  out.range = {next_, to};
  out.tables = T;
  out.full = full;
  size_t n = out.range.size();
  out.counts.assign(n * T, 0);
  out.combined.resize(n);
  if (full) {
    out.digests.assign(n * T, EmptyDigest());
    out.tags.clear();
  } else {
    out.tags.assign(n * T, EmptyDigest().Tag());
    out.digests.clear();
  }
  for (size_t li = 0; li < n; ++li) {
    if (!full) LD_RETURN_IF_ERROR(ReadBytes(out.combined[li].bytes.data(), 16));
    for (size_t t = 0; t < T; ++t) {
      LD_ASSIGN_OR_RETURN(uint64_t c, ReadVarint());
      out.counts[li * T + t] = c;
      if (!c) continue;
      if (full) {
        LD_RETURN_IF_ERROR(ReadBytes(out.digests[li * T + t].bytes.data(), 16));
      } else {
        unsigned char b[4];
        LD_RETURN_IF_ERROR(ReadBytes(b, 4));
        out.tags[li * T + t] = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
      }
    }
    if (full)
      out.combined[li] = CombinedDigest(static_cast<Ledger>(out.range.from + li), &out.counts[li * T],
                                        &out.digests[li * T], T);
  }
  if (to == range.to) entries_done_ = true;
  else next_ = to + 1;
  return true;
}

Status ManifestReader::Finish() {
  unsigned char lb[4];
  LD_RETURN_IF_ERROR(ReadBytes(lb, 4));
  uint32_t len = GetU32(lb);
  if (len > kMaxJson) return Status::Usagef("manifest {} is corrupted (trailer length)", path_);
  std::string js(len, '\0');
  LD_RETURN_IF_ERROR(ReadBytes(js.data(), len));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdn = 0;
  EVP_DigestFinal_ex(Sha(sha_), md, &mdn);
  LD_RETURN_IF_ERROR(Fill(32));
  if (std::memcmp(buf_.data() + pos_, md, 32) != 0)
    return Status::Usagef("manifest {} is corrupted (checksum mismatch)", path_);
  pos_ += 32;
  if (pos_ != buf_.size() || std::fgetc(f_) != EOF)
    return Status::Usagef("manifest {} is corrupted (bytes after the checksum)", path_);
  try {
    auto j = nlohmann::json::parse(js);
    summary_.root = j.at("root").get<std::string>();
    summary_.rows = j.at("rows").get<uint64_t>();
    for (const auto& jt : j.at("tables"))
      summary_.tables.push_back({jt.at("table").get<std::string>(), jt.at("rows").get<uint64_t>(),
                                 jt.at("ledgers_with_rows").get<uint64_t>(), jt.at("root").get<std::string>()});
    if (header_.comparison != j.contains("comparison"))
      return Status::Usagef("manifest {} is corrupted (comparison outcome)", path_);
    if (header_.comparison) {
      const auto& jc = j.at("comparison");
      ComparisonOutcome c;
      c.identical = jc.at("identical").get<bool>();
      if (!jc.at("first_divergent_ledger").is_null())
        c.first_divergent_ledger = jc.at("first_divergent_ledger").get<Ledger>();
      c.divergent_ledgers = jc.at("divergent_ledgers").get<uint64_t>();
      c.ledgers_compared = jc.at("ledgers_compared").get<uint64_t>();
      c.rows_left = jc.at("rows_left").get<uint64_t>();
      c.rows_right = jc.at("rows_right").get<uint64_t>();
      c.allow_empty = jc.at("allow_empty").get<bool>();
      comparison_ = c;
    }
  } catch (const std::exception& e) {
    return Status::Usagef("manifest {} is corrupted (trailer: {})", path_, e.what());
  }
  return Status::Ok();
}

Result<DigestSummary> DigestToManifest(const std::string& conninfo, const std::string& schema,
                                       const ProfileSpec& spec, const DigestOptions& options,
                                       const std::string& path, ManifestDetail detail, Reporter& reporter,
                                       const std::optional<ShardInfo>& shard) {
  const auto started = std::chrono::steady_clock::now();
  // Resolve profile and range first (a quick separate read), then digest with them fixed.
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff digest"));
  LD_ASSIGN_OR_RETURN(ResolvedProfile profile, ResolveProfile(*conn, schema, spec));
  DigestOptions opts = options;
  if (!opts.range) {
    LD_ASSIGN_OR_RETURN(LedgerRange r, DetectRange(*conn, schema, profile));
    opts.range = r;
  }
  const LedgerRange range = *opts.range;
  // What a resume must match (dump/checkpoint.h): every parameter the manifest's bytes depend on.
  nlohmann::json job = {{"command", "digest"},
                        {"tool_version", kVersion},
                        {"range", {{"from", range.from}, {"to", range.to}}},
                        {"profile", profile.name},
                        {"profile_fingerprint", ProfileFingerprint(profile)},
                        {"detail", ManifestDetailName(detail)},
                        {"shard", shard ? nlohmann::json{{"index", shard->index}, {"count", shard->count}}
                                        : nlohmann::json()}};
  const bool checkpointed = options.checkpoint || options.resume;
  if (checkpointed) {
    LD_ASSIGN_OR_RETURN(job["source"], SourceIdentity(*conn, schema));
  }
  conn.reset();
  const std::string checkpoint_path = checkpointed ? CheckpointPath(path) : std::string();
  std::unique_ptr<Checkpoint> checkpoint;
  if (!checkpointed) {
    // No checkpoint: the whole range is digested.
  } else if (options.resume) {
    LD_ASSIGN_OR_RETURN(checkpoint, Checkpoint::Resume(checkpoint_path, job, range, 1));
  } else {
    LD_ASSIGN_OR_RETURN(checkpoint, Checkpoint::Create(checkpoint_path, job, range, 1));
  }
  ManifestHeader header;
  header.source = fmt::format("schema \"{}\"", schema);
  header.detail = detail;
  header.range = range;
  header.profile = profile;
  header.shard = shard;
  LD_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Create(path, header));
  SummaryBuilder builder(profile, range, header.source);
  const auto add = [&](const Chunk& c) -> Status {
    builder.Add(c);
    return writer->Add(c);
  };
  const uint64_t resumed = checkpoint ? checkpoint->resumed_ledgers() : 0;
  if (options.resume) {
    const auto rest = checkpoint->remainder();
    reporter.Note(fmt::format("resuming from checkpoint {}: {} of {} ledgers done{}{}", checkpoint_path,
                              FormatCount(resumed), FormatCount(range.size()), rest ? ", digesting " : "",
                              rest ? rest->str() : std::string()));
    if (checkpoint->dropped_torn_record()) reporter.Note("checkpoint: a torn last record was dropped");
  }
  if (checkpoint) LD_RETURN_IF_ERROR(checkpoint->Replay(0, profile.tables.size(), add));
  DigestSummary digested;
  if (const auto rest = checkpoint ? checkpoint->remainder() : std::optional<LedgerRange>(range)) {
    opts.range = *rest;
    opts.restrict_to = profile;  // the digest's in-snapshot resolution must match the header
    auto result = DigestSchema(conninfo, schema, spec, opts,
                               [&](const Chunk& c) -> Status {
                                 if (c.tables != profile.tables.size())
                                   return Status::Runtimef("schema \"{}\" changed its tables during the digest",
                                                           schema);
                                 LD_RETURN_IF_ERROR(add(c));
                                 return checkpoint ? checkpoint->Append(0, c) : Status::Ok();
                               },
                               reporter);
    if (!result.ok()) return checkpoint ? checkpoint->Explain(result.status()) : result.status();
    digested = std::move(result).value();
    if (!(digested.profile.tables.size() == profile.tables.size()))
      return Status::Runtimef("schema \"{}\" changed its tables during the digest", schema);
  }
  DigestSummary summary = builder.Finish();
  summary.tables_resolved_on_client = digested.tables_resolved_on_client;
  LD_ASSIGN_OR_RETURN(uint64_t size, writer->Finish(summary));
  if (checkpoint) LD_RETURN_IF_ERROR(checkpoint->Remove());
  summary.seconds = SecondsSince(started);
  summary.manifest_path = path;
  summary.manifest_bytes = size;
  summary.manifest_detail = ManifestDetailName(detail);
  summary.checkpoint = checkpoint_path;
  summary.ledgers_resumed = resumed;
  return summary;
}

SummaryBuilder::SummaryBuilder(const ResolvedProfile& profile, const LedgerRange& range, std::string source) {
  summary_.source = std::move(source);
  summary_.range = range;
  summary_.profile = profile;
  for (const auto& t : summary_.profile.tables) summary_.tables.push_back({t.name, 0, 0, ""});
  roots_ = std::make_unique<RootBuilder>(summary_.profile);
}

void SummaryBuilder::Add(const Chunk& chunk) {
  roots_->Add(chunk);
  for (size_t i = 0; i < chunk.counts.size(); ++i) {
    auto& ts = summary_.tables[i % chunk.tables];
    ts.rows += chunk.counts[i];
    if (chunk.counts[i]) ++ts.ledgers_with_rows;
    summary_.rows += chunk.counts[i];
  }
}

DigestSummary SummaryBuilder::Finish() {
  std::vector<std::string> table_roots;
  roots_->Finish(summary_.range, table_roots, summary_.root);
  roots_.reset();
  for (size_t t = 0; t < table_roots.size(); ++t) summary_.tables[t].root = table_roots[t];
  return std::move(summary_);
}

Result<ManifestInfo> ReadManifestInfo(const std::string& path) {
  LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
  Chunk c;
  for (;;) {
    LD_ASSIGN_OR_RETURN(bool more, reader->Next(c));
    if (!more) break;
  }
  ManifestInfo info{reader->header(), reader->summary(), reader->comparison()};
  std::error_code ec;
  info.summary.manifest_bytes = std::filesystem::file_size(path, ec);
  return info;
}

nlohmann::json ComparisonOutcomeToJson(const ComparisonOutcome& c) {
  return {{"identical", c.identical},
          {"first_divergent_ledger", c.first_divergent_ledger ? nlohmann::json(*c.first_divergent_ledger) : nullptr},
          {"divergent_ledgers", c.divergent_ledgers},
          {"ledgers_compared", c.ledgers_compared},
          {"rows_left", c.rows_left},
          {"rows_right", c.rows_right},
          {"allow_empty", c.allow_empty}};
}

std::string RenderComparisonOutcome(const ComparisonOutcome& c) {
  if (c.identical)
    return fmt::format("identical over {} ledgers ({} rows left, {} rows right)", c.ledgers_compared, c.rows_left,
                       c.rows_right);
  const std::string where = c.first_divergent_ledger
                                ? fmt::format("first divergent ledger {}", *c.first_divergent_ledger)
                                : std::string("no ledger differs (tables, columns, lookups or invariants do)");
  return fmt::format("divergent: {}, {} divergent ledgers of {} ({} rows left, {} rows right)", where,
                     c.divergent_ledgers, c.ledgers_compared, c.rows_left, c.rows_right);
}

}  // namespace ledgerdiff::dump
