#pragma once
// Child processes and orderly termination.
//
// Spawn starts a program with fork+exec, optionally as another user, in its own process group
// (so a signal to the group reaches everything it started), with a parent-death signal.
// The termination handler turns SIGINT/SIGTERM/SIGHUP/SIGPIPE into an orderly cleanup on a dedicated
// thread (cleanup may allocate and talk to servers), then exits 128+signal.

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ledgerdiff {

struct SpawnOptions {
  std::optional<uid_t> uid;             // run as this user (root only)
  std::optional<gid_t> gid;
  bool new_process_group = true;        // setpgid(0, 0)
  int parent_death_signal = 0;          // PR_SET_PDEATHSIG, 0 for none
  std::string output_file;              // stdout (and stderr, unless error_file) appended here; empty: inherit
  std::string error_file;               // stderr appended here; empty: like stdout
  bool stdin_null = true;
  std::map<std::string, std::string> env;  // added to (or replacing in) the environment
  std::vector<std::string> unset_env_prefixes;  // variables starting with these are removed
  std::string working_dir;
};

// Starts argv[0] (searched in PATH when it has no '/'). Returns the child's pid.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

struct ExitInfo {
  bool exited = false;  // exited normally with `code`
  int code = 0;
  int signal = 0;       // killed by this signal
  std::string str() const;  // "exit 3", "killed by SIGKILL"
};
ExitInfo DecodeWaitStatus(int wait_status);

// Runs a program to completion (stdout+stderr to `options.output_file` if set).
Result<ExitInfo> RunToCompletion(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// Path of the running executable (/proc/self/exe resolved).
std::string SelfExecutable();
// The ledgerdiff executable that worker and orchestrator processes run: SelfExecutable(), unless
// a library user that is not ledgerdiff (a test binary) named it once with SetLedgerdiffExecutable
// before starting any run.
std::string LedgerdiffExecutable();
void SetLedgerdiffExecutable(std::string path);

// Blocks SIGINT/SIGTERM/SIGHUP in every thread and starts a thread that waits for them; on
// one it runs every registered cleanup (last registered first) and exits 128+signo.
// SIGPIPE (stdout or stderr closed by the reader, e.g. `| head`) is handled the same way and
// exits 141 after the cleanups.
// Call once from main before starting other threads. Spawn unblocks them in children.
void InstallTerminationHandler();
// True once a termination signal is being handled. The process then ends through the handler
// (after every cleanup ran); AwaitTermination() parks the calling thread until it does, so that
// main() returning early cannot cut a cleanup short.
bool TerminationInProgress();
void AwaitTerminationIfInProgress();
// Registers a cleanup; returns a handle for UnregisterCleanup. Cleanups must be idempotent.
int RegisterCleanup(std::function<void()> cleanup);
// A cleanup that says what it did, for the one line an interruption (SIGINT/SIGTERM/SIGHUP)
// prints on stderr: "stopped 2 workers", "removed the embedded cluster DIR"; "" when it had
// nothing to do. A cleanup that only reports (what stays behind, and how to remove it) is fine.
int RegisterDescribedCleanup(std::function<std::string()> cleanup);
void UnregisterCleanup(int handle);
// A described cleanup registered for the scope's life.
class ScopedCleanup {
 public:
  explicit ScopedCleanup(std::function<std::string()> cleanup)
      : handle_(cleanup ? RegisterDescribedCleanup(std::move(cleanup)) : 0) {}
  ~ScopedCleanup() {
    if (handle_) UnregisterCleanup(handle_);
  }
  ScopedCleanup(const ScopedCleanup&) = delete;
  ScopedCleanup& operator=(const ScopedCleanup&) = delete;

 private:
  int handle_;
};
// The command the interruption line names ("ledgerdiff verify: interrupted by SIGINT: ..."); the
// line is printed only once a subject is set (internal processes set none).
void SetTerminationSubject(const std::string& command);
// The interruption line for `signo` and what the cleanups said (exposed for tests).
std::string DescribeInterruption(const std::string& command, int signo, const std::vector<std::string>& done);

// True when running as root (PostgreSQL servers must then run as another user).
bool RunningAsRoot();

}  // namespace ledgerdiff
