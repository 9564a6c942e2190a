#include "verify/follow_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "dump/bounded_json.h"
#include "dump/shard.h"
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

nlohmann::json OpenDivergenceToJson(const OpenDivergence& d) {
  nlohmann::json j = {{"from", d.ledgers.from}, {"to", d.ledgers.to}, {"how", d.how},  {"sides", ToString(d.sides)},
                      {"tables", d.tables},     {"found_at", d.found_at}, {"cycle", d.cycle}};
  if (d.how == kFoundInState) j["differing_keys"] = d.differing_keys;
  return j;
}

// An open divergence at `where` (already an object), its ledgers within from..compared_through.
OpenDivergence ParseOpenDivergence(const nlohmann::json& j, const std::string& where) {
  OpenDivergence d;
  d.ledgers = {JsonLedger(j, where, "from"), JsonLedger(j, where, "to")};
  if (d.ledgers.to < d.ledgers.from)
    throw dump::JsonFormatError(fmt::format("key \"{}\": {} is before \"from\" {}", dump::JsonPath(where, "to"),
                                            d.ledgers.to, d.ledgers.from));
  d.how = dump::JsonString(j, where, "how");
  if (d.how != kFoundInNewLedgers && d.how != kFoundByScrub && d.how != kFoundGone && d.how != kFoundByRecheck &&
      d.how != kFoundInState)
    throw dump::JsonFormatError(fmt::format("key \"{}\": {} is not {}, {}, {}, {} or {}", dump::JsonPath(where, "how"),
                                            Quoted(d.how), kFoundInNewLedgers, kFoundByScrub, kFoundGone,
                                            kFoundByRecheck, kFoundInState));
  const std::string sides = dump::JsonString(j, where, "sides");
  const std::optional<SideSet> parsed = ParseSideSet(sides);
  if (!parsed)
    throw dump::JsonFormatError(fmt::format("key \"{}\": {} is not left, right or both",
                                            dump::JsonPath(where, "sides"), Quoted(sides)));
  d.sides = *parsed;
  const auto& tables = dump::JsonArray(j, where, "tables", 256);
  for (size_t i = 0; i < tables.size(); ++i) {
    if (!tables[i].is_string() || tables[i].get_ref<const std::string&>().size() > 256)
      throw dump::JsonFormatError(fmt::format("key \"{}[{}]\": not a table name", dump::JsonPath(where, "tables"), i));
    d.tables.push_back(tables[i].get<std::string>());
  }
  d.found_at = static_cast<int64_t>(dump::JsonUnsigned(j, where, "found_at", kMaxCount - 1));
  d.cycle = dump::JsonUnsigned(j, where, "cycle", kMaxCount - 1);
  if (d.how == kFoundInState && j.contains("differing_keys"))
    d.differing_keys = dump::JsonUnsigned(j, where, "differing_keys", kMaxCount - 1);
  return d;
}

}  // namespace

std::string FollowSegmentName(const LedgerRange& r) { return fmt::format("{:010}-{:010}.ldm", r.from, r.to); }

