#pragma once
// The follow state directory's lock (DIR/lock): an exclusive flock held for the follower's life,
// released by the kernel on any exit. Its holder writes one line, "pid N on host H since T", that
// a refused follower quotes.

#include <memory>
#include <string>

#include "core/status.h"

namespace ledgerdiff::verify {

class DirLock {
 public:
  // Usage error (exit 2) when DIR/lock cannot be opened or another process holds it (naming the
  // holder when its line is readable).
  static Result<std::unique_ptr<DirLock>> Acquire(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  DirLock() = default;
  int fd_ = -1;
};

}  // namespace ledgerdiff::verify
