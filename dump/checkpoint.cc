#include "dump/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <xxhash.h>

#include "core/process.h"
#include "dump/bounded_json.h"
#include "dump/byte_order.h"
#include "dump/manifest.h"

namespace ledgerdiff::dump {

namespace {

constexpr char kCheckpointMagic[8] = {'L', 'D', 'G', 'R', 'C', 'K', 'P', 'T'};
constexpr uint32_t kMaxRecord = 1u << 30;
constexpr uint32_t kMaxHeaderRecord = 1u << 20;  // the header record's JSON: a job description
constexpr size_t kChunkHead = 1 + 1 + 4 + 4 + 4;  // type, side, from, to, tables

std::string Checksum(const std::string& payload) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(payload.data(), payload.size()));
  return std::string(reinterpret_cast<const char*>(c.digest), 16);
}

// Reads exactly n bytes at `offset`; false on a short read.
bool ReadAt(int fd, uint64_t offset, size_t n, std::string& out) {
  out.resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

bool WriteAt(int fd, uint64_t offset, const std::string& data) {
  size_t put = 0;
  while (put < data.size()) {
    ssize_t r = pwrite(fd, data.data() + put, data.size() - put, static_cast<off_t>(offset + put));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    put += static_cast<size_t>(r);
  }
  return true;
}

// The first difference between two job descriptions: "key.sub: A there, B here".
std::optional<std::string> FirstDifference(const nlohmann::json& had, const nlohmann::json& now,
                                           const std::string& at) {
  if (had.is_object() && now.is_object()) {
    nlohmann::json keys = nlohmann::json::object();
    for (auto it = had.begin(); it != had.end(); ++it) keys[it.key()] = true;
    for (auto it = now.begin(); it != now.end(); ++it) keys[it.key()] = true;
    for (auto it = keys.begin(); it != keys.end(); ++it) {
      const std::string& k = it.key();
      auto d = FirstDifference(had.contains(k) ? had.at(k) : nlohmann::json(), now.contains(k) ? now.at(k) : nlohmann::json(),
                               at.empty() ? k : at + "." + k);
      if (d) return d;
    }
    return std::nullopt;
  }
  if (had == now) return std::nullopt;
  return fmt::format("{} {} in the checkpoint, {} in this run", at, had.dump(), now.dump());
}

// Whether a chunk record's head (ledgers from..to, `tables` tables) can describe a payload of
// `size` bytes: 1 to kMaxManifestTables tables. Its entries are read against the payload's size.
bool ChunkHeadFits(Ledger from, Ledger to, uint64_t tables, uint64_t size) {
  return to >= from && tables != 0 && tables <= kMaxManifestTables && size >= kChunkHead;
}

// Decodes a chunk record's payload: per listed ledger, the LEB128 count of empty ledgers before
// it (since the chunk's first ledger or the previous listed one), then its full entries.
Result<Chunk> DecodeChunk(const std::string& p, const std::string& path) {
  auto corrupt = [&] { return Status::Usagef("checkpoint {} is corrupted (a chunk record's entries)", path); };
  if (p.size() < kChunkHead) return corrupt();
  Chunk c;
  c.range = {GetU32(p.data() + 2), GetU32(p.data() + 6)};
  c.tables = GetU32(p.data() + 10);
  if (!ChunkHeadFits(c.range.from, c.range.to, c.tables, p.size())) return corrupt();
  c.full = true;
  size_t pos = kChunkHead;
  const auto* bytes = reinterpret_cast<const unsigned char*>(p.data());
  std::vector<uint64_t> counts(c.tables);
  std::vector<Digest128> digests(c.tables);
  uint64_t next = c.range.from;  // the first ledger not yet described
  while (pos < p.size()) {
    uint64_t empty = 0;
    size_t took = DecodeLeb128(bytes + pos, p.size() - pos, empty);
    if (!took || empty > uint64_t{c.range.to} - next) return corrupt();
    pos += took;
    next += empty;
    bool any = false;
    for (size_t t = 0; t < c.tables; ++t) {
      took = DecodeLeb128(bytes + pos, p.size() - pos, counts[t]);
      if (!took) return corrupt();
      pos += took;
      digests[t] = EmptyDigest();
      if (!counts[t]) continue;
      any = true;
      if (pos + 16 > p.size()) return corrupt();
      std::memcpy(digests[t].bytes.data(), p.data() + pos, 16);
      pos += 16;
    }
    if (!any) return corrupt();
    c.Append(static_cast<Ledger>(next), counts.data(), digests.data());
    ++next;
  }
  return c;
}

// Ledgers `r` (within c.range) of a chunk.
Chunk Slice(const Chunk& c, const LedgerRange& r) {
  if (r == c.range) return c;
  Chunk s = Chunk::Empty(r, c.tables);
  for (size_t i = 0; i < c.ledgers.size(); ++i)
    if (r.contains(c.ledgers[i])) s.Append(c.ledgers[i], &c.counts[c.At(i, 0)], &c.digests[c.At(i, 0)]);
  return s;
}

}  // namespace

