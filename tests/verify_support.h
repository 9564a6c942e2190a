#pragma once
// What the files of the verify_test binary (verify_test.cc, verify_ingester_test.cc) share: the
// CLI's arguments and outputs, the planted bugs' ledgers, the schemas a run leaves. Included by
// test sources only.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "tests/harness.h"
#include "verify/selftest.h"
#include "verify/verify.h"

namespace ledgerdiff::verify_support {

using nlohmann::json;
using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

// Makes the CLI ignore the user's database settings and start its embedded
// default.
inline const std::vector<std::string> kEmbeddedEnv = {
    "LEDGERDIFF_DB=", "PGHOST=", "PGDATABASE=", "PGPORT=", "PGSERVICE="};

inline std::string Db() { return "--db=" + TestConninfo(); }

inline json ParseJson(const testing::CliResult &r) {
  json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded())
      << "not JSON: " << r.out << "\nstderr: " << r.err;
  return j.is_discarded() ? json::object() : j;
}

inline size_t Lines(const std::string &s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

inline bool Contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

inline size_t Occurrences(const std::string &haystack, const std::string &needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos;
       p = haystack.find(needle, p + needle.size()))
    ++n;
  return n;
}

// `ledgerdiff ingest` of `range` into `schema` of the database at `conninfo`
// (flat density).
inline void IngestInto(const std::string &conninfo, const std::string &schema,
                const std::string &range, const std::string &density = "flat") {
  auto r =
      RunCli({"ingest", "--db", conninfo, "--schema", schema, "--range", range,
              "--workers", "2", "--job-size", "50", "--density", density});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Common flags of a small, fast verify against the harness database.
inline std::vector<std::string> VerifyArgs(const std::string &range,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {
      "verify",     "--range", range,       Db(),   "--workers",       "3",
      "--job-size", "50",      "--density", "flat", "--retry-backoff", "0.05"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A ledger in [from, to] of `schema` that has at least one operation (the first
// at or after `at`).
inline Ledger LedgerWithOperation(const std::string &conninfo,
                           const std::string &schema, Ledger at) {
  auto conn = Connect(conninfo);
  auto rows =
      conn->Exec(fmt::format("SELECT min(id) FROM {} WHERE id >= $1",
                             pg::Qualified(schema, "history_operations")),
                 {std::to_string(Toid(at))});
  EXPECT_TRUE(rows.ok() && !rows->IsNull(0, 0));
  return rows.ok() && !rows->IsNull(0, 0) ? ToidLedger(rows->GetInt(0, 0)) : 0;
}

// The ledger of `range` (flat density, seed 1) the self-test plans for bug
// `kind`: one whose content the bug can act on (e.g. drop-row needs an effect).
inline Ledger PlannedLedger(const std::string &kind, LedgerRange range) {
  verify::SelftestOptions o;
  o.plan.range = range;
  o.plan.density = fixtures::Density::kFlat;
  o.plan.job_size = 50;  // several jobs, so every bug kind (row-past-end needs a job start) has a ledger
  auto plan = verify::PlanSelftest(o);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (plan.ok())
    for (const auto &[k, ledger] : *plan)
      if (k == kind)
        return ledger;
  ADD_FAILURE() << "no planned ledger for " << kind;
  return range.from;
}

// Every schema a verify run made ("ld_<run>_serial" / "ld_<run>_parallel"), one
// per line.
inline std::string VerifySchemas() {
  auto conn = Connect();
  auto rows = conn->Exec(
      "SELECT string_agg(nspname, E'\\n' ORDER BY nspname) FROM pg_namespace "
      "WHERE nspname LIKE 'ld\\_%\\_parallel' OR nspname LIKE "
      "'ld\\_%\\_serial'");
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? std::string(rows->Get(0, 0)) : "";
}

using testing::LastLine;

inline bool SchemaExists(const std::string &schema) {
  auto conn = Connect();
  auto rows = conn->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = $1",
                         {schema});
  return rows.ok() && rows->GetInt(0, 0) == 1;
}

// Runs a command line through /bin/sh, capturing stdout; returns the exit code.
inline int RunShell(const std::string &cmd, std::string &out) {
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int ws = pclose(p);
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
}

}  // namespace ledgerdiff::verify_support
