// verify, verify-range, selftest and baselines (issue 4, section 7); external
// ingesters and report outputs are in verify_ingester_test.cc (the same binary,
// tests/verify_support.h). Everything runs build/ledgerdiff with real
// worker processes against the harness's real PostgreSQL; outputs are parsed
// (JSON with nlohmann::json, JUnit/Markdown/HTML as text).
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "tests/harness.h"
#include "tests/verify_support.h"
#include "verify/selftest.h"
#include "verify/verify.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using namespace verify_support;

// ---------------------------------------------------------------------------------------------
// 1. verify-range: the read-only cut-over check between two databases.

// Everything a writer could leave behind in a database: the schemas, every
// relation outside the system catalogs, and the insert/update/delete counters
// of every user table.
std::string Footprint(const std::string &conninfo) {
  auto conn = Connect(conninfo);
  std::string out;
  auto add = [&](const std::string &sql) {
    auto rows = conn->Exec(sql);
    EXPECT_TRUE(rows.ok()) << rows.status().message();
    if (!rows.ok())
      return;
    for (int i = 0; i < rows->size(); ++i) {
      for (int c = 0; c < rows->columns(); ++c)
        out += std::string(rows->Get(i, c)) +
               (c + 1 < rows->columns() ? " " : "\n");
    }
  };
  add("SELECT nspname FROM pg_namespace ORDER BY 1");
  add("SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN "
      "pg_namespace n ON n.oid = c.relnamespace "
      "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND "
      "n.nspname NOT LIKE 'pg_toast%' ORDER BY 1, 2");
  add("SELECT schemaname, relname, n_tup_ins, n_tup_upd, n_tup_del FROM "
      "pg_stat_user_tables ORDER BY 1, 2");
  return out;
}

// The footprint once the statistics of backends that have gone away have been
// flushed (PostgreSQL publishes them asynchronously): two equal readings 700 ms
// apart.
std::string SettledFootprint(const std::string &conninfo) {
  std::string last = Footprint(conninfo);
  for (int i = 0; i < 15; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    std::string now = Footprint(conninfo);
    if (now == last)
      return now;
    last = now;
  }
  return last;
}

// A serial side of an external ingester runs its template over the whole range; beyond
// kMaxJobSize ledgers (a whole Stellar history) it runs in jobs of that size, so that side's plan
// stays valid where the parallel side's is (it used to fail mid-run on "--job-size too large").
TEST(VerifyOptions, AnExternalIngestersSerialSideFitsAnyRange) {
  EXPECT_EQ(ingest::WholeRangeJobSize({2, 101}), 100u);
  EXPECT_EQ(ingest::WholeRangeJobSize({2, 20'000'001}), ingest::kMaxJobSize);
  verify::VerifyOptions o;
  o.plan.range = {2, 20'000'001};
  o.plan.job_size = 100'000;
  o.plan.ingest_cmd = "true {from} {to} {schema}";
  const auto checked = verify::ValidateVerifyOptions(o);
  EXPECT_TRUE(checked.ok()) << checked.status().message();
}

