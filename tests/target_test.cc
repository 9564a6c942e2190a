// Issue 22, "Writes go only where the user said": every command names its target (host, port,
// database, schemas; never the password) on its first line of progress and in every report.

#include "core/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "core/redact.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CliResult;
using testing::FreshTempDir;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

// Makes the CLI ignore the user's database settings and start its embedded default.
const std::vector<std::string> kEmbeddedEnv = {"LEDGERDIFF_DB=", "PGHOST=", "PGDATABASE=", "PGPORT=", "PGSERVICE="};
constexpr const char* kSecret = "Secret123";

std::string ConninfoValue(const std::string& conninfo, const std::string& key) {
  std::smatch m;
  const std::regex re("(?:^| )" + key + "=(\\S+)");
  return std::regex_search(conninfo, m, re) ? m[1].str() : "";
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

json ParseJson(const CliResult& r) {
  json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << "\nstderr: " << r.err;
  return j.is_discarded() ? json::object() : j;
}

// One database of the test server with two ingested schemas, `a` and `b`, of the same ledgers.
class TargetCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    database_ = UniqueName("tgt");
    ASSERT_TRUE(testing::TestServer().CreateDatabase(database_).ok());
    conninfo_ = testing::TestServer().conninfo(database_);
    for (const std::string schema : {"a", "b"}) {
      auto r = RunCli(
          {"ingest", "--db", conninfo_, "--range", "2:41", "--schema", schema, "--workers", "1", "--density", "flat"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  // The conninfo with a password (the test server trusts local connections: libpq never sends it).
  static std::string WithPassword() { return conninfo_ + " password=" + kSecret; }
  static std::string Host() { return ConninfoValue(conninfo_, "host"); }
  static std::string Port() { return ConninfoValue(conninfo_, "port"); }
  // What Target::Describe says of a schema in the test database.
  static std::string Described(const std::string& schema) {
    return fmt::format("database {} on socket {}:{}, schema \"{}\"", database_, Host(), Port(), schema);
  }
  static json TargetJson(const std::vector<std::string>& schemas) {
    return {{"host", Host()},
            {"port", std::stoi(Port())},
            {"database", database_},
            {"schemas", schemas},
            {"embedded", false}};
  }
  static void ExpectNoSecret(const CliResult& r) {
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(kSecret), std::string::npos) << r.err;
  }
  static void ExpectNoSecretIn(const fs::path& file) {
    const std::string bytes = ReadFileBytes(file);
    EXPECT_FALSE(bytes.empty()) << file;
    EXPECT_EQ(bytes.find(kSecret), std::string::npos) << file;
  }
  static std::string database_, conninfo_;
};
std::string TargetCli::database_, TargetCli::conninfo_;

TEST(Target, DescribeAndJsonNameHostPortDatabaseSchemas) {
  Target tcp;
  tcp.host = "db1.example.com";
  tcp.port = "5432";
  tcp.database = "prod";
  tcp.schemas = {"public"};
  EXPECT_EQ(tcp.Describe(), "database prod on db1.example.com:5432, schema \"public\"");
  EXPECT_EQ(tcp.Line(), "target: database prod on db1.example.com:5432, schema \"public\"");
  EXPECT_EQ(tcp.ToJson(), (json{{"host", "db1.example.com"},
                                {"port", 5432},
                                {"database", "prod"},
                                {"schemas", {"public"}},
                                {"embedded", false}}));
  Target v6 = tcp;
  v6.host = "::1";
  v6.schemas = {};
  EXPECT_EQ(v6.Describe(), "database prod on [::1]:5432");

  Target embedded;
  embedded.host = "/tmp/ledgerdiff-pg-abc";
  embedded.port = "5433";
  embedded.database = "ledgerdiff";
  embedded.schemas = {"ld_x_serial", "ld_x_parallel"};
  embedded.embedded = embedded.removed_on_exit = true;
  EXPECT_EQ(embedded.Describe(),
            "database ledgerdiff on socket /tmp/ledgerdiff-pg-abc:5433 (embedded, removed on exit), schemas "
            "\"ld_x_serial\", \"ld_x_parallel\"");
  embedded.kept_if = "the run diverges";  // said before the command knows whether it keeps it
  EXPECT_NE(embedded.Describe().find("(embedded; removed on exit unless the run diverges), schemas"),
            std::string::npos)
      << embedded.Describe();
  embedded.removed_on_exit = false;  // kept (--keep-db, or kept for evidence)
  EXPECT_NE(embedded.Describe().find("(embedded),"), std::string::npos) << embedded.Describe();
  EXPECT_EQ(embedded.ToJson()["embedded"], true);

  const Target manifest = Target::Manifest("/data/base.ldm");
  EXPECT_EQ(manifest.Describe(), "manifest /data/base.ldm");
  EXPECT_EQ(manifest.ToJson(), (json{{"manifest", "/data/base.ldm"}}));

  const TargetPair pair{tcp, manifest};
  EXPECT_EQ(pair.Line(),
            "target: left: database prod on db1.example.com:5432, schema \"public\"; right: manifest /data/base.ldm");
  EXPECT_EQ(pair.ToJson(), (json{{"left", tcp.ToJson()}, {"right", manifest.ToJson()}}));
}

TEST(Target, RegisteredSecretsAreScrubbedEverywhere) {
  RegisterSecret("hunter2-target");
  Target t;
  t.host = "h";
  t.port = "1";
  t.database = "db_hunter2-target";  // a database named after the password is still not shown
  t.schemas = {"hunter2-target"};
  EXPECT_EQ(t.Describe().find("hunter2-target"), std::string::npos) << t.Describe();
  EXPECT_EQ(t.ToJson().dump().find("hunter2-target"), std::string::npos) << t.ToJson().dump();
  EXPECT_EQ(Target::Manifest("/x/hunter2-target.ldm").Describe().find("hunter2-target"), std::string::npos);
}

TEST_F(TargetCli, DigestNamesItsTargetFirstAndInItsOutputs) {
  auto r = RunCli({"digest", "--db", WithPassword(), "--schema", "a", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FirstLine(r.err), "target: " + Described("a")) << r.err;
  EXPECT_EQ(ParseJson(r)["target"], TargetJson({"a"}));
  ExpectNoSecret(r);

  auto text = RunCli({"digest", "--db", WithPassword(), "--schema", "a"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(FirstLine(text.out), "target: " + Described("a")) << text.out;
  ExpectNoSecret(text);
}

TEST_F(TargetCli, DiffNamesBothSidesAManifestByItsPath) {
  auto r = RunCli({"diff", "--db", WithPassword(), "a", "b", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(FirstLine(r.err), "target: left: " + Described("a") + "; right: " + Described("b")) << r.err;
  const json j = ParseJson(r);
  EXPECT_EQ(j["target"], (json{{"left", TargetJson({"a"})}, {"right", TargetJson({"b"})}}));
  ExpectNoSecret(r);

  // A manifest side is its file; a side in a named database is described from its own session.
  const std::string manifest = (FreshTempDir("target_diff") / "a.ldm").string();
  auto digest = RunCli({"digest", "--db", conninfo_, "--schema", "a", "--out", manifest});
  ASSERT_EQ(digest.exit_code, 0) << digest.err;
  auto mixed = RunCli({"diff", "file:" + manifest, WithPassword() + "::b", "--format", "json"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.out << mixed.err;
  EXPECT_EQ(FirstLine(mixed.err), "target: left: manifest " + manifest + "; right: " + Described("b")) << mixed.err;
  EXPECT_EQ(ParseJson(mixed)["target"], (json{{"left", {{"manifest", manifest}}}, {"right", TargetJson({"b"})}}));
  ExpectNoSecret(mixed);

  auto text = RunCli({"diff", "--db", WithPassword(), "a", "b"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(FirstLine(text.out), "target: left: " + Described("a") + "; right: " + Described("b")) << text.out;
  ExpectNoSecret(text);
}

TEST_F(TargetCli, VerifyRangeNamesBothSidesInEveryReport) {
  const fs::path dir = FreshTempDir("target_vr");
  const std::string junit = (dir / "r.xml").string(), markdown = (dir / "r.md").string(),
                    html = (dir / "html").string();
  auto r =
      RunCli({"verify-range", "--range", "2:41", "--left", WithPassword(), "--right", conninfo_, "--left-schema", "a",
              "--right-schema", "b", "--format", "json", "--junit", junit, "--markdown", markdown, "--report", html});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string described = "left: " + Described("a") + "; right: " + Described("b");
  EXPECT_EQ(FirstLine(r.err), "target: " + described) << r.err;
  EXPECT_EQ(ParseJson(r)["target"], (json{{"left", TargetJson({"a"})}, {"right", TargetJson({"b"})}}));
  const std::string quoted = std::regex_replace(described, std::regex("\""), "&quot;");
  EXPECT_NE(ReadFileBytes(junit).find("<property name=\"target\" value=\"" + quoted + "\"/>"), std::string::npos)
      << ReadFileBytes(junit);
  EXPECT_NE(ReadFileBytes(markdown).find("- target: `" + described + "`"), std::string::npos)
      << ReadFileBytes(markdown);
  EXPECT_NE(ReadFileBytes(fs::path(html) / "index.html").find("<dt>target</dt><dd>" + quoted + "</dd>"),
            std::string::npos);
  ExpectNoSecret(r);
  for (const fs::path& f : {fs::path(junit), fs::path(markdown), fs::path(html) / "index.html"}) ExpectNoSecretIn(f);
}

TEST_F(TargetCli, VerifyNamesItsDatabaseAndSchemasInEveryReport) {
  const fs::path dir = FreshTempDir("target_verify");
  const std::string junit = (dir / "v.xml").string(), markdown = (dir / "v.md").string(),
                    html = (dir / "html").string();
  auto r =
      RunCli({"verify", "--db", WithPassword(), "--range", "2:41", "--workers", "2", "--job-size", "10", "--density",
              "flat", "--format", "json", "--junit", junit, "--markdown", markdown, "--report", html});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = ParseJson(r);
  const std::string run = j["run_id"];
  const std::vector<std::string> schemas = {"ld_" + run + "_serial", "ld_" + run + "_parallel"};
  // The first line of progress names the schemas the run is about to create.
  EXPECT_EQ(FirstLine(r.err), fmt::format("target: database {} on socket {}:{}, schemas \"{}\", \"{}\"", database_,
                                          Host(), Port(), schemas[0], schemas[1]))
      << r.err;
  EXPECT_EQ(j["target"], TargetJson(schemas));
  EXPECT_NE(ReadFileBytes(junit).find("<property name=\"target\" value=\"database " + database_), std::string::npos);
  EXPECT_NE(ReadFileBytes(markdown).find("- target: `database " + database_), std::string::npos);
  EXPECT_NE(ReadFileBytes(fs::path(html) / "index.html").find("<dt>target</dt><dd>database " + database_),
            std::string::npos);
  ExpectNoSecret(r);
  for (const fs::path& f : {fs::path(junit), fs::path(markdown), fs::path(html) / "index.html"}) ExpectNoSecretIn(f);
}

TEST(TargetEmbedded, TheEmbeddedDefaultSaysSoAndThatItIsRemovedOnExit) {
  auto r = RunCli(
      {"verify", "--range", "2:21", "--workers", "2", "--job-size", "10", "--density", "flat", "--format", "json"},
      kEmbeddedEnv);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string first = FirstLine(r.err);
  EXPECT_EQ(first.rfind("target: database ", 0), 0u) << r.err;
  EXPECT_NE(first.find(" on socket /"), std::string::npos) << first;
  EXPECT_NE(first.find("(embedded; removed on exit unless the run diverges or fails, or --keep), schemas \"ld_"),
            std::string::npos)
      << first;
  const json j = ParseJson(r);
  EXPECT_EQ(j["target"]["embedded"], true);
  EXPECT_EQ(j["target"]["host"].get<std::string>().rfind('/', 0), 0u) << j["target"];
  EXPECT_TRUE(j["target"]["port"].is_number()) << j["target"];
  EXPECT_NE(first.find(j["target"]["host"].get<std::string>() + ":" + j["target"]["port"].dump()), std::string::npos)
      << first;
}

// Issue 46: the target line comes before the verdict: it promises no removal a divergence would
// break, it names what keeps the cluster; the report's target, read at the end, says what
// happened (kept: "(embedded)", with where and how to remove it).
TEST(TargetEmbedded, TheTargetLineDoesNotPromiseTheRemovalOfAClusterADivergenceKeeps) {
  const std::string json_file = (FreshTempDir("tgt-kept") / "verify.json").string();
  auto r = RunCli({"verify", "--range", "2:41", "--workers", "2", "--job-size", "10", "--density", "flat",
                   "--inject-bug", "skip-ledger@25", "--json", json_file},
                  kEmbeddedEnv);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = json::parse(ReadFileBytes(json_file));
  ASSERT_TRUE(j.contains("kept_cluster")) << j.dump();
  const std::string cluster = j["kept_cluster"]["dir"].get<std::string>();
  EXPECT_TRUE(std::filesystem::is_directory(cluster)) << cluster;
  const std::string first = FirstLine(r.err);
  EXPECT_NE(first.find("(embedded; removed on exit unless the run diverges or fails, or --keep), schemas \"ld_"),
            std::string::npos)
      << first;
  EXPECT_EQ(r.err.find("(embedded, removed on exit)"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("(embedded, removed on exit)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("target: database "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" (embedded), schemas \"ld_"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(cluster), std::string::npos) << r.out;
  std::filesystem::remove_all(cluster);
}

TEST_F(TargetCli, IngestAndTheRunCommandsNameTheirTarget) {
  const std::string schema = UniqueName("tgt_ingest");
  auto ingest = RunCli({"ingest", "--db", WithPassword(), "--range", "2:21", "--schema", schema, "--workers", "2",
                        "--job-size", "10", "--density", "flat", "--format", "json"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  EXPECT_EQ(FirstLine(ingest.err), "target: " + Described(schema)) << ingest.err;
  EXPECT_EQ(ParseJson(ingest)["target"], TargetJson({schema}));
  ExpectNoSecret(ingest);

  const std::string planned = UniqueName("tgt_plan");
  auto plan = RunCli({"plan", "--db", WithPassword(), "--range", "2:21", "--schema", planned, "--job-size", "10"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(FirstLine(plan.err), "target: " + Described(planned)) << plan.err;
  EXPECT_EQ(FirstLine(plan.out), "# target: " + Described(planned)) << plan.out;
  const std::string out = plan.out.substr(0, plan.out.find_last_not_of('\n') + 1);
  const std::string run = out.substr(out.find_last_of('\n') + 1);  // still the last line
  ExpectNoSecret(plan);

  auto runs = RunCli({"runs", "--db", WithPassword(), "--format", "json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  bool seen = false;
  for (const json& one : ParseJson(runs))
    if (one["run_id"] == run) {
      seen = true;
      EXPECT_EQ(one["target"], TargetJson({planned}));
    }
  EXPECT_TRUE(seen) << runs.out;
  auto runs_text = RunCli({"runs", "--db", WithPassword()});
  EXPECT_EQ(FirstLine(runs_text.out), fmt::format("target: database {} on socket {}:{}", database_, Host(), Port()));

  auto cancel = RunCli({"cancel", "--db", WithPassword(), "--run", run, "--format", "json"});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(ParseJson(cancel)["target"], TargetJson({planned}));
  // drop, as the advice a cancel prints in text reads: no password in it either.
  auto drop = RunCli({"drop", "--db", WithPassword(), "--schema", planned, "--format", "json"});
  ASSERT_EQ(drop.exit_code, 0) << drop.err;
  EXPECT_EQ(ParseJson(drop)["target"], TargetJson({planned}));
  EXPECT_EQ(ParseJson(drop)["dropped"], json::array({planned}));
  for (const auto* r : {&runs, &runs_text, &cancel, &drop}) ExpectNoSecret(*r);
}

// The line comes with the first progress: a command that fails before making any prints its one
// error line only (the rule every command keeps, issue 20).
TEST_F(TargetCli, AFailureBeforeAnyProgressIsStillOneLine) {
  auto r = RunCli({"digest", "--db", WithPassword(), "--schema", "no_such_schema"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("ledgerdiff: ", 0), 0u) << r.err;
  ExpectNoSecret(r);
}

}  // namespace
}  // namespace ledgerdiff
