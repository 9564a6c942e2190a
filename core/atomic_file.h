#pragma once
// Files the tool writes: never half-written, never through a symbolic link.
//
// CONTRACT (every file ledgerdiff writes: manifests, merged manifests, reports, dumps, CSV,
// the man page):
// - The target is replaced only by rename(2) of a complete file. That file is created new
//   (O_CREAT | O_EXCL | O_NOFOLLOW) under a random name ".<name>.ldtmp-XXXXXXXXXXXX" in the
//   target's own directory (so the rename never crosses a file system), written, fsynced, then
//   renamed over the target; the directory is fsynced after the rename.
// - A symbolic link at the target, or a target that is not a regular file, is refused with a
//   Usage error (exit 2) before anything is written. A link planted at a temporary name cannot
//   be followed: the name is random and opened with O_EXCL | O_NOFOLLOW.
// - Until Commit(), the target is untouched. An AtomicFile destroyed without Commit(), or a
//   process ended by SIGINT/SIGTERM/SIGHUP, removes its temporary file.
// Errors: a path the user gave that cannot be written (no such directory, permission, a
// directory in the way) is a Usage error (exit 2); a failure while writing (disk full, I/O
// error) is a Runtime error (exit 3).

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace ledgerdiff {

// Usage error unless `target` can be written by AtomicFile: not a symbolic link, a regular file
// when it exists, its directory an existing directory. Checks only; creates nothing. Commands
// call it for every output path before doing any work.
Status CheckWriteTarget(const std::string& target);

class AtomicFile {
 public:
  // REQUIRES: `target` names a file (not ending in '/').
  static Result<std::unique_ptr<AtomicFile>> Create(const std::string& target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  Status Write(std::string_view data);
  Status Write(const void* data, size_t n) { return Write(std::string_view(static_cast<const char*>(data), n)); }
  // Flushes, fsyncs, renames over the target (refusing a symlink that appeared there since
  // Create), fsyncs the directory. After Commit (ok or not) no further Write is allowed.
  Status Commit();
  // Bytes written so far.
  uint64_t size() const { return size_; }
  const std::string& target() const { return target_; }

 private:
  AtomicFile() = default;
  Status Flush();
  void Discard();

  std::string target_, tmp_;
  int fd_ = -1;
  int cleanup_ = 0;
  uint64_t size_ = 0;
  std::string buffer_;  // coalesces small writes; flushed at 1 MiB and at Commit
};

// The whole of `content` to `target` through an AtomicFile.
Status WriteFileAtomic(const std::string& target, std::string_view content);

// FILES THE TOOL READS (manifests, baselines, profiles, checkpoints): only regular files.
// Opens `path` with `flags` | O_NONBLOCK | O_CLOEXEC (a FIFO with no writer would block open(2)
// forever), judges what was opened by fstat (no swap between a check and the open), then clears
// O_NONBLOCK. Anything but a regular file is a Usage error "<label>: not a regular file (a FIFO)";
// `label` names the path as the caller's other messages do (e.g. `manifest m.ldm`). When open(2)
// itself fails, the Usage error is "<label>: cannot read: <strerror>" and *open_errno (when given)
// is its errno (0 otherwise). The caller closes the returned descriptor.
Result<int> OpenRegularFile(const std::string& path, std::string_view label, int flags = 0,
                            int* open_errno = nullptr);
// The same check, closing the file: for commands that refuse their inputs before any work.
Status CheckRegularFile(const std::string& path, std::string_view label);

}  // namespace ledgerdiff
