// Safety (issue 11, core part): secrets never reach output, the embedded server never touches
// what is not its own and never leaves clusters behind, dump never writes outside --out.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/database.h"
#include "core/embedded_pg.h"
#include "core/pg.h"
#include "core/stage_timer.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/report.h"
#include "core/tempdir.h"
#include "dump/dump.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::Connect;
using testing::RunCli;
using testing::UniqueName;

// A scratch directory under $TMPDIR (the harness's per-binary directory), removed at scope end.
struct Scratch : testing::ScratchDir {
  explicit Scratch(mode_t mode = 0755) : ScratchDir("ledgerdiff-safety-", mode) {}
  std::vector<std::string> Clusters() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().filename().string().rfind("ledgerdiff-pg-", 0) == 0) out.push_back(e.path().string());
    return out;
  }
};

// Each form a password can take in a conninfo, the unreachable target, and the fragments of
// the password that must never be printed.
struct SecretCase {
  std::string conninfo;
  std::vector<std::string> fragments;
  int exit_code = 3;  // an unreachable server: a runtime failure; 2 when libpq cannot parse the conninfo
};

std::vector<SecretCase> SecretCases() {
  return {
      {"host=/nonexistent port=1 user=bob password=Wr&ongTail", {"Wr&ongTail", "ongTail"}},
      {"host=/nonexistent port=1 user=bob password=Esc\\ apedPw", {"Esc\\ apedPw", "Esc apedPw", "apedPw"}},
      {"host=/nonexistent port=1 user=bob password='Quo ted9Pw'", {"Quo ted9Pw", "ted9Pw"}},
      {"host=/nonexistent port=1 user=bob PASSWORD=UpperSecret7", {"UpperSecret7"}, 2},  // no such option
      {"postgresql://bob:Pa%zzss@nohost.invalid/db", {"Pa%zzss", "zzss"}, 2},
      {"postgresql://bob:Uri%26Secret@/postgres?host=/nonexistent&port=1", {"Uri%26Secret", "Uri&Secret", "Secret"}},
      {"postgresql:///postgres?host=/nonexistent&port=1&password=Qry%20Secret", {"Qry%20Secret", "Qry Secret", "Secret"}},
  };
}

TEST(Secrets, RedactConninfoRemovesEveryForm) {
  for (const auto& c : SecretCases()) {
    std::string shown = RedactConninfo(c.conninfo);
    for (const auto& f : c.fragments) EXPECT_EQ(shown.find(f), std::string::npos) << c.conninfo << " -> " << shown;
  }
  EXPECT_EQ(RedactConninfo("host=x password=s3cret user=bob"), "user=bob host=x");
  EXPECT_EQ(RedactConninfo("postgresql://bob:s3cret@host/db"), "user=bob dbname=db host=host");
  EXPECT_EQ(RedactConninfo("host='a b' dbname=x"), "dbname=x host='a b'");
  EXPECT_EQ(RedactConninfo(""), "");
}

TEST(Secrets, ConnectErrorsNeverCarryThePassword) {
  for (const auto& c : SecretCases()) {
    auto conn = pg::Connection::Open(c.conninfo);
    ASSERT_FALSE(conn.ok()) << c.conninfo;
    const std::string& msg = conn.status().message();
    EXPECT_NE(msg.find("cannot connect"), std::string::npos) << msg;
    for (const auto& f : c.fragments) EXPECT_EQ(msg.find(f), std::string::npos) << c.conninfo << " -> " << msg;
  }
}

TEST(Secrets, EveryStatusIsScrubbedOfRegisteredSecrets) {
  RegisterConninfoSecrets("host=x password=Zq9&Tail");
  Status s = Status::Runtime("server said: Zq9&Tail / Zq9%26Tail").With("context Zq9&Tail");
  EXPECT_EQ(s.message().find("Zq9"), std::string::npos) << s.message();
  // A short secret is scrubbed as a whole token only: it does not mangle words.
  RegisterSecret("ab");
  EXPECT_EQ(ScrubSecrets("absent ab x"), "absent *** x");
}

