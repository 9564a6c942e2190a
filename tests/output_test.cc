// The rules every command follows when it writes a file or fails (issue 20): files appear whole
// or not at all, never through a symbolic link; exit 2 is bad input (nothing done), exit 3 a
// runtime failure (a lost server, a refused connection).

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "core/atomic_file.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::FreshTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::TestConninfo;
using testing::WriteFileBytes;

// Names in `dir` other than `keep` (a temporary file left behind shows up here).
std::vector<std::string> OtherEntries(const fs::path& dir, const std::set<std::string>& keep) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (!keep.count(e.path().filename().string())) out.push_back(e.path().filename().string());
  return out;
}

TEST(AtomicFile, WritesWholeFileAndLeavesNoTemporary) {
  fs::path dir = FreshTempDir("atomic");
  const std::string target = (dir / "out.txt").string();
  WriteFileBytes(target, "old");
  {
    auto f = AtomicFile::Create(target);
    ASSERT_TRUE(f.ok()) << f.status().message();
    ASSERT_TRUE((*f)->Write("new ").ok());
    EXPECT_EQ(ReadFileBytes(target), "old") << "the target is untouched until Commit";
    ASSERT_TRUE((*f)->Write(std::string(3 << 20, 'x')).ok());  // past the buffer: real write(2)s
    EXPECT_EQ(ReadFileBytes(target), "old");
    EXPECT_TRUE((*f)->Commit().ok());
  }
  EXPECT_EQ(ReadFileBytes(target), "new " + std::string(3 << 20, 'x'));
  EXPECT_TRUE(OtherEntries(dir, {"out.txt"}).empty());
}

TEST(AtomicFile, AbandonedWriteLeavesTargetAndNoTemporary) {
  fs::path dir = FreshTempDir("atomic_abandon");
  const std::string target = (dir / "out.txt").string();
  WriteFileBytes(target, "old");
  {
    auto f = AtomicFile::Create(target);
    ASSERT_TRUE(f.ok()) << f.status().message();
    ASSERT_TRUE((*f)->Write("half").ok());
    EXPECT_EQ(OtherEntries(dir, {"out.txt"}).size(), 1u) << "the temporary file lives beside the target";
  }
  EXPECT_EQ(ReadFileBytes(target), "old");
  EXPECT_TRUE(OtherEntries(dir, {"out.txt"}).empty());
}

TEST(AtomicFile, RefusesSymlinkAtTargetAndLeavesItsTargetAlone) {
  fs::path dir = FreshTempDir("atomic_link");
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  fs::create_symlink(victim, dir / "out.txt");
  Status s = WriteFileAtomic((dir / "out.txt").string(), "attack");
  EXPECT_EQ(s.kind(), Status::Kind::kUsage) << s.message();
  EXPECT_EQ(s.exit_code(), ExitCode::kUsage);
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(dir / "out.txt"));
  // A dangling link too: creating through it would make a file wherever it points.
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  EXPECT_EQ(WriteFileAtomic((dir / "dangling").string(), "x").kind(), Status::Kind::kUsage);
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
}

TEST(AtomicFile, LinkPlantedAfterCreateIsRefusedAtCommit) {
  fs::path dir = FreshTempDir("atomic_race");
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  auto f = AtomicFile::Create((dir / "out.txt").string());
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_TRUE((*f)->Write("attack").ok());
  fs::create_symlink(victim, dir / "out.txt");
  EXPECT_EQ((*f)->Commit().kind(), Status::Kind::kUsage);
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  EXPECT_TRUE(OtherEntries(dir, {"out.txt", "victim"}).empty());
}

TEST(AtomicFile, PathErrorsAreUsageErrors) {
  fs::path dir = FreshTempDir("atomic_paths");
  EXPECT_EQ(WriteFileAtomic((dir / "no" / "such" / "dir.txt").string(), "x").exit_code(), ExitCode::kUsage);
  fs::create_directory(dir / "sub");
  EXPECT_EQ(WriteFileAtomic((dir / "sub").string(), "x").exit_code(), ExitCode::kUsage) << "a directory in the way";
  EXPECT_EQ(WriteFileAtomic("", "x").exit_code(), ExitCode::kUsage);
}

TEST(ExitCodes, StatusKindsMapToTheDocumentedCodes) {
  EXPECT_EQ(static_cast<int>(Status::Ok().exit_code()), 0);
  EXPECT_EQ(static_cast<int>(Status::Usage("x").exit_code()), 2);
  EXPECT_EQ(static_cast<int>(Status::Runtime("x").exit_code()), 3);
}

