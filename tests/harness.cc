#include "tests/harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/process.h"
#include "core/tempdir.h"

namespace ledgerdiff::testing {

namespace {

std::once_flag g_started;
std::unique_ptr<EmbeddedPostgres> g_server;
std::string g_conninfo;

// Stops the server after the last test, if a test started one.
class ServerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_server) (void)g_server->Stop();
    g_server.reset();
  }
};

void StartServerOnce() {
  std::call_once(g_started, [] {
    auto started = EmbeddedPostgres::Start({});
    if (!started.ok()) {
      std::fprintf(stderr, "test harness: the PostgreSQL server did not start: %s\n",
                   started.status().message().c_str());
      std::exit(1);
    }
    g_server = std::move(started).value();
    g_conninfo = g_server->conninfo();
  });
}

}  // namespace

const std::string& TestConninfo() {
  StartServerOnce();
  return g_conninfo;
}
EmbeddedPostgres& TestServer() {
  StartServerOnce();
  return *g_server;
}

std::unique_ptr<pg::Connection> Connect(const std::string& conninfo) {
  auto c = pg::Connection::Open(conninfo, "ledgerdiff-test");
  if (!c.ok()) {
    ADD_FAILURE() << c.status().message();
    return nullptr;
  }
  return std::move(c).value();
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "_" + std::to_string(++n);
}