nlohmann::json FollowStateToJson(const FollowState& s) {
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& seg : s.segments) segs.push_back({{"from", seg.range.from}, {"to", seg.range.to}, {"file", seg.file}});
  nlohmann::json open = nlohmann::json::array(), closed = nlohmann::json::array();
  for (const auto& d : s.open_divergences) open.push_back(OpenDivergenceToJson(d));
  for (const auto& c : s.closed_divergences) {
    nlohmann::json one = OpenDivergenceToJson(c.divergence);
    one["closed_at"] = c.closed_at;
    one["closed_cycle"] = c.cycle;
    one["closed_why"] = c.why;
    closed.push_back(std::move(one));
  }
  return {{"format", kStateFormat},
          {"from", s.from},
          {"compared_through", s.compared_through},
          {"reaped_through", s.reaped_through},
          {"first_divergence", s.first_divergence ? nlohmann::json(*s.first_divergence) : nlohmann::json()},
          {"cycles", s.cycles},
          {"divergences", s.divergences},
          {"scrub_next", s.scrub_next},
          {"segments", segs},
          {"open_divergences", open},
          {"closed_divergences", closed},
          {"left", s.left},
          {"right", s.right},
          {"profile", s.profile},
          {"engine", dump::ToString(s.engine)},
          {"state_last_agreed_ledger",
           s.state_last_agreed_ledger ? nlohmann::json(*s.state_last_agreed_ledger) : nlohmann::json()},
          {"state_last_agreed_at", s.state_last_agreed_at},
          {"state_last_compared_at", s.state_last_compared_at}};
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
    // States written before divergences were kept (issue 43): the first one, from its ledger on.
    if (j.contains("open_divergences")) {
      // The history ones (at most kMaxOpenDivergences) and, last, at most one of the state.
      const auto& open = dump::JsonArray(j, "", "open_divergences", kMaxOpenDivergences + 1);
      for (size_t i = 0; i < open.size(); ++i) {
        const std::string where = fmt::format("open_divergences[{}]", i);
        if (!open[i].is_object()) throw dump::JsonFormatError(fmt::format("key \"{}\": not an object", where));
        OpenDivergence d = ParseOpenDivergence(open[i], where);
        const bool state = d.how == kFoundInState;
        if (!s.open_divergences.empty() && s.open_divergences.back().how == kFoundInState)
          return Status::Usagef("{}: key \"{}\": after the state divergence (it is the last one)", path, where);
        if (state ? d.ledgers.to != d.ledgers.from : (d.ledgers.from < s.from || i >= kMaxOpenDivergences))
          return Status::Usagef("{}: key \"{}\": ledgers {} are not {}", path, where, d.ledgers.str(),
                                state ? "one state ledger" : "within the state's");
        if (d.cycle > s.cycles || d.cycle == 0)
          return Status::Usagef("{}: key \"{}\": ledger {} or cycle {} outside the state's (from {}, {} cycles)", path,
                                where, d.ledgers.from, d.cycle, s.from, s.cycles);
        if (!state && !s.open_divergences.empty() && d.ledgers.from <= s.open_divergences.back().ledgers.from)
          return Status::Usagef("{}: key \"{}\": not ordered by first ledger", path, where);
        s.open_divergences.push_back(std::move(d));
      }
      const auto& closed = dump::JsonArray(j, "", "closed_divergences", kMaxClosedDivergences);
      for (size_t i = 0; i < closed.size(); ++i) {
        const std::string where = fmt::format("closed_divergences[{}]", i);
        if (!closed[i].is_object()) throw dump::JsonFormatError(fmt::format("key \"{}\": not an object", where));
        ClosedDivergence c{ParseOpenDivergence(closed[i], where),
                           static_cast<int64_t>(dump::JsonUnsigned(closed[i], where, "closed_at", kMaxCount - 1)),
                           dump::JsonUnsigned(closed[i], where, "closed_cycle", s.cycles),
                           dump::JsonString(closed[i], where, "closed_why")};
        s.closed_divergences.push_back(std::move(c));
      }
    } else if (s.first_divergence) {
      s.open_divergences.push_back(
          {{*s.first_divergence, s.compared_through}, kFoundInNewLedgers, SideSet::kNone, {}, 0, s.cycles});
    }
    if (s.open_divergences.size() > s.divergences)
      return Status::Usagef("{}: key \"open_divergences\": {} open, {} found", path, s.open_divergences.size(),
                            s.divergences);
    if (s.first_divergence &&
        std::none_of(s.open_divergences.begin(), s.open_divergences.end(),
                     [&](const OpenDivergence& d) { return d.how != kFoundInState && d.ledgers.from == *s.first_divergence; }))
      return Status::Usagef("{}: key \"first_divergence\": ledger {} is not an open divergence", path,
                            *s.first_divergence);
    // States written before the follower compared state (issue 45) have none of these keys.
    if (auto l = j.contains("state_last_agreed_ledger")
                     ? dump::JsonNullableUnsigned(j, "", "state_last_agreed_ledger", kHighestLedger)
                     : std::nullopt) {
      if (*l == 0) return Status::Usagef("{}: key \"state_last_agreed_ledger\": 0 is not a ledger", path);
      s.state_last_agreed_ledger = static_cast<Ledger>(*l);
    }
    if (j.contains("state_last_agreed_at"))
      s.state_last_agreed_at = static_cast<int64_t>(dump::JsonUnsigned(j, "", "state_last_agreed_at", kMaxCount - 1));
    if (j.contains("state_last_compared_at"))
      s.state_last_compared_at =
          static_cast<int64_t>(dump::JsonUnsigned(j, "", "state_last_compared_at", kMaxCount - 1));
    if (s.state_last_agreed_ledger.has_value() != (s.state_last_agreed_at != 0) ||
        s.state_last_agreed_at > s.state_last_compared_at)
      return Status::Usagef("{}: key \"state_last_agreed_at\": {}, with a last agreed ledger {} and state last "
                            "compared at {}",
                            path, s.state_last_agreed_at,
                            s.state_last_agreed_ledger ? std::to_string(*s.state_last_agreed_ledger) : "none",
                            s.state_last_compared_at);
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

