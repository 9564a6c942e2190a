#include "verify/follow_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "dump/bounded_json.h"
#include "dump/source_identity.h"

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

constexpr int kStateFormat = 1;
// A state names O(log cycles) segments: a few KiB. Anything far larger is not a state.
constexpr size_t kMaxStateBytes = 1 << 20;
constexpr size_t kMaxSegments = 4096;
constexpr uint64_t kMaxCount = uint64_t{1} << 63;

// A ledger 1..kHighestLedger at key `key` (dump/bounded_json.h's message for a bad type or a
// number past the bound; its own for 0).
Ledger JsonLedger(const nlohmann::json& obj, const std::string& where, const char* key) {
  const uint64_t v = dump::JsonUnsigned(obj, where, key, kHighestLedger);
  if (v == 0)
    throw dump::JsonFormatError(
        fmt::format("key \"{}\": 0 is not a ledger (ledgers are 1 to {})", dump::JsonPath(where, key), kHighestLedger));
  return static_cast<Ledger>(v);
}

// A ledger or 0 (the ledger before the first: "none" when the state starts at ledger 1).
Ledger JsonLedgerOrNone(const nlohmann::json& obj, const std::string& where, const char* key) {
  return static_cast<Ledger>(dump::JsonUnsigned(obj, where, key, kHighestLedger));
}

// `text` as a JSON string, escaped (one line), at most 64 bytes of it.
std::string Quoted(const std::string& text) {
  return nlohmann::json(text.substr(0, 64)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// True for what DIR/segments may hold: a segment ("0000000002-0000000061.ldm"), its checkpoint
// (".partial"), and the temporary files of their atomic writes (".NAME.ldtmp-XXXX").
bool IsSegmentEntryName(std::string_view name) {
  if (!name.empty() && name[0] == '.') name.remove_prefix(1);
  if (name.size() < 25) return false;
  for (size_t i = 0; i < 21; ++i)
    if (i == 10 ? name[i] != '-' : (name[i] < '0' || name[i] > '9')) return false;
  const std::string_view rest = name.substr(21);
  return rest == ".ldm" || rest.starts_with(".ldm.partial") || rest.starts_with(".ldm.ldtmp-");
}

bool IsStateDirEntryName(const std::string& name) {
  return name == kFollowStateFile || name == kFollowLockFile || name == kFollowSegmentsDir ||
         name.starts_with(std::string(".") + kFollowStateFile + ".ldtmp-");
}

}  // namespace

std::string FollowSegmentName(const LedgerRange& r) { return fmt::format("{:010}-{:010}.ldm", r.from, r.to); }

nlohmann::json FollowStateToJson(const FollowState& s) {
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& seg : s.segments) segs.push_back({{"from", seg.range.from}, {"to", seg.range.to}, {"file", seg.file}});
  return {{"format", kStateFormat},
          {"from", s.from},
          {"compared_through", s.compared_through},
          {"reaped_through", s.reaped_through},
          {"first_divergence", s.first_divergence ? nlohmann::json(*s.first_divergence) : nlohmann::json()},
          {"cycles", s.cycles},
          {"divergences", s.divergences},
          {"scrub_next", s.scrub_next},
          {"segments", segs},
          {"left", s.left},
          {"right", s.right},
          {"profile", s.profile},
          {"engine", dump::ToString(s.engine)}};
}