pid_t SpawnCli(const std::vector<std::string>& args, const CliSpawnOptions& options) {
  pid_t pid = fork();
  if (pid == 0) {
    auto open_or_null = [](const std::string& path) {
      return open(path.empty() ? "/dev/null" : path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    };
    dup2(options.stdout_fd >= 0 ? options.stdout_fd : open_or_null(options.stdout_path), 1);
    dup2(open_or_null(options.stderr_path), 2);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
    signal(SIGPIPE, SIG_DFL);
    for (const auto& e : options.env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    std::string bin = LedgerdiffBinary();
    argv.push_back(bin.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int WaitExitCode(pid_t pid) {
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

CliResult RunCli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  ScratchDir dir("ledgerdiff-cli-");
  const std::string out = dir.path + "/stdout", err = dir.path + "/stderr";
  CliResult r;
  r.exit_code = WaitExitCode(SpawnCli(args, {.stdout_path = out, .stderr_path = err, .env = env}));
  r.out = ReadFileBytes(out);
  r.err = ReadFileBytes(err);
  return r;
}

std::string AfterTargetLine(const std::string& err) {
  return err.rfind("target: ", 0) == 0 ? err.substr(err.find('\n') + 1) : err;
}

std::string ReadFileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileBytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::filesystem::path FreshTempDir(const std::string& prefix) {
  auto dir = std::filesystem::temp_directory_path() /
             (prefix + "-" + std::to_string(getpid()) + "-" + UniqueName("d"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

ScratchDir::ScratchDir(const std::string& prefix, mode_t mode) {
  auto d = MakeOwnedTempDir(prefix);
  EXPECT_TRUE(d.ok()) << d.status().message();
  path = d.ok() ? *d : "";
  if (path.empty()) return;
  std::filesystem::remove(std::filesystem::path(path) / kOwnerMarkerFile);
  chmod(path.c_str(), mode);
}

ScratchDir::~ScratchDir() {
  if (!path.empty()) (void)RemoveTree(path);
}

std::string LedgerdiffBinary() { return LEDGERDIFF_BINARY; }
std::string SourceDir() { return LEDGERDIFF_SOURCE_DIR; }

std::string ScenarioDir() {
  for (const std::string& d : {SourceDir() + "/../shared/horizon-scenarios", std::string("/work/shared/horizon-scenarios")})
    if (std::filesystem::exists(d + "/kahuna-horizon.sql")) return d;
  return "";
}

std::string LoadDump(const std::string& file) {
  std::string db = UniqueName("hz");
  EXPECT_TRUE(TestServer().CreateDatabase(db).ok());
  std::string conninfo = TestServer().conninfo(db);
  std::string cmd = "psql -X -q -v ON_ERROR_STOP=1 -d \"" + conninfo + "\" -f " + ScenarioDir() + "/" + file +
                    " >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return conninfo;
}

uint32_t SchemaOid(const std::string& conninfo, const std::string& schema) {
  auto c = Connect(conninfo);
  if (!c) return 0;
  auto r = c->Exec("SELECT oid::bigint FROM pg_namespace WHERE nspname = $1", {schema});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() && r->size() == 1 ? static_cast<uint32_t>(r->GetInt(0, 0)) : 0;
}

uint32_t RecreateSchemaUnderItsName(const std::string& conninfo, const std::string& schema) {
  auto c = Connect(conninfo);
  if (!c) return 0;
  const uint32_t before = SchemaOid(conninfo, schema);
  EXPECT_NE(before, 0u) << "no schema " << schema;
  const std::string gone = UniqueName("gone"), q = pg::QuoteIdent(schema), qg = pg::QuoteIdent(gone);
  // Tables first (their indexes and owned sequences go with them), then what is left of the
  // sequences and views; the old schema goes once it is empty. One transaction: no reader sees
  // the schema half moved.
  const std::string sql =
      "BEGIN; ALTER SCHEMA " + q + " RENAME TO " + qg + "; CREATE SCHEMA " + q +
      "; DO $$ DECLARE r record; BEGIN "
      "FOR r IN SELECT c.relname, c.relkind FROM pg_class c WHERE c.relnamespace = " +
      pg::QuoteLiteral(gone) +
      "::regnamespace AND c.relkind IN ('r', 'p', 'v', 'S') ORDER BY c.relkind DESC LOOP "
      "IF r.relkind = 'S' THEN CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_class s WHERE s.relnamespace = " +
      pg::QuoteLiteral(gone) +
      "::regnamespace AND s.relname = r.relname); EXECUTE format('ALTER SEQUENCE %I.%I SET SCHEMA %I', " +
      pg::QuoteLiteral(gone) + ", r.relname, " + pg::QuoteLiteral(schema) +
      "); ELSIF r.relkind = 'v' THEN EXECUTE format('ALTER VIEW %I.%I SET SCHEMA %I', " + pg::QuoteLiteral(gone) +
      ", r.relname, " + pg::QuoteLiteral(schema) + "); ELSE EXECUTE format('ALTER TABLE %I.%I SET SCHEMA %I', " +
      pg::QuoteLiteral(gone) + ", r.relname, " + pg::QuoteLiteral(schema) +
      "); END IF; END LOOP; END $$; DROP SCHEMA " + qg + " CASCADE; COMMIT";
  Status s = c->Run(sql);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return 0;
  const uint32_t after = SchemaOid(conninfo, schema);
  EXPECT_NE(after, before) << "a re-created schema has another OID";
  return after;
}

void ExecSql(pg::Connection& conn, const std::string& sql) {
  const Status s = conn.Run(sql);
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << sql;
}

void ExecSql(const std::string& conninfo, const std::string& sql) {
  auto conn = Connect(conninfo);
  ASSERT_TRUE(conn);
  ExecSql(*conn, sql);
}

std::string LastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace ledgerdiff::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ledgerdiff::InstallTerminationHandler();
  // Everything the tests and the tools they run put in $TMPDIR goes into one owned directory,
  // removed at the end (and reaped by a later run if this binary is killed). Mode 0755: the
  // embedded server's user must reach its cluster inside.
  auto tmp = ledgerdiff::MakeOwnedTempDir("ledgerdiff-test-");
  if (!tmp.ok()) {
    fprintf(stderr, "%s\n", tmp.status().message().c_str());
    return 2;
  }
  chmod(tmp->c_str(), 0755);
  setenv("TMPDIR", tmp->c_str(), 1);
  // Workers and orchestrators the library starts are ledgerdiff's, not this test binary.
  ledgerdiff::SetLedgerdiffExecutable(ledgerdiff::testing::LedgerdiffBinary());
  ::testing::AddGlobalTestEnvironment(new ledgerdiff::testing::ServerEnvironment());
  int code = RUN_ALL_TESTS();
  (void)ledgerdiff::RemoveTree(*tmp);
  return code;
}
