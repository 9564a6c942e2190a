#include "dump/manifest.h"

#include <openssl/evp.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/process.h"
#include "dump/bounded_json.h"
#include "dump/byte_order.h"
#include "dump/shard_slice.h"
#include "ledgerdiff/version.h"

namespace ledgerdiff::dump {

namespace {

// A comparison outcome read from a file is untrusted (a part may be crafted, its checksum
// recomputed): its counts within the manifest's own range, its verdict consistent with its
// numbers. Throws JsonFormatError naming the field.
void CheckComparisonOutcome(const ComparisonOutcome& c, const LedgerRange& range) {
  const uint64_t n = range.size();
  const std::pair<const char*, uint64_t> counts[] = {{"divergent_ledgers", c.divergent_ledgers},
                                                     {"ledgers_compared", c.ledgers_compared},
                                                     {"coverage.missing_left", c.missing_left},
                                                     {"coverage.missing_right", c.missing_right}};
  for (const auto& [key, v] : counts)
    if (v > n)
      throw JsonFormatError(fmt::format("key \"comparison.{}\": {} ledgers, more than the {} of its range {}", key, v,
                                        n, range.str()));
  if (c.divergent_ledgers > c.ledgers_compared)
    throw JsonFormatError(fmt::format("key \"comparison.divergent_ledgers\": {} of {} ledgers compared",
                                      c.divergent_ledgers, c.ledgers_compared));
  if (c.first_divergent_ledger && (*c.first_divergent_ledger < range.from || *c.first_divergent_ledger > range.to))
    throw JsonFormatError(fmt::format("key \"comparison.first_divergent_ledger\": ledger {} is outside its range {}",
                                      *c.first_divergent_ledger, range.str()));
  if (c.first_divergent_ledger.has_value() != (c.divergent_ledgers > 0))
    throw JsonFormatError(fmt::format("key \"comparison.first_divergent_ledger\": {} with {} divergent ledgers",
                                      c.first_divergent_ledger ? std::to_string(*c.first_divergent_ledger) : "none",
                                      c.divergent_ledgers));
  if (c.identical && c.first_divergent_ledger)
    throw JsonFormatError(fmt::format("key \"comparison.identical\": true with first divergent ledger {}",
                                      *c.first_divergent_ledger));
  if (c.identical && (c.missing_left || c.missing_right) && !c.allow_gaps)
    throw JsonFormatError(fmt::format("key \"comparison.identical\": true with ledgers missing ({} left, {} right) "
                                      "and no --allow-gaps",
                                      c.missing_left, c.missing_right));
}

constexpr char kManifestMagic[8] = {'L', 'D', 'G', 'R', 'D', 'I', 'F', 'F'};
constexpr uint64_t kHeadBytes = 16;         // magic, version, header length
constexpr uint64_t kLeastTailBytes = 4 + 2 + 32;  // trailer length, "{}", checksum

EVP_MD_CTX* Sha(void* p) { return static_cast<EVP_MD_CTX*>(p); }

void PutVarint(std::string& s, uint64_t n) { AppendLeb128(s, n); }

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
  w->described_ = header.range.from;
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
  j["engine"] = ToString(header.engine);
  if (header.shard)
    j["shard"] = {{"index", header.shard->index},
                  {"count", header.shard->count},
                  {"full_range", {{"from", header.shard->full_range.from}, {"to", header.shard->full_range.to}}}};
  if (header.comparison) j["comparison"] = "verify-range";
  if (header.workload) j["workload"] = {{"density", header.workload->density}, {"seed", header.workload->seed}};
  if (!header.appended.empty()) {
    j["appended"] = nlohmann::json::array();
    for (const auto& a : header.appended)
      j["appended"].push_back({{"from", a.range.from}, {"to", a.range.to}, {"at", a.at}});
  }
  if (header.comparison != header.right_identity.has_value())
    return Status::Runtimef("manifest {}: a comparison's header names both sides' sources", path);
  j["source_identity"] = ManifestIdentityToJson(header);
  std::string js = j.dump();
  std::string head(kManifestMagic, 8);
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
  for (size_t i = 0; i < c.ledgers.size(); ++i) {
    const Ledger l = c.ledgers[i];
    PutVarint(buf_, l - described_);  // the empty ledgers before it
    described_ = uint64_t{l} + 1;
    const size_t base = c.At(i, 0);
    if (header_.detail == ManifestDetail::kCompact) {
      buf_.append(reinterpret_cast<const char*>(c.combined[i].bytes.data()), 16);
      for (size_t t = 0; t < c.tables; ++t) {
        PutVarint(buf_, c.counts[base + t]);
        if (c.counts[base + t]) {
          uint32_t tag = c.digests[base + t].Tag();
          for (int k = 3; k >= 0; --k) buf_.push_back(static_cast<char>((tag >> (8 * k)) & 0xff));
        }
      }
    } else {
      for (size_t t = 0; t < c.tables; ++t) {
        PutVarint(buf_, c.counts[base + t]);
        if (c.counts[base + t]) buf_.append(reinterpret_cast<const char*>(c.digests[base + t].bytes.data()), 16);
      }
    }
  }
  next_ = c.range.to + 1;
  return Write(buf_.data(), buf_.size());
}

Result<uint64_t> ManifestWriter::Finish(const DigestSummary& s, const std::optional<ComparisonOutcome>& outcome) {
  if (next_ != header_.range.to + 1) return Status::Runtimef("manifest {}: entries incomplete", path_);
  if (described_ <= header_.range.to) {  // the run of empty ledgers that ends the range
    buf_.clear();
    PutVarint(buf_, uint64_t{header_.range.to} + 1 - described_);
    described_ = uint64_t{header_.range.to} + 1;
    LD_RETURN_IF_ERROR(Write(buf_.data(), buf_.size()));
  }
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

// ---- header ----

nlohmann::json ManifestIdentityToJson(const ManifestHeader& h) {
  if (!h.comparison) return SourceIdentityToJson(h.identity);
  return {{"left", SourceIdentityToJson(h.identity)},
          {"right", h.right_identity ? SourceIdentityToJson(*h.right_identity) : nlohmann::json()}};
}

namespace {

LedgerRange RangeFromJson(const nlohmann::json& j, const std::string& where, const char* key) {
  const nlohmann::json& r = JsonObject(j, where, key);
  const std::string at = JsonPath(where, key);
  LedgerRange range{static_cast<Ledger>(JsonUnsigned(r, at, "from", kMaxManifestLedger)),
                    static_cast<Ledger>(JsonUnsigned(r, at, "to", kMaxManifestLedger))};
  if (range.to < range.from)
    throw JsonFormatError(fmt::format("key \"{}\": {}:{} ends before it starts", at, range.from, range.to));
  return range;
}

}  // namespace

ManifestHeader NewManifestHeader(std::string source, ManifestDetail detail, const LedgerRange& range,
                                 const ResolvedProfile& profile, const std::optional<ShardInfo>& shard,
                                 DigestEngine engine) {
  return ManifestHeader{.tool_version = {},
                        .source = std::move(source),
                        .detail = detail,
                        .range = range,
                        .profile = profile,
                        .shard = shard,
                        .fingerprint = {},
                        .comparison = false,
                        .identity = {},
                        .right_identity = std::nullopt,
                        .workload = std::nullopt,
                        .engine = engine,
                        .appended = {}};
}

Result<ManifestHeader> ManifestHeaderFromJson(const nlohmann::json& j, const std::string& path) {
  ManifestHeader h;
  try {
    if (!j.is_object() || !j.contains("format") || j.at("format") != "ledgerdiff-manifest")
      return Status::Usagef("{} is not a ledgerdiff manifest", path);
    h.tool_version = JsonString(j, "", "tool_version");
    h.source = JsonString(j, "", "source");
    const std::string detail = JsonString(j, "", "detail");
    if (detail != "compact" && detail != "full")
      throw JsonFormatError(fmt::format("key \"detail\": \"{}\" is neither \"compact\" nor \"full\"", detail));
    h.detail = detail == "full" ? ManifestDetail::kFull : ManifestDetail::kCompact;
    h.range = RangeFromJson(j, "", "range");
    // The profile: its size is bounded by the header's (ParseBoundedJson); its counts are checked
    // before anything is sized by them (entries, chunks).
    auto p = ResolvedProfileFromJson(JsonObject(j, "", "profile"));
    if (!p.ok()) return p.status().With("manifest " + path);
    h.profile = std::move(p).value();
    if (h.profile.tables.empty() || h.profile.tables.size() > kMaxManifestTables)
      throw JsonFormatError(fmt::format("key \"profile.tables\": {} tables, not 1 to {}", h.profile.tables.size(),
                                        kMaxManifestTables));
    for (const auto& t : h.profile.tables)
      if (t.columns.size() > kMaxManifestColumns)
        throw JsonFormatError(fmt::format("key \"profile.tables\": table \"{}\" has {} columns, more than {}", t.name,
                                          t.columns.size(), kMaxManifestColumns));
    const nlohmann::json& excluded = JsonArray(j, "", "excluded_columns", SIZE_MAX);
    if (excluded != nlohmann::json(h.profile.ExcludedColumns()))
      throw JsonFormatError("key \"excluded_columns\" does not match the profile's exclusions");
    h.fingerprint = ProfileFingerprint(h.profile);
    if (JsonString(j, "", "fingerprint") != h.fingerprint)
      return Status::Usagef("manifest {} is corrupted (profile fingerprint)", path);
    const std::string engine = JsonString(j, "", "engine");
    if (auto e = ParseDigestEngine(engine)) {
      h.engine = *e;
    } else {
      throw JsonFormatError(fmt::format("key \"engine\": \"{}\" is neither \"text\" nor \"server-hash\"", engine));
    }
    if (j.contains("comparison")) {
      if (JsonString(j, "", "comparison") != "verify-range")
        throw JsonFormatError("key \"comparison\": not \"verify-range\"");
      h.comparison = true;
    }
    const nlohmann::json& id = JsonObject(j, "", "source_identity");
    if (h.comparison) {
      h.identity = SourceIdentityFromJson(JsonObject(id, "source_identity", "left"), "source_identity.left");
      h.right_identity = SourceIdentityFromJson(JsonObject(id, "source_identity", "right"), "source_identity.right");
    } else {
      h.identity = SourceIdentityFromJson(id, "source_identity");
    }
    if (j.contains("workload")) {
      const nlohmann::json& jw = JsonObject(j, "", "workload");
      h.workload = ManifestWorkload{JsonString(jw, "workload", "density"),
                                    JsonUnsigned(jw, "workload", "seed", UINT64_MAX)};
    }
    if (j.contains("appended")) {
      // Stretches of the range, in order, not overlapping, each after the first ledger (the
      // digest that wrote the file read at least that one).
      const nlohmann::json& ja = JsonArray(j, "", "appended", kMaxAppendedStretches);
      Ledger next = h.range.from + 1;
      for (const auto& a : ja) {
        if (!a.is_object()) throw JsonFormatError("key \"appended\": an element is not an object");
        AppendedStretch stretch{{static_cast<Ledger>(JsonUnsigned(a, "appended", "from", kMaxManifestLedger)),
                                 static_cast<Ledger>(JsonUnsigned(a, "appended", "to", kMaxManifestLedger))},
                                JsonString(a, "appended", "at")};
        if (stretch.range.to < stretch.range.from)
          throw JsonFormatError(fmt::format("key \"appended\": {}:{} ends before it starts", stretch.range.from,
                                            stretch.range.to));
        if (stretch.range.from < next || stretch.range.to > h.range.to)
          throw JsonFormatError(fmt::format("key \"appended\": ledgers {} are not after {} within the range {}",
                                            stretch.range.str(), next - 1, h.range.str()));
        if (stretch.at.size() > 64) throw JsonFormatError("key \"appended.at\": longer than 64 characters");
        next = stretch.range.to + 1;
        h.appended.push_back(std::move(stretch));
      }
    }
    if (j.contains("shard")) {
      const nlohmann::json& js = JsonObject(j, "", "shard");
      ShardInfo s;
      s.full_range = RangeFromJson(js, "shard", "full_range");
      // Bounded by the full range's width before anything is sized by it (merge's slots).
      s.count = static_cast<uint32_t>(JsonUnsigned(js, "shard", "count", UINT32_MAX));
      s.index = static_cast<uint32_t>(JsonUnsigned(js, "shard", "index", UINT32_MAX));
      if (s.count == 0 || s.count > s.full_range.size())
        throw JsonFormatError(fmt::format("key \"shard.count\": {} shards of the {} ledgers of {}", s.count,
                                          s.full_range.size(), s.full_range.str()));
      if (s.index >= s.count)
        throw JsonFormatError(fmt::format("key \"shard.index\": shard {} of {} (they are numbered 0..{})", s.index,
                                          s.count, s.count - 1));
      auto slice = ShardSlice(s.full_range, s.count, s.index);
      if (!slice.ok() || !(*slice == h.range))
        throw JsonFormatError(fmt::format("it claims shard {} of {} of range {} (ledgers {}) but holds ledgers {}",
                                          s.index, s.count, s.full_range.str(), slice.ok() ? slice->str() : "?",
                                          h.range.str()));
      h.shard = s;
    }
  } catch (const std::exception& e) {
    return Status::Usagef("manifest {} is corrupted (header: {})", path, e.what());
  }
  return h;
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
  offset_ += n;
  return Status::Ok();
}

Result<uint64_t> ManifestReader::ReadVarint() {
  // A valid file holds at least the trailer and the checksum after any count, so up to 10 bytes
  // are there to look at; near a truncated end fewer are.
  const bool cut = !Fill(10).ok();
  const size_t avail = std::min<size_t>(10, buf_.size() - pos_);
  uint64_t v = 0;
  const size_t n = DecodeLeb128(reinterpret_cast<const unsigned char*>(buf_.data() + pos_), avail, v);
  if (n == 0) {
    if (cut && avail < 10) return Status::Usagef("manifest {} is truncated", path_);
    return Status::Usagef("manifest {} is corrupted (a count that is not a 64-bit LEB128 value)", path_);
  }
  EVP_DigestUpdate(Sha(sha_), buf_.data() + pos_, n);
  pos_ += n;
  offset_ += n;
  return v;
}

Result<std::unique_ptr<ManifestReader>> ManifestReader::Open(const std::string& path) {
  std::unique_ptr<ManifestReader> r(new ManifestReader());
  r->path_ = path;
  // Only a regular file, opened without blocking: a FIFO would block the read forever.
  LD_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, "manifest " + path, O_RDONLY));
  r->f_ = fdopen(fd, "rb");
  if (!r->f_) {
    const int err = errno;
    ::close(fd);
    return Status::Runtimef("manifest {}: cannot read: {}", path, std::strerror(err));
  }
  // The size bounds every length read below.
  struct stat st;
  if (fstat(fileno(r->f_), &st) == 0 && S_ISREG(st.st_mode)) r->size_ = static_cast<uint64_t>(st.st_size);
  r->sha_ = EVP_MD_CTX_new();
  EVP_DigestInit_ex(Sha(r->sha_), EVP_sha256(), nullptr);
  unsigned char head[kHeadBytes];
  if (!r->ReadBytes(head, kHeadBytes).ok() || std::memcmp(head, kManifestMagic, 8) != 0)
    return Status::Usagef("{} is not a ledgerdiff manifest", path);
  uint32_t version = GetU32(head + 8), len = GetU32(head + 12);
  if (version != kManifestVersion)
    return Status::Usagef("manifest {}: format version {} is not supported (this ledgerdiff reads version {}); "
                          "re-save it with this version (ledgerdiff digest --out, or verify --save-baseline)",
                          path, version, kManifestVersion);
  if (len > kMaxManifestHeaderBytes)
    return Status::Usagef("manifest {} is corrupted (header length {} is beyond the bound of {} bytes)", path, len,
                          kMaxManifestHeaderBytes);
  if (r->size_ && kHeadBytes + len + kLeastTailBytes > *r->size_)
    return Status::Usagef("manifest {} is truncated (header length {}, but the file holds {} bytes)", path, len,
                          *r->size_);
  {
    std::string js(len, '\0');
    LD_RETURN_IF_ERROR(r->ReadBytes(js.data(), len));
    auto j = ParseBoundedJson(js);
    if (!j.ok()) return Status::Usagef("manifest {} is corrupted (header: {})", path, j.status().message());
    LD_ASSIGN_OR_RETURN(r->header_, ManifestHeaderFromJson(*j, path));
  }
  // The least bytes the entries can take: one run of empty ledgers (a count of at least one byte).
  if (r->size_ && kHeadBytes + len + 1 + kLeastTailBytes > *r->size_)
    return Status::Usagef("manifest {} is truncated (no entries after the header; the file holds {} bytes)", path,
                          *r->size_);
  r->next_ = r->header_.range.from;
  r->described_ = r->header_.range.from;
  r->summary_.source = "manifest " + path;
  r->summary_.range = r->header_.range;
  r->summary_.profile = r->header_.profile;
  r->summary_.manifest_path = path;
  r->summary_.manifest_detail = ManifestDetailName(r->header_.detail);
  r->summary_.engine = r->header_.engine;
  return r;
}

