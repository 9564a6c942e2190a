#include "core/embedded_pg.h"

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/pg.h"
#include "core/process.h"
#include "core/tempdir.h"
#include "core/text.h"

namespace fs = std::filesystem;

namespace ledgerdiff {

namespace {

constexpr const char* kSuperuser = "ledgerdiff";

struct ServerUser {
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  std::string name;
};

Result<ServerUser> PickServerUser() {
  if (!RunningAsRoot()) return ServerUser{};
  std::vector<std::string> candidates;
  // A user named on purpose that does not exist is bad input, not a reason to pick another.
  if (const char* u = std::getenv("LEDGERDIFF_PG_USER"); u && *u) {
    if (passwd* pw = getpwnam(u)) return ServerUser{pw->pw_uid, pw->pw_gid, u};
    return Status::Usagef("LEDGERDIFF_PG_USER names user '{}', which does not exist on this machine", u);
  }
  candidates.push_back("postgres");
  candidates.push_back("nobody");
  for (const auto& name : candidates) {
    if (passwd* pw = getpwnam(name.c_str())) return ServerUser{pw->pw_uid, pw->pw_gid, name};
  }
  return Status::Runtime("running as root, and neither user 'postgres' nor 'nobody' exists to run the PostgreSQL server (set LEDGERDIFF_PG_USER)");
}

Status ChownTree(const fs::path& root, const ServerUser& user) {
  if (!user.uid) return Status::Ok();
  std::error_code ec;
  if (chown(root.c_str(), *user.uid, *user.gid) != 0)
    return Status::Runtimef("cannot hand {} to user {}: {}", root.string(), user.name, std::strerror(errno));
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (lchown(it->path().c_str(), *user.uid, *user.gid) != 0) {
      return Status::Runtimef("cannot hand {} to user {}: {}", it->path().string(), user.name, std::strerror(errno));
    }
  }
  return Status::Ok();
}

// The last lines of `file`, from its last 64 KiB only (a kept cluster's log can be huge).
std::vector<std::string> TailLines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> lines;
  if (!in) return lines;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  constexpr std::streamoff kTail = 64 * 1024;
  in.seekg(size > kTail ? size - kTail : 0);
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return lines;
}

std::string Tail(const fs::path& file, size_t max_lines = 5) {
  std::vector<std::string> lines = TailLines(file);
  std::string out;
  size_t start = lines.size() > max_lines ? lines.size() - max_lines : 0;
  for (size_t i = start; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

// Whether `user` may search (traverse) directory `st` describes.
bool MayTraverse(const struct stat& st, const ServerUser& user) {
  if (*user.uid == st.st_uid) return st.st_mode & S_IXUSR;
  bool in_group = *user.gid == st.st_gid;
  if (!in_group) {
    int n = 64;
    std::vector<gid_t> groups(static_cast<size_t>(n));
    if (getgrouplist(user.name.c_str(), *user.gid, groups.data(), &n) >= 0) {
      for (int i = 0; i < n; ++i) in_group = in_group || groups[static_cast<size_t>(i)] == st.st_gid;
    }
  }
  return in_group ? (st.st_mode & S_IXGRP) : (st.st_mode & S_IXOTH);
}

// The first directory on the way to `dir` (its ancestors, `dir` excluded: it is handed to the
// user) that `user` cannot traverse, with the reason; "" when every one is reachable.
std::string UnreachableAncestor(const fs::path& dir, const ServerUser& user) {
  if (!user.uid) return "";
  fs::path walk;
  fs::path abs = dir.lexically_normal();
  for (auto part = abs.begin(); part != abs.end(); ++part) {
    walk /= *part;
    if (walk == abs) break;
    struct stat st {};
    if (stat(walk.c_str(), &st) != 0) return fmt::format("{} ({})", walk.string(), std::strerror(errno));
    if (!MayTraverse(st, user))
      return fmt::format("{} (mode {:04o}, owner uid {}): user {} cannot enter it", walk.string(), st.st_mode & 07777,
                         st.st_uid, user.name);
  }
  return "";
}

bool IsDirEmpty(const fs::path& dir) {
  std::error_code ec;
  return fs::directory_iterator(dir, ec) == fs::directory_iterator();
}

bool IsLedgerdiffCluster(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kClusterMarkerFile, ec)) return true;
  // Clusters kept before the marker existed: initdb.log and data/PG_VERSION side by side.
  return fs::exists(dir / "data" / "PG_VERSION", ec) && fs::exists(dir / "initdb.log", ec);
}

