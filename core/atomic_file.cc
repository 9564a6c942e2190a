#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/process.h"

namespace ledgerdiff {
namespace {

constexpr size_t kFlushAt = 1 << 20;

// Errors of open(2)/stat(2) that say the path the user gave cannot be written (exit 2); any
// other (ENOSPC, EIO, ...) is the environment failing (exit 3).
bool IsPathError(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EROFS:
    case EISDIR:
    case ELOOP:
    case ENAMETOOLONG:
      return true;
    default:
      return false;
  }
}

Status OpenError(const std::string& target, int err) {
  if (IsPathError(err)) return Status::Usagef("cannot write {}: {}", target, std::strerror(err));
  return Status::Runtimef("cannot write {}: {}", target, std::strerror(err));
}

std::string DirectoryOf(const std::string& target) {
  std::filesystem::path dir = std::filesystem::path(target).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[12];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    // getrandom cannot fail for 12 bytes after boot; fall back to the clock and pid.
    uint64_t seed = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(time(nullptr));
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(seed >>= 5);
  }
  std::string s;
  for (unsigned char b : bytes) s += kAlphabet[b % (sizeof kAlphabet - 1)];
  return s;
}

Status RefuseLinkOrSpecial(const std::string& target) {
  struct stat st {};
  if (lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return OpenError(target, errno);
  }
  if (S_ISLNK(st.st_mode)) return Status::Usagef("refusing to write {}: it is a symbolic link", target);
  if (!S_ISREG(st.st_mode)) return Status::Usagef("cannot write {}: it exists and is not a regular file", target);
  return Status::Ok();
}

}  // namespace

Status CheckWriteTarget(const std::string& target) {
  if (target.empty()) return Status::Usage("an output path is empty");
  if (target.back() == '/') return Status::Usagef("cannot write {}: it names a directory", target);
  LD_RETURN_IF_ERROR(RefuseLinkOrSpecial(target));
  const std::string dir = DirectoryOf(target);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return OpenError(target, errno);
  if (!S_ISDIR(st.st_mode)) return Status::Usagef("cannot write {}: {} is not a directory", target, dir);
  if (access(dir.c_str(), W_OK | X_OK) != 0) return OpenError(target, errno);
  return Status::Ok();
}

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& target) {
  LD_RETURN_IF_ERROR(CheckWriteTarget(target));
  std::unique_ptr<AtomicFile> f(new AtomicFile());
  f->target_ = target;
  const std::string dir = DirectoryOf(target);
  const std::string base = std::filesystem::path(target).filename().string();
  for (int attempt = 0; attempt < 16 && f->fd_ < 0; ++attempt) {
    f->tmp_ = (std::filesystem::path(dir) / ("." + base + ".ldtmp-" + RandomSuffix())).string();
    f->fd_ = open(f->tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f->fd_ < 0 && errno != EEXIST) return OpenError(target, errno);
  }
  if (f->fd_ < 0) return Status::Runtimef("cannot write {}: no free temporary name in {}", target, dir);
  f->cleanup_ = RegisterDescribedCleanup([tmp = f->tmp_, target] {
    return unlink(tmp.c_str()) == 0 ? "removed the unfinished " + target + " (its temporary file)" : std::string();
  });
  return f;
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
    unlink(tmp_.c_str());
  }
  if (cleanup_) {
    UnregisterCleanup(cleanup_);
    cleanup_ = 0;
  }
}

Status AtomicFile::Flush() {
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Runtimef("cannot write {}: {}", target_, std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  buffer_.clear();
  return Status::Ok();
}

Status AtomicFile::Write(std::string_view data) {
  if (fd_ < 0) return Status::Runtimef("cannot write {}: already closed", target_);
  size_ += data.size();
  if (buffer_.empty() && data.size() >= kFlushAt) {
    buffer_.assign(data);  // one copy, then one write(2) loop
    return Flush();
  }
  buffer_.append(data);
  if (buffer_.size() >= kFlushAt) return Flush();
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (fd_ < 0) return Status::Runtimef("cannot write {}: already closed", target_);
  Status s = Flush();
  if (s.ok() && fsync(fd_) != 0) s = Status::Runtimef("cannot write {}: fsync: {}", target_, std::strerror(errno));
  if (s.ok() && close(fd_) != 0) {
    fd_ = -1;
    s = Status::Runtimef("cannot write {}: close: {}", target_, std::strerror(errno));
  } else if (s.ok()) {
    fd_ = -1;
  }
  // A link planted at the target since Create is refused, not replaced silently.
  if (s.ok()) s = RefuseLinkOrSpecial(target_);
  if (s.ok() && rename(tmp_.c_str(), target_.c_str()) != 0)
    s = Status::Runtimef("cannot write {}: rename: {}", target_, std::strerror(errno));
  if (!s.ok()) {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    unlink(tmp_.c_str());
    Discard();
    return s;
  }
  int dfd = open(DirectoryOf(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // best effort: some file systems refuse fsync on a directory
    close(dfd);
  }
  Discard();
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& target, std::string_view content) {
  LD_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> f, AtomicFile::Create(target));
  LD_RETURN_IF_ERROR(f->Write(content));
  return f->Commit();
}

Result<int> OpenRegularFile(const std::string& path, std::string_view label, int flags, int* open_errno) {
  if (open_errno) *open_errno = 0;
  const int fd = ::open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC, 0644);  // 0644 when flags hold O_CREAT
  if (fd < 0) {
    const int err = errno;
    if (open_errno) *open_errno = err;
    return Status::Usagef("{}: cannot read: {}", label, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Usagef("{}: not a regular file ({})", label,
                          S_ISFIFO(st.st_mode)   ? "a FIFO"
                          : S_ISDIR(st.st_mode)  ? "a directory"
                          : S_ISCHR(st.st_mode)  ? "a character device"
                          : S_ISBLK(st.st_mode)  ? "a block device"
                          : S_ISSOCK(st.st_mode) ? "a socket"
                                                 : "not a plain file");
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

Status CheckRegularFile(const std::string& path, std::string_view label) {
  LD_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, label));
  ::close(fd);
  return Status::Ok();
}

}  // namespace ledgerdiff