TEST(VerifyRange, TwoDatabasesEqualThenOneChangedRowAndNothingWritten) {
  auto &server = testing::TestServer();
  const std::string left_db = UniqueName("vr_left"),
                    right_db = UniqueName("vr_right");
  ASSERT_TRUE(server.CreateDatabase(left_db).ok());
  ASSERT_TRUE(server.CreateDatabase(right_db).ok());
  const std::string left = server.conninfo(left_db),
                    right = server.conninfo(right_db);
  const std::string schema = "Horizon X"; // needs quoting
  const std::string range = "2:301";
  IngestInto(left, schema, range);
  IngestInto(right, schema, range);

  // A hot standby: every transaction is read-only.
  const std::string ro = " options='-c default_transaction_read_only=on'";
  {
    auto probe = Connect(left + ro);
    ASSERT_TRUE(probe);
    EXPECT_FALSE(probe->Run("CREATE TABLE ledgerdiff_probe (x int)").ok())
        << "read-only simulation does not hold";
  }
  auto verify_range = [&](const std::string &l, const std::string &r) {
    return RunCli({"verify-range", "--range", range, "--left", l, "--right", r,
                   "--left-schema", schema, "--right-schema", schema, "--jobs",
                   "2", "--format", "json"});
  };

  // Equal: exit 0, on a writable and on a read-only connection.
  std::string before_left = SettledFootprint(left),
              before_right = SettledFootprint(right);
  for (const std::string &suffix : {std::string(), ro}) {
    auto r = verify_range(left + suffix, right + suffix);
    EXPECT_EQ(r.exit_code, 0) << suffix << "\n" << r.err << r.out;
    json j = ParseJson(r);
    EXPECT_EQ(j.value("identical", false), true);
    EXPECT_TRUE(j["first_divergent_ledger"].is_null());
    EXPECT_EQ(j["ledgers_compared"], 300);
  }
  EXPECT_EQ(SettledFootprint(left), before_left)
      << "verify-range wrote into the left database";
  EXPECT_EQ(SettledFootprint(right), before_right)
      << "verify-range wrote into the right database";

  // One changed row on the right: exit 1, naming the ledger and the table.
  const Ledger changed = LedgerWithOperation(right, schema, 150);
  ASSERT_GE(changed, 150u);
  ASSERT_LE(changed, 301u);
  {
    auto conn = Connect(right);
    auto upd = conn->Exec(
        fmt::format(
            "UPDATE {0} SET details = coalesce(details, '{{}}'::jsonb) || "
            "'{{\"tampered\": true}}'::jsonb WHERE id = (SELECT min(id) FROM "
            "{0} WHERE id >= $1)",
            pg::Qualified(schema, "history_operations")),
        {std::to_string(Toid(changed))});
    ASSERT_TRUE(upd.ok()) << upd.status().message();
    ASSERT_EQ(upd->AffectedRows(), 1);
  }
  before_left = SettledFootprint(left);
  before_right = SettledFootprint(right);
  for (const std::string &suffix : {std::string(), ro}) {
    auto r = verify_range(left + suffix, right + suffix);
    EXPECT_EQ(r.exit_code, 1) << suffix << "\n" << r.err;
    json j = ParseJson(r);
    EXPECT_EQ(j["first_divergent_ledger"], changed) << r.out;
    EXPECT_EQ(j["divergent_tables"], json::array({"history_operations"}))
        << r.out;
    ASSERT_EQ(j["rows"].size(), 1u) << r.out;
    const json &rows = j["rows"][0];
    EXPECT_EQ(rows["table"], "history_operations");
    ASSERT_EQ(rows["changed"].size(), 1u) << rows.dump();
    bool details_changed = false;
    for (const auto &ch : rows["changed"][0]["changes"])
      details_changed |= ch["column"] == "details";
    EXPECT_TRUE(details_changed) << rows.dump();
  }
  EXPECT_EQ(SettledFootprint(left), before_left)
      << "verify-range wrote into the left database";
  EXPECT_EQ(SettledFootprint(right), before_right)
      << "verify-range wrote into the right database";
}

// ---------------------------------------------------------------------------------------------
// 2. The README's first set-up step: a clean verify on the embedded default.

// One run serves the text and the JSON assertions: the README's command, with --json writing the
// document that --format json prints.
TEST(VerifyCli, CleanRunOverTheIssueRangeOnTheEmbeddedDefault) {
  testing::ScratchDir scratch("ledgerdiff-verify-readme-");
  const std::string json_file = scratch.path + "/verify.json";
  auto r = RunCli({"verify", "--range", "2:5001", "--workers", "4", "--json", json_file}, kEmbeddedEnv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "verdict: IDENTICAL")) << r.out;
  EXPECT_TRUE(Contains(r.out, "4 workers")) << r.out;
  EXPECT_TRUE(Contains(r.out, "parallel ingest")) << r.out;
  EXPECT_FALSE(Contains(r.out, "\"verdict\"")) << "text on stdout, the JSON in the file: " << r.out;

  json j = json::parse(testing::ReadFileBytes(json_file));
  EXPECT_EQ(j["verdict"], "identical");
  EXPECT_EQ(j["identical"], true);
  EXPECT_TRUE(j["first_divergent_ledger"].is_null());
  EXPECT_TRUE(j["divergent_tables"].empty());
  EXPECT_EQ(j["range"], (json{{"from", 2}, {"to", 5001}}));
  EXPECT_EQ(j["workers"], 4);
  EXPECT_EQ(j["schemas"]["kept"], false);
  EXPECT_FALSE(j.contains("look_again"));
  std::set<std::string> phase_names;
  for (const auto &p : j["phases"]) {
    phase_names.insert(p["name"].get<std::string>());
    // Every phase does real work (5,000 ledgers): a timer never started or never stopped reads 0.
    EXPECT_GT(p["seconds"].get<double>(), 0.0) << p.dump();
  }
  EXPECT_EQ(j["phases"].size(), 4u)
      << "issue: serial ingest, parallel ingest, digests, diff: "
      << j["phases"].dump();
  EXPECT_TRUE(phase_names.count("serial ingest")) << j["phases"].dump();
  EXPECT_TRUE(phase_names.count("parallel ingest")) << j["phases"].dump();
  EXPECT_GT(j["speedup"].get<double>(), 0.0);
  const json &rows = j["rows_per_table"];
  EXPECT_EQ(rows["serial"], rows["parallel"]);
  EXPECT_EQ(rows["parallel"]["history_ledgers"], 5000);
  EXPECT_GT(rows["parallel"]["history_operations"].get<uint64_t>(), 5000u);
  EXPECT_GE(j["parallel_run"]["jobs"].get<uint32_t>(), 4u);
}

