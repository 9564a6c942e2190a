#include "core/embedded_pg.h"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/pg.h"
#include "core/process.h"

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
  if (const char* u = std::getenv("LEDGERDIFF_PG_USER"); u && *u) candidates.push_back(u);
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

std::string Tail(const fs::path& file, size_t max_lines = 5) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  size_t start = lines.size() > max_lines ? lines.size() - max_lines : 0;
  for (size_t i = start; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

}  // namespace

Result<std::string> FindPostgresBinDir() {
  auto has_server = [](const fs::path& dir) {
    return fs::exists(dir / "initdb") && fs::exists(dir / "postgres");
  };
  if (const char* d = std::getenv("LEDGERDIFF_PG_BINDIR"); d && *d) {
    if (has_server(d)) return std::string(d);
    return Status::Runtimef("LEDGERDIFF_PG_BINDIR={} holds no initdb and postgres", d);
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
  return Status::Runtime("no PostgreSQL server found (initdb/postgres): run ci/bootstrap, or give --db CONNINFO");
}

Result<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::Start(const EmbeddedOptions& options) {
  std::unique_ptr<EmbeddedPostgres> pg(new EmbeddedPostgres());
  LD_ASSIGN_OR_RETURN(pg->bin_dir_, FindPostgresBinDir());
  LD_ASSIGN_OR_RETURN(ServerUser user, PickServerUser());

  if (options.dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "ledgerdiff-pg-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return Status::Runtimef("cannot create a temporary directory: {}", std::strerror(errno));
    pg->dir_ = tmpl;
  } else {
    std::error_code ec;
    fs::create_directories(options.dir, ec);
    if (ec) return Status::Runtimef("--keep-db {}: {}", options.dir, ec.message());
    pg->dir_ = fs::absolute(options.dir).lexically_normal().string();
    pg->keep_ = true;
  }
  pg->socket_dir_ = pg->dir_;
  if (pg->socket_dir_.size() + 20 > 107)
    return Status::Usagef("--keep-db {}: path too long for a unix socket (at most 87 characters)", pg->dir_);
  // From now on a Ctrl-C (even during initdb) stops the server and removes what was made.
  EmbeddedPostgres* self = pg.get();
  pg->cleanup_ = RegisterCleanup([self] { (void)self->Stop(); });

  fs::path data = fs::path(pg->dir_) / "data";
  fs::path log = fs::path(pg->dir_) / "server.log";
  bool reuse = fs::exists(data / "PG_VERSION");
  chmod(pg->dir_.c_str(), 0700);
  LD_RETURN_IF_ERROR(ChownTree(pg->dir_, user));
  SpawnOptions as_user;
  as_user.uid = user.uid;
  as_user.gid = user.gid;
  as_user.output_file = (fs::path(pg->dir_) / "initdb.log").string();
  as_user.new_process_group = false;
  as_user.working_dir = pg->dir_;
  as_user.unset_env_prefixes = {"PG", "LC_", "LANG"};  // the user's PGPORT etc. must not leak into the server
  if (!reuse) {
    LD_ASSIGN_OR_RETURN(ExitInfo ex, RunToCompletion({pg->bin_dir_ + "/initdb", "-D", data.string(), "-U", kSuperuser,
                                                      "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync",
                                                      "--no-instructions"},
                                                     as_user));
    if (!ex.exited || ex.code != 0)
      return Status::Runtimef("initdb failed ({}): {}", ex.str(), Tail(as_user.output_file));
  }

  SpawnOptions server = as_user;
  server.output_file = log.string();
  server.new_process_group = true;  // a Ctrl-C at the terminal does not reach it: we stop it
  server.parent_death_signal = SIGINT;
  LD_ASSIGN_OR_RETURN(pg->server_pid_,
                      Spawn({pg->bin_dir_ + "/postgres", "-D", data.string(), "-k", pg->socket_dir_, "-p",
                             std::to_string(pg->port_), "-c", "listen_addresses=", "-c", "fsync=off", "-c",
                             "synchronous_commit=off", "-c", "full_page_writes=off", "-c",
                             "max_connections=" + std::to_string(options.max_connections), "-c",
                             "shared_buffers=256MB", "-c", "max_wal_size=4GB", "-c", "checkpoint_timeout=30min",
                             "-c", "unix_socket_permissions=0777", "-c", "logging_collector=off"},
                            server));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pg::Ping(pg->conninfo())) {
    int ws = 0;
    if (waitpid(pg->server_pid_, &ws, WNOHANG) == pg->server_pid_) {
      pg->server_pid_ = -1;
      return Status::Runtimef("PostgreSQL server did not start ({}): {}", DecodeWaitStatus(ws).str(), Tail(log));
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Runtimef("PostgreSQL server did not accept connections within 60 s: {}", Tail(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pg;
}

std::string EmbeddedPostgres::conninfo(const std::string& dbname) const {
  return fmt::format("host={} port={} user={} dbname={}", socket_dir_, port_, kSuperuser, dbname);
}

Status EmbeddedPostgres::CreateDatabase(const std::string& name) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo()));
  return conn->Run("CREATE DATABASE " + pg::QuoteIdent(name));
}

Status EmbeddedPostgres::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
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
    std::error_code ec;
    for (int attempt = 0; attempt < 50; ++attempt) {
      fs::remove_all(dir_, ec);
      if (!fs::exists(dir_)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (fs::exists(dir_) && status.ok()) status = Status::Runtimef("could not remove {}: {}", dir_, ec.message());
  }
  return status;
}

EmbeddedPostgres::~EmbeddedPostgres() { (void)Stop(); }


}  // namespace ledgerdiff
