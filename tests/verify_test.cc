// verify, verify-range, selftest, baselines, external ingesters and report
// outputs (issue 4, section 7). Everything runs build/ledgerdiff with real
// worker processes against the harness's real PostgreSQL; outputs are parsed
// (JSON with nlohmann::json, JUnit/Markdown/HTML as text).
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

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

// Makes the CLI ignore the user's database settings and start its embedded
// default.
const std::vector<std::string> kEmbeddedEnv = {
    "LEDGERDIFF_DB=", "PGHOST=", "PGDATABASE=", "PGPORT=", "PGSERVICE="};

std::string Db() { return "--db=" + TestConninfo(); }

json ParseJson(const testing::CliResult &r) {
  json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded())
      << "not JSON: " << r.out << "\nstderr: " << r.err;
  return j.is_discarded() ? json::object() : j;
}

size_t Lines(const std::string &s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool Contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

size_t Occurrences(const std::string &haystack, const std::string &needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos;
       p = haystack.find(needle, p + needle.size()))
    ++n;
  return n;
}

// `ledgerdiff ingest` of `range` into `schema` of the database at `conninfo`
// (flat density).
void IngestInto(const std::string &conninfo, const std::string &schema,
                const std::string &range, const std::string &density = "flat") {
  auto r =
      RunCli({"ingest", "--db", conninfo, "--schema", schema, "--range", range,
              "--workers", "2", "--job-size", "50", "--density", density});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Common flags of a small, fast verify against the harness database.
std::vector<std::string> VerifyArgs(const std::string &range,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {
      "verify",     "--range", range,       Db(),   "--workers",       "3",
      "--job-size", "50",      "--density", "flat", "--retry-backoff", "0.05"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A ledger in [from, to] of `schema` that has at least one operation (the first
// at or after `at`).
Ledger LedgerWithOperation(const std::string &conninfo,
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
Ledger PlannedLedger(const std::string &kind, LedgerRange range) {
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
std::string VerifySchemas() {
  auto conn = Connect();
  auto rows = conn->Exec(
      "SELECT string_agg(nspname, E'\\n' ORDER BY nspname) FROM pg_namespace "
      "WHERE nspname LIKE 'ld\\_%\\_parallel' OR nspname LIKE "
      "'ld\\_%\\_serial'");
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? std::string(rows->Get(0, 0)) : "";
}

std::string LastLine(const std::string &s) {
  std::string t = s;
  if (!t.empty() && t.back() == '\n')
    t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

bool SchemaExists(const std::string &schema) {
  auto conn = Connect();
  auto rows = conn->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = $1",
                         {schema});
  return rows.ok() && rows->GetInt(0, 0) == 1;
}

// Runs a command line through /bin/sh, capturing stdout; returns the exit code.
int RunShell(const std::string &cmd, std::string &out) {
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
  auto r = RunCli({"selftest", Db(), "--format", "json"});
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

// ---------------------------------------------------------------------------------------------
// 5. External ingesters (tests/ingesters/).

std::string IngesterTemplate(const std::string &script) {
  return "'" +
         (fs::path(testing::SourceDir()) / "tests" / "ingesters" / script)
             .string() +
         "' {from} {to} {schema}";
}

class ExternalIngester : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    source_ = new std::string(UniqueName("Source Horizon"));
    // Stellar density: trades, so the ingester has to remap and re-orient them.
    IngestInto(TestConninfo(), *source_, kRange, "stellar");
  }
  static void TearDownTestSuite() {
    delete source_;
    source_ = nullptr;
  }
  static testing::CliResult Verify(const std::string &script,
                                   std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "verify",          "--range", kRange,         Db(),
        "--workers",       "3",       "--job-size",   "40",
        "--retry-backoff", "0.05",    "--ingest-cmd", IngesterTemplate(script),
        "--format",        "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args, {"LEDGERDIFF_TEST_SOURCE_SCHEMA=" + *source_});
  }
  static constexpr const char *kRange = "2:161";
  static std::string *source_;
};
std::string *ExternalIngester::source_ = nullptr;

TEST_F(ExternalIngester, CorrectCopyPasses) {
  auto r = Verify("copy_from_source.sh", {"--keep"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = ParseJson(r);
  EXPECT_EQ(j["verdict"], "identical");
  EXPECT_EQ(j["rows_per_table"]["serial"], j["rows_per_table"]["parallel"]);
  EXPECT_EQ(j["rows_per_table"]["parallel"]["history_ledgers"], 160);
  EXPECT_EQ(j["parallel_run"]["jobs"], 4) << j["parallel_run"].dump();
  ASSERT_TRUE(j["schemas"]["parallel"].is_string());
  const std::string parallel = j["schemas"]["parallel"];

  // The parallel copy really holds the source's content with its own surrogate
  // ids: every trade resolves to the same assets by natural key, oriented
  // base_asset_id < counter_asset_id.
  auto conn = Connect();
  auto rows = conn->Exec(fmt::format(
      "SELECT count(*), count(*) FILTER (WHERE (sb.asset_code, "
      "sb.asset_issuer, sc.asset_code, sc.asset_issuer, "
      "s.base_amount, s.counter_amount) IS NOT DISTINCT FROM (pb.asset_code, "
      "pb.asset_issuer, pc.asset_code, "
      "pc.asset_issuer, p.base_amount, p.counter_amount) OR (sb.asset_code, "
      "sb.asset_issuer, sc.asset_code, "
      "sc.asset_issuer, s.base_amount, s.counter_amount, s.price_n, s.price_d) "
      "IS NOT DISTINCT FROM "
      "(pc.asset_code, pc.asset_issuer, pb.asset_code, pb.asset_issuer, "
      "p.counter_amount, p.base_amount, p.price_d, "
      "p.price_n)), count(*) FILTER (WHERE p.base_asset_id >= "
      "p.counter_asset_id) "
      "FROM {0} s JOIN {1} p USING (history_operation_id, \"order\") "
      "JOIN {2} sb ON sb.id = s.base_asset_id JOIN {2} sc ON sc.id = "
      "s.counter_asset_id "
      "JOIN {3} pb ON pb.id = p.base_asset_id JOIN {3} pc ON pc.id = "
      "p.counter_asset_id",
      pg::Qualified(*source_, "history_trades"),
      pg::Qualified(parallel, "history_trades"),
      pg::Qualified(*source_, "history_assets"),
      pg::Qualified(parallel, "history_assets")));
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_GT(rows->GetInt(0, 0), 0) << "the range should hold trades";
  EXPECT_EQ(rows->GetInt(0, 1), rows->GetInt(0, 0))
      << "trades whose assets do not resolve to the source's";
  EXPECT_EQ(rows->GetInt(0, 2), 0)
      << "trades not oriented base_asset_id < counter_asset_id";
}

TEST_F(ExternalIngester, OffByOneCopyIsCaughtAtTheFirstJobsLastLedger) {
  auto r = Verify("copy_off_by_one.sh");
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  json j = ParseJson(r);
  EXPECT_EQ(j["verdict"], "divergent");
  EXPECT_EQ(j["first_divergent_ledger"], 41)
      << "jobs of 40 from ledger 2: the first ends at 41";
  std::vector<std::string> tables = j["divergent_tables"];
  EXPECT_NE(std::find(tables.begin(), tables.end(), "history_ledgers"),
            tables.end())
      << j["divergent_tables"].dump();
}

TEST_F(ExternalIngester, FailingCommandIsAFailedJobAndExit2) {
  std::vector<std::string> args = {"verify",
                                   "--range",
                                   "2:41",
                                   Db(),
                                   "--workers",
                                   "2",
                                   "--job-size",
                                   "20",
                                   "--retries",
                                   "1",
                                   "--retry-backoff",
                                   "0.05",
                                   "--ingest-cmd",
                                   "exit 3 # {from} {to}"};
  auto r = RunCli(args);
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_FALSE(r.err.empty());
}

TEST_F(ExternalIngester, FailedJobIsRetriedLikeAnyOther) {
  // Every job's first attempt exits 1 (a marker file per schema and job); the
  // retry copies.
  const fs::path dir = testing::FreshTempDir("ld-flaky");
  // (Shell braces cannot be used: every '{' starts a placeholder.)
  const std::string marker = "'" + dir.string() + "'/{schema}-{job}";
  const std::string tmpl = "if test ! -e " + marker + "; then touch " + marker +
                           "; exit 1; fi; " +
                           IngesterTemplate("copy_from_source.sh");
  std::vector<std::string> args = {
      "verify",          "--range", kRange,         Db(),
      "--workers",       "3",       "--job-size",   "40",
      "--retry-backoff", "0.05",    "--ingest-cmd", tmpl,
      "--format",        "json"};
  auto r = RunCli(args, {"LEDGERDIFF_TEST_SOURCE_SCHEMA=" + *source_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json j = ParseJson(r);
  EXPECT_EQ(j["verdict"], "identical");
  EXPECT_EQ(j["parallel_run"]["retried_jobs"], 4) << j["parallel_run"].dump();
  EXPECT_EQ(j["serial_run"]["retried_jobs"], 1) << j["serial_run"].dump();
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// 6. Report outputs: JSON, JUnit, Markdown, HTML.

TEST(VerifyReports, JsonJunitMarkdownAndHtmlOfADivergentRun) {
  const fs::path dir = testing::FreshTempDir("ld-reports");
  const std::string junit = (dir / "verify.xml").string(),
                    markdown = (dir / "verify.md").string();
  const std::string html_dir = (dir / "html").string();
  const Ledger ledger = PlannedLedger("drop-row", {2, 301});
  auto r = RunCli(
      VerifyArgs("2:301", {"--inject-bug", "drop-row@" + std::to_string(ledger),
                           "--format", "json", "--junit", junit, "--markdown",
                           markdown, "--report", html_dir}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json j = ParseJson(r);
  for (const char *key :
       {"verdict", "range", "workers", "job_size", "schemas", "phases",
        "rows_per_table", "first_divergent_ledger", "divergent_tables", "rows"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["verdict"], "divergent");
  EXPECT_EQ(j["range"], (json{{"from", 2}, {"to", 301}}));
  EXPECT_EQ(j["workers"], 3);
  EXPECT_EQ(j["job_size"], 50);
  EXPECT_EQ(j["first_divergent_ledger"], ledger);
  EXPECT_EQ(j["divergent_tables"], json::array({"history_effects"}));
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["table"], "history_effects");
  EXPECT_EQ(j["rows"][0]["only_left_total"], 1) << j["rows"][0].dump();
  EXPECT_EQ(j["rows"][0]["only_right_total"], 0);
  const json &counts = j["rows_per_table"];
  EXPECT_EQ(counts["serial"]["history_effects"].get<uint64_t>(),
            counts["parallel"]["history_effects"].get<uint64_t>() + 1);
  EXPECT_EQ(counts["serial"]["history_operations"],
            counts["parallel"]["history_operations"]);

  // JUnit: one testcase per compared table, one <failure>, in the divergent
  // table's testcase.
  ASSERT_TRUE(fs::exists(junit));
  const std::string x = testing::ReadFileBytes(junit);
  const size_t tables = j["diff"]["tables"].size();
  EXPECT_GE(tables, 7u);
  EXPECT_EQ(x.rfind("<?xml", 0), 0u);
  EXPECT_EQ(Occurrences(x, "<testsuite "), 1u) << x;
  EXPECT_TRUE(
      Contains(x, fmt::format("<testsuite name=\"ledgerdiff verify 2:301\" "
                              "tests=\"{}\" failures=\"1\" errors=\"0\"",
                              tables)))
      << x;
  EXPECT_EQ(Occurrences(x, "<testcase "), tables) << x;
  EXPECT_EQ(Occurrences(x, "<failure "), 1u) << x;
  EXPECT_EQ(Occurrences(x, "</failure>"), 1u) << x;
  for (const auto &t : j["diff"]["tables"]) {
    const std::string name = t["table"];
    size_t at = x.find("<testcase classname=\"ledgerdiff.verify\" name=\"" +
                       name + "\"");
    ASSERT_NE(at, std::string::npos) << name;
    const size_t end = x.find("<testcase ", at + 1);
    const std::string one =
        x.substr(at, end == std::string::npos ? std::string::npos : end - at);
    EXPECT_EQ(Contains(one, "<failure "), name == "history_effects") << one;
  }
  EXPECT_TRUE(Contains(x, "first divergent ledger " + std::to_string(ledger)))
      << x;
  EXPECT_EQ(Occurrences(x, "<"), Occurrences(x, ">")) << "unbalanced markup";

  // Markdown and HTML.
  ASSERT_TRUE(fs::exists(markdown));
  const std::string md = testing::ReadFileBytes(markdown);
  EXPECT_TRUE(Contains(md, "DIVERGENT") || Contains(md, "divergent")) << md;
  EXPECT_TRUE(Contains(md, std::to_string(ledger))) << md;
  const fs::path index = fs::path(html_dir) / "index.html";
  ASSERT_TRUE(fs::exists(index));
  const std::string html = testing::ReadFileBytes(index);
  EXPECT_TRUE(Contains(html, "<svg")) << html.substr(0, 400);
  EXPECT_TRUE(Contains(html, "history_effects"));
  EXPECT_FALSE(Contains(html, "<script src="))
      << "the report must be self-contained";
  fs::remove_all(dir);
}

TEST(VerifyReports, JunitOfACleanRunHasNoFailure) {
  const fs::path dir = testing::FreshTempDir("ld-junit-clean");
  const std::string junit = (dir / "verify.xml").string(),
                    markdown = (dir / "verify.md").string();
  auto r = RunCli(VerifyArgs(
      "2:101", {"--junit", junit, "--markdown", markdown, "--format", "json"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json j = ParseJson(r);
  const std::string x = testing::ReadFileBytes(junit);
  EXPECT_TRUE(Contains(x, "failures=\"0\"")) << x;
  EXPECT_EQ(Occurrences(x, "<failure"), 0u) << x;
  EXPECT_EQ(Occurrences(x, "<testcase "), j["diff"]["tables"].size()) << x;
  const std::string md = testing::ReadFileBytes(markdown);
  EXPECT_TRUE(Contains(md, "IDENTICAL") || Contains(md, "identical")) << md;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// 7. Bad input: exit 2 with one line on stderr, before anything runs.

TEST(VerifyCli, BadInputIsOneLineAndExit2) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"verify", "--range", "9:3", Db()}, "before FROM"},
      {{"verify", "--range", "2:10", "--workers", "0", Db()}, "--workers"},
      {{"verify", "--range", "2:10", "--job-size", "0", Db()}, "--job-size"},
      {{"verify", "--range", "2:10", "--inject-bug", "nonsense@5", Db()},
       "nonsense"},
      {{"verify", "--range", "2:10", "--inject-bug", "drop-row@999999", Db()},
       "999999"},
      {{"verify", "--range", "2:10", "--baseline", "/nonexistent/baseline.ldm",
        Db()},
       "/nonexistent/baseline.ldm"},
      {{"verify", "--range", "2:10", "--ingest-cmd", "copy {from} {unknown}",
        Db()},
       "{unknown}"},
      {{"verify", "--range", "2:10", "--format", "yaml", Db()}, "yaml"},
      {{"verify", "--range", "2:10", "--baseline", "/tmp/a.ldm",
        "--save-baseline", "/tmp/b.ldm", Db()},
       "--baseline"},
      {{"verify", "--range", "2:10", "--profile", "no-such-profile.json", Db()},
       "no-such-profile.json"},
      {{"verify-range", "--range", "9:3", "--left", TestConninfo(), "--right",
        TestConninfo()},
       "before FROM"},
      {{"selftest", "--range", "2:3", Db()}, "--range"},
  };
  for (const auto &c : cases) {
    std::string line;
    for (const auto &a : c.args)
      line += a + " ";
    auto r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.err << r.out;
    EXPECT_EQ(Lines(r.err), 1u) << line << "\n" << r.err;
    EXPECT_TRUE(Contains(r.err, c.needle)) << line << "\n" << r.err;
  }
}


// Issue 22: `--inject-bug KIND@L` on a ledger without the row KIND needs names the nearest ledger
// of the range that has one, for every kind that needs a row (the nearest found here by brute
// force over the generator, independently of the tool's search).
TEST(VerifyCli, AnInjectedBugWithoutItsRowNamesTheNearestLedgerThatHasOne) {
  const LedgerRange range{2, 2001};
  const fixtures::GeneratorConfig generator{1, fixtures::Density::kStellar};  // verify's defaults
  size_t checked = 0;
  for (fixtures::BugKind kind : fixtures::AllBugKinds()) {
    const std::string name = fixtures::BugKindName(kind);
    auto applies = [&](Ledger l) { return fixtures::CheckBugApplies(generator, {kind, l}).ok(); };
    Ledger without = 0;  // a ledger lacking the row, with one that has it somewhere in the range
    for (Ledger l = range.from; l <= range.to && !without; ++l)
      if (!applies(l)) without = l;
    if (!without) continue;  // a range-level kind (skip-ledger, boundary-gap, ...): needs no row
    std::optional<Ledger> nearest;
    for (Ledger d = 1; !nearest && d < range.size(); ++d) {
      if (without >= range.from + d && applies(without - d)) nearest = without - d;
      else if (without + d <= range.to && applies(without + d)) nearest = without + d;
    }
    ASSERT_TRUE(nearest) << name;
    const std::string bug = name + "@" + std::to_string(without);
    auto r = RunCli({"verify", "--range", range.str(), "--inject-bug", bug, Db()});
    EXPECT_EQ(r.exit_code, 2) << bug << ": " << r.err << r.out;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_TRUE(Contains(r.err, fmt::format("ledger {} ", without))) << r.err;
    EXPECT_TRUE(Contains(r.err, fmt::format("the nearest ledger it can act on is {} (--inject-bug {}@{})", *nearest,
                                            name, *nearest)))
        << bug << ": " << r.err;
    ++checked;
  }
  EXPECT_GE(checked, 4u) << "kinds that need a row: drop-row, duplicate-row, mutate-row, swap-order, ...";
}

// ---------------------------------------------------------------------------------------------
// Issue 14: what a failure tells the operator, and CI.

// On the embedded default a divergence keeps the cluster so the printed look-again works; under
// GitHub Actions the failing table is an annotation and the step summary gets the Markdown.
TEST(VerifyCli, EmbeddedDivergenceKeepsTheClusterAndSpeaksGithub) {
  const fs::path dir = testing::FreshTempDir("ld-keep");
  const fs::path summary = dir / "step_summary.md";
  const Ledger ledger = PlannedLedger("drop-row", {2, 151});
  std::vector<std::string> env = kEmbeddedEnv;
  env.push_back("GITHUB_ACTIONS=true");
  env.push_back("GITHUB_STEP_SUMMARY=" + summary.string());
  auto r = RunCli({"verify", "--range", "2:151", "--workers", "2", "--job-size", "50", "--density", "flat",
                   "--inject-bug", "drop-row@" + std::to_string(ledger), "--format", "json"},
                  env);
  ASSERT_EQ(r.exit_code, 1) << r.err;
  json j = ParseJson(r);
  ASSERT_TRUE(j.contains("kept_cluster")) << r.out;
  const std::string cluster = j["kept_cluster"]["dir"].get<std::string>();
  EXPECT_TRUE(fs::is_directory(cluster)) << cluster;
  EXPECT_EQ(j["schemas"]["kept"], true);
  EXPECT_FALSE(j.contains("evidence_gone"));
  EXPECT_EQ(j["kept_cluster"]["remove"], "rm -rf " + cluster);
  EXPECT_TRUE(Contains(j["look_again"].get<std::string>(), "--keep-db " + cluster)) << j["look_again"];
  ASSERT_TRUE(j["first_divergent_job"].is_object()) << j.dump();
  EXPECT_LE(j["first_divergent_job"]["from"].get<Ledger>(), ledger);
  EXPECT_GE(j["first_divergent_job"]["to"].get<Ledger>(), ledger);
  // The look-again command works after the process is gone.
  const std::string serial = j["schemas"]["serial"].get<std::string>(),
                    parallel = j["schemas"]["parallel"].get<std::string>();
  auto again = RunCli({"diff", "--keep-db", cluster, serial, parallel, "--range", "2:151", "--format", "json"},
                      kEmbeddedEnv);
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_EQ(ParseJson(again)["first_divergent_ledger"], ledger);
  // GitHub: the table, the ledger and the job in an annotation on stderr; the summary appended.
  EXPECT_TRUE(Contains(r.err, "::error title=ledgerdiff verify%3A history_effects::history_effects: first divergent "
                              "ledger " +
                                  std::to_string(ledger)))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "was written on the parallel side by job")) << r.err;
  EXPECT_TRUE(Contains(r.err, "::notice title=ledgerdiff verify%3A look again::")) << r.err;
  const std::string md = testing::ReadFileBytes(summary);
  EXPECT_TRUE(Contains(md, "ledgerdiff verify: divergent")) << md;
  EXPECT_TRUE(Contains(md, "rm -rf")) << md;
  // The look-again run must not have removed it either.
  EXPECT_TRUE(fs::is_directory(cluster));
  fs::remove_all(cluster);
  fs::remove_all(dir);
}

// A failed external ingester: its exit code and the last lines of its stderr in the error; the
// resume hint names the verify run id that --resume accepts.
TEST(VerifyCli, FailedIngesterShowsItsStderrAndAResumableId) {
  auto r = RunCli({"verify", "--range", "2:41", Db(), "--workers", "2", "--job-size", "20", "--retries", "0",
                   "--ingest-cmd", "echo first line >&2; echo 'boom from the ingester' >&2; exit 3 # {from} {to}",
                   "--format", "json"});
  ASSERT_EQ(r.exit_code, 1) << "a failed run is an answer (exit 1), not bad input: " << r.err << r.out;
  json j = ParseJson(r);
  const std::string error = j.value("error", "");
  const std::string id = j["run_id"].get<std::string>();
  EXPECT_TRUE(Contains(error, "ingest command failed (exit 3); ")) << error;
  EXPECT_TRUE(Contains(error, ".stderr.log ends: first line | boom from the ingester")) << error;
  EXPECT_TRUE(Contains(error, "--resume " + id + " ")) << error;
  EXPECT_FALSE(Contains(error, "--resume " + id + "_")) << error;
}

// verify-range speaks CI like verify: JUnit with a case per table, Markdown and HTML.
TEST(VerifyRange, ReportsLikeVerify) {
  const std::string left = UniqueName("ld_vr_left"), right = UniqueName("ld_vr_right");
  IngestInto(TestConninfo(), left, "2:61");
  IngestInto(TestConninfo(), right, "2:61");
  const fs::path dir = testing::FreshTempDir("ld-vr-reports");
  auto r = RunCli({"verify-range", "--range", "2:61", "--left", TestConninfo(), "--right", TestConninfo(),
                   "--left-schema", left, "--right-schema", right, "--junit", (dir / "vr.xml").string(),
                   "--markdown", (dir / "vr.md").string(), "--report", (dir / "html").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string x = testing::ReadFileBytes(dir / "vr.xml");
  EXPECT_TRUE(Contains(x, "<testsuite name=\"ledgerdiff.verify-range\"")) << x;
  EXPECT_TRUE(Contains(x, "name=\"history_ledgers\"")) << x;
  EXPECT_EQ(Occurrences(x, "<failure"), 0u) << x;
  EXPECT_TRUE(Contains(testing::ReadFileBytes(dir / "vr.md"), "ledgerdiff verify-range: identical"));
  EXPECT_TRUE(fs::exists(dir / "html" / "index.html"));
  auto conn = Connect();
  ASSERT_TRUE(conn->Run(fmt::format("DROP SCHEMA {} CASCADE; DROP SCHEMA {} CASCADE", pg::QuoteIdent(left),
                                    pg::QuoteIdent(right)))
                  .ok());
  fs::remove_all(dir);
}

// Issue 22: history_effects.details is json on the right, jsonb on the left. Its digests differ
// at every ledger holding an effect while its rows read the same as text: the ledger line names
// the column and both classes in place of an empty row diff, in text, JSON, JUnit, Markdown and
// HTML, and the schema difference is still listed.
TEST(VerifyRange, ColumnsOfAnotherTypeClassExplainTheLedgerLine) {
  const std::string left = UniqueName("ld_vr_class_left"), right = UniqueName("ld_vr_class_right");
  IngestInto(TestConninfo(), left, "2:61");
  IngestInto(TestConninfo(), right, "2:61");
  {
    auto conn = Connect();
    ASSERT_TRUE(conn->Run(fmt::format("ALTER TABLE {} ALTER COLUMN details TYPE json USING details::json",
                                      pg::Qualified(right, "history_effects")))
                    .ok());
  }
  const std::string why = "columns of another type class: details (jsonb on the left, json on the right); the "
                          "rows read the same as text";
  const fs::path dir = testing::FreshTempDir("ld-vr-class");
  const std::vector<std::string> args = {"verify-range", "--range", "2:61", "--left", TestConninfo(),
                                         "--right", TestConninfo(), "--left-schema", left, "--right-schema",
                                         right, "--all"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> all = args;
    all.insert(all.end(), more.begin(), more.end());
    return RunCli(all);
  };

  auto j = with({"--format", "json"});
  EXPECT_EQ(j.exit_code, 1) << j.err;
  const json report = ParseJson(j);
  EXPECT_EQ(report["schema_differences"],
            json::array({"column history_effects.details is jsonb on the left, json on the right"}));
  ASSERT_FALSE(report["first_divergent_ledger"].is_null()) << j.out;
  const Ledger first = report["first_divergent_ledger"];
  EXPECT_EQ(report["divergent_tables"], json::array({"history_effects"})) << j.out;
  ASSERT_EQ(report["rows"].size(), 1u) << j.out;
  const json &rows = report["rows"][0];
  EXPECT_EQ(rows["class_differences"],
            json::parse(R"([{"column": "details", "left": "jsonb", "right": "json"}])"));
  EXPECT_TRUE(rows["only_left"].empty() && rows["only_right"].empty() && rows["changed"].empty())
      << rows.dump();
  EXPECT_GT(report["divergent_ledgers"].get<uint64_t>(), 1u) << "every ledger holding an effect";

  auto t = with({"--junit", (dir / "vr.xml").string(), "--markdown", (dir / "vr.md").string(), "--report",
                 (dir / "html").string()});
  EXPECT_EQ(t.exit_code, 1) << t.err;
  EXPECT_TRUE(Contains(t.out, fmt::format("history_effects at ledger {}: {}\n", first, why))) << t.out;
  EXPECT_FALSE(Contains(t.out, fmt::format("history_effects at ledger {}:\n", first))) << t.out;
  EXPECT_TRUE(Contains(t.out, "schema difference: column history_effects.details is jsonb on the left, json on the "
                              "right\n"))
      << t.out;
  const std::string x = testing::ReadFileBytes(dir / "vr.xml");
  EXPECT_TRUE(Contains(x, why)) << x;
  const std::string md = testing::ReadFileBytes(dir / "vr.md");
  EXPECT_TRUE(Contains(md, "```diff\n" + why + "\n```")) << md;  // verify's row diff block (issue 46)
  EXPECT_TRUE(Contains(testing::ReadFileBytes(dir / "html" / "index.html"), why));

  auto conn = Connect();
  ASSERT_TRUE(conn->Run(fmt::format("DROP SCHEMA {} CASCADE; DROP SCHEMA {} CASCADE", pg::QuoteIdent(left),
                                    pg::QuoteIdent(right)))
                  .ok());
  fs::remove_all(dir);
}

} // namespace
} // namespace ledgerdiff
