#include "core/tempdir.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace ledgerdiff {

namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::string out;
  char buf[4096];
  in.read(buf, sizeof buf);
  out.assign(buf, static_cast<size_t>(in.gcount()));
  return out;
}

std::string BootId() {
  std::string id = ReadSmallFile("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// Field 22 of /proc/PID/stat (start time in clock ticks since boot); "" when PID is gone.
std::string ProcessStartTime(pid_t pid) {
  std::string stat = ReadSmallFile(fmt::format("/proc/{}/stat", pid));
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string f;
  for (int i = 3; i <= 22 && (fields >> f); ++i) {
    if (i == 22) return f;
  }
  return "";
}

bool ProcessExists(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// A PostgreSQL server still running from `dir` (its postmaster.pid names a live process whose
// command line mentions the directory).
bool ServerStillRunning(const fs::path& dir) {
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto& e = *it;
    if (it.depth() >= 2) it.disable_recursion_pending();  // clusters live at DIR/data or DIR/*/data
    if (e.path().filename() != "postmaster.pid") continue;
    std::istringstream in(ReadSmallFile(e.path().string()));
    long pid = 0;
    if (!(in >> pid) || !ProcessExists(static_cast<pid_t>(pid))) continue;
    std::string cmdline = ReadSmallFile(fmt::format("/proc/{}/cmdline", pid));
    if (cmdline.find(dir.string()) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

Result<std::string> TempRoot() {
  const char* env = std::getenv("TMPDIR");
  std::string root = env && *env ? env : "/tmp";
  struct stat st {};
  if (stat(root.c_str(), &st) != 0)
    return Status::Usagef("TMPDIR={}: {} (set TMPDIR to an existing directory)", root, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return Status::Usagef("TMPDIR={}: not a directory", root);
  return root;
}

Status WriteOwnerMarker(const std::string& dir) {
  std::string path = (fs::path(dir) / kOwnerMarkerFile).string();
  std::ofstream out(path, std::ios::trunc);
  out << "pid=" << getpid() << "\nstart=" << ProcessStartTime(getpid()) << "\nboot=" << BootId() << "\n";
  out.close();
  if (!out) return Status::Runtimef("cannot write {}: {}", path, std::strerror(errno));
  return Status::Ok();
}

Result<std::string> MakeOwnedTempDir(const std::string& prefix, const std::string& root_in) {
  std::string root = root_in;
  if (root.empty()) {
    LD_ASSIGN_OR_RETURN(root, TempRoot());
  }
  std::string tmpl = (fs::path(root) / (prefix + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) return Status::Runtimef("cannot create a directory in {}: {}", root, std::strerror(errno));
  Status marked = WriteOwnerMarker(tmpl);
  if (!marked.ok()) {
    (void)RemoveTree(tmpl);
    return marked;
  }
  return tmpl;
}

bool OwnerIsGone(const std::string& dir) {
  std::istringstream in(ReadSmallFile((fs::path(dir) / kOwnerMarkerFile).string()));
  long pid = 0;
  std::string start, boot;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("pid=", 0) == 0) pid = std::atol(line.c_str() + 4);
    if (line.rfind("start=", 0) == 0) start = line.substr(6);
    if (line.rfind("boot=", 0) == 0) boot = line.substr(5);
  }
  if (pid <= 0) {
    // No (complete) marker: ours to judge only as the leftover of a creator killed between
    // mkdtemp and the marker's write, which a live creator never leaves for more than an
    // instant: the directory holds nothing but (a part of) the marker and is older than
    // kUnmarkedGrace.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename() != kOwnerMarkerFile) return false;
    if (ec) return false;
    const auto written = fs::last_write_time(dir, ec);
    return !ec && fs::file_time_type::clock::now() - written > kUnmarkedGrace;
  }
  if (!boot.empty() && boot != BootId()) return true;
  if (!ProcessExists(static_cast<pid_t>(pid))) return true;
  std::string now = ProcessStartTime(static_cast<pid_t>(pid));
  return !start.empty() && !now.empty() && now != start;
}

std::vector<std::string> ReapStaleTempDirs(const std::string& root) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, fs::directory_options::skip_permission_denied, ec)) {
    std::string name = e.path().filename().string();
    std::error_code type_ec;
    if (name.rfind(kTempDirPrefix, 0) != 0 || !e.is_directory(type_ec) || e.is_symlink(type_ec)) continue;
    if (!OwnerIsGone(e.path().string()) || ServerStillRunning(e.path())) continue;
    if (RemoveTree(e.path().string()).ok()) removed.push_back(e.path().string());
  }
  return removed;
}

void ReapStaleTempDirsAndReport() {
  std::vector<std::string> roots = {"/tmp", "/var/tmp"};
  if (auto r = TempRoot(); r.ok()) roots.insert(roots.begin(), *r);
  std::vector<std::string> removed;
  std::vector<fs::path> seen;
  for (const auto& root : roots) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(root, ec);
    if (ec || std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(canonical);
    for (auto& p : ReapStaleTempDirs(root)) removed.push_back(std::move(p));
  }
  if (removed.empty()) return;
  std::string list;
  for (const auto& p : removed) list += (list.empty() ? "" : ", ") + p;
  std::fprintf(stderr, "ledgerdiff: removed %zu leftover director%s of killed runs: %s\n", removed.size(),
               removed.size() == 1 ? "y" : "ies", list.c_str());
}

std::string SafeFileName(std::string_view name) {
  constexpr char kHex[] = "0123456789ABCDEF";
  auto encode = [&](unsigned char c) { return std::string{'%', kHex[c >> 4], kHex[c & 15]}; };
  if (name.empty()) return "%";
  if (name == "." || name == "..") {
    std::string out;
    for (char c : name) out += encode(static_cast<unsigned char>(c));
    return out;
  }
  std::string out;
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-') out += ch;
    else out += encode(c);
  }
  return out;
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (fs::exists(fs::symlink_status(path, ec))) return Status::Runtimef("could not remove {}: {}", path, ec.message());
  return Status::Ok();
}

}  // namespace ledgerdiff