// Files a command writes inside an output directory are checked up front like a --junit FILE:
// a symbolic link at DIR/index.html or at a dump's table file, or DIR itself a link, is exit 2
// before any work (the unreachable --db proves nothing started). They used to be found after the
// whole ingest (exit 3), written through, or silently replaced.
TEST(OutputDirectories, LinksInsideOrAtTheDirectoryAreRefusedUpFront) {
  fs::path dir = FreshTempDir("outdir_links");
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  fs::create_directories(dir / "rep2");
  fs::create_symlink(victim, dir / "rep2" / "index.html");
  fs::create_directories(dir / "elsewhere");
  fs::create_symlink(dir / "elsewhere", dir / "rlink");
  fs::create_directories(dir / "d2");
  fs::create_symlink(victim, dir / "d2" / "history_effects.jsonl");
  const std::string nowhere = "host=/nonexistent";
  struct Case {
    std::vector<std::string> args;
    std::string path;
  };
  const std::vector<Case> cases = {
      {{"verify", "--db", nowhere, "--range", "2:301", "--report", (dir / "rep2").string()},
       (dir / "rep2" / "index.html").string()},
      {{"verify", "--db", nowhere, "--range", "2:301", "--report", (dir / "rlink").string()}, (dir / "rlink").string()},
      {{"dump", "--db", nowhere, "--schema", "s", "--out", (dir / "d2").string()},
       (dir / "d2" / "history_effects.jsonl").string()},
  };
  for (const auto& c : cases) {
    CliResult r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.path << ": " << r.err;
    EXPECT_NE(r.err.find("is a symbolic link"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.path), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  EXPECT_TRUE(fs::is_empty(dir / "elsewhere"));
  EXPECT_TRUE(fs::is_symlink(dir / "d2" / "history_effects.jsonl"));
}

// One ingested schema for the CLI tests below.
class OutputCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    schema_ = new std::string(testing::UniqueName("out"));
    CliResult r =
        RunCli({"ingest", "--db", TestConninfo(), "--schema", *schema_, "--range", "2:301", "--workers", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete schema_; }
  static std::string* schema_;
};
std::string* OutputCli::schema_ = nullptr;

TEST_F(OutputCli, DigestOutThroughASymlinkIsRefused) {
  fs::path dir = FreshTempDir("digest_link");
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  fs::create_symlink(victim, dir / "m.ldm");
  CliResult r = RunCli({"digest", "--db", TestConninfo(), "--schema", *schema_, "--out", (dir / "m.ldm").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  EXPECT_TRUE(OtherEntries(dir, {"m.ldm", "victim"}).empty()) << "no temporary and no checkpoint left";
}

TEST_F(OutputCli, LinkAtTheOldTemporaryNameIsNotFollowed) {
  fs::path dir = FreshTempDir("digest_tmp_link");
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  const fs::path out = dir / "m.ldm";
  fs::create_symlink(victim, dir / "m.ldm.tmp");
  CliResult r = RunCli({"digest", "--db", TestConninfo(), "--schema", *schema_, "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_TRUE(fs::is_regular_file(out));
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(
      st.st_mode & 0777, 0644 & ~[] {
        mode_t m = umask(0);
        umask(m);
        return m;
      }());
  CliResult show = RunCli({"manifest", "show", out.string()});
  EXPECT_EQ(show.exit_code, 0) << show.err;
}

TEST_F(OutputCli, MergeAndVerifyRangeOutThroughASymlinkAreRefused) {
  fs::path dir = FreshTempDir("merge_link");
  std::vector<std::string> parts;
  for (int k = 0; k < 2; ++k) {
    parts.push_back((dir / fmt::format("part-{}.ldm", k)).string());
    CliResult r = RunCli({"digest", "--db", TestConninfo(), "--schema", *schema_, "--range", "2:301", "--shards", "2",
                          "--shard", std::to_string(k), "--out", parts.back()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  fs::create_symlink(victim, dir / "full.ldm");
  CliResult merge = RunCli({"manifest", "merge", "--out", (dir / "full.ldm").string(), parts[0], parts[1]});
  EXPECT_EQ(merge.exit_code, 2) << merge.err;
  EXPECT_NE(merge.err.find("symbolic link"), std::string::npos) << merge.err;
  CliResult vr = RunCli({"verify-range", "--range", "2:301", "--left", TestConninfo(), "--right", TestConninfo(),
                         "--left-schema", *schema_, "--right-schema", *schema_, "--out", (dir / "full.ldm").string()});
  EXPECT_EQ(vr.exit_code, 2) << vr.err;
  EXPECT_EQ(ReadFileBytes(victim), "precious");
}

// Output paths are checked when the flags are parsed, before a server starts or a ledger is
// ingested: missing parent directories are created, a link or a directory in the way is exit 2.
TEST_F(OutputCli, OutputPathsAreCheckedBeforeAnyWork) {
  fs::path dir = FreshTempDir("paths_first");
  const fs::path victim = dir / "victim";
  WriteFileBytes(victim, "precious");
  fs::create_symlink(victim, dir / "v.xml");
  // No --db: a verify that got past its flags would start an embedded server and ingest.
  CliResult link = RunCli({"verify", "--range", "2:101", "--junit", (dir / "v.xml").string()});
  EXPECT_EQ(link.exit_code, 2) << link.err;
  EXPECT_NE(link.err.find("symbolic link"), std::string::npos) << link.err;
  EXPECT_EQ(link.err.find("embedded"), std::string::npos) << "refused before any server started: " << link.err;
  EXPECT_EQ(ReadFileBytes(victim), "precious");
  fs::create_directory(dir / "adir");
  CliResult in_the_way = RunCli({"verify", "--range", "2:101", "--markdown", (dir / "adir").string()});
  EXPECT_EQ(in_the_way.exit_code, 2) << in_the_way.err;
  // Parent directories are made, as --report always did.
  const fs::path deep = dir / "no" / "such" / "m.ldm";
  CliResult digest = RunCli({"digest", "--db", TestConninfo(), "--schema", *schema_, "--out", deep.string()});
  EXPECT_EQ(digest.exit_code, 0) << digest.err;
  EXPECT_TRUE(fs::is_regular_file(deep));
}

TEST(ConnectExitCodes, RefusedConnectionIsRuntimeBadConninfoIsUsage) {
  fs::path dir = FreshTempDir("no_server");
  // Nothing listens on this socket directory: connection refused, a retry may help.
  CliResult refused =
      RunCli({"digest", "--db", "host=" + dir.string() + " port=5999 user=x dbname=x", "--schema", "s"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("cannot connect"), std::string::npos) << refused.err;
  // A conninfo libpq cannot parse, and a database that does not exist: no retry can help.
  CliResult malformed = RunCli({"digest", "--db", "host=x port", "--schema", "s"});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.err;
  CliResult no_db = RunCli({"digest", "--db", TestConninfo() + " dbname=no_such_database_here", "--schema", "s"});
  EXPECT_EQ(no_db.exit_code, 2) << no_db.err;
  EXPECT_NE(no_db.err.find("does not exist"), std::string::npos) << no_db.err;
}

// The server stops while a digest reads: exit 3 (a scheduler retries it), one line, no manifest.
TEST(ConnectExitCodes, ServerStoppingMidDigestIsExit3) {
  auto server = EmbeddedPostgres::Start({});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string conninfo = (*server)->conninfo();
  CliResult ingest = RunCli({"ingest", "--db", conninfo, "--schema", "h", "--range", "2:301", "--workers", "1"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  // A lock that the digest's COPY waits on keeps it mid-run deterministically.
  auto blocker = testing::Connect(conninfo);
  ASSERT_TRUE(blocker->Run("BEGIN; LOCK TABLE h.history_effects IN ACCESS EXCLUSIVE MODE").ok());
  fs::path dir = FreshTempDir("stop_mid_digest");
  const std::string out = (dir / "m.ldm").string();
  testing::CliSpawnOptions so;
  so.stderr_path = (dir / "stderr").string();
  pid_t pid = testing::SpawnCli({"digest", "--db", conninfo, "--schema", "h", "--out", out, "--jobs", "1"}, so);
  // pg_stat_activity is a per-transaction snapshot: poll it from a connection of its own.
  auto observer = testing::Connect(conninfo);
  bool waiting = false;
  for (int i = 0; i < 600 && !waiting; ++i) {
    auto r = observer->Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
    waiting = r.ok() && r->GetInt(0, 0) > 0;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(waiting) << "the digest never reached the locked table: " << ReadFileBytes(so.stderr_path);
  ASSERT_TRUE((*server)->Stop().ok());  // a fast shutdown ends every session, the lock holder's too
  const int code = testing::WaitExitCode(pid);
  const std::string err = ReadFileBytes(so.stderr_path);
  EXPECT_EQ(code, 3) << err;
  EXPECT_FALSE(fs::exists(out));
}

// ---- Without the PostgreSQL server package (issue 22) ---------------------------------------
// The .deb only Recommends postgresql-15: initdb and postgres may be absent. Runs `ledgerdiff
// ARGS` where none can be found, as on a machine without the package: in a private mount
// namespace with /usr/lib/postgresql hidden under an empty tmpfs, PATH=/usr/bin:/bin (checked to
// hold neither), LEDGERDIFF_PG_BINDIR and LEDGERDIFF_DB unset. The production lookup is unchanged.
// `unavailable` says why it could not run (no mount namespace: neither root nor user namespaces;
// or a server binary in /usr/bin): a failure, not a skip, since CI runs as root on Debian 12.
struct NoServerRun {
  CliResult result;
  std::string unavailable;
};
NoServerRun RunWithoutServer(const std::vector<std::string>& args) {
  testing::ScratchDir dir("ledgerdiff-noserver-");
  const std::string script =
      "if [ -d /usr/lib/postgresql ]; then mount -t tmpfs -o size=1m none /usr/lib/postgresql || exit 97; fi\n"
      "if command -v initdb >/dev/null 2>&1 || command -v postgres >/dev/null 2>&1; then exit 98; fi\n"
      "exec \"$0\" \"$@\"\n";
  NoServerRun run;
  for (const std::vector<std::string>& unshare :
       {std::vector<std::string>{"unshare", "--mount", "--propagation", "private"},
        std::vector<std::string>{"unshare", "--map-root-user", "--mount"}}) {
    std::vector<std::string> argv = unshare;
    for (const char* a : {"env", "-u", "LEDGERDIFF_PG_BINDIR", "-u", "LEDGERDIFF_DB", "PATH=/usr/bin:/bin", "sh", "-c"})
      argv.push_back(a);
    argv.push_back(script);
    argv.push_back(testing::LedgerdiffBinary());
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string out = dir.path + "/stdout", err = dir.path + "/stderr";
    pid_t pid = fork();
    if (pid == 0) {
      if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execvp(cargv[0], cargv.data());
      _exit(127);
    }
    run.result.exit_code = testing::WaitExitCode(pid);
    run.result.out = ReadFileBytes(out);
    run.result.err = ReadFileBytes(err);
    if (run.result.exit_code == 98) {
      run.unavailable = "initdb or postgres is in /usr/bin or /bin";
      return run;
    }
    if (run.result.exit_code != 97 && run.result.exit_code != 127 &&
        run.result.err.find("unshare:") == std::string::npos) {
      run.unavailable.clear();
      return run;
    }
    run.unavailable = "no mount namespace to hide /usr/lib/postgresql in: " + run.result.err;
  }
  return run;
}

// A command that needs the embedded default exits 2 with one line naming the package; a command
// given a database runs as usual: the server is only needed for the embedded default.
TEST_F(OutputCli, WithoutTheServerPackageTheEmbeddedDefaultSaysWhatToInstall) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"verify", "--range", "2:11", "--workers", "2"},
        std::vector<std::string>{"digest", "--schema", "h"}}) {
    NoServerRun run = RunWithoutServer(args);
    ASSERT_EQ(run.unavailable, "") << "the check cannot run here";
    EXPECT_EQ(run.result.exit_code, 2) << args[0] << ": " << run.result.err;
    EXPECT_EQ(std::count(run.result.err.begin(), run.result.err.end(), '\n'), 1) << run.result.err;
    EXPECT_NE(run.result.err.find("ledgerdiff: no PostgreSQL server for the embedded default database"),
              std::string::npos)
        << run.result.err;
    EXPECT_NE(run.result.err.find("install it with `apt-get install postgresql-15`"), std::string::npos)
        << run.result.err;
    EXPECT_NE(run.result.err.find("--db CONNINFO or LEDGERDIFF_DB"), std::string::npos) << run.result.err;
    EXPECT_EQ(run.result.out, "") << run.result.out;
  }
  NoServerRun digest = RunWithoutServer({"digest", "--db", TestConninfo(), "--schema", *schema_, "--range", "2:21"});
  ASSERT_EQ(digest.unavailable, "") << "the check cannot run here";
  EXPECT_EQ(digest.result.exit_code, 0) << digest.result.err;
  EXPECT_NE(digest.result.out.find("history_ledgers"), std::string::npos) << digest.result.out;
}

// LEDGERDIFF_PG_BINDIR naming a directory without the server is bad input too (exit 2), named.
TEST(NoServer, PgBindirWithoutTheServerIsExit2) {
  fs::path empty = FreshTempDir("empty_bindir");
  CliResult r = RunCli({"digest", "--schema", "h"}, {"LEDGERDIFF_PG_BINDIR=" + empty.string(), "LEDGERDIFF_DB="});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("LEDGERDIFF_PG_BINDIR=" + empty.string() + " holds no initdb and postgres"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("postgresql-15"), std::string::npos) << r.err;
  fs::remove_all(empty);
}

}  // namespace
}  // namespace ledgerdiff