Result<FollowState> ParseFollowState(std::string_view text, const std::string& path) {
  if (text.size() > kMaxStateBytes)
    return Status::Usagef("{}: not a follow state ({} bytes, more than {})", path, text.size(), kMaxStateBytes);
  auto parsed = dump::ParseBoundedJson(text);
  if (!parsed.ok()) return Status::Usagef("{}: not a follow state (not JSON: {})", path, parsed.status().message());
  const nlohmann::json& j = *parsed;
  try {
    const uint64_t format = dump::JsonUnsigned(j, "", "format", 1000000);
    if (format != kStateFormat)
      return Status::Usagef("{}: state format {} (this ledgerdiff reads {})", path, format, kStateFormat);
    FollowState s;
    s.from = JsonLedger(j, "", "from");
    s.compared_through = JsonLedgerOrNone(j, "", "compared_through");
    if (s.compared_through + 1 < s.from)
      return Status::Usagef("{}: key \"compared_through\": {} is before the first ledger less one ({})", path,
                            s.compared_through, s.from - 1);
    // States written before retention was handled reaped nothing.
    s.reaped_through = j.contains("reaped_through") ? JsonLedgerOrNone(j, "", "reaped_through") : s.from - 1;
    if (s.reaped_through + 1 < s.from || s.reaped_through > s.compared_through)
      return Status::Usagef("{}: key \"reaped_through\": ledger {}, outside the compared ledgers {}:{}", path,
                            s.reaped_through, s.from - 1, s.compared_through);
    if (auto d = dump::JsonNullableUnsigned(j, "", "first_divergence", kHighestLedger)) {
      if (*d < s.from || *d > s.compared_through)
        return Status::Usagef("{}: key \"first_divergence\": ledger {}, outside the compared ledgers {}:{}", path, *d,
                              s.from, s.compared_through);
      s.first_divergence = static_cast<Ledger>(*d);
    }
    s.cycles = dump::JsonUnsigned(j, "", "cycles", kMaxCount - 1);
    s.divergences = dump::JsonUnsigned(j, "", "divergences", kMaxCount - 1);
    if (s.divergences > s.cycles)
      return Status::Usagef("{}: key \"divergences\": {} divergences in {} cycles", path, s.divergences, s.cycles);
    if (s.first_divergence && s.divergences == 0)
      return Status::Usagef("{}: key \"divergences\": 0, but a first divergence at ledger {}", path,
                            *s.first_divergence);
    if (s.compared_through >= s.from && s.cycles == 0)
      return Status::Usagef("{}: key \"cycles\": 0, but ledgers {}:{} were compared", path, s.from, s.compared_through);
    s.scrub_next = JsonLedger(j, "", "scrub_next");
    if (s.scrub_next < s.Kept() || s.scrub_next > s.compared_through + 1)
      return Status::Usagef("{}: key \"scrub_next\": ledger {}, outside the kept ledgers {}:{} and the next one", path,
                            s.scrub_next, s.Kept(), s.compared_through);
    const auto& stored = dump::JsonArray(j, "", "segments", kMaxSegments);
    // The first segment holds the first ledger kept (segments wholly reaped were dropped).
    Ledger next = s.compared_through + 1;
    if (!stored.empty()) next = JsonLedger(stored.front(), "segments[0]", "from");
    if (next < s.from || next > s.Kept() || (stored.empty() && s.compared_through >= s.Kept()))
      return Status::Usagef("{}: key \"segments\": they start at ledger {}, not at the first ledger kept {}", path, next,
                            s.Kept());
    for (size_t i = 0; i < stored.size(); ++i) {
      const std::string where = fmt::format("segments[{}]", i);
      FollowSegment one{{JsonLedger(stored[i], where, "from"), JsonLedger(stored[i], where, "to")},
                        dump::JsonString(stored[i], where, "file")};
      if (one.range.from != next || one.range.to < one.range.from || one.range.to > s.compared_through)
        return Status::Usagef("{}: key \"{}\": {} does not continue the verified range at ledger {}", path, where,
                              one.range.str(), next);
      next = one.range.to + 1;
      s.segments.push_back(std::move(one));
    }
    if (next != s.compared_through + 1)
      return Status::Usagef("{}: key \"segments\": they end at {}, the state at {}", path, next - 1,
                            s.compared_through);
    for (size_t i = 0; i < s.segments.size(); ++i)
      if (const FollowSegment& one = s.segments[i]; one.file != FollowSegmentName(one.range))
        return Status::Usagef("{}: key \"segments[{}].file\": {} is not the segment name of {} ({})", path, i,
                              Quoted(one.file), one.range.str(), FollowSegmentName(one.range));
    s.left = dump::JsonObject(j, "", "left");
    s.right = dump::JsonObject(j, "", "right");
    (void)dump::SourceIdentityFromJson(s.left, "left");
    (void)dump::SourceIdentityFromJson(s.right, "right");
    s.profile = dump::JsonString(j, "", "profile");
    // States written before the engine was recorded were verified by the text engine.
    const std::string engine =
        j.contains("engine") ? dump::JsonString(j, "", "engine") : std::string(dump::ToString(dump::DigestEngine::kText));
    if (auto e = dump::ParseDigestEngine(engine)) {
      s.engine = *e;
    } else {
      return Status::Usagef("{}: key \"engine\": {} is neither text nor server-hash", path, Quoted(engine));
    }
    return s;
  } catch (const std::exception& e) {
    return Status::Usagef("{}: not a follow state: {}", path, e.what());
  }
}