TEST(Secrets, CliStderrAndJsonNeverCarryThePassword) {
  for (const auto& c : SecretCases()) {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"verify", "--range", "2:11", "--db", c.conninfo, "--format", "json"},
             {"digest", "--schema", "s", "--db", c.conninfo}}) {
      auto r = RunCli(args);
      EXPECT_EQ(r.exit_code, c.exit_code) << c.conninfo << ": " << r.err;
      EXPECT_NE(r.err.find("ledgerdiff:"), std::string::npos) << r.err;
      for (const auto& f : c.fragments) {
        EXPECT_EQ(r.err.find(f), std::string::npos) << c.conninfo << " stderr: " << r.err;
        EXPECT_EQ(r.out.find(f), std::string::npos) << c.conninfo << " stdout: " << r.out;
      }
    }
  }
}

// The 4-byte pieces of `password` that `text` holds.
std::vector<std::string> PiecesIn(const std::string& text, const std::string& password) {
  std::vector<std::string> found;
  for (size_t i = 0; i + 4 <= password.size(); ++i)
    if (text.find(password.substr(i, 4)) != std::string::npos) found.push_back(password.substr(i, 4));
  return found;
}

// Everything a command printed or wrote: stdout, stderr and every file under `dir`.
std::string EverythingShown(const testing::CliResult& r, const fs::path& dir) {
  std::string all = r.out + "\n" + r.err;
  if (fs::exists(dir))
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) all += "\n" + e.path().string() + ":\n" + testing::ReadFileBytes(e.path());
  return all;
}

// Issue 44: conninfos libpq parses as something else or not at all still have their password
// masked everywhere (stdout, stderr, --json, JUnit, Markdown): no 4-byte piece of it is shown.
TEST(Secrets, MalformedConninfosLeakNoPieceOfThePassword) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"postgresql:/bob:OneSlashPw77@nohost.invalid/db", "OneSlashPw77"},
      {"postgresql//bob:NoColonPw88@nohost.invalid/db", "NoColonPw88"},
      {"postgres:bob:SchemeOnlyPw99@nohost.invalid/db", "SchemeOnlyPw99"},
      {"bob:BareUserinfoPw11@nohost.invalid/db", "BareUserinfoPw11"},
      {"host=/nonexistent port=1 user=bob password=Hun ter=2Qx", "Hun ter=2Qx"},
      {"host=/nonexistent port=1 user=bob sslpassword=Key Pass=Word7", "Key Pass=Word7"},
  };
  Scratch scratch;
  int n = 0;
  for (const auto& [conninfo, password] : cases) {
    const fs::path out = fs::path(scratch.path) / std::to_string(n++);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"verify", "--range", "2:11", "--db", conninfo, "--format", "json", "--json", (out / "v.json").string(),
              "--junit", (out / "v.xml").string(), "--markdown", (out / "v.md").string()},
             {"digest", "--schema", "s", "--db", conninfo, "--json", (out / "d.json").string()}}) {
      auto r = RunCli(args);
      EXPECT_EQ(r.exit_code, 2) << conninfo << ": " << r.err;
      EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
      const std::string all = EverythingShown(r, out);
      EXPECT_EQ(PiecesIn(all, password), std::vector<std::string>{}) << conninfo << " -> " << all;
    }
  }
}

// Issue 44: an external ingester that shows part of the password (its stderr ends the failed job's
// error) has it masked before the error reaches stdout, stderr, --json, JUnit or Markdown.
TEST(Secrets, AnIngesterShowingPartOfThePasswordHasItMasked) {
  Scratch scratch;
  const std::string password = "Qz7xKv9wJm4pYt2L";  // no 4-byte piece of it is an English word
  const std::string db = testing::TestConninfo() + " password=" + password;
  // Cut by the shell, as a script that logs its settings would: no whole form of the password.
  const std::string cmd =
      "echo \"connecting with ${PGPASSWORD%Yt2L} (${PGPASSWORD#Qz7x})\" >&2; exit 3 # {from} {to}";
  const fs::path out = fs::path(scratch.path) / "reports";
  auto ingest = RunCli({"ingest", "--range", "2:11", "--schema", UniqueName("pw_ing"), "--workers", "2", "--job-size",
                        "5", "--retries", "0", "--ingest-cmd", cmd, "--db", db, "--format", "json", "--json",
                        (out / "i.json").string()},
                       {"TMPDIR=" + scratch.path});
  EXPECT_EQ(ingest.exit_code, 1) << ingest.err;
  EXPECT_NE(ingest.err.find("connecting with ***"), std::string::npos) << "the ingester's line is shown, masked: "
                                                                       << ingest.err;
  auto verify = RunCli({"verify", "--range", "2:11", "--workers", "2", "--job-size", "5", "--retries", "0",
                        "--ingest-cmd", cmd, "--db", db, "--format", "json", "--json", (out / "v.json").string(),
                        "--junit", (out / "v.xml").string(), "--markdown", (out / "v.md").string()},
                       {"TMPDIR=" + scratch.path});
  EXPECT_EQ(verify.exit_code, 1) << verify.err;
  for (const auto* r : {&ingest, &verify}) {
    const std::string all = EverythingShown(*r, out);
    EXPECT_EQ(PiecesIn(all, password), std::vector<std::string>{}) << all;
  }
}

