#pragma once
// Shared by the libFuzzer targets of this directory: a scratch directory, whole-file writes, and
// the checks that turn a broken property into a crash libFuzzer records (abort).

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace ledgerdiff::fuzz {

// A finding: printed, then abort() (libFuzzer saves the input as crash-*).
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "\n==ledgerdiff fuzz check failed== %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

#define LD_FUZZ_CHECK(cond, ...)                                     \
  do {                                                               \
    if (!(cond)) ::ledgerdiff::fuzz::Fail(fmt::format(__VA_ARGS__)); \
  } while (0)

// This process's scratch directory, $TMPDIR/ldfuzz-XXXXXX (ci/fuzz points TMPDIR at a directory
// it removes afterwards), removed at a normal exit.
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ldfuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) Fail("cannot create a scratch directory under $TMPDIR");
    static std::string made = pattern;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return pattern;
  }();
  return dir;
}

// Replaces `path` with exactly `size` bytes of `data`.
inline void WriteFile(const std::string& path, const void* data, size_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) Fail("cannot write " + path);
  const char* p = static_cast<const char*>(data);
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, p + done, size - done);
    if (n <= 0) Fail("cannot write " + path);
    done += static_cast<size_t>(n);
  }
  close(fd);
}

// The contract for bad input: a usage error (exit 2) with a message, which names the file `path`
// when one is given.
inline void CheckBadInput(const Status& s, const std::string& path, const char* what) {
  LD_FUZZ_CHECK(s.kind() == Status::Kind::kUsage, "{}: bad input must be a usage error (exit 2), got exit {}: {}", what,
                static_cast<int>(s.exit_code()), s.message());
  LD_FUZZ_CHECK(!s.message().empty(), "{}: an error without a message", what);
  LD_FUZZ_CHECK(path.empty() || s.message().find(path) != std::string::npos,
                "{}: the error does not name the file {}: {}", what, path, s.message());
}

}  // namespace ledgerdiff::fuzz
