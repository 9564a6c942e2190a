#pragma once
// A throwaway PostgreSQL cluster the tool starts itself: the default database.
//
// initdb into a directory, a unix socket inside it, no TCP listener, durability off (fsync,
// synchronous_commit and full_page_writes off: a crash loses the cluster, which is disposable).
// Running as root, the server runs as an unprivileged user (PostgreSQL refuses root): the
// `postgres` user when it exists, else `nobody`, or LEDGERDIFF_PG_USER.
//
// Every Start() first reaps the leftovers of killed runs (core/tempdir.h).
//
// Lifetime: Stop() or the destructor stops the server (fast shutdown) and removes the directory
// unless it is kept; so does SIGINT/SIGTERM/SIGHUP from the moment Start() made the directory
// (a cleanup registered with core/process.h). The server also gets SIGINT if this process dies
// (PR_SET_PDEATHSIG), so a killed tool does not leave a server behind.

#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"

namespace ledgerdiff {

// The server's max_connections when the caller does not size it: enough for 64 workers.
constexpr int kDefaultEmbeddedMaxConnections = 200;
// What a run of `workers` parallel workers needs: each worker holds up to two sessions (its job
// claim and its ingestion), plus the orchestrator, digests and monitoring. Never below the default.
int EmbeddedMaxConnectionsFor(int workers);

// The file that marks a directory as a ledgerdiff cluster (so --keep-db reuses only those).
constexpr const char* kClusterMarkerFile = ".ledgerdiff-cluster";
constexpr const char* kServerLogFile = "server.log";

struct EmbeddedOptions {
  // Where the cluster lives. Empty: a fresh owned temporary directory (core/tempdir.h) under
  // temp_root, removed on Stop(), reaped by a later run if this process is killed.
  // Non-empty (--keep-db DIR): created if missing, reused when it holds a ledgerdiff cluster,
  // kept. An existing non-empty directory that is not a ledgerdiff cluster is refused.
  std::string dir{};
  // PostgreSQL max_connections; <= 0: kDefaultEmbeddedMaxConnections. Callers running N
  // workers pass EmbeddedMaxConnectionsFor(N). At most 10000.
  int max_connections = kDefaultEmbeddedMaxConnections;
  // Where the temporary directory goes; empty: $TMPDIR, else /tmp. When the server user
  // (running as root) cannot traverse it (a private 0700 TMPDIR), /tmp then /var/tmp is used.
  std::string temp_root{};
};

class EmbeddedPostgres {
 public:
  // Starts (initdb when needed) and waits until the server accepts connections.
  static Result<std::unique_ptr<EmbeddedPostgres>> Start(const EmbeddedOptions& options);
  ~EmbeddedPostgres();
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  // A key=value conninfo for the `postgres` database of this cluster.
  std::string conninfo(const std::string& dbname = "postgres") const;
  const std::string& dir() const { return dir_; }
  bool kept() const { return keep_; }
  // From now on the cluster outlives this process: Stop() (and Ctrl-C) only stop the server,
  // and a later run no longer reaps the directory (its owner marker goes). The directory can
  // be reused with --keep-db dir() and removed with `rm -rf dir()`. Idempotent.
  Status Keep();
  // Stops the server; removes the directory unless kept. Idempotent.
  Status Stop();
  // Stop(), saying what it did for an interruption's line ("" when already stopped).
  std::string StopAndDescribe();
  // Creates a database in this cluster (for tests and two-database checks).
  Status CreateDatabase(const std::string& name);

 private:
  EmbeddedPostgres() = default;
  Status StopLocked();  // REQUIRES: stop_mu_ held
  std::string dir_;
  std::string socket_dir_;
  std::string bin_dir_;
  int port_ = 5432;
  int server_pid_ = -1;
  bool keep_ = false;
  bool stopped_ = false;
  int cleanup_ = 0;  // registered with core/process.h: Ctrl-C stops and removes the cluster
  std::mutex stop_mu_;  // Stop() may race between the signal thread and main's destructors
};

// The cause of an embedded server's failure, from the tail of its log: the last line that says
// "No space left on device", PANIC, out of memory or a process killed by a signal. `dir` is the
// cluster directory (= its socket directory, the conninfo's host). "" when `dir` is not a
// ledgerdiff cluster or the log names no cause. Never fails.
std::string EmbeddedServerFailureCause(const std::string& dir);

// Finds the PostgreSQL server binaries (initdb, postgres): LEDGERDIFF_PG_BINDIR, else the newest
// /usr/lib/postgresql/*/bin, then PATH.
// Errors: Usage (exit 2) when LEDGERDIFF_PG_BINDIR lacks them, or none is found: one line naming
// the package to install (apt-get install postgresql-15) and --db / LEDGERDIFF_DB instead.
Result<std::string> FindPostgresBinDir();

}  // namespace ledgerdiff