Status ReplaceSegmentLedgers(const std::string& dir, const FollowState& s, const LedgerRange& r,
                             const std::string& fresh) {
  const fs::path segments = fs::path(dir) / kFollowSegmentsDir;
  std::error_code ec;
  for (const FollowSegment& seg : s.segments) {
    if (seg.range.to < r.from || seg.range.from > r.to) continue;
    // The pieces are segment leftovers by name (".ldm.partial..."): an interrupted run's are removed.
    std::vector<std::string> pieces;
    auto cut = [&](const std::string& from, const LedgerRange& part) -> Status {
      const std::string piece = (segments / (FollowSegmentName(part) + ".partial-cut")).string();
      LD_RETURN_IF_ERROR(dump::CutManifest(from, part, piece).status());
      pieces.push_back(piece);
      return Status::Ok();
    };
    const std::string stored = (segments / seg.file).string();
    Status st = Status::Ok();
    if (seg.range.from < r.from) st = cut(stored, {seg.range.from, r.from - 1});
    if (st.ok()) st = cut(fresh, {std::max(seg.range.from, r.from), std::min(seg.range.to, r.to)});
    if (st.ok() && seg.range.to > r.to) st = cut(stored, {r.to + 1, seg.range.to});
    if (st.ok()) st = dump::ConcatenateManifests(pieces, stored).status();
    for (const auto& p : pieces) fs::remove(p, ec);
    LD_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Result<FollowStatus> ReadFollowStatus(const std::string& dir) {
  LD_RETURN_IF_ERROR(CheckFollowStateDir(dir));
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(fs::path(dir) / kFollowStateFile, ec)))
    return Status::Usagef("--state {}: no follow state there (no {})", dir, kFollowStateFile);
  FollowStatus st;
  st.dir = dir;
  LD_ASSIGN_OR_RETURN(st.state, LoadFollowState(dir));
  for (const auto& seg : st.state.segments) {
    const auto size = fs::file_size(fs::path(dir) / kFollowSegmentsDir / seg.file, ec);
    if (!ec) st.segment_bytes += size;
  }
  // The lock file is untrusted: one line of printable ASCII, at most 200 bytes, else none.
  const std::string lock = (fs::path(dir) / kFollowLockFile).string();
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd >= 0) {
    char buf[201];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string line = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    line = line.substr(0, line.find('\n'));
    const bool printable = std::all_of(line.begin(), line.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
    if (printable) st.holder = line;
  }
  // "pid P on host H since T": alive on this host?
  unsigned long pid = 0;
  char host[256] = {}, mine[256] = {};
  if (!st.holder.empty() && std::sscanf(st.holder.c_str(), "pid %lu on host %255s", &pid, host) == 2 &&
      ::gethostname(mine, sizeof mine - 1) == 0 && std::string(host) == mine && pid > 0 && pid < (1ul << 22))
    st.holder_running = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
  return st;
}

}  // namespace ledgerdiff::verify