// --json FILE: a failure writes the error document there too; "-" is refused (stdout is
// --format json's).
TEST(VerifyCli, JsonFileCarriesTheErrorDocumentAndRefusesStdout) {
  testing::ScratchDir scratch("ledgerdiff-verify-jsonfile-");
  const std::string json_file = scratch.path + "/error.json";
  auto r = RunCli({"verify", "--range", "9:2", "--json", json_file}, kEmbeddedEnv);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  json j = json::parse(testing::ReadFileBytes(json_file));
  EXPECT_EQ(j["verdict"], "error");
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_TRUE(Contains(r.err, j["error"].get<std::string>())) << r.err;
  auto dash = RunCli({"verify", "--range", "2:11", "--json", "-"}, kEmbeddedEnv);
  EXPECT_EQ(dash.exit_code, 2) << dash.err;
  EXPECT_TRUE(Contains(dash.err, "--json takes a FILE")) << dash.err;
}

// ---------------------------------------------------------------------------------------------
// 3. The gate's self-test.

TEST(Selftest, EveryBugKindCaughtAtItsLedger) {
  auto r = RunCli({"selftest", Db(), "--format", "json", "--progress-interval", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = ParseJson(r);
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["range"], (json{{"from", 2}, {"to", 2001}}));
  ASSERT_EQ(j["cases"].size(), 11u) << j.dump(2);
  const std::set<std::string> expected_kinds = {
      "clean",           "skip-ledger",  "duplicate-row",
      "drop-row",        "mutate-row",   "swap-order",
      "stale-surrogate", "boundary-gap", "partial-commit",
      "split-lookup",    "row-past-end"};
  std::set<std::string> kinds;
  for (const auto &c : j["cases"]) {
    const std::string kind = c["kind"];
    kinds.insert(kind);
    EXPECT_EQ(c["caught"], true) << c.dump();
    EXPECT_TRUE(c["error"].is_null()) << c.dump();
    if (kind == "clean") {
      EXPECT_TRUE(c["reported_ledger"].is_null()) << c.dump();
    } else {
      ASSERT_TRUE(c["ledger"].is_number()) << c.dump();
      EXPECT_GE(c["ledger"].get<Ledger>(), 2u);
      EXPECT_LE(c["ledger"].get<Ledger>(), 2001u);
      if (kind == "split-lookup") {
        // Natural-key digests cannot see a split: no ledger diverges, the lookup section names it.
        EXPECT_TRUE(c["reported_ledger"].is_null()) << c.dump();
        EXPECT_EQ(c["divergent_tables"], json::array({"history_accounts"})) << c.dump();
      } else {
        EXPECT_EQ(c["reported_ledger"], c["ledger"]) << c.dump();
        EXPECT_FALSE(c["divergent_tables"].empty()) << c.dump();
      }
      if (kind == "row-past-end") {
        // At a job start (the job before it wrote the stray row), never the first ledger.
        EXPECT_EQ((c["ledger"].get<Ledger>() - 2) % 250, 0u) << c.dump();
        EXPECT_GT(c["ledger"].get<Ledger>(), 2u) << c.dump();
        EXPECT_EQ(c["divergent_tables"], json::array({"history_effects"})) << c.dump();
      }
    }
  }
  EXPECT_EQ(kinds, expected_kinds);
  // Issue 46: one ETA for the whole selftest. Its plan: the serial ingestion, then each case's
  // verify (parallel ingest, digests, diff and clean-up): 1 + 11 * 3 phases, in this order.
  static const std::regex timestamped(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ .*)");
  static const std::regex command(R"(; selftest \d+%(?: \((.+), phase (\d+) of (\d+)\))?(, ETA .+)?$)");
  std::istringstream log(r.err);
  size_t last_index = 0, with_eta = 0;
  for (std::string line; std::getline(log, line);) {
    if (!std::regex_match(line, timestamped)) continue;  // a progress line
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, command)) << line;
    with_eta += m[4].matched;
    if (!m[1].matched) continue;  // between phases: none in progress
    EXPECT_EQ(m[3].str(), "34") << line;
    const size_t index = std::stoul(m[2].str());
    EXPECT_GE(index, last_index) << line;
    last_index = index;
    const std::string expected =
        index == 1 ? "serial ingest"
                   : fmt::format("case {} of 11: {}", (index - 2) / 3 + 1,
                                 std::vector<std::string>{"parallel ingest", "digests", "diff and clean-up"}[(index - 2) % 3]);
    EXPECT_EQ(m[1].str(), expected) << line;
  }
  EXPECT_EQ(last_index, 33u) << r.err;  // the last case's digests
  EXPECT_GE(with_eta, 10u) << r.err;
}