Status WriteClusterMarker(const fs::path& dir) {
  std::ofstream out(dir / kClusterMarkerFile, std::ios::trunc);
  out << "ledgerdiff embedded PostgreSQL cluster\n";
  out.close();
  if (!out) return Status::Runtimef("cannot write {}: {}", (dir / kClusterMarkerFile).string(), std::strerror(errno));
  return Status::Ok();
}

// The directory to put a temporary cluster in: `preferred`, else /tmp, else /var/tmp, the first
// that the server user can reach and where we can create directories.
Result<std::string> PickTempRoot(const std::string& preferred, const ServerUser& user) {
  std::string why = UnreachableAncestor(fs::path(preferred) / "x", user);
  if (why.empty()) return preferred;
  for (const char* fallback : {"/tmp", "/var/tmp"}) {
    struct stat st {};
    if (stat(fallback, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (UnreachableAncestor(fs::path(fallback) / "x", user).empty() && access(fallback, W_OK | X_OK) == 0)
      return std::string(fallback);
  }
  return Status::Runtimef(
      "cannot place the embedded PostgreSQL cluster: the server runs as user {} and cannot reach {}; neither /tmp nor "
      "/var/tmp is usable instead (set TMPDIR to a directory it can traverse, or use --keep-db DIR)",
      user.name, why);
}

}  // namespace

int EmbeddedMaxConnectionsFor(int workers) {
  return std::max(kDefaultEmbeddedMaxConnections, 2 * std::max(workers, 0) + 20);
}

std::string EmbeddedServerFailureCause(const std::string& dir) {
  std::error_code ec;
  fs::path root(dir);
  if (dir.empty() || dir.front() != '/' || !fs::exists(root / kClusterMarkerFile, ec)) return "";
  std::vector<std::string> lines = TailLines(root / kServerLogFile);
  for (const char* needle : {"No space left on device", "PANIC:", "out of memory", "was terminated by signal"}) {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      if (it->find(needle) == std::string::npos) continue;
      std::string cause = *it;
      if (cause.size() > 300) cause = cause.substr(0, 300) + "...";
      return cause;
    }
  }
  return "";
}

// The Debian package holding initdb and postgres: the .deb Recommends it (CMakeLists.txt).
constexpr const char* kServerPackage = "postgresql-15";