Result<bool> ManifestReader::Next(Chunk& out, uint32_t max_ledgers) {
  if (done_) return false;
  const LedgerRange& range = header_.range;
  if (entries_done_) {
    LD_RETURN_IF_ERROR(Finish());
    done_ = true;
    return false;
  }
  const size_t T = header_.profile.tables.size();
  const bool full = header_.detail == ManifestDetail::kFull;
  const uint64_t end = uint64_t{range.to} + 1;
  // A chunk's memory is bounded whatever the profile's width (T >= 1: ManifestHeaderFromJson).
  const uint64_t most = std::clamp<uint64_t>(std::min<uint64_t>(max_ledgers, kMaxManifestChunkEntries / T), 1,
                                             kMaxManifestChunkEntries);
  out = Chunk::Empty({next_, range.to}, T, full);
  std::vector<uint64_t> counts(T);
  std::vector<Digest128> digests(full ? T : 0);
  while (out.ledgers.size() < most) {
    LD_ASSIGN_OR_RETURN(uint64_t empty, ReadVarint());
    if (empty > end - described_)
      return Status::Usagef("manifest {} is corrupted (a run of {} empty ledgers from ledger {} passes the range {})",
                            path_, empty, described_, range.str());
    described_ += empty;
    if (described_ == end) break;  // the run that ends the range
    const Ledger l = static_cast<Ledger>(described_);
    Digest128 combined;
    if (!full) LD_RETURN_IF_ERROR(ReadBytes(combined.bytes.data(), 16));
    bool any = false;
    for (size_t t = 0; t < T; ++t) {
      LD_ASSIGN_OR_RETURN(counts[t], ReadVarint());
      if (!counts[t]) {
        if (full) digests[t] = EmptyDigest();
        else out.tags.push_back(EmptyDigest().Tag());
        continue;
      }
      any = true;
      if (full) {
        LD_RETURN_IF_ERROR(ReadBytes(digests[t].bytes.data(), 16));
      } else {
        unsigned char b[4];
        LD_RETURN_IF_ERROR(ReadBytes(b, 4));
        out.tags.push_back((uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3]);
      }
    }
    if (!any) return Status::Usagef("manifest {} is corrupted (ledger {} is listed with no rows)", path_, l);
    if (full) {
      out.Append(l, counts.data(), digests.data());
    } else {
      out.ledgers.push_back(l);
      out.counts.insert(out.counts.end(), counts.begin(), counts.end());
      out.combined.push_back(combined);
    }
    ++described_;
    if (described_ == end) break;
  }
  if (described_ == end) {
    entries_done_ = true;
  } else {
    out.range.to = out.ledgers.back();
    next_ = out.range.to + 1;
  }
  return true;
}