// Runs `verify --inject-bug KIND@LEDGER`, checks the divergence, that the
// schemas were kept and that both the diff of the kept schemas and the printed
// look-again command name the same ledger.
void CheckInjectedBugCaughtAndLookAgain(const std::string &kind,
                                        Ledger ledger) {
  SCOPED_TRACE(kind);
  const std::string bug = kind + "@" + std::to_string(ledger);
  auto r =
      RunCli(VerifyArgs("2:301", {"--inject-bug", bug, "--format", "json"}));
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  json j = ParseJson(r);
  EXPECT_EQ(j["verdict"], "divergent");
  EXPECT_EQ(j["first_divergent_ledger"], ledger);
  EXPECT_EQ(j["injected_bug"], bug);
  EXPECT_EQ(j["schemas"]["kept"], true);
  ASSERT_TRUE(j["schemas"]["serial"].is_string() &&
              j["schemas"]["parallel"].is_string())
      << j["schemas"].dump();
  const std::string serial = j["schemas"]["serial"],
                    parallel = j["schemas"]["parallel"];
  EXPECT_TRUE(SchemaExists(serial)) << serial;
  EXPECT_TRUE(SchemaExists(parallel)) << parallel;

  // ledgerdiff diff over the kept schemas.
  auto d = RunCli(
      {"diff", Db(), serial, parallel, "--range", "2:301", "--format", "json"});
  EXPECT_EQ(d.exit_code, 1) << d.err;
  EXPECT_EQ(ParseJson(d)["first_divergent_ledger"], ledger);

  // The printed command itself, run as a user would paste it.
  ASSERT_TRUE(j.contains("look_again")) << j.dump(2);
  std::string look_again = j["look_again"];
  ASSERT_EQ(look_again.rfind("ledgerdiff diff ", 0), 0u) << look_again;
  EXPECT_TRUE(Contains(look_again, serial) && Contains(look_again, parallel))
      << look_again;
  std::string out;
  int code = RunShell("'" + testing::LedgerdiffBinary() + "'" +
                          look_again.substr(std::string("ledgerdiff").size()) +
                          " --format json 2>/dev/null",
                      out);
  EXPECT_EQ(code, 1) << look_again;
  json lj = json::parse(out, nullptr, false);
  ASSERT_FALSE(lj.is_discarded()) << out;
  EXPECT_EQ(lj["first_divergent_ledger"], ledger) << look_again;
}

TEST(VerifyCli, InjectedBugsAreCaughtAndTheSchemasKeptForALookAgain) {
  CheckInjectedBugCaughtAndLookAgain("mutate-row",
                                     PlannedLedger("mutate-row", {2, 301}));
  CheckInjectedBugCaughtAndLookAgain("boundary-gap",
                                     PlannedLedger("boundary-gap", {2, 301}));
}

// ---------------------------------------------------------------------------------------------
// 4. Baselines for CI.