TEST(Embedded, KeepDbRefusesANonEmptyDirectoryThatIsNotACluster) {
  Scratch scratch;
  fs::path dir = fs::path(scratch.path) / "precious";
  fs::create_directories(dir);
  { std::ofstream(dir / "notes.txt") << "mine\n"; }
  auto started = EmbeddedPostgres::Start({.dir = dir.string()});
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().kind(), Status::Kind::kUsage);
  EXPECT_NE(started.status().message().find(dir.string()), std::string::npos) << started.status().message();
  struct stat st {};
  ASSERT_EQ(stat((dir / "notes.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());  // not handed to the server user
  EXPECT_FALSE(fs::exists(dir / "data"));

  auto r = RunCli({"digest", "--schema", "s", "--keep-db", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir.string()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "data"));
}

TEST(Embedded, KeepDbReusesItsOwnCluster) {
  Scratch scratch;
  fs::path dir = fs::path(scratch.path) / "kept";
  {
    auto first = EmbeddedPostgres::Start({.dir = dir.string()});
    ASSERT_TRUE(first.ok()) << first.status().message();
    auto conn = Connect((*first)->conninfo());
    ASSERT_TRUE(conn);
    ASSERT_TRUE(conn->Run("CREATE TABLE kept_marker (x int)").ok());
  }
  EXPECT_TRUE(fs::exists(dir / kClusterMarkerFile));
  auto again = EmbeddedPostgres::Start({.dir = dir.string()});
  ASSERT_TRUE(again.ok()) << again.status().message();
  auto conn = Connect((*again)->conninfo());
  ASSERT_TRUE(conn);
  EXPECT_TRUE(conn->Exec("SELECT count(*) FROM kept_marker").ok());
}

TEST(Embedded, StaleOwnedDirectoriesAreReapedOthersAreNot) {
  Scratch scratch;
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // `child` is now a pid nobody has
  auto make = [&](const std::string& name, const std::string& marker) {
    fs::create_directories(fs::path(scratch.path) / name / "data");
    if (!marker.empty()) std::ofstream(fs::path(scratch.path) / name / kOwnerMarkerFile) << marker;
  };
  make("ledgerdiff-pg-stale", fmt::format("pid={}\nstart=1\n", child));
  make("ledgerdiff-chaos-stale", fmt::format("pid={}\nstart=1\n", child));
  make("ledgerdiff-pg-nomarker", "");
  make("someone-else", fmt::format("pid={}\nstart=1\n", child));
  fs::create_directories(fs::path(scratch.path) / "ledgerdiff-pg-alive");
  ASSERT_TRUE(WriteOwnerMarker((fs::path(scratch.path) / "ledgerdiff-pg-alive").string()).ok());
  // A recycled pid: alive, but started at another time than the marker says.
  make("ledgerdiff-pg-recycled", fmt::format("pid={}\nstart=1\n", getpid()));
  // Killed between mkdtemp and the marker's write: nothing but a partial marker, long ago.
  const auto long_ago = fs::file_time_type::clock::now() - kUnmarkedGrace - std::chrono::minutes(1);
  const fs::path died_unmarked = fs::path(scratch.path) / "ledgerdiff-sweep-Ab3dE9";
  fs::create_directories(died_unmarked);
  std::ofstream(died_unmarked / kOwnerMarkerFile) << "pid=";  // half-written
  fs::last_write_time(died_unmarked, long_ago);
  // Kept: the same but just made (its creator may be writing the marker right now), and an old
  // unmarked directory holding anything else.
  const fs::path being_made = fs::path(scratch.path) / "ledgerdiff-sweep-Zz9yX8";
  fs::create_directories(being_made);
  const fs::path unmarked_with_data = fs::path(scratch.path) / "ledgerdiff-pg-Qq1wE2";
  fs::create_directories(unmarked_with_data / "data");
  fs::last_write_time(unmarked_with_data, long_ago);

  auto removed = ReapStaleTempDirs(scratch.path);
  std::sort(removed.begin(), removed.end());
  ASSERT_EQ(removed.size(), 4u);
  EXPECT_FALSE(fs::exists(died_unmarked));
  EXPECT_TRUE(fs::exists(being_made));
  EXPECT_TRUE(fs::exists(unmarked_with_data));
  EXPECT_FALSE(fs::exists(fs::path(scratch.path) / "ledgerdiff-pg-stale"));
  EXPECT_FALSE(fs::exists(fs::path(scratch.path) / "ledgerdiff-chaos-stale"));
  EXPECT_FALSE(fs::exists(fs::path(scratch.path) / "ledgerdiff-pg-recycled"));
  EXPECT_TRUE(fs::exists(fs::path(scratch.path) / "ledgerdiff-pg-nomarker"));
  EXPECT_TRUE(fs::exists(fs::path(scratch.path) / "someone-else"));
  EXPECT_TRUE(fs::exists(fs::path(scratch.path) / "ledgerdiff-pg-alive"));
}

// Starts ledgerdiff with TMPDIR=`tmpdir` and stdout on `stdout_fd` (-1: /dev/null).
pid_t StartCli(const std::vector<std::string>& args, const std::string& tmpdir, int stdout_fd) {
  testing::CliSpawnOptions options;
  options.stdout_fd = stdout_fd;
  options.env = {"TMPDIR=" + tmpdir};
  return testing::SpawnCli(args, options);
}

// True while any process works inside `dir` (its cwd is there): initdb, its single-user
// backend and the server all run from the cluster directory.
bool SomeProcessWorksIn(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::error_code link_ec;
    std::string cwd = fs::read_symlink(e.path() / "cwd", link_ec).string();
    if (!link_ec && (cwd == dir || cwd.rfind(dir + "/", 0) == 0)) return true;
  }
  return false;
}

enum class KillPoint { kDuringInitdb, kServerReady };

// Kills a verify run with SIGKILL at `when`, waits until nothing it started still works in its
// cluster directory, and checks that the next run removes that directory and says so.
void KillRunThenExpectTheNextRunToReap(KillPoint when) {
  Scratch scratch;
  pid_t pid = StartCli({"verify", "--range", "2:3001", "--workers", "2"}, scratch.path, -1);
  auto found = [&](const std::string& c) {
    if (when == KillPoint::kDuringInitdb) return fs::exists(fs::path(c) / "initdb.log");
    // "ready" is the postmaster's status line once it accepts connections; a single-user
    // backend inside initdb writes a postmaster.pid too, without it.
    std::ifstream in(fs::path(c) / "data" / "postmaster.pid");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.find("ready") != std::string::npos;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string cluster;
  while (cluster.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& c : scratch.Clusters())
      if (found(c)) cluster = c;
    if (cluster.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(cluster.empty());
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(fs::exists(cluster));
  // initdb gets SIGTERM and the server SIGINT (parent-death signals). A fast shutdown still
  // checkpoints everything the ingest dirtied, which can take long on a loaded machine; what
  // still runs is rightly never reaped, so wait for it all to be gone.
  // Quiet means nothing there for a whole second: a child forked just before the kill may not
  // have entered the directory yet at the first look.
  auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int quiet_looks = 0;
  while (quiet_looks < 20 && std::chrono::steady_clock::now() < gone_by) {
    quiet_looks = SomeProcessWorksIn(cluster) ? 0 : quiet_looks + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(quiet_looks, 20) << "what the killed run started never stopped";
  if (when == KillPoint::kDuringInitdb) {  // initdb died with the run instead of finishing alone
    EXPECT_FALSE(fs::exists(fs::path(cluster) / "data" / "PG_VERSION"));
  }

  auto r = RunCli({"digest", "--schema", "no_such_schema"}, {"TMPDIR=" + scratch.path});
  EXPECT_NE(r.err.find("ledgerdiff: removed "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(cluster), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(cluster));
  EXPECT_TRUE(scratch.Clusters().empty());
}

TEST(Embedded, ClusterOfARunKilledWhileItsServerRunsIsReapedByTheNextRun) {
  KillRunThenExpectTheNextRunToReap(KillPoint::kServerReady);
}

TEST(Embedded, ClusterOfARunKilledDuringInitdbIsReapedByTheNextRun) {
  KillRunThenExpectTheNextRunToReap(KillPoint::kDuringInitdb);
}

TEST(Embedded, BrokenStdoutPipeStillRemovesTheCluster) {
  Scratch scratch;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // the reader is gone, like `| head -c 100` after its bytes
  pid_t pid = StartCli({"verify", "--range", "2:101", "--workers", "2", "--format", "json"}, scratch.path, fds[1]);
  close(fds[1]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 128 + SIGPIPE) << "wait status " << ws;
  EXPECT_TRUE(scratch.Clusters().empty());
}

TEST(Embedded, MissingTmpdirIsAOneLineUsageError) {
  for (const char* tmpdir : {"/nonexistent", "/etc/passwd"}) {
    auto r = RunCli({"digest", "--schema", "s"}, {std::string("TMPDIR=") + tmpdir});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(std::string("TMPDIR=") + tmpdir), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(Embedded, PrivateTmpdirStillWorks) {
  Scratch priv(0700);  // like `mktemp -d` or systemd's PrivateTmp
  auto server = EmbeddedPostgres::Start({.temp_root = priv.path});
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto conn = Connect((*server)->conninfo());
  ASSERT_TRUE(conn);
  std::string dir = (*server)->dir();
  if (RunningAsRoot()) {
    EXPECT_NE(dir.rfind(priv.path, 0), 0u) << dir;  // placed where the server user can reach
  }
  conn.reset();
  EXPECT_TRUE((*server)->Stop().ok());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(Embedded, MaxConnectionsIsSizedForManyWorkers) {
  EXPECT_GE(EmbeddedMaxConnectionsFor(64), 2 * 64);
  EXPECT_GE(EmbeddedMaxConnectionsFor(500), 2 * 500);
  EXPECT_EQ(EmbeddedMaxConnectionsFor(1), kDefaultEmbeddedMaxConnections);
  // The default server (the harness's) takes 2 sessions for each of 64 workers and then some.
  std::vector<std::unique_ptr<pg::Connection>> conns;
  for (int i = 0; i < 2 * 64 + 10; ++i) {
    auto c = pg::Connection::Open(testing::TestConninfo());
    ASSERT_TRUE(c.ok()) << "connection " << i << ": " << c.status().message();
    conns.push_back(std::move(c).value());
  }
  auto rows = conns[0]->Exec("SHOW max_connections");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->Get(0, 0), std::to_string(kDefaultEmbeddedMaxConnections));
}

TEST(Embedded, ServerDeathNamesTheCauseFromItsLog) {
  auto server = EmbeddedPostgres::Start({.max_connections = 20});
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto conn = Connect((*server)->conninfo());
  ASSERT_TRUE(conn);
  auto rows = conn->Exec("SHOW max_connections");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->Get(0, 0), "20");
  // What a full disk makes the server write before it goes down.
  fs::path dir = (*server)->dir();
  std::ofstream(dir / kServerLogFile, std::ios::app)
      << "2026-11-30 20:00:00 UTC [1] PANIC:  could not write to file \"pg_wal/xlogtemp.1\": No space left on device\n";
  std::ifstream pidfile(dir / "data" / "postmaster.pid");
  pid_t postmaster = 0;
  pidfile >> postmaster;
  ASSERT_GT(postmaster, 0);
  kill(postmaster, SIGQUIT);  // immediate shutdown: every session is cut
  Status s;
  for (int i = 0; i < 100 && s.ok(); ++i) {
    s = conn->Run("SELECT 1");
    if (s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.message();
  (void)(*server)->Stop();
}

// ---- Atomic outputs: dump --out DIR and digest --out FILE (issue 11) ----

// A schema of two tables for the auto profile: "a_first" is read before "z_last" (tables go in
// name order), so locking z_last stops a dump or digest midway, after a_first's file is written.
std::string TwoTableSchema(pg::Connection& conn) {
  std::string schema = UniqueName("atomic_out");
  EXPECT_TRUE(CreateOwnedSchema(conn, schema, "t", IfOwned::kReplace, IfForeign::kRefuse).ok());
  for (const char* table : {"a_first", "z_last"})
    EXPECT_TRUE(conn.Run(fmt::format("CREATE TABLE {0} (ledger_sequence int, v text); "
                                     "INSERT INTO {0} SELECT g, 'row ' || g FROM generate_series(2, 41) g",
                                     pg::Qualified(schema, table)))
                    .ok());
  return schema;
}

// Every entry of `dir` whose name starts with `prefix`.
std::vector<std::string> EntriesStartingWith(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The z_last table locked by another session for the guard's life.
struct TableLock {
  std::unique_ptr<pg::Connection> conn;
  TableLock(const std::string& schema, const std::string& table) : conn(Connect()) {
    EXPECT_TRUE(conn->Run("BEGIN; LOCK TABLE " + pg::Qualified(schema, table) + " IN ACCESS EXCLUSIVE MODE").ok());
  }
  ~TableLock() { (void)conn->Run("ROLLBACK"); }
};

TEST(AtomicOutput, AFailedDumpLeavesNoDirectoryAndAPreExistingOneUntouched) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = TwoTableSchema(*conn);
  Scratch scratch;
  const fs::path fresh = fs::path(scratch.path) / "fresh";
  const fs::path existing = fs::path(scratch.path) / "existing";
  fs::create_directories(existing);
  std::ofstream(existing / "keep.txt") << "mine\n";
  std::ofstream(existing / "a_first.jsonl") << "old\n";
  {
    TableLock lock(schema, "z_last");  // the dump fails on its second table (lock timeout)
    for (const fs::path& out : {fresh, existing}) {
      auto r = RunCli({"dump", "--db", testing::TestConninfo(), "--schema", schema, "--profile", "auto", "--range",
                       "2:41", "--out", out.string()},
                      {"PGOPTIONS=-c lock_timeout=300"});
      EXPECT_EQ(r.exit_code, 3) << "a server error is a runtime failure: " << r.err;
      EXPECT_NE(r.err.find("z_last"), std::string::npos) << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_EQ(EntriesStartingWith(scratch.path, "fresh"), std::vector<std::string>{});
  EXPECT_EQ(EntriesStartingWith(scratch.path, "existing"), std::vector<std::string>{"existing"});
  EXPECT_EQ(EntriesStartingWith(existing, ""), (std::vector<std::string>{"a_first.jsonl", "keep.txt"}));
  EXPECT_EQ(testing::ReadFileBytes(existing / "a_first.jsonl"), "old\n");

  // Once it succeeds, the pre-existing directory gets the dump's files and keeps its others.
  auto ok = RunCli({"dump", "--db", testing::TestConninfo(), "--schema", schema, "--profile", "auto", "--range", "2:41",
                    "--out", existing.string()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(EntriesStartingWith(existing, ""),
            (std::vector<std::string>{"a_first.jsonl", "keep.txt", "z_last.jsonl"}));
  EXPECT_NE(testing::ReadFileBytes(existing / "a_first.jsonl").find("row 41"), std::string::npos);
  EXPECT_EQ(EntriesStartingWith(scratch.path, "existing"), std::vector<std::string>{"existing"});
}

// Ctrl-C while a dump or a digest is half-way: the cleanup registry removes the staging
// directory / the manifest's temporary (.FILE.ldtmp-*); the target is never created and a pre-existing manifest is untouched.
TEST(AtomicOutput, AnInterruptedDumpOrDigestLeavesNothingBehind) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = TwoTableSchema(*conn);
  Scratch scratch;
  const fs::path dir = fs::path(scratch.path) / "dumped";
  const fs::path manifest = fs::path(scratch.path) / "m.ldm";
  std::ofstream(manifest) << "a previous manifest\n";
  TableLock lock(schema, "z_last");  // both block on z_last until interrupted
  auto waiters = [&] {
    auto waiting = conn->Exec("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                              "WHERE NOT l.granted AND c.relname = 'z_last' AND c.relnamespace = "
                              "(SELECT oid FROM pg_namespace WHERE nspname = $1)",
                              {schema});
    return waiting.ok() ? waiting->GetInt(0, 0) : -1;
  };
  struct Case {
    std::vector<std::string> args;
    std::string staged_prefix;  // what appears in scratch while it runs
  };
  for (const Case& c : std::vector<Case>{
           {{"dump", "--schema", schema, "--out", dir.string()}, "dumped.tmp"},
           {{"digest", "--schema", schema, "--out", manifest.string()}, ".m.ldm.ldtmp-"}}) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--db", testing::TestConninfo(), "--profile", "auto", "--range", "2:41"});
    // An interrupted client's backend keeps waiting for z_last until the lock is released (a backend
    // blocked on a lock does not see its client go): this case's wait is one more than those.
    const int64_t waiting_before = waiters();
    pid_t pid = StartCli(args, scratch.path, -1);
    bool staged = false;
    for (int i = 0; i < 400 && !staged; ++i) {
      staged = !EntriesStartingWith(scratch.path, c.staged_prefix).empty();
      if (!staged) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ASSERT_TRUE(staged) << c.args[0] << " never started writing";
    // Interrupt it once pg_locks shows a backend waiting for z_last's lock.
    bool blocked = false;
    for (int i = 0; i < 1200 && !blocked; ++i) {
      blocked = waiters() > waiting_before;
      if (!blocked) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ASSERT_TRUE(blocked) << c.args[0] << " never waited for z_last";
    kill(pid, SIGINT);
    int ws = 0;
    waitpid(pid, &ws, 0);
    EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 128 + SIGINT) << c.args[0] << ": wait status " << ws;
    EXPECT_EQ(EntriesStartingWith(scratch.path, c.staged_prefix), std::vector<std::string>{}) << c.args[0];
  }
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(testing::ReadFileBytes(manifest), "a previous manifest\n");
}

TEST(Bounds, AnEndlessProfileIsAOneLineUsageError) {
  // /dev/zero never ends: it used to be read until memory ran out (exit 134).
  auto r = RunCli({"digest", "--schema", "s", "--profile", "/dev/zero", "--db", "host=/nonexistent"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("profile \"/dev/zero\": not a regular file (a character device)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Issue 22: a FIFO nobody writes to blocked open(2) forever. Only regular files are profiles:
// the FIFO is refused at once (exit 2 naming it), without a writer ever showing up.
TEST(Bounds, AProfileThatIsAFifoIsRefusedWithoutBlocking) {
  testing::ScratchDir scratch("ledgerdiff-fifo-");
  const std::string fifo = scratch.path + "/profile.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const pid_t pid = testing::SpawnCli({"digest", "--schema", "s", "--profile", fifo, "--db", "host=/nonexistent"},
                                      {.stderr_path = scratch.path + "/err"});
  // Polled with a deadline: without the fix the child never returns, and the test must not hang.
  int ws = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (waitpid(pid, &ws, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &ws, 0);
      FAIL() << "ledgerdiff blocked on the FIFO " << fifo;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(ws)) << ws;
  EXPECT_EQ(WEXITSTATUS(ws), 2);
  const std::string err = testing::ReadFileBytes(scratch.path + "/err");
  EXPECT_NE(err.find("profile \"" + fifo + "\": not a regular file (a FIFO)"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// A FIFO (or a directory) given where a command reads a file (manifest, baseline, profile) is
// refused at once, exit 2, naming the path, before any server starts: it used to block forever in
// the reader (manifest show, diff, verify --baseline after starting its server), fail after the
// server started (a directory as --baseline), or (selftest --profile) ingest first and fail later.
// A checkpoint (digest/verify-range --out FILE: FILE.partial) likewise.
TEST(Bounds, EveryFileReadThatIsNotARegularFileIsRefusedAtOnce) {
  testing::ScratchDir scratch("ledgerdiff-fifo-");
  const std::string fifo = scratch.path + "/in.ldm";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const std::string dir = scratch.path + "/dir.ldm";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0) << std::strerror(errno);
  const std::string merged = scratch.path + "/merged.ldm";
  // A checkpoint (OUT.partial) that is a FIFO, for digest and verify-range --resume.
  const std::string out = scratch.path + "/out.ldm";
  ASSERT_EQ(mkfifo((out + ".partial").c_str(), 0600), 0) << std::strerror(errno);
  struct Case {
    std::vector<std::string> args;
    std::string path;
  };
  const std::vector<Case> cases = {
      {{"manifest", "show", fifo}, fifo},
      {{"manifest", "merge", "--out", merged, fifo}, fifo},
      {{"diff", fifo, "file:" + fifo}, fifo},
      {{"verify", "--range", "2:301", "--baseline", fifo}, fifo},
      {{"verify", "--range", "2:301", "--baseline", dir}, dir},
      {{"selftest", "--profile", fifo, "--range", "2:301"}, fifo},
      {{"digest", "--db", "host=/nonexistent", "--schema", "s", "--out", out, "--resume"}, out + ".partial"},
      {{"verify-range", "--range", "2:301", "--left", "host=/nonexistent", "--right", "host=/nonexistent", "--out", out,
        "--resume"},
       out + ".partial"},
  };
  for (const auto& c : cases) {
    const std::string err_path = scratch.path + "/err";
    const Stopwatch start;
    const pid_t pid = testing::SpawnCli(c.args, {.stderr_path = err_path});
    // Polled with a deadline: a regression blocks, and the test must fail rather than hang.
    int ws = 0;
    bool killed = false;
    while (waitpid(pid, &ws, WNOHANG) == 0) {
      if (start.Seconds() > 20) {
        kill(pid, SIGKILL);
        waitpid(pid, &ws, 0);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const std::string what = c.args[0] + " " + c.args[1];
    ASSERT_FALSE(killed) << what << " blocked on " << c.path;
    EXPECT_LT(start.Seconds(), 3) << what;
    ASSERT_TRUE(WIFEXITED(ws)) << what << ": " << ws;
    EXPECT_EQ(WEXITSTATUS(ws), 2) << what;
    const std::string err = testing::ReadFileBytes(err_path);
    EXPECT_NE(err.find(c.path), std::string::npos) << what << ": " << err;
    EXPECT_NE(err.find("not a regular file"), std::string::npos) << what << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << what << ": " << err;
    EXPECT_FALSE(fs::exists(merged)) << what;
  }
}

TEST(Dump, TableNamesNeverEscapeTheOutputDirectory) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  std::string schema = UniqueName("dump_escape");
  ASSERT_TRUE(CreateOwnedSchema(*conn, schema, "t", IfOwned::kReplace, IfForeign::kRefuse).ok());
  for (const char* table : {"../../x", "/abs_x", "..", "a%2Fb"}) {
    ASSERT_TRUE(conn->Run(fmt::format("CREATE TABLE {} (ledger_sequence int); INSERT INTO {} VALUES (2)",
                                      pg::Qualified(schema, table), pg::Qualified(schema, table)))
                    .ok());
  }
  Scratch scratch;
  fs::path out = fs::path(scratch.path) / "a" / "b" / "out";
  dump::DumpOptions opts;
  opts.out = out.string();
  NullReporter reporter;
  auto summary = dump::DumpSchema(testing::TestConninfo(), schema, dump::AutoProfileSpec(), opts, reporter);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->files.size(), 4u);
  for (const auto& f : summary->files) {
    EXPECT_EQ(fs::path(f).parent_path(), out) << f;
    EXPECT_TRUE(fs::is_regular_file(f)) << f;
  }
  EXPECT_FALSE(fs::exists(fs::path(scratch.path) / "a" / "x.jsonl"));
  EXPECT_FALSE(fs::exists("/abs_x.jsonl"));
  EXPECT_EQ(SafeFileName("../../x"), "..%2F..%2Fx");
  EXPECT_EQ(SafeFileName(".."), "%2E%2E");
  EXPECT_NE(SafeFileName("a%2Fb"), SafeFileName("a/b"));
}

}  // namespace
}  // namespace ledgerdiff