Status ManifestReader::Finish() {
  unsigned char lb[4];
  LD_RETURN_IF_ERROR(ReadBytes(lb, 4));
  uint32_t len = GetU32(lb);
  if (len > kMaxManifestTrailerBytes)
    return Status::Usagef("manifest {} is corrupted (trailer length {} is beyond the bound of {} bytes)", path_, len,
                          kMaxManifestTrailerBytes);
  // The trailer is all that lies between the entries and the checksum.
  if (size_ && offset_ + len + 32 != *size_)
    return Status::Usagef("manifest {} is {} (trailer length {}, but {} bytes lie between the entries and the end)",
                          path_, offset_ + len + 32 > *size_ ? "truncated" : "corrupted", len, *size_ - offset_);
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
  auto parsed = ParseBoundedJson(js);
  if (!parsed.ok()) return Status::Usagef("manifest {} is corrupted (trailer: {})", path_, parsed.status().message());
  const nlohmann::json& j = *parsed;
  try {
    summary_.root = JsonString(j, "", "root");
    summary_.rows = JsonUnsigned(j, "", "rows", UINT64_MAX);
    const auto& profile = header_.profile.tables;
    const nlohmann::json& tables = JsonArray(j, "", "tables", profile.size());
    if (tables.size() != profile.size())
      throw JsonFormatError(fmt::format("key \"tables\": {} tables, the header's profile has {}", tables.size(),
                                        profile.size()));
    summary_.tables.clear();
    for (size_t i = 0; i < tables.size(); ++i) {
      const std::string at = fmt::format("tables[{}]", i);
      TableSummary t{JsonString(tables[i], at, "table"), JsonUnsigned(tables[i], at, "rows", UINT64_MAX),
                     JsonUnsigned(tables[i], at, "ledgers_with_rows", header_.range.size()),
                     JsonString(tables[i], at, "root")};
      if (t.table != profile[i].name)
        throw JsonFormatError(fmt::format("key \"{}.table\": \"{}\", the header's profile has \"{}\" there", at,
                                          t.table, profile[i].name));
      summary_.tables.push_back(std::move(t));
    }
    if (header_.comparison != j.contains("comparison"))
      return Status::Usagef("manifest {} is corrupted (comparison outcome)", path_);
    if (header_.comparison) {
      const nlohmann::json& jc = JsonObject(j, "", "comparison");
      const std::string at = "comparison";
      ComparisonOutcome c;
      c.identical = JsonBool(jc, at, "identical");
      if (auto l = JsonNullableUnsigned(jc, at, "first_divergent_ledger", kMaxManifestLedger))
        c.first_divergent_ledger = static_cast<Ledger>(*l);
      c.divergent_ledgers = JsonUnsigned(jc, at, "divergent_ledgers", UINT64_MAX);
      c.ledgers_compared = JsonUnsigned(jc, at, "ledgers_compared", UINT64_MAX);
      c.rows_left = JsonUnsigned(jc, at, "rows_left", UINT64_MAX);
      c.rows_right = JsonUnsigned(jc, at, "rows_right", UINT64_MAX);
      c.allow_empty = JsonBool(jc, at, "allow_empty");
      if (jc.contains("coverage")) {  // absent in trailers written before coverage was recorded
        const nlohmann::json& cov = JsonObject(jc, at, "coverage");
        const std::string cat = at + ".coverage";
        c.coverage_checked = true;
        c.missing_left = JsonUnsigned(cov, cat, "missing_left", kMaxManifestLedger + uint64_t{1});
        c.missing_right = JsonUnsigned(cov, cat, "missing_right", kMaxManifestLedger + uint64_t{1});
        c.allow_gaps = JsonBool(cov, cat, "allow_gaps");
      }
      if (jc.contains("snapshots")) {  // a part's (written since issue 41)
        const nlohmann::json& js = JsonObject(jc, at, "snapshots");
        const std::string sat = at + ".snapshots";
        const std::pair<const char*, std::optional<SourceSnapshot>*> sides[] = {{"left", &c.left_snapshot},
                                                                                 {"right", &c.right_snapshot}};
        for (const auto& [side, snapshot] : sides) {
          const nlohmann::json& one = JsonObject(js, sat, side);
          SourceSnapshot snap{JsonString(one, sat + "." + side, "lsn"), JsonString(one, sat + "." + side, "at")};
          if (snap.lsn.size() > 32 || snap.at.size() > 64)
            throw JsonFormatError(fmt::format("key \"{}.{}\": longer than a WAL position and a time", sat, side));
          *snapshot = std::move(snap);
        }
      }
      CheckComparisonOutcome(c, header_.range);
      comparison_ = c;
    }
  } catch (const std::exception& e) {
    return Status::Usagef("manifest {} is corrupted (trailer: {})", path_, e.what());
  }
  return Status::Ok();
}

