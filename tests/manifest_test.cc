// Manifests as untrusted input and as evidence of a source (issue 20; dump/manifest.h,
// dump/source_identity.h, dump/shard.h, dump/checkpoint.h):
// - every manifest records the identity of its source (per side for verify-range), and `manifest
//   merge` refuses parts of two databases or two schemas, naming the parts and what differs; parts
//   of one source merge, and their merge diffs like any digest; a schema dropped and re-created
//   under its name (only its OID differs) is another source for merge and --append (issue 47);
// - `merge --out` equal to a part is exit 2 before anything is written, the part unchanged;
// - crafted files (counts and lengths failing fast in little memory, measured on the child
//   process) are in manifest_crafted_test.cc, the same binary (tests/manifest_support.h).
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "core/pg.h"
#include "core/stage_timer.h"
#include "dump/bounded_json.h"
#include "dump/manifest.h"
#include "dump/shard.h"
#include "tests/harness.h"
#include "tests/manifest_support.h"

namespace ledgerdiff {
namespace {

using namespace manifest_support;

[[maybe_unused]] const bool kMeasureHelper = [] {
  const char* dir_env = std::getenv("LEDGERDIFF_TEST_MEASURE_DIR");
  if (!dir_env) return false;
  const std::string dir = dir_env;
  std::vector<std::string> args = SplitNul(ReadFileBytes(dir + "/args"));
  unsetenv("LEDGERDIFF_TEST_MEASURE_DIR");
  const Stopwatch start;
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open((dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open((dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    signal(SIGPIPE, SIG_DFL);
    std::vector<char*> argv;
    std::string bin = LEDGERDIFF_BINARY;
    argv.push_back(bin.data());
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int ws = 0;
  struct rusage ru {};
  while (wait4(pid, &ws, 0, &ru) < 0 && errno == EINTR) {
  }
  const double seconds = start.Seconds();
  const int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  WriteFileBytes(dir + "/result", fmt::format("{} {} {:.6f}", code, ru.ru_maxrss, seconds));
  _exit(0);
}();

// The measure sees memory: a child that touches 96 MB reports at least that much.
TEST(Measure, WaitReportsAChildsPeakMemory) {
  const pid_t pid = fork();
  if (pid == 0) {
    const size_t n = size_t{96} << 20;
    volatile char* p = static_cast<volatile char*>(std::malloc(n));
    if (!p) _exit(3);
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;  // volatile: every page is touched for real
    _exit(p[n - 4096] == 1 ? 0 : 4);
  }
  int ws = 0;
  struct rusage ru {};
  ASSERT_EQ(wait4(pid, &ws, 0, &ru), pid);
  ASSERT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  EXPECT_GE(ru.ru_maxrss, 96 * 1024);
}

TEST_F(Manifests, PartsOfTwoDatabasesAreRefusedNamingThePartsAndTheDatabases) {
  Shard(old_, schema_, 0, Path("db-0.ldm"));
  Shard(new_, schema_, 1, Path("db-1.ldm"));
  const std::string out = Path("db-merged.ldm");
  auto r = Merge(out, {Path("db-0.ldm"), Path("db-1.ldm")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(fmt::format("{}: database \"{}\" but {}: database \"{}\"", Path("db-1.ldm"), new_db_,
                                   Path("db-0.ldm"), old_db_)),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  // Either order.
  auto rev = Merge(out, {Path("db-1.ldm"), Path("db-0.ldm")});
  EXPECT_EQ(rev.exit_code, 2) << rev.err;
  EXPECT_NE(rev.err.find(fmt::format("{}: database \"{}\"", Path("db-0.ldm"), old_db_)), std::string::npos) << rev.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Manifests, PartsOfTwoSchemasOfOneDatabaseAreRefused) {
  Shard(old_, schema_, 0, Path("sc-0.ldm"));
  Shard(old_, other_schema_, 1, Path("sc-1.ldm"));
  auto r = Merge(Path("sc-merged.ldm"), {Path("sc-0.ldm"), Path("sc-1.ldm")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(fmt::format("{}: schema \"{}\" but {}: schema \"{}\"", Path("sc-1.ldm"), other_schema_,
                                   Path("sc-0.ldm"), schema_)),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(Path("sc-merged.ldm")));
}

TEST_F(Manifests, PartsOfOneSourceMergeAndDiffLikeOneDigest) {
  Shard(old_, schema_, 0, Path("one-0.ldm"));
  Shard(old_, schema_, 1, Path("one-1.ldm"));
  auto r = Merge(Path("one-merged.ldm"), {Path("one-1.ldm"), Path("one-0.ldm")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto same = RunCli({"diff", "file:" + Path("one-merged.ldm"), "--db", old_, schema_, "--range", "2:201"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  // A diff of two sources is what diff is for: the merged old against the new names ledger 40.
  auto other = RunCli({"diff", "file:" + Path("one-merged.ldm"), "--db", new_, schema_, "--range", "2:201",
                       "--format", "json"});
  ASSERT_EQ(other.exit_code, 1) << other.out << other.err;
  EXPECT_EQ(nlohmann::json::parse(other.out).at("first_divergent_ledger"), 40);
  auto whole_new = RunCli({"digest", "--db", new_, "--schema", schema_, "--range", "2:201", "--out",
                           Path("new-whole.ldm")});
  ASSERT_EQ(whole_new.exit_code, 0) << whole_new.err;
  auto two_files = RunCli({"diff", "file:" + Path("one-merged.ldm"), "file:" + Path("new-whole.ldm")});
  EXPECT_EQ(two_files.exit_code, 1) << two_files.out << two_files.err;
}

// Issue 23: `digest --out F --append` extends F with the ledgers after its last one; the result
// is the very file one digest of the whole range writes, after one append or several.
TEST_F(Manifests, AnAppendedManifestIsByteIdenticalToOneDigestOfTheWholeRange) {
  auto digest = [&](const std::string& range, const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"digest", "--db", old_, "--schema", schema_, "--out", out};
    if (!range.empty()) args.insert(args.end(), {"--range", range});
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  };
  const std::string whole = Path("ap-whole.ldm"), grown = Path("ap-grown.ldm");
  ASSERT_EQ(digest("2:201", whole, {"--manifest-detail", "full"}).exit_code, 0);
  ASSERT_EQ(digest("2:90", grown, {"--manifest-detail", "full"}).exit_code, 0);
  auto first = digest("2:150", grown, {"--append", "--format", "json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto j = nlohmann::json::parse(first.out);
  EXPECT_EQ(j["append"]["kept"], (nlohmann::json{{"from", 2}, {"to", 90}}));
  EXPECT_EQ(j["append"]["appended"], (nlohmann::json{{"from", 91}, {"to", 150}}));
  // Without --range: through the schema's last ledger (201).
  auto second = digest("", grown, {"--append"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("appended ledgers 151:201"), std::string::npos) << second.out;
  EXPECT_EQ(SplitManifest(ReadFileBytes(grown)), SplitManifest(ReadFileBytes(whole)));
  // The file says which ledgers each digest read (issue 41): the summary, `manifest show`, JSON.
  EXPECT_NE(second.out.find("read in 3 digests: ledgers 2:90 by the digest that wrote the file; ledgers 91:150 "
                            "appended at "),
            std::string::npos)
      << second.out;
  const nlohmann::json appended = SplitManifest(ReadFileBytes(grown)).appended;
  ASSERT_EQ(appended.size(), 2u) << appended;
  EXPECT_EQ(appended[1]["from"], 151);
  EXPECT_EQ(appended[1]["to"], 201);
  auto show = RunCli({"manifest", "show", grown, "--format", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["digest"]["appended"][0]["to"], 150) << show.out;
  auto show_text = RunCli({"manifest", "show", grown});
  EXPECT_NE(show_text.out.find("ledgers 151:201 appended at"), std::string::npos) << show_text.out;
  EXPECT_TRUE(SplitManifest(ReadFileBytes(whole)).appended.is_null()) << "one digest: no record";
  // Nothing new: exit 0, the file as it was.
  const std::string before = ReadFileBytes(grown);
  auto again = digest("", grown, {"--append"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to append"), std::string::npos) << again.out;
  EXPECT_EQ(ReadFileBytes(grown), before);
  // Past the schema's data (empty ledgers at the end), as a digest of that range writes it.
  ASSERT_EQ(digest("2:260", whole, {"--manifest-detail", "full"}).exit_code, 0);
  ASSERT_EQ(digest("2:260", grown, {"--append"}).exit_code, 0);
  EXPECT_EQ(SplitManifest(ReadFileBytes(grown)), SplitManifest(ReadFileBytes(whole)));
  // And it still compares equal with the schema, and unequal with the schema that differs at 40.
  EXPECT_EQ(RunCli({"diff", "file:" + grown, "--db", old_, schema_, "--range", "2:260", "--allow-gaps"}).exit_code, 0);
}

// The same on a real Horizon database (kahuna: lookups resolved on the client, trades, effects),
// split where the history is dense, and the appended file still tells a changed row apart.
TEST(Append, OnARealHorizonDatabaseTheAppendedManifestIsTheWholeOne) {
  const std::string hz = testing::LoadDump("kahuna-horizon.sql");
  testing::ScratchDir dir("ledgerdiff-append-hz-");
  auto held = RunCli({"digest", "--db", hz, "--schema", "public", "--format", "json"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  const auto range = nlohmann::json::parse(held.out).at("range");
  const Ledger from = range.at("from"), to = range.at("to"), mid = from + (to - from) / 2;
  ASSERT_GT(to, from + 10);
  const std::string whole = dir.path + "/whole.ldm", grown = dir.path + "/grown.ldm";
  ASSERT_EQ(RunCli({"digest", "--db", hz, "--schema", "public", "--manifest-detail", "full", "--out", whole}).exit_code,
            0);
  ASSERT_EQ(RunCli({"digest", "--db", hz, "--schema", "public", "--manifest-detail", "full", "--range",
                    fmt::format("{}:{}", from, mid), "--out", grown})
                .exit_code,
            0);
  auto appended = RunCli({"digest", "--db", hz, "--schema", "public", "--append", "--out", grown});
  ASSERT_EQ(appended.exit_code, 0) << appended.err;
  EXPECT_NE(appended.out.find(fmt::format("appended ledgers {}:{}", mid + 1, to)), std::string::npos) << appended.out;
  EXPECT_EQ(SplitManifest(ReadFileBytes(grown)), SplitManifest(ReadFileBytes(whole)));
  // A planted change after the split is one divergent ledger against the appended manifest.
  auto conn = testing::Connect(hz);
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->Run(fmt::format("UPDATE history_ledgers SET fee_pool = fee_pool + 1 WHERE sequence = {}", to)).ok());
  auto diff = RunCli({"diff", "file:" + grown, "--db", hz, "public", "--format", "json"});
  ASSERT_EQ(diff.exit_code, 1) << diff.out << diff.err;
  EXPECT_EQ(nlohmann::json::parse(diff.out).at("first_divergent_ledger"), to);
}

// What --append refuses, with exit 2 and the manifest untouched.
TEST_F(Manifests, AppendRefusesAnotherSourceACompactManifestAndARangeThatDoesNotFit) {
  const std::string full = Path("ap-full.ldm"), compact = Path("ap-compact.ldm");
  ASSERT_EQ(RunCli({"digest", "--db", old_, "--schema", schema_, "--range", "2:100", "--manifest-detail", "full",
                    "--out", full})
                .exit_code,
            0);
  ASSERT_EQ(RunCli({"digest", "--db", old_, "--schema", schema_, "--range", "2:100", "--out", compact}).exit_code, 0);
  const std::string full_bytes = testing::ReadFileBytes(full), compact_bytes = testing::ReadFileBytes(compact);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--db", new_, "--schema", schema_, "--out", full}, fmt::format("database \"{}\"", old_db_)},
      {{"--db", old_, "--schema", other_schema_, "--out", full}, fmt::format("schema \"{}\"", schema_)},
      {{"--db", old_, "--schema", schema_, "--out", compact}, "--manifest-detail full"},
      {{"--db", old_, "--schema", schema_, "--out", full, "--range", "3:150"}, "--range must start there too"},
      {{"--db", old_, "--schema", schema_, "--out", full, "--range", "2:50"}, "already covers ledgers 2:100"},
      {{"--db", old_, "--schema", schema_, "--out", Path("ap-none.ldm")}, "no such manifest"},
      {{"--db", old_, "--schema", schema_, "--out", full, "--resume"}, "--append and --resume cannot be combined"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"digest", "--append"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(c.args, " ")) << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    // One line of error (after the target line when the database was reached).
    size_t lines = 0;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) lines += line.rfind("target: ", 0) != 0;
    EXPECT_EQ(lines, 1u) << r.err;
  }
  EXPECT_EQ(testing::ReadFileBytes(full), full_bytes);
  EXPECT_EQ(testing::ReadFileBytes(compact), compact_bytes);
  EXPECT_FALSE(fs::exists(Path("ap-none.ldm")));
}

// A schema dropped and re-created under its name (a restore, a rebuilt replica) is another source
// even with the same database, name and rows: only its OID tells them apart. Parts digested before
// and after are not merged, a manifest of the old schema is not appended to from the new one, and
// parts digested on the same side of the re-creation still merge (the refusal is the OID's alone).
TEST_F(Manifests, ASchemaDroppedAndRecreatedUnderItsNameIsAnotherSource) {
  const std::string schema = testing::UniqueName("mt_recreated");
  auto ingest = RunCli({"ingest", "--db", old_, "--schema", schema, "--range", "2:201", "--workers", "1"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  const uint32_t before = testing::SchemaOid(old_, schema);
  Shard(old_, schema, 0, Path("re-0-before.ldm"));
  const std::string full = Path("re-full.ldm");
  ASSERT_EQ(RunCli({"digest", "--db", old_, "--schema", schema, "--range", "2:100", "--manifest-detail", "full",
                    "--out", full})
                .exit_code,
            0);
  const std::string full_bytes = ReadFileBytes(full);

  const uint32_t after = testing::RecreateSchemaUnderItsName(old_, schema);
  ASSERT_NE(after, 0u);
  ASSERT_NE(after, before);
  Shard(old_, schema, 1, Path("re-1-after.ldm"));
  Shard(old_, schema, 0, Path("re-0-after.ldm"));
  // The same rows: shard 0 digests alike before and after, but for the identity in its header.
  auto root = [&](const std::string& part) {
    auto show = RunCli({"manifest", "show", Path(part), "--format", "json"});
    EXPECT_EQ(show.exit_code, 0) << show.err;
    const auto j = nlohmann::json::parse(show.out, nullptr, false);
    return j.is_object() && j.contains("digest") ? j["digest"].value("root", std::string()) : std::string();
  };
  EXPECT_FALSE(root("re-0-before.ldm").empty());
  EXPECT_EQ(root("re-0-before.ldm"), root("re-0-after.ldm"));

  const std::string out = Path("re-merged.ldm");
  auto r = Merge(out, {Path("re-0-before.ldm"), Path("re-1-after.ldm")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(fmt::format("{}: schema \"{}\" of oid {} but {}: schema \"{}\" of oid {}: parts of different "
                                   "sources; nothing merged",
                                   Path("re-1-after.ldm"), schema, after, Path("re-0-before.ldm"), schema, before)),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));

  auto append = RunCli({"digest", "--append", "--db", old_, "--schema", schema, "--out", full});
  EXPECT_EQ(append.exit_code, 2) << append.out << append.err;
  EXPECT_NE(append.err.find(fmt::format("--append {}: the manifest was digested from schema \"{}\" of oid {}, this is "
                                        "schema \"{}\" of oid {}",
                                        full, schema, before, schema, after)),
            std::string::npos)
      << append.err;
  EXPECT_TRUE(ReadFileBytes(full) == full_bytes) << "the manifest is untouched";

  auto same = Merge(out, {Path("re-0-after.ldm"), Path("re-1-after.ldm")});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
}

TEST_F(Manifests, ShowPrintsTheSourceIdentity) {
  Shard(old_, schema_, 0, Path("show-0.ldm"));
  auto conn = testing::Connect(old_);
  ASSERT_TRUE(conn);
  auto oid = conn->Exec("SELECT oid::bigint FROM pg_namespace WHERE nspname = $1", {schema_});
  ASSERT_TRUE(oid.ok());
  const int64_t schema_oid = oid->GetInt(0, 0);
  auto sys = conn->Exec("SELECT system_identifier::text FROM pg_control_system()");
  ASSERT_TRUE(sys.ok()) << "the harness connects as a superuser";
  const std::string system_identifier(sys->Get(0, 0));

  auto text = RunCli({"manifest", "show", Path("show-0.ldm")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(fmt::format("source identity: database \"{}\", schema \"{}\" (oid {}), system identifier {}",
                                      old_db_, schema_, schema_oid, system_identifier)),
            std::string::npos)
      << text.out;
  auto json = RunCli({"manifest", "show", Path("show-0.ldm"), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto id = nlohmann::json::parse(json.out).at("source_identity");
  EXPECT_EQ(id.at("database"), old_db_);
  EXPECT_EQ(id.at("schema"), schema_);
  EXPECT_EQ(id.at("schema_oid"), schema_oid);
  EXPECT_EQ(id.at("system_identifier"), system_identifier);
  // Never a conninfo: the header holds no host, port or password.
  const std::string bytes = ReadFileBytes(Path("show-0.ldm"));
  EXPECT_EQ(ManifestBytes::Of(bytes).header.at("source_identity").size(), 4u);
}

// A role that may not execute pg_control_system() records no system identifier: such a part is
// compared on the rest, and the merge keeps the identifier the other part holds. Two different
// identifiers (two clusters) are refused. The parts are re-sealed with a correct checksum.
TEST_F(Manifests, ASystemIdentifierIsComparedWhereBothPartsHoldOne) {
  Shard(old_, schema_, 0, Path("sys-0.ldm"));
  Shard(old_, schema_, 1, Path("sys-1.ldm"));
  auto reseal = [&](const std::string& from, const std::string& to, const nlohmann::json& sys) {
    ManifestBytes m = ManifestBytes::Of(ReadFileBytes(Path(from)));
    m.header["source_identity"]["system_identifier"] = sys;
    WriteFileBytes(Path(to), m.Bytes());
  };
  const std::string sys =
      ManifestBytes::Of(ReadFileBytes(Path("sys-0.ldm"))).header.at("source_identity").at("system_identifier");
  ASSERT_FALSE(sys.empty());
  reseal("sys-1.ldm", "sys-1-unreadable.ldm", nullptr);
  auto merged = Merge(Path("sys-merged.ldm"), {Path("sys-1-unreadable.ldm"), Path("sys-0.ldm")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(ManifestBytes::Of(ReadFileBytes(Path("sys-merged.ldm"))).header.at("source_identity").at("system_identifier"),
            sys);
  auto direct = Merge(Path("sys-direct.ldm"), {Path("sys-0.ldm"), Path("sys-1.ldm")});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(ReadFileBytes(Path("sys-merged.ldm")), ReadFileBytes(Path("sys-direct.ldm")));
  reseal("sys-1.ldm", "sys-1-other.ldm", "1234567890123456789");
  auto other = Merge(Path("sys-other.ldm"), {Path("sys-0.ldm"), Path("sys-1-other.ldm")});
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find(fmt::format("{}: system identifier 1234567890123456789 but {}: system identifier {}",
                                       Path("sys-1-other.ldm"), Path("sys-0.ldm"), sys)),
            std::string::npos)
      << other.err;
  EXPECT_FALSE(fs::exists(Path("sys-other.ldm")));
}

// verify-range parts record both sides: a part compared against another right side is refused.
TEST_F(Manifests, VerifyRangePartsOfAnotherRightSideAreRefused) {
  auto part = [&](const std::string& right, int k, const std::string& out) {
    auto r = RunCli({"verify-range", "--range", "2:201", "--left", old_, "--right", old_, "--left-schema", schema_,
                     "--right-schema", right, "--shards", "2", "--shard", std::to_string(k), "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  part(other_schema_, 0, Path("vr-0.ldm"));
  part(right_schema_, 1, Path("vr-1.ldm"));
  auto r = Merge(Path("vr-merged.ldm"), {Path("vr-0.ldm"), Path("vr-1.ldm")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(fmt::format("{}: right side schema \"{}\" but {}: right side schema \"{}\"", Path("vr-1.ldm"),
                                   right_schema_, Path("vr-0.ldm"), other_schema_)),
            std::string::npos)
      << r.err;
  part(other_schema_, 1, Path("vr-1b.ldm"));
  auto ok = Merge(Path("vr-merged.ldm"), {Path("vr-0.ldm"), Path("vr-1b.ldm")});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  auto show = RunCli({"manifest", "show", Path("vr-merged.ldm"), "--format", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto id = nlohmann::json::parse(show.out).at("source_identity");
  EXPECT_EQ(id.at("left").at("schema"), schema_);
  EXPECT_EQ(id.at("right").at("schema"), other_schema_);
  EXPECT_EQ(id.at("right").at("database"), old_db_);
}

TEST_F(Manifests, MergeOutEqualToAPartIsRefusedBeforeWriting) {
  Shard(old_, schema_, 0, Path("out-0.ldm"));
  Shard(old_, schema_, 1, Path("out-1.ldm"));
  const std::string before0 = ReadFileBytes(Path("out-0.ldm")), before1 = ReadFileBytes(Path("out-1.ldm"));
  fs::create_symlink(Path("out-1.ldm"), Path("out-link.ldm"));
  for (const std::string& out : {Path("out-0.ldm"), Path("out-1.ldm"), (dir_ / "." / "out-0.ldm").string(),
                                 (dir_ / "sub" / ".." / "out-1.ldm").string(), Path("out-link.ldm")}) {
    fs::create_directories(dir_ / "sub");
    auto r = Merge(out, {Path("out-0.ldm"), Path("out-1.ldm")});
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.err;
    // A symlink at --out is refused as a link before the merge compares it with its parts.
    const char* why = fs::is_symlink(out) ? "symbolic link" : "is the part";
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_EQ(ReadFileBytes(Path("out-0.ldm")), before0) << out;
    EXPECT_EQ(ReadFileBytes(Path("out-1.ldm")), before1) << out;
    EXPECT_TRUE(fs::is_symlink(Path("out-link.ldm")));
  }
  // A hard link is the same file too.
  fs::create_hard_link(Path("out-0.ldm"), Path("out-hard.ldm"));
  auto hard = Merge(Path("out-hard.ldm"), {Path("out-0.ldm"), Path("out-1.ldm")});
  EXPECT_EQ(hard.exit_code, 2) << hard.err;
  EXPECT_EQ(ReadFileBytes(Path("out-0.ldm")), before0);
  auto fine = Merge(Path("out-merged.ldm"), {Path("out-0.ldm"), Path("out-1.ldm")});
  EXPECT_EQ(fine.exit_code, 0) << fine.err;
}

}  // namespace
}  // namespace ledgerdiff