Status CheckFollowStateDir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return Status::Ok();
  if (fs::is_symlink(st)) return Status::Usagef("--state {} is a symbolic link; give the directory itself", dir);
  if (!fs::is_directory(st)) return Status::Usagef("--state {}: exists and is not a directory", dir);
  bool has_state = false, has_segments = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!IsStateDirEntryName(name))
      return Status::Usagef(
          "--state {}: the directory is not empty and does not hold a follow state ({} is not the follower's); "
          "refusing to use it (give a new or empty directory)",
          dir, name);
    const fs::file_status est = e.symlink_status(ec);
    if (fs::is_symlink(est)) return Status::Usagef("--state {}: {} is a symbolic link; refusing to follow it", dir, name);
    const bool want_dir = name == kFollowSegmentsDir;
    if (want_dir ? !fs::is_directory(est) : !fs::is_regular_file(est))
      return Status::Usagef("--state {}: {} is not a {}", dir, name, want_dir ? "directory" : "regular file");
    has_state = has_state || name == kFollowStateFile;
    has_segments = has_segments || want_dir;
  }
  if (ec) return Status::Usagef("--state {}: cannot list it: {}", dir, ec.message());
  if (!has_segments) return Status::Ok();
  const fs::path segments = fs::path(dir) / kFollowSegmentsDir;
  for (const auto& e : fs::directory_iterator(segments, ec)) {
    const std::string name = e.path().filename().string();
    if (!has_state || !IsSegmentEntryName(name))
      return Status::Usagef(
          "--state {}: {}/{} is not the follower's{}; refusing to use the directory (give a new or empty directory)",
          dir, kFollowSegmentsDir, name, has_state ? "" : " (and there is no state.json)");
    if (e.is_symlink(ec))
      return Status::Usagef("--state {}: {}/{} is a symbolic link; refusing to follow it", dir, kFollowSegmentsDir, name);
  }
  if (ec) return Status::Usagef("--state {}: cannot list {}: {}", dir, kFollowSegmentsDir, ec.message());
  return Status::Ok();
}

Result<FollowState> LoadFollowState(const std::string& dir) {
  const std::string path = (fs::path(dir) / kFollowStateFile).string();
  LD_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, "follow state " + path, O_NOFOLLOW));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::Runtimef("follow state {}: cannot read: {}", path, std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxStateBytes) break;
  }
  ::close(fd);
  LD_ASSIGN_OR_RETURN(FollowState s, ParseFollowState(text, path));
  for (const auto& seg : s.segments) {
    const std::string file = (fs::path(dir) / kFollowSegmentsDir / seg.file).string();
    struct stat st {};
    const bool found = ::lstat(file.c_str(), &st) == 0;
    if (!found || !S_ISREG(st.st_mode))
      return Status::Usagef("{}: segment {} ({}) is {}", path, seg.range.str(), file,
                            found ? "not a regular file" : "missing");
  }
  return s;
}

Status SaveFollowState(const std::string& dir, const FollowState& s) {
  return WriteFileAtomic((fs::path(dir) / kFollowStateFile).string(), FollowStateToJson(s).dump(2) + "\n");
}

void RemoveUnreferencedSegments(const std::string& dir, const FollowState& s) {
  std::set<std::string> keep;
  for (const auto& seg : s.segments) keep.insert(seg.file);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / kFollowSegmentsDir, ec)) {
    const std::string name = e.path().filename().string();
    if (!keep.count(name) && IsSegmentEntryName(name)) fs::remove(e.path(), ec);
  }
}

}  // namespace ledgerdiff::verify