Result<ManifestInfo> ReadManifestInfo(const std::string& path) {
  LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
  Chunk c;
  for (;;) {
    LD_ASSIGN_OR_RETURN(bool more, reader->Next(c));
    if (!more) break;
  }
  ManifestInfo info{std::move(reader->header_), std::move(reader->summary_), std::move(reader->comparison_)};
  info.summary.appended = info.header.appended;
  std::error_code ec;
  info.summary.manifest_bytes = std::filesystem::file_size(path, ec);
  return info;
}

nlohmann::json ComparisonOutcomeToJson(const ComparisonOutcome& c) {
  nlohmann::json j = {{"identical", c.identical},
          {"first_divergent_ledger", c.first_divergent_ledger ? nlohmann::json(*c.first_divergent_ledger) : nullptr},
          {"divergent_ledgers", c.divergent_ledgers},
          {"ledgers_compared", c.ledgers_compared},
          {"rows_left", c.rows_left},
          {"rows_right", c.rows_right},
          {"allow_empty", c.allow_empty}};
  if (c.coverage_checked)
    j["coverage"] = {{"missing_left", c.missing_left}, {"missing_right", c.missing_right}, {"allow_gaps", c.allow_gaps}};
  if (c.left_snapshot && c.right_snapshot)
    j["snapshots"] = {{"left", {{"lsn", c.left_snapshot->lsn}, {"at", c.left_snapshot->at}}},
                      {"right", {{"lsn", c.right_snapshot->lsn}, {"at", c.right_snapshot->at}}}};
  return j;
}

}  // namespace ledgerdiff::dump