Result<std::string> FindPostgresBinDir() {
  auto has_server = [](const fs::path& dir) {
    std::error_code ec;
    return fs::exists(dir / "initdb", ec) && fs::exists(dir / "postgres", ec);
  };
  if (const char* d = std::getenv("LEDGERDIFF_PG_BINDIR"); d && *d) {
    if (has_server(d)) return std::string(d);
    return Status::Usagef("LEDGERDIFF_PG_BINDIR={} holds no initdb and postgres: point it at a PostgreSQL server's "
                          "bin directory, or unset it to use {}'s",
                          d, kServerPackage);
  }
  std::error_code ec;
  std::vector<fs::path> versions;
  for (auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) versions.push_back(e.path() / "bin");
  std::sort(versions.begin(), versions.end(), [](const fs::path& a, const fs::path& b) {
    return std::atoi(a.parent_path().filename().c_str()) > std::atoi(b.parent_path().filename().c_str());
  });
  for (const auto& v : versions)
    if (has_server(v)) return v.string();
  if (const char* path = std::getenv("PATH")) {
    std::string p(path);
    size_t start = 0;
    while (start <= p.size()) {
      size_t colon = p.find(':', start);
      std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!dir.empty() && has_server(dir)) return dir;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  // Usage (exit 2), not Runtime: a dependency the user must install; retrying cannot help.
  return Status::Usagef("no PostgreSQL server for the embedded default database (no initdb and postgres in "
                        "/usr/lib/postgresql/*/bin or PATH): install it with `apt-get install {}`, or name a "
                        "database with --db CONNINFO or LEDGERDIFF_DB",
                        kServerPackage);
}

namespace {

// A fresh owned temporary directory for the cluster (after reaping killed runs' leftovers), under
// a root the server user can reach.
Result<std::string> MakeTempClusterDir(const EmbeddedOptions& options, const ServerUser& user) {
  ReapStaleTempDirsAndReport();
  std::string preferred = options.temp_root;
  if (preferred.empty()) {
    LD_ASSIGN_OR_RETURN(preferred, TempRoot());
  }
  LD_ASSIGN_OR_RETURN(std::string root, PickTempRoot(preferred, user));
  return MakeOwnedTempDir("ledgerdiff-pg-", root);
}

// --keep-db DIR, normalized: created when missing; an existing one must be a directory, empty or
// holding a ledgerdiff cluster, and the server user must reach it.
Result<std::string> PrepareKeptClusterDir(const EmbeddedOptions& options, const ServerUser& user) {
  std::error_code ec;
  fs::path dir = fs::absolute(options.dir, ec).lexically_normal();
  if (ec) return Status::Usagef("--keep-db {}: {}", options.dir, ec.message());
  if (dir.has_filename() == false && dir.has_parent_path()) dir = dir.parent_path();  // "DIR/" -> "DIR"
  auto st = fs::symlink_status(dir, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(fs::status(dir, ec)))
      return Status::Usagef("--keep-db {}: exists and is not a directory", options.dir);
    if (!IsDirEmpty(dir) && !IsLedgerdiffCluster(dir))
      return Status::Usagef(
          "--keep-db {}: the directory is not empty and does not hold a ledgerdiff cluster; refusing to use it "
          "(give a new or empty directory)",
          options.dir);
  }
  fs::create_directories(dir, ec);
  if (ec) return Status::Runtimef("--keep-db {}: {}", options.dir, ec.message());
  if (std::string why = UnreachableAncestor(dir, user); !why.empty())
    return Status::Runtimef("--keep-db {}: the server runs as user {} and cannot reach it: {}", options.dir,
                            user.name, why);
  return dir.string();
}

// The server's unix socket, DIR/.s.PGSQL.PORT, must fit in sockaddr_un's 107 characters.
Status CheckSocketPathFits(const std::string& socket_dir, bool kept) {
  if (socket_dir.size() + 20 <= 107) return Status::Ok();
  if (kept) return Status::Usagef("--keep-db {}: path too long for a unix socket (at most 87 characters)", socket_dir);
  return Status::Usagef(
      "the embedded cluster's directory {} is too long a path for a unix socket (at most 87 characters): set TMPDIR "
      "to a shorter directory, or give --keep-db DIR",
      socket_dir);
}

// What running initdb and the server of a cluster directory takes.
struct ClusterLaunch {
  std::string bin_dir;
  fs::path data;  // the cluster's data directory
  fs::path log;   // the server's log
  std::string socket_dir;
  int port = 0;
  int max_connections = 0;
  SpawnOptions as_user;  // as the server user, in the cluster directory, initdb's log as output
};

SpawnOptions AsServerUser(const std::string& dir, const ServerUser& user) {
  SpawnOptions as_user;
  as_user.uid = user.uid;
  as_user.gid = user.gid;
  as_user.output_file = (fs::path(dir) / "initdb.log").string();
  as_user.new_process_group = false;
  as_user.working_dir = dir;
  as_user.unset_env_prefixes = {"PG", "LC_", "LANG"};  // the user's PGPORT etc. must not leak into the server
  return as_user;
}

Status RunInitdb(const ClusterLaunch& launch) {
  // A run killed during initdb must not leave initdb writing into a directory the next run
  // reaps: initdb dies with us (and its single-user backend follows on end of input).
  SpawnOptions init = launch.as_user;
  init.parent_death_signal = SIGTERM;
  LD_ASSIGN_OR_RETURN(ExitInfo ex, RunToCompletion({launch.bin_dir + "/initdb", "-D", launch.data.string(), "-U",
                                                    kSuperuser, "-A", "trust", "-E", "UTF8", "--locale=C",
                                                    "--no-sync", "--no-instructions"},
                                                   init));
  if (!ex.exited || ex.code != 0)
    return Status::Runtimef("initdb failed ({}): {}", ex.str(), Tail(launch.as_user.output_file));
  return Status::Ok();
}

// Marks `dir` as a ledgerdiff cluster and hands it to the server user; initdb unless it holds a
// cluster already.
Status PrepareClusterDir(const std::string& dir, const ServerUser& user, const ClusterLaunch& launch) {
  std::error_code exists_ec;
  bool reuse = fs::exists(launch.data / "PG_VERSION", exists_ec);
  LD_RETURN_IF_ERROR(WriteClusterMarker(dir));
  chmod(dir.c_str(), 0700);
  LD_RETURN_IF_ERROR(ChownTree(dir, user));
  if (reuse) return Status::Ok();
  return RunInitdb(launch);
}

Result<pid_t> SpawnEmbeddedServer(const ClusterLaunch& launch) {
  SpawnOptions server = launch.as_user;
  server.output_file = launch.log.string();
  server.new_process_group = true;  // a Ctrl-C at the terminal does not reach it: we stop it
  server.parent_death_signal = SIGINT;
  return Spawn({launch.bin_dir + "/postgres", "-D", launch.data.string(), "-k", launch.socket_dir, "-p",
                std::to_string(launch.port), "-c", "listen_addresses=", "-c", "fsync=off", "-c",
                "synchronous_commit=off", "-c", "full_page_writes=off", "-c",
                "max_connections=" + std::to_string(launch.max_connections), "-c", "shared_buffers=256MB", "-c",
                "max_wal_size=4GB", "-c", "checkpoint_timeout=30min", "-c", "unix_socket_permissions=0777", "-c",
                "logging_collector=off"},
               server);
}

// Waits up to 60 s until the server `server_pid` accepts connections at `conninfo`. A server that
// exits first is reaped, then `reaped` runs; the error ends with the tail of its log.
Status AwaitServerAccepting(const std::string& conninfo, pid_t server_pid, const fs::path& log,
                            const std::function<void()>& reaped) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pg::Ping(conninfo)) {
    int ws = 0;
    if (waitpid(server_pid, &ws, WNOHANG) == server_pid) {
      reaped();
      return Status::Runtimef("PostgreSQL server did not start ({}): {}", DecodeWaitStatus(ws).str(), Tail(log));
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Runtimef("PostgreSQL server did not accept connections within 60 s: {}", Tail(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::Start(const EmbeddedOptions& options) {
  std::unique_ptr<EmbeddedPostgres> pg(new EmbeddedPostgres());
  LD_ASSIGN_OR_RETURN(pg->bin_dir_, FindPostgresBinDir());
  LD_ASSIGN_OR_RETURN(ServerUser user, PickServerUser());

  int max_connections = options.max_connections <= 0 ? kDefaultEmbeddedMaxConnections : options.max_connections;
  if (max_connections > 10000)
    return Status::Usagef("embedded server: max_connections {} is more than 10000", max_connections);

  if (options.dir.empty()) {
    LD_ASSIGN_OR_RETURN(pg->dir_, MakeTempClusterDir(options, user));
  } else {
    LD_ASSIGN_OR_RETURN(pg->dir_, PrepareKeptClusterDir(options, user));
    pg->keep_ = true;
  }
  pg->socket_dir_ = pg->dir_;
  LD_RETURN_IF_ERROR(CheckSocketPathFits(pg->socket_dir_, pg->keep_));
  // From now on a Ctrl-C (even during initdb) stops the server and removes what was made.
  EmbeddedPostgres* self = pg.get();
  // The cleanup may run on the signal thread at once: every field Stop() reads that is written
  // after this point is written under stop_mu_.
  const int cleanup = RegisterDescribedCleanup([self] { return self->StopAndDescribe(); });
  {
    std::lock_guard<std::mutex> lock(pg->stop_mu_);
    pg->cleanup_ = cleanup;
  }

  const ClusterLaunch launch{.bin_dir = pg->bin_dir_,
                             .data = fs::path(pg->dir_) / "data",
                             .log = fs::path(pg->dir_) / kServerLogFile,
                             .socket_dir = pg->socket_dir_,
                             .port = pg->port_,
                             .max_connections = max_connections,
                             .as_user = AsServerUser(pg->dir_, user)};
  LD_RETURN_IF_ERROR(PrepareClusterDir(pg->dir_, user, launch));
  LD_ASSIGN_OR_RETURN(const pid_t server_pid, SpawnEmbeddedServer(launch));
  {
    std::lock_guard<std::mutex> lock(pg->stop_mu_);
    pg->server_pid_ = server_pid;
  }
  LD_RETURN_IF_ERROR(AwaitServerAccepting(pg->conninfo(), server_pid, launch.log, [&pg] {
    std::lock_guard<std::mutex> lock(pg->stop_mu_);
    pg->server_pid_ = -1;
  }));
  return pg;
}

std::string EmbeddedPostgres::conninfo(const std::string& dbname) const {
  return fmt::format("host={} port={} user={} dbname={}", socket_dir_, port_, kSuperuser, dbname);
}

Status EmbeddedPostgres::CreateDatabase(const std::string& name) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo()));
  return conn->Run("CREATE DATABASE " + pg::QuoteIdent(name));
}

Status EmbeddedPostgres::Keep() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_ && !keep_) return Status::Runtimef("embedded cluster {} is already removed", dir_);
  keep_ = true;
  std::error_code ec;
  fs::remove(fs::path(dir_) / kOwnerMarkerFile, ec);
  if (ec) return Status::Runtimef("cannot keep {}: {}", dir_, ec.message());
  return Status::Ok();
}

