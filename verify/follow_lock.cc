#include "verify/follow_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/report.h"

namespace ledgerdiff::verify {

namespace {

namespace fs = std::filesystem;

// The holder line its holder wrote (untrusted: at most one line of 200 printable bytes), or "".
std::string Holder(int fd) {
  char buf[201];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string line(buf, static_cast<size_t>(n));
  line = line.substr(0, line.find('\n'));
  for (char c : line)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return "";
  return "held by " + line;
}
std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

}  // namespace

Result<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir) {
  const std::string path = (fs::path(dir) / "lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Status::Usagef("--state {}: cannot open {}: {}", dir, path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = Holder(fd);
    ::close(fd);
    return Status::Usagef("--state {} is in use by another verify-range --follow ({}its lock {} is held)", dir,
                          holder.empty() ? "" : holder + "; ", path);
  }
  // Who holds it, for the next one refused: "pid 123 on host db1 since 2026-12-07T08:00:00Z".
  const std::string me = fmt::format("pid {} on host {} since {}\n", ::getpid(), HostName(), IsoTimeNow());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // Only the refusal's message loses its holder; the lock itself holds.
  }
  auto lock = std::unique_ptr<DirLock>(new DirLock);
  lock->fd_ = fd;
  return lock;
}

DirLock::~DirLock() { ::close(fd_); }

}  // namespace ledgerdiff::verify