std::string CheckpointPath(const std::string& out) { return out + ".partial"; }

Result<std::unique_ptr<Checkpoint>> Checkpoint::OpenLocked(const std::string& path, bool create) {
  std::unique_ptr<Checkpoint> cp(new Checkpoint());
  cp->path_ = path;
  // Only a regular file, opened without blocking (a FIFO would block open(2) and every read).
  int open_errno = 0;
  auto opened = OpenRegularFile(path, "checkpoint " + path, O_RDWR | O_NOFOLLOW | (create ? O_CREAT : 0), &open_errno);
  if (!opened.ok()) {
    if (!create && open_errno == ENOENT)
      return Status::Usagef("--resume: no checkpoint {} (the run finished, or never started): run without --resume",
                            path);
    if (open_errno) return Status::Usagef("checkpoint {}: cannot open: {}", path, std::strerror(open_errno));
    return opened.status();
  }
  cp->fd_ = *opened;
  if (flock(cp->fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Status::Usagef("checkpoint {} is in use by another ledgerdiff run (locked)", path);
    return Status::Usagef("checkpoint {}: cannot lock: {}", path, std::strerror(errno));
  }
  return cp;
}

Status Checkpoint::Corrupt(const std::string& what) const {
  return Status::Usagef("checkpoint {} is corrupted ({}): delete it to start over", path_, what);
}

Status Checkpoint::ScanHeaderRecord(const std::string& p, bool verify_job, const nlohmann::json& job) {
  if (p[0] != 'H') return Corrupt("no header");
  if (p.size() > kMaxHeaderRecord) return Corrupt(fmt::format("header of {} bytes, beyond {}", p.size(), kMaxHeaderRecord));
  auto parsed = ParseBoundedJson(std::string_view(p).substr(1));
  if (!parsed.ok()) return Corrupt("header: " + parsed.status().message());
  try {
    const nlohmann::json& h = *parsed;
    if (JsonString(h, "", "format") != "ledgerdiff-checkpoint") return Corrupt("not a ledgerdiff checkpoint");
    if (verify_job) {
      if (auto d = FirstDifference(JsonField(h, "", "job"), job, "")) {
        return Status::Usagef("checkpoint {} belongs to another run: {} (delete it to start over)", path_, *d);
      }
    }
    const int sides = static_cast<int>(JsonUnsigned(h, "", "sides", 2));
    const nlohmann::json& jr = JsonObject(h, "", "range");
    const LedgerRange range{static_cast<Ledger>(JsonUnsigned(jr, "range", "from", kMaxManifestLedger)),
                            static_cast<Ledger>(JsonUnsigned(jr, "range", "to", kMaxManifestLedger))};
    if (sides < 1 || range.to < range.from) return Corrupt("header");
    if (!verify_job) {  // Create asks whether it holds ledgers, of whichever job
      sides_ = sides;
      range_ = range;
      records_.assign(sides_, {});
      next_.assign(sides_, 0);
    } else if (sides != sides_ || !(range == range_)) {
      return Corrupt("header");
    }
  } catch (const std::exception& e) {
    return Corrupt(fmt::format("header: {}", e.what()));
  }
  return Status::Ok();
}

Status Checkpoint::ScanChunkRecord(const std::string& p, size_t n, uint64_t offset, size_t& tables) {
  if (p.size() < kChunkHead) return Corrupt(fmt::format("record {}", n));
  const int side = static_cast<unsigned char>(p[1]);
  const Ledger from = GetU32(p.data() + 2), to = GetU32(p.data() + 6);
  const size_t t = GetU32(p.data() + 10);
  if (!ChunkHeadFits(from, to, t, p.size()))
    return Corrupt(fmt::format("record {}: {} tables of ledgers {}:{} in {} bytes", n, t, from, to, p.size()));
  if (side >= sides_ || uint64_t{from} != range_.from + next_[side] || to < from || to > range_.to ||
      (tables && t != tables))
    return Corrupt(fmt::format("record {} out of order", n));
  tables = t;
  records_[side].push_back({offset + 4, static_cast<uint32_t>(p.size()), from, to});
  next_[side] = uint64_t{to} - range_.from + 1;
  return Status::Ok();
}

Status Checkpoint::ScanResumeRecord(const std::string& p, size_t n) {
  const uint64_t keep = GetU64(p.data() + 1);
  for (int s = 0; s < sides_; ++s) {
    if (keep > next_[s]) return Corrupt(fmt::format("record {}: a resume past the chunks", n));
    auto& recs = records_[s];
    while (!recs.empty() && uint64_t{recs.back().from} - range_.from >= keep) recs.pop_back();
    if (!recs.empty()) recs.back().to = std::min<Ledger>(recs.back().to, static_cast<Ledger>(range_.from + keep - 1));
    next_[s] = keep;
  }
  return Status::Ok();
}

Status Checkpoint::Scan(bool verify_job, const nlohmann::json& job, uint64_t* ledgers_in_file) {
  struct stat st;
  if (fstat(fd_, &st) != 0) return Status::Usagef("checkpoint {}: {}", path_, std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string buf;
  if (!ReadAt(fd_, 0, 12, buf) || std::memcmp(buf.data(), kCheckpointMagic, 8) != 0)
    return Corrupt("not a ledgerdiff checkpoint");
  if (GetU32(buf.data() + 8) != kCheckpointVersion)
    return Status::Usagef("checkpoint {} has format version {} (this ledgerdiff writes {}): delete it to start over",
                          path_, GetU32(buf.data() + 8), kCheckpointVersion);
  records_.assign(sides_, {});
  next_.assign(sides_, 0);
  uint64_t off = 12;
  end_ = off;
  bool header = false;
  size_t tables = 0;
  for (size_t n = 0; off < size; ++n) {
    std::string p;
    uint32_t len = 0;
    // A record torn by a crash while it was written (cut short): the valid prefix stands. A length
    // no writer writes is corruption, not a tear (a record is written with one pwrite: a crash
    // leaves its length intact or its bytes unwritten). Records are read whole below: only lengths
    // within the file and the bound get that far.
    if (size - off < 4) {
      torn_ = true;
      break;
    }
    if (!ReadAt(fd_, off, 4, buf)) return Status::Usagef("checkpoint {}: read failed", path_);
    len = GetU32(buf.data());
    if (len > kMaxRecord) return Corrupt(fmt::format("record {} of {} bytes, beyond {}", n, len, kMaxRecord));
    if (off + 4 + uint64_t{len} + 16 > size) {
      torn_ = true;
      break;
    }
    std::string sum;
    if (!ReadAt(fd_, off + 4, len, p) || !ReadAt(fd_, off + 4 + len, 16, sum))
      return Status::Usagef("checkpoint {}: read failed", path_);
    if (sum != Checksum(p)) {
      if (off + 4 + len + 16 == size) {  // the last record, torn
        torn_ = true;
        break;
      }
      return Corrupt(fmt::format("checksum mismatch in record {}", n));
    }
    if (p.empty()) return Corrupt(fmt::format("empty record {}", n));
    if (!header) {
      LD_RETURN_IF_ERROR(ScanHeaderRecord(p, verify_job, job));
      header = true;
    } else if (p[0] == 'C') {
      LD_RETURN_IF_ERROR(ScanChunkRecord(p, n, off, tables));
    } else if (p[0] == 'R' && p.size() == 9) {
      LD_RETURN_IF_ERROR(ScanResumeRecord(p, n));
    } else {
      return Corrupt(fmt::format("record {} of unknown type", n));
    }
    off += 4 + uint64_t{len} + 16;
    end_ = off;
  }
  if (!header) return Corrupt("no header");
  *ledgers_in_file = *std::min_element(next_.begin(), next_.end());
  return Status::Ok();
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::Create(const std::string& path, const nlohmann::json& job,
                                                       const LedgerRange& range, int sides) {
  LD_ASSIGN_OR_RETURN(auto cp, OpenLocked(path, /*create=*/true));
  cp->range_ = range;
  cp->sides_ = sides;
  struct stat st;
  if (fstat(cp->fd_, &st) == 0 && st.st_size > 0) {
    uint64_t held = 0;
    Status s = cp->Scan(/*verify_job=*/false, job, &held);
    if (!s.ok())
      return Status::Usagef("{} exists and is not a usable checkpoint ({}): delete it", path, s.message());
    if (held > 0)
      return Status::Usagef("{} holds the checkpoint of an interrupted run ({} ledgers done): continue it with "
                            "--resume, or delete it to start over",
                            path, held);
  }
  if (ftruncate(cp->fd_, 0) != 0) return Status::Usagef("checkpoint {}: {}", path, std::strerror(errno));
  cp->torn_ = false;
  cp->range_ = range;
  cp->sides_ = sides;
  cp->records_.assign(sides, {});
  cp->next_.assign(sides, 0);
  std::string head(kCheckpointMagic, 8);
  PutU32(head, kCheckpointVersion);
  if (!WriteAt(cp->fd_, 0, head)) return Status::Usagef("checkpoint {}: write failed: {}", path, std::strerror(errno));
  cp->end_ = head.size();
  nlohmann::json h = {{"format", "ledgerdiff-checkpoint"},
                      {"sides", sides},
                      {"range", {{"from", range.from}, {"to", range.to}}},
                      {"job", job}};
  LD_RETURN_IF_ERROR(cp->WriteRecord("H" + h.dump()));
  // The directory entry too: a checkpoint that vanishes with a crash resumes nothing.
  const std::string dir = std::filesystem::absolute(path).parent_path().string();
  if (int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  Checkpoint* raw = cp.get();
  cp->cleanup_ = RegisterDescribedCleanup([raw] { return raw->DeleteIfEmpty(); });
  return cp;
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::Resume(const std::string& path, const nlohmann::json& job,
                                                       const LedgerRange& range, int sides, uint64_t max_resumed) {
  LD_ASSIGN_OR_RETURN(auto cp, OpenLocked(path, /*create=*/false));
  cp->range_ = range;
  cp->sides_ = sides;
  uint64_t held = 0;
  LD_RETURN_IF_ERROR(cp->Scan(/*verify_job=*/true, job, &held));
  if (cp->torn_ && ftruncate(cp->fd_, static_cast<off_t>(cp->end_)) != 0)
    return Status::Usagef("checkpoint {}: {}", path, std::strerror(errno));
  cp->resumed_ = std::min(held, max_resumed);
  // Void what lies past the resumed prefix (a side ahead of the other, or max_resumed).
  std::string marker = "R";
  PutU64(marker, cp->resumed_);
  LD_RETURN_IF_ERROR(cp->WriteRecord(marker));
  for (int s = 0; s < sides; ++s) {
    auto& recs = cp->records_[s];
    while (!recs.empty() && uint64_t{recs.back().from} - range.from >= cp->resumed_) recs.pop_back();
    if (!recs.empty())
      recs.back().to = std::min<Ledger>(recs.back().to, static_cast<Ledger>(range.from + cp->resumed_ - 1));
    cp->next_[s] = cp->resumed_;
  }
  cp->holds_ledgers_ = cp->resumed_ > 0;
  Checkpoint* raw = cp.get();
  cp->cleanup_ = RegisterDescribedCleanup([raw] { return raw->DeleteIfEmpty(); });
  return cp;
}

Checkpoint::~Checkpoint() {
  if (cleanup_) {
    UnregisterCleanup(cleanup_);
    DeleteIfEmpty();
  }
  if (fd_ >= 0) close(fd_);
}

std::string Checkpoint::DeleteIfEmpty() {
  std::lock_guard<std::mutex> lock(mu_);
  if (removed_) return "";
  if (holds_ledgers_) return "kept the checkpoint " + path_ + " (continue with --resume)";
  (void)unlink(path_.c_str());
  removed_ = true;
  return "removed the empty checkpoint " + path_;
}

std::optional<LedgerRange> Checkpoint::remainder() const {
  if (resumed_ >= range_.size()) return std::nullopt;
  return LedgerRange{static_cast<Ledger>(range_.from + resumed_), range_.to};
}

Status Checkpoint::Replay(int side, size_t tables, const ChunkSink& sink) const {
  if (!resumed_) return Status::Ok();
  const Ledger last = static_cast<Ledger>(range_.from + resumed_ - 1);
  for (const Record& r : records_[side]) {
    std::string p;
    if (!ReadAt(fd_, r.offset, r.length, p)) return Status::Usagef("checkpoint {}: read failed", path_);
    LD_ASSIGN_OR_RETURN(Chunk c, DecodeChunk(p, path_));
    if (tables && c.tables != tables)
      return Status::Usagef("checkpoint {} holds {} tables per ledger, this run compares {}: delete it to start over",
                            path_, c.tables, tables);
    LD_RETURN_IF_ERROR(sink(Slice(c, {c.range.from, std::min(r.to, last)})));
    if (r.to >= last) break;
  }
  return Status::Ok();
}

Status Checkpoint::WriteRecord(const std::string& payload) {
  std::string rec;
  PutU32(rec, static_cast<uint32_t>(payload.size()));
  rec += payload;
  rec += Checksum(payload);
  if (!WriteAt(fd_, end_, rec) || fdatasync(fd_) != 0)
    return Status::Runtimef("checkpoint {}: write failed: {}", path_, std::strerror(errno));
  end_ += rec.size();
  return Status::Ok();
}

Status Checkpoint::Append(int side, const Chunk& c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (removed_) return Status::Runtimef("checkpoint {} was removed", path_);
    if (!c.full || side < 0 || side >= sides_ || uint64_t{c.range.from} != range_.from + next_[side])
      return Status::Runtimef("checkpoint {}: chunks out of order", path_);
    std::string p = "C";
    p.push_back(static_cast<char>(side));
    PutU32(p, c.range.from);
    PutU32(p, c.range.to);
    PutU32(p, static_cast<uint32_t>(c.tables));
    uint64_t next = c.range.from;
    for (size_t i = 0; i < c.ledgers.size(); ++i) {
      AppendLeb128(p, c.ledgers[i] - next);
      next = uint64_t{c.ledgers[i]} + 1;
      for (size_t t = 0; t < c.tables; ++t) {
        const size_t e = c.At(i, t);
        AppendLeb128(p, c.counts[e]);
        if (c.counts[e]) p.append(reinterpret_cast<const char*>(c.digests[e].bytes.data()), 16);
      }
    }
    LD_RETURN_IF_ERROR(WriteRecord(p));
    next_[side] += c.range.size();
    holds_ledgers_ = true;
  }
  static const int delay_ms = [] {
    const char* v = std::getenv("LEDGERDIFF_TEST_CHUNK_DELAY_MS");
    return v ? std::atoi(v) : 0;
  }();
  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  return Status::Ok();
}

Status Checkpoint::Explain(const Status& failure) const {
  if (failure.kind() != Status::Kind::kRuntime) return failure;  // bad input: rerunning the same won't help
  uint64_t held = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (removed_ || !holds_ledgers_) return failure;
    held = *std::min_element(next_.begin(), next_.end());
  }
  if (!held) return failure;
  std::string msg = fmt::format("{} (checkpoint {} keeps {} ledgers: rerun with --resume to continue)",
                                failure.message(), path_, held);
  return Status::Runtime(std::move(msg));
}

Status Checkpoint::Remove() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!removed_ && unlink(path_.c_str()) != 0 && errno != ENOENT)
    return Status::Runtimef("checkpoint {}: cannot remove: {}", path_, std::strerror(errno));
  removed_ = true;
  return Status::Ok();
}

}  // namespace ledgerdiff::dump
