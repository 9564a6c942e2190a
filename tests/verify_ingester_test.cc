// verify with external ingesters (a correct copy, an off-by-one copy, a failing and a retried
// command), verify's report outputs, its bad input, the embedded default's kept divergence, and
// verify-range's reports. Part of the verify_test binary (tests/verify_support.h).
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
#include "tests/verify_support.h"
#include "verify/selftest.h"
#include "verify/verify.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using namespace verify_support;

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
