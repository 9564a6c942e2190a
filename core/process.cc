#include "core/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace ledgerdiff {

namespace {

// The signals that end a run cleanly (stop workers and servers, remove what was made).
sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

void UnblockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

std::atomic<bool> g_terminating{false};
std::atomic<bool> g_broken_pipe{false};

// SIGPIPE is raised in the thread that wrote to the closed pipe, so the signal thread cannot
// sigwait for it: this handler turns it into a process-wide SIGTERM that the signal thread
// handles like any termination (cleanups, then exit 128+SIGPIPE).
// The writing thread is parked here for good: it must not carry on past the broken pipe (fmt
// throws on a failed write) while the cleanups run. The signal thread's own writes (cleanup
// messages to a closed stderr) just fail.
std::atomic<pid_t> g_signal_thread_tid{0};
void OnBrokenPipe(int) {
  if (gettid() == g_signal_thread_tid.load()) return;
  if (!g_broken_pipe.exchange(true)) {
    g_terminating = true;
    kill(getpid(), SIGTERM);
  }
  for (;;) pause();
}
std::mutex g_cleanup_mu;
std::map<int, std::function<std::string()>> g_cleanups;
int g_next_cleanup = 1;
std::string g_subject;  // under g_cleanup_mu

}  // namespace

std::string ExitInfo::str() const {
  if (exited) return fmt::format("exit {}", code);
  const char* name = sigabbrev_np(signal);
  return fmt::format("killed by SIG{}", name ? name : std::to_string(signal).c_str());
}

ExitInfo DecodeWaitStatus(int ws) {
  ExitInfo info;
  if (WIFEXITED(ws)) {
    info.exited = true;
    info.code = WEXITSTATUS(ws);
  } else if (WIFSIGNALED(ws)) {
    info.signal = WTERMSIG(ws);
  }
  return info;
}

Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return Status::Runtime("spawn: empty command");
  // Everything the child needs is prepared before fork: the child only calls async-signal-safe
  // functions.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos && options.env.count(kv.substr(0, eq))) continue;
    bool drop = false;
    for (const auto& prefix : options.unset_env_prefixes) drop = drop || kv.rfind(prefix, 0) == 0;
    if (drop) continue;
    env_strings.push_back(std::move(kv));
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cenv;
  for (auto& s : env_strings) cenv.push_back(s.data());
  cenv.push_back(nullptr);

  int out_fd = -1;
  if (!options.output_file.empty()) {
    out_fd = open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out_fd < 0)
      return Status::Runtimef("cannot open {}: {}", options.output_file, std::strerror(errno));
    if (options.uid && fchown(out_fd, *options.uid, options.gid.value_or(-1)) != 0) {
      // Not fatal: the parent writes nothing there; the child inherits the open descriptor.
    }
  }
  int err_fd = -1;
  if (!options.error_file.empty()) {
    err_fd = open(options.error_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (err_fd < 0) {
      if (out_fd >= 0) close(out_fd);
      return Status::Runtimef("cannot open {}: {}", options.error_file, std::strerror(errno));
    }
  }
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return Status::Runtimef("pipe: {}", std::strerror(errno));

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    if (out_fd >= 0) close(out_fd);
    if (err_fd >= 0) close(err_fd);
    return Status::Runtimef("fork: {}", std::strerror(errno));
  }
  if (pid == 0) {
    auto fail = [&](int e) {
      (void)!write(err_pipe[1], &e, sizeof e);
      _exit(127);
    };
    close(err_pipe[0]);
    UnblockTerminationSignals();
    signal(SIGPIPE, SIG_DFL);
    if (options.new_process_group) setpgid(0, 0);
    if (options.stdin_null) {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
    }
    if (out_fd >= 0) {
      dup2(out_fd, 1);
      if (err_fd < 0) dup2(out_fd, 2);
    }
    if (err_fd >= 0) dup2(err_fd, 2);
    if (options.gid && setgid(*options.gid) != 0) fail(errno);
    if (options.uid && setuid(*options.uid) != 0) fail(errno);
    // After the credential change, which would clear it.
    if (options.parent_death_signal) {
      prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (getppid() != parent) _exit(1);  // died before prctl took hold (reparented, maybe not to 1)
    }
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) fail(errno);
    execvpe(cargv[0], cargv.data(), cenv.data());
    fail(errno);
  }
  close(err_pipe[1]);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  int child_errno = 0;
  ssize_t n = read(err_pipe[0], &child_errno, sizeof child_errno);
  close(err_pipe[0]);
  if (n == sizeof child_errno) {
    waitpid(pid, nullptr, 0);
    return Status::Runtimef("cannot run {}: {}", argv[0], std::strerror(child_errno));
  }
  return pid;
}

