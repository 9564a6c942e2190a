#pragma once
// Test harness: one real PostgreSQL per test binary, started with the same embedded mechanism
// the tool uses (core/embedded_pg.h) when a test first asks for it (TestConninfo, TestServer,
// Connect, LoadDump), so a binary whose tests need no server starts none; stopped after the last
// test. Tests create their own uniquely named schemas/databases.

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/embedded_pg.h"
#include "core/pg.h"

namespace ledgerdiff::testing {

// Conninfo of the harness server's `postgres` database; starts the server on the first call (a
// server that does not start ends the binary with its message: no test could pass without it).
// Thread-safe. Call it in the test process, not in a forked child.
const std::string& TestConninfo();
// The harness server (to create extra databases); started as TestConninfo starts it.
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

// Drops `schema` of the database at `conninfo` and re-creates it under the same name with the same
// tables, rows, indexes and sequences (moved over with ALTER ... SET SCHEMA): what a restore or a
// re-created replica leaves, where only the schema's OID differs (dump/source_identity.h). Returns
// the new OID; a failed step is a test failure (0 returned).
uint32_t RecreateSchemaUnderItsName(const std::string& conninfo, const std::string& schema);
// The OID of `schema` in the database at `conninfo` (0 when there is none).
uint32_t SchemaOid(const std::string& conninfo, const std::string& schema);

// Runs `sql` (any number of statements) on `conn`, or on a fresh connection to `conninfo`; a
// failure fails the test.
void ExecSql(pg::Connection& conn, const std::string& sql);
void ExecSql(const std::string& conninfo, const std::string& sql);
// The last line of `text`, its trailing newlines left out ("" for none).
std::string LastLine(std::string text);

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
// `env` entries ("NAME=value") are added to the environment.
CliResult RunCli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// Where a ledgerdiff started in the background writes, and what it gets on top of the test's
// environment. An empty path means /dev/null; `stdout_fd` >= 0 takes precedence over
// `stdout_path`. The child has every signal unblocked and SIGPIPE at its default.
struct CliSpawnOptions {
  std::string stdout_path{};
  std::string stderr_path{};
  int stdout_fd = -1;
  std::vector<std::string> env{};  // "NAME=value"
};
// Starts build/ledgerdiff with `args` and returns its pid (for tests that kill it mid-run).
pid_t SpawnCli(const std::vector<std::string>& args, const CliSpawnOptions& options = {});
// Reaps `pid`: its exit code, or 128 + the signal that ended it.
int WaitExitCode(pid_t pid);

// `err` without its first line when that line names the command's target ("target: ..."): a
// command names it once its work begins (issue 22), so an error after that is the second line.
std::string AfterTargetLine(const std::string& err);

// The whole file ("" when it cannot be read).
std::string ReadFileBytes(const std::filesystem::path& path);
// Replaces the file's contents with `bytes`.
void WriteFileBytes(const std::filesystem::path& path, const std::string& bytes);
// A new empty directory under $TMPDIR (the harness's per-binary directory) named after `prefix`.
std::filesystem::path FreshTempDir(const std::string& prefix);

// A scratch directory under $TMPDIR with mode `mode` (0755 lets the embedded server's user reach
// a cluster inside it), removed with everything in it at scope end. It carries no owner marker, so
// the stale-directory reaper never takes it.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& prefix, mode_t mode = 0755);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace ledgerdiff::testing
