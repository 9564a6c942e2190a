#pragma once
// Temporary directories that are never left behind for good.
//
// An owned temporary directory is ROOT/<prefix>XXXXXX holding an owner marker (OWNER_FILE:
// the creating process's pid, its start time and the boot id). A process killed by SIGKILL
// cannot clean up; the next ledgerdiff run reaps every ROOT/ledgerdiff-* directory whose
// marker names a process that is gone (ReapStaleTempDirs). Directories without a marker (unless
// they hold nothing else and are older than kUnmarkedGrace: the creator died before writing it),
// or whose owner is alive, or that still hold a running PostgreSQL server, are never touched.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ledgerdiff {

constexpr const char* kOwnerMarkerFile = ".ledgerdiff-owner";
constexpr const char* kTempDirPrefix = "ledgerdiff-";

// $TMPDIR when set and non-empty, else /tmp. An error naming TMPDIR when it is not an existing
// directory (never throws, never aborts).
Result<std::string> TempRoot();

// Creates `root`/`prefix`XXXXXX (root: TempRoot() when empty) with an owner marker for this
// process. REQUIRES: prefix starts with "ledgerdiff-" (so reaping finds it) and has no '/'.
// The caller removes it when done (RemoveTree), and should register a cleanup for signals.
Result<std::string> MakeOwnedTempDir(const std::string& prefix, const std::string& root = "");

// Writes the owner marker for this process into `dir`.
Status WriteOwnerMarker(const std::string& dir);

// True when the marker in `dir` names a process that no longer exists (pid gone, or reused by
// a process that started at another time, or another boot). Without a (complete) marker: true
// only for a directory holding nothing else, last written more than kUnmarkedGrace ago.
constexpr std::chrono::minutes kUnmarkedGrace{10};
bool OwnerIsGone(const std::string& dir);

// Removes every stale owned directory directly under `root`; returns the removed paths.
std::vector<std::string> ReapStaleTempDirs(const std::string& root);

// Reaps under TempRoot() and the fallback roots the embedded server uses (/tmp, /var/tmp), and
// says so on stderr in one line when anything was removed. Errors are ignored (best effort).
void ReapStaleTempDirsAndReport();

// A file name for `name` that stays inside its directory: every byte outside [A-Za-z0-9_.-]
// is percent-encoded ("../x" -> "..%2Fx"), and "." / ".." / "" are encoded whole ("%2E%2E").
// Injective: distinct names give distinct file names ('%' itself is encoded).
std::string SafeFileName(std::string_view name);

// Removes `path` recursively (never throws); an error naming it when it is still there.
Status RemoveTree(const std::string& path);

}  // namespace ledgerdiff