Result<ExitInfo> RunToCompletion(const std::vector<std::string>& argv, const SpawnOptions& options) {
  SpawnOptions o = options;
  o.new_process_group = false;
  LD_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, o));
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0) {
    if (errno != EINTR) return Status::Runtimef("waitpid: {}", std::strerror(errno));
  }
  return DecodeWaitStatus(ws);
}

std::string SelfExecutable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ledgerdiff") : p.string();
}

namespace {
std::string& LedgerdiffExecutableOverride() {
  static std::string path;
  return path;
}
}  // namespace

std::string LedgerdiffExecutable() {
  const std::string& named = LedgerdiffExecutableOverride();
  return named.empty() ? SelfExecutable() : named;
}

void SetLedgerdiffExecutable(std::string path) { LedgerdiffExecutableOverride() = std::move(path); }

void InstallTerminationHandler() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  struct sigaction pipe_action {};
  pipe_action.sa_handler = OnBrokenPipe;
  sigemptyset(&pipe_action.sa_mask);
  pipe_action.sa_flags = SA_RESTART;
  sigaction(SIGPIPE, &pipe_action, nullptr);
  std::thread([set]() {
    g_signal_thread_tid = gettid();
    int signo = 0;
    while (sigwait(&set, &signo) != 0) {
    }
    g_terminating = true;
    if (g_broken_pipe) signo = SIGPIPE;
    std::map<int, std::function<std::string()>> cleanups;
    std::string subject;
    {
      std::lock_guard<std::mutex> lock(g_cleanup_mu);
      cleanups = g_cleanups;
      subject = g_subject;
    }
    std::vector<std::string> done;
    for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it) {
      std::string what = it->second();
      if (!what.empty() && std::find(done.begin(), done.end(), what) == done.end()) done.push_back(std::move(what));
    }
    // The reader of a broken pipe is gone (often stderr's too): nothing to tell. Without a
    // subject (an internal process its parent stops), nothing either.
    if (signo != SIGPIPE && !subject.empty()) {
      const std::string line = DescribeInterruption(subject, signo, done) + "\n";
      (void)!write(STDERR_FILENO, line.data(), line.size());
    }
    _exit(128 + signo);
  }).detach();
}

bool TerminationInProgress() { return g_terminating; }

void AwaitTerminationIfInProgress() {
  while (g_terminating) std::this_thread::sleep_for(std::chrono::seconds(1));
}

int RegisterCleanup(std::function<void()> cleanup) {
  return RegisterDescribedCleanup([cleanup = std::move(cleanup)] {
    cleanup();
    return std::string();
  });
}

int RegisterDescribedCleanup(std::function<std::string()> cleanup) {
  std::lock_guard<std::mutex> lock(g_cleanup_mu);
  int h = g_next_cleanup++;
  g_cleanups[h] = std::move(cleanup);
  return h;
}

void SetTerminationSubject(const std::string& command) {
  std::lock_guard<std::mutex> lock(g_cleanup_mu);
  g_subject = command;
}

std::string DescribeInterruption(const std::string& command, int signo, const std::vector<std::string>& done) {
  const char* name = sigabbrev_np(signo);
  std::string line = fmt::format("ledgerdiff{}{}: interrupted by {}", command.empty() ? "" : " ", command,
                                 name ? "SIG" + std::string(name) : fmt::format("signal {}", signo));
  if (done.empty()) return line + "; nothing was running that needed stopping or removing";
  line += ": ";
  for (size_t i = 0; i < done.size(); ++i) line += (i ? "; " : "") + done[i];
  return line;
}

void UnregisterCleanup(int handle) {
  std::lock_guard<std::mutex> lock(g_cleanup_mu);
  g_cleanups.erase(handle);
}

bool RunningAsRoot() { return geteuid() == 0; }

}  // namespace ledgerdiff