TEST(VerifyCli, BaselineRoundTripAndMismatches) {
  const fs::path dir = testing::FreshTempDir("ld-baseline");
  const std::string baseline = (dir / "serial.ldm").string();
  const std::string range = "2:201";

  auto saved = RunCli(
      VerifyArgs(range, {"--save-baseline", baseline, "--format", "json"}));
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_EQ(ParseJson(saved)["saved_baseline"], baseline);
  ASSERT_TRUE(fs::exists(baseline));
  ASSERT_GT(fs::file_size(baseline), 0u);

  auto same =
      RunCli(VerifyArgs(range, {"--baseline", baseline, "--format", "json"}));
  EXPECT_EQ(same.exit_code, 0) << same.err;
  json sj = ParseJson(same);
  EXPECT_EQ(sj["verdict"], "identical");
  EXPECT_EQ(sj["baseline"], baseline);
  EXPECT_TRUE(sj["schemas"]["serial"].is_null())
      << "a baseline run has no serial ingest";
  for (const auto &p : sj["phases"])
    EXPECT_NE(p["name"], "serial ingest");

  const Ledger bug_ledger = PlannedLedger("drop-row", {2, 201});
  auto bug = RunCli(VerifyArgs(range, {"--baseline", baseline, "--inject-bug",
                                       "drop-row@" + std::to_string(bug_ledger),
                                       "--format", "json"}));
  EXPECT_EQ(bug.exit_code, 1) << bug.err;
  json bj = ParseJson(bug);
  EXPECT_EQ(bj["first_divergent_ledger"], bug_ledger);
  EXPECT_EQ(bj["divergent_tables"], json::array({"history_effects"}))
      << bj["divergent_tables"].dump();

  // A baseline of another range, profile, or a corrupt file: exit 2, one line,
  // naming the problem.
  auto other_range = RunCli(VerifyArgs("2:200", {"--baseline", baseline}));
  EXPECT_EQ(other_range.exit_code, 2) << other_range.err;
  EXPECT_EQ(Lines(other_range.err), 1u) << other_range.err;
  EXPECT_TRUE(Contains(other_range.err, "2:201")) << other_range.err;
  EXPECT_TRUE(Contains(other_range.err, "2:200")) << other_range.err;

  auto other_profile =
      RunCli(VerifyArgs(range, {"--baseline", baseline, "--profile", "auto"}));
  EXPECT_EQ(other_profile.exit_code, 2) << other_profile.err;
  EXPECT_EQ(Lines(other_profile.err), 1u) << other_profile.err;
  EXPECT_TRUE(Contains(other_profile.err, "profile")) << other_profile.err;
  EXPECT_TRUE(Contains(other_profile.err, "auto")) << other_profile.err;

  // Issue 22: a baseline of another density (or seed) made every ledger divergent; it is
  // refused, naming both.
  auto other_density = RunCli({"verify", "--range", range, Db(), "--workers", "3", "--job-size", "50",
                               "--density", "stellar", "--baseline", baseline});
  EXPECT_EQ(other_density.exit_code, 2) << other_density.err << other_density.out;
  EXPECT_EQ(Lines(other_density.err), 1u) << other_density.err;
  EXPECT_TRUE(Contains(other_density.err, "made with --density flat, but this run uses --density stellar"))
      << other_density.err;
  auto other_seed = RunCli(VerifyArgs(range, {"--baseline", baseline, "--seed", "2"}));
  EXPECT_EQ(other_seed.exit_code, 2) << other_seed.err << other_seed.out;
  EXPECT_TRUE(Contains(other_seed.err, "made with --seed 1, but this run uses --seed 2")) << other_seed.err;
  // A baseline of another engine is refused before anything is ingested, as sweep refuses it.
  auto other_engine = RunCli(VerifyArgs(range, {"--baseline", baseline, "--engine", "server-hash"}));
  EXPECT_EQ(other_engine.exit_code, 2) << other_engine.err << other_engine.out;
  EXPECT_EQ(Lines(other_engine.err), 1u) << other_engine.err;
  EXPECT_TRUE(Contains(other_engine.err, "made by engine text, but --engine is server-hash")) << other_engine.err;

  for (double fraction : {0.5, 0.99}) {
    const std::string corrupt =
        (dir / ("truncated-" + std::to_string(fraction) + ".ldm")).string();
    fs::copy_file(baseline, corrupt);
    fs::resize_file(
        corrupt, static_cast<uintmax_t>(
                     static_cast<double>(fs::file_size(baseline)) * fraction));
    const std::string schemas_before = VerifySchemas();
    auto bad = RunCli(VerifyArgs(range, {"--baseline", corrupt}));
    EXPECT_EQ(bad.exit_code, 2) << fraction << ": " << bad.err << bad.out;
    // The error is one line, the last; notes that came before it are progress,
    // not errors.
    EXPECT_EQ(Occurrences("\n" + bad.err, "\nledgerdiff: "), 1u) << bad.err;
    EXPECT_EQ(LastLine(bad.err).rfind("ledgerdiff: ", 0), 0u) << bad.err;
    EXPECT_TRUE(Contains(LastLine(bad.err), corrupt)) << bad.err;
    // A run that fails with an error leaves no orphaned schema behind (nothing
    // says it was kept).
    EXPECT_EQ(VerifySchemas(), schemas_before)
        << "schemas left behind by a run that failed on a corrupt baseline";
  }
  fs::remove_all(dir);
}

} // namespace
} // namespace ledgerdiff
