#pragma once
// Test harness: one real PostgreSQL per test binary, started with the same embedded mechanism
// the tool uses (core/embedded_pg.h). Tests create their own uniquely named schemas/databases.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/embedded_pg.h"
#include "core/pg.h"

namespace ledgerdiff::testing {

// Conninfo of the harness server's `postgres` database.
const std::string& TestConninfo();
// The harness server (to create extra databases).
EmbeddedPostgres& TestServer();
// A fresh connection; fails the test on error.
std::unique_ptr<pg::Connection> Connect(const std::string& conninfo = TestConninfo());
// A schema name unique within this test binary run: "<prefix>_<n>".
std::string UniqueName(const std::string& prefix);
// Path of the built ledgerdiff binary (for CLI tests).
std::string LedgerdiffBinary();
// Path of the project source tree.
std::string SourceDir();

// The real Horizon dumps (../shared/horizon-scenarios next to the project, else /work/shared/...);
// "" when absent.
std::string ScenarioDir();
// Loads one of them into a fresh database of the test server (schema public); returns its
// conninfo. A failed load is a test failure.
std::string LoadDump(const std::string& file = "kahuna-horizon.sql");

}  // namespace ledgerdiff::testing

#define LD_ASSERT_OK(expr)                                   \
  do {                                                       \
    auto ld_s_ = (expr);                                     \
    ASSERT_TRUE(ld_s_.ok()) << ld_s_.status().message();     \
  } while (0)
#define LD_EXPECT_OK(expr)                                   \
  do {                                                       \
    auto ld_s_ = (expr);                                     \
    EXPECT_TRUE(ld_s_.ok()) << ld_s_.status().message();     \
  } while (0)

namespace ledgerdiff::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs build/ledgerdiff with `args` (no shell), capturing stdout and stderr.
// `env` entries are added to the environment.
CliResult RunCli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

}  // namespace ledgerdiff::testing