Status EmbeddedPostgres::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  return StopLocked();
}

std::string EmbeddedPostgres::StopAndDescribe() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return "";
  const bool had_server = server_pid_ > 0;
  const Status s = StopLocked();
  const std::string server = had_server ? "stopped the embedded server" : "stopped initdb";
  if (keep_)
    return fmt::format("{}; its cluster stays in {} (look with --keep-db {}, remove it with rm -rf {})", server, dir_,
                       ShellQuote(dir_, ShellQuoting::kWhenNeeded), ShellQuote(dir_, ShellQuoting::kWhenNeeded));
  if (!s.ok()) return fmt::format("{}; its cluster {} was not fully removed: {}", server, dir_, s.message());
  return fmt::format("{} and removed its cluster {} (every schema in it)", server, dir_);
}

Status EmbeddedPostgres::StopLocked() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  if (cleanup_) UnregisterCleanup(cleanup_);
  Status status;
  if (server_pid_ > 0) {
    kill(server_pid_, SIGINT);  // fast shutdown
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    int ws = 0;
    while (waitpid(server_pid_, &ws, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(server_pid_, SIGQUIT);
        waitpid(server_pid_, &ws, 0);
        status = Status::Runtime("PostgreSQL server did not stop within 15 s; forced");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    server_pid_ = -1;
  }
  if (!keep_ && !dir_.empty()) {
    // The server's last processes may still be writing while the tree goes away (seen under
    // load after Ctrl-C): retry until the directory is really gone.
    Status removed;
    for (int attempt = 0; attempt < 50; ++attempt) {
      removed = RemoveTree(dir_);
      if (removed.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!removed.ok() && status.ok()) status = removed;
  }
  return status;
}

EmbeddedPostgres::~EmbeddedPostgres() { (void)Stop(); }


}  // namespace ledgerdiff
