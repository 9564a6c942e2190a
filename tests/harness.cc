#include "tests/harness.h"

#include <atomic>
#include <cstdlib>

#include "core/process.h"

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

std::string LedgerdiffBinary() { return LEDGERDIFF_BINARY; }
std::string SourceDir() { return LEDGERDIFF_SOURCE_DIR; }

}  // namespace ledgerdiff::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ledgerdiff::InstallTerminationHandler();
  ::testing::AddGlobalTestEnvironment(new ledgerdiff::testing::ServerEnvironment());
  return RUN_ALL_TESTS();
}
