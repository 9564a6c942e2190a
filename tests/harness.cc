#include "tests/harness.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/process.h"
#include "core/tempdir.h"

namespace ledgerdiff::testing {

namespace {

std::unique_ptr<EmbeddedPostgres> g_server;
std::string g_conninfo;

class ServerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto started = EmbeddedPostgres::Start({});
    ASSERT_TRUE(started.ok()) << started.status().message();
    g_server = std::move(started).value();
    g_conninfo = g_server->conninfo();
  }
  void TearDown() override {
    if (g_server) (void)g_server->Stop();
    g_server.reset();
  }
};

}  // namespace

const std::string& TestConninfo() { return g_conninfo; }
EmbeddedPostgres& TestServer() { return *g_server; }

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

CliResult RunCli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  CliResult r;
  char out_tmpl[] = "/tmp/ledgerdiff-cli-out-XXXXXX";
  char err_tmpl[] = "/tmp/ledgerdiff-cli-err-XXXXXX";
  int out_fd = mkstemp(out_tmpl);
  int err_fd = mkstemp(err_tmpl);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    std::string bin = LedgerdiffBinary();
    argv.push_back(bin.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int ws = 0;
  waitpid(pid, &ws, 0);
  r.exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  auto slurp = [](const char* path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out_tmpl);
  r.err = slurp(err_tmpl);
  close(out_fd);
  close(err_fd);
  unlink(out_tmpl);
  unlink(err_tmpl);
  return r;
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
  ::testing::AddGlobalTestEnvironment(new ledgerdiff::testing::ServerEnvironment());
  int code = RUN_ALL_TESTS();
  (void)ledgerdiff::RemoveTree(*tmp);
  return code;
}
