// Manifests as untrusted input and as evidence of a source (issue 20; dump/manifest.h,
// dump/source_identity.h, dump/shard.h, dump/checkpoint.h):
// - every manifest records the identity of its source (per side for verify-range), and `manifest
//   merge` refuses parts of two databases or two schemas, naming the parts and what differs; parts
//   of one source merge, and their merge diffs like any digest; a schema dropped and re-created
//   under its name (only its OID differs) is another source for merge and --append (issue 47);
// - crafted counts and lengths (2^32 - 1, -1) fail with exit 2 within a second, in little memory,
//   measured on the child process (wait4's ru_maxrss); a missing mandatory key is exit 2 naming
//   it; a checkpoint's crafted chunk record likewise;
// - `merge --out` equal to a part is exit 2 before anything is written, the part unchanged.
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
#include "dump/bounded_json.h"
#include "dump/manifest.h"
#include "dump/shard.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::ReadFileBytes;

// An appended manifest is the file one digest of the whole range writes but for its record of
// what each append read (header key "appended") and the checksum that covers it: the header with
// that key left out, and the entries and trailer, are byte for byte the same.
struct ManifestParts {
  nlohmann::json header_without_appended;
  nlohmann::json appended;
  std::string body;  // entries and trailer, without the final checksum
  bool operator==(const ManifestParts& o) const {
    return header_without_appended == o.header_without_appended && body == o.body;
  }
};
ManifestParts SplitManifest(const std::string& bytes) {
  ManifestParts p;
  if (bytes.size() < 16 + 32) return p;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<unsigned char>(bytes[12 + i])} << (8 * i);
  if (bytes.size() < 16 + len + 32) return p;
  p.header_without_appended = nlohmann::json::parse(bytes.substr(16, len));
  p.appended = p.header_without_appended.value("appended", nlohmann::json());
  p.header_without_appended.erase("appended");
  p.body = bytes.substr(16 + len, bytes.size() - 16 - len - 32);
  return p;
}
std::ostream& operator<<(std::ostream& os, const ManifestParts& p) {
  return os << p.header_without_appended.dump() << " + " << p.body.size() << " bytes";
}
using testing::RunCli;
using testing::TestConninfo;
using testing::WriteFileBytes;

constexpr long kRssBoundKb = 64 * 1024;

// ---- bytes of a manifest ----

uint32_t U32At(const std::string& b, size_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(b[off + i])} << (8 * i);
  return v;
}
void PutU32At(std::string& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::string U32(uint32_t v) {
  std::string s(4, '\0');
  PutU32At(s, 0, v);
  return s;
}

std::string Sha256(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md), n);
}

// A manifest taken apart (dump/manifest.h layout): its header JSON, its entries, its trailer JSON.
struct ManifestBytes {
  nlohmann::json header;
  std::string entries;
  std::string trailer;

  static ManifestBytes Of(const std::string& b) {
    ManifestBytes m;
    const uint32_t hlen = U32At(b, 12);
    m.header = nlohmann::json::parse(b.substr(16, hlen));
    // The trailer: the last u32 length L followed by L bytes of JSON and the 32-byte checksum.
    const size_t end = b.size() - 32;
    for (size_t len = 2; len + 4 <= end - 16 - hlen; ++len)
      if (U32At(b, end - len - 4) == len && b[end - len] == '{') {
        m.trailer = b.substr(end - len, len);
        m.entries = b.substr(16 + hlen, end - len - 4 - 16 - hlen);
        return m;
      }
    ADD_FAILURE() << "no trailer found";
    return m;
  }
  // The bytes again, with a correct checksum: only the reader's own checks can refuse them.
  // `header_len` / `trailer_len` replace the true lengths when given.
  std::string Bytes(std::optional<uint32_t> header_len = {}, std::optional<uint32_t> trailer_len = {}) const {
    return WithHeaderText(header.dump(), header_len, trailer_len);
  }
  // The same with the header's JSON text given (crafted documents too large to build as such).
  std::string WithHeaderText(const std::string& h, std::optional<uint32_t> header_len = {},
                             std::optional<uint32_t> trailer_len = {}) const {
    std::string b = "LDGRDIFF" + U32(dump::kManifestVersion) + U32(header_len.value_or(h.size())) + h + entries +
                    U32(trailer_len.value_or(trailer.size())) + trailer;
    return b + Sha256(b);
  }
};

// ---- a child's exit, time and peak memory ----
//
// ru_maxrss counts a process's image before its exec too: a ledgerdiff forked straight from this
// test process would report at least the test's own peak. So the run is measured from a small
// process: this test binary exec'd afresh in helper mode (LEDGERDIFF_TEST_MEASURE_DIR, handled
// before main, before any test allocates), which forks, execs ledgerdiff, reaps it with wait4 and
// writes its exit code, ru_maxrss and wall time. Test Measure.WaitReportsAChildsPeakMemory shows
// the measure sees memory.

std::vector<std::string> SplitNul(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  for (size_t b; (b = s.find('\0', a)) != std::string::npos; a = b + 1) out.push_back(s.substr(a, b - a));
  return out;
}

[[maybe_unused]] const bool kMeasureHelper = [] {
  const char* dir_env = std::getenv("LEDGERDIFF_TEST_MEASURE_DIR");
  if (!dir_env) return false;
  const std::string dir = dir_env;
  std::vector<std::string> args = SplitNul(ReadFileBytes(dir + "/args"));
  unsetenv("LEDGERDIFF_TEST_MEASURE_DIR");
  const auto start = std::chrono::steady_clock::now();
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
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  WriteFileBytes(dir + "/result", fmt::format("{} {} {:.6f}", code, ru.ru_maxrss, seconds));
  _exit(0);
}();

struct Measured {
  int exit_code = -1;
  std::string out, err;
  long maxrss_kb = 0;  // kilobytes (Linux)
  double seconds = 0;
};

Measured RunMeasured(const std::vector<std::string>& args) {
  testing::ScratchDir dir("ledgerdiff-measured-");
  std::string joined;
  for (const auto& a : args) joined += a + std::string(1, '\0');
  WriteFileBytes(dir.path + "/args", joined);
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("LEDGERDIFF_TEST_MEASURE_DIR", dir.path.c_str(), 1);
    execl("/proc/self/exe", "manifest_test", static_cast<char*>(nullptr));
    _exit(127);
  }
  Measured m;
  EXPECT_EQ(testing::WaitExitCode(pid), 0) << "the measuring helper failed";
  const std::string result = ReadFileBytes(dir.path + "/result");
  EXPECT_EQ(std::sscanf(result.c_str(), "%d %ld %lf", &m.exit_code, &m.maxrss_kb, &m.seconds), 3) << result;
  m.out = ReadFileBytes(dir.path + "/stdout");
  m.err = ReadFileBytes(dir.path + "/stderr");
  return m;
}

// 64 MB; a sanitizer build (shadow memory, LEDGERDIFF_SANITIZED) adds what `ledgerdiff --version`
// alone takes there, so the bound still measures what the parsers allocate.
long RssBoundKb() {
#ifdef LEDGERDIFF_SANITIZED
  static const long bound = kRssBoundKb + RunMeasured({"--version"}).maxrss_kb;
  return bound;
#else
  return kRssBoundKb;
#endif
}

// Exit 2 naming `expect`, under 64 MB on every run, within a second (the best of up to three runs:
// the time is the shared machine's, the memory is ours).
void ExpectFastSmallRefusal(const std::vector<std::string>& args, const std::string& expect, const std::string& what) {
  double best = 1e9;
  long rss = 0;
  for (int attempt = 0; attempt < 3 && best >= 1.0; ++attempt) {
    Measured m = RunMeasured(args);
    ASSERT_EQ(m.exit_code, 2) << what << ": " << m.err;
    EXPECT_NE(m.err.find(expect), std::string::npos) << what << ": " << m.err;
    EXPECT_EQ(std::count(m.err.begin(), m.err.end(), '\n'), 1) << what << ": " << m.err;
    ASSERT_GT(m.maxrss_kb, 0) << "no measure";
    EXPECT_LT(m.maxrss_kb, RssBoundKb()) << what;
    best = std::min(best, m.seconds);
    rss = std::max(rss, m.maxrss_kb);
  }
  EXPECT_LT(best, 1.0) << what;
  std::printf("[ measured ] %s: exit 2 in %.3f s, peak RSS %.1f MB\n", what.c_str(), best, rss / 1024.0);
}

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

// ---- the sources: two databases (old, new: new differs at ledger 40), two schemas of old ----

class Manifests : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    schema_ = testing::UniqueName("mt");
    other_schema_ = testing::UniqueName("mt_other");
    right_schema_ = testing::UniqueName("mt_right");
    old_db_ = testing::UniqueName("mt_old");
    new_db_ = testing::UniqueName("mt_new");
    for (const auto& db : {old_db_, new_db_}) ASSERT_TRUE(testing::TestServer().CreateDatabase(db).ok()) << db;
    old_ = testing::TestServer().conninfo(old_db_);
    new_ = testing::TestServer().conninfo(new_db_);
    for (const auto& [conninfo, schema] : std::vector<std::pair<std::string, std::string>>{
             {old_, schema_}, {new_, schema_}, {old_, other_schema_}, {old_, right_schema_}}) {
      auto r = RunCli({"ingest", "--db", conninfo, "--schema", schema, "--range", "2:201", "--workers", "1"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    auto conn = testing::Connect(new_);
    ASSERT_TRUE(conn);
    ASSERT_TRUE(conn->Run(fmt::format("UPDATE {} SET fee_pool = fee_pool + 1 WHERE sequence = 40",
                                      pg::Qualified(schema_, "history_ledgers")))
                    .ok());
    dir_ = testing::FreshTempDir("ledgerdiff-manifest-test");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string Path(const std::string& name) { return (dir_ / name).string(); }

  // Shard `k` of 2 of 2:201 (0: 2:101, 1: 102:201) of `schema` in `conninfo`, into `out`.
  static void Shard(const std::string& conninfo, const std::string& schema, int k, const std::string& out) {
    auto r = RunCli({"digest", "--db", conninfo, "--schema", schema, "--range", "2:201", "--shards", "2", "--shard",
                     std::to_string(k), "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static testing::CliResult Merge(const std::string& out, const std::vector<std::string>& parts) {
    std::vector<std::string> args = {"manifest", "merge", "--out", out};
    args.insert(args.end(), parts.begin(), parts.end());
    return RunCli(args);
  }

  static inline std::string schema_, other_schema_, right_schema_, old_db_, new_db_, old_, new_;
  static inline fs::path dir_;
};

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

// ---- crafted files ----

// Issue 44: a part's comparison outcome is untrusted input. Crafted outcomes (checksum
// recomputed) whose numbers contradict the verdict, the part's slice or each other, or whose sums
// would wrap, are refused with exit 2 naming the field; nothing is written.
TEST_F(Manifests, CraftedComparisonOutcomesInPartsAreRefusedNamingTheField) {
  auto part = [&](int k, const std::string& out) {
    auto r = RunCli({"verify-range", "--range", "2:201", "--left", old_, "--right", old_, "--left-schema", schema_,
                     "--right-schema", schema_, "--shards", "2", "--shard", std::to_string(k), "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  part(0, Path("oc-0.ldm"));
  part(1, Path("oc-1.ldm"));  // ledgers 102:201
  const ManifestBytes genuine = ManifestBytes::Of(ReadFileBytes(Path("oc-1.ldm")));
  ASSERT_TRUE(nlohmann::json::parse(genuine.trailer).contains("comparison")) << genuine.trailer;
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> change;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"identical with a divergent ledger",
       [](nlohmann::json& c) {
         c["first_divergent_ledger"] = 150;
         c["divergent_ledgers"] = 1;
       },
       "key \"comparison.identical\": true with first divergent ledger 150"},
      {"a first divergent ledger outside the slice",
       [](nlohmann::json& c) {
         c["identical"] = false;
         c["first_divergent_ledger"] = 50;
         c["divergent_ledgers"] = 1;
       },
       "key \"comparison.first_divergent_ledger\": ledger 50 is outside its range 102:201"},
      {"missing ledgers passing without --allow-gaps",
       [](nlohmann::json& c) { c["coverage"]["missing_left"] = 5; },
       "key \"comparison.identical\": true with ledgers missing (5 left, 0 right) and no --allow-gaps"},
      {"more divergent ledgers than the slice holds",
       [](nlohmann::json& c) {
         c["identical"] = false;
         c["first_divergent_ledger"] = 150;
         c["divergent_ledgers"] = 1000;
       },
       "key \"comparison.divergent_ledgers\": 1000 ledgers, more than the 100 of its range 102:201"},
      {"a divergent ledger count without a first divergent ledger",
       [](nlohmann::json& c) {
         c["identical"] = false;
         c["divergent_ledgers"] = 3;
       },
       "key \"comparison.first_divergent_ledger\": none with 3 divergent ledgers"},
      {"rows that wrap when summed",
       [](nlohmann::json& c) { c["rows_left"] = UINT64_MAX; },
       "comparison.rows_left summed over the parts passes 2^64-1"},
  };
  for (const auto& c : cases) {
    ManifestBytes crafted = genuine;
    nlohmann::json trailer = nlohmann::json::parse(crafted.trailer);
    c.change(trailer["comparison"]);
    crafted.trailer = trailer.dump();
    WriteFileBytes(Path("oc-1-crafted.ldm"), crafted.Bytes());
    for (const auto& order : std::vector<std::vector<std::string>>{{Path("oc-0.ldm"), Path("oc-1-crafted.ldm")},
                                                                   {Path("oc-1-crafted.ldm"), Path("oc-0.ldm")}}) {
      auto r = Merge(Path("oc-merged.ldm"), order);
      EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.out << r.err;
      EXPECT_NE(r.err.find(c.field), std::string::npos) << c.name << ": " << r.err;
      EXPECT_NE(r.err.find(Path("oc-1-crafted.ldm")), std::string::npos) << c.name << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_FALSE(fs::exists(Path("oc-merged.ldm"))) << c.name;
    }
  }
  auto fine = Merge(Path("oc-merged.ldm"), {Path("oc-0.ldm"), Path("oc-1.ldm")});
  EXPECT_EQ(fine.exit_code, 0) << fine.err;
}

// Issue 44: an incomplete merge says how many ledgers the sides hold, not how many were compared.
TEST_F(Manifests, AnIncompleteMergeSaysHowManyLedgersAreHeld) {
  // 2:301 in two slices (2:151, 152:301); both sides hold 2:201, so 100 ledgers miss on each.
  for (int k : {0, 1}) {
    auto r = RunCli({"verify-range", "--range", "2:301", "--left", old_, "--right", old_, "--left-schema", schema_,
                     "--right-schema", schema_, "--shards", "2", "--shard", std::to_string(k), "--out",
                     Path(fmt::format("inc-{}.ldm", k))});
    ASSERT_EQ(r.exit_code, k == 0 ? 0 : 1) << r.out << r.err;
  }
  auto r = Merge(Path("inc-merged.ldm"), {Path("inc-0.ldm"), Path("inc-1.ldm")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("incomplete: the 200 ledgers held of 300 are identical"), std::string::npos) << r.out;
}

TEST_F(Manifests, CraftedCountsAndLengthsFailFastInLittleMemory) {
  Shard(old_, schema_, 1, Path("c-1.ldm"));
  Shard(old_, schema_, 0, Path("c-0.ldm"));
  const std::string good = ReadFileBytes(Path("c-1.ldm"));
  const ManifestBytes m = ManifestBytes::Of(good);
  ASSERT_EQ(m.Bytes(), good) << "taken apart and put together again, byte for byte";

  struct Case {
    std::string name, bytes, expect;
  };
  std::vector<Case> cases;
  auto with_header = [&](const std::function<void(nlohmann::json&)>& change) {
    ManifestBytes c = m;
    change(c.header);
    return c.Bytes();
  };
  const nlohmann::json u32max = 4294967295u, minus_one = -1;
  for (const auto& [label, v] : std::vector<std::pair<std::string, nlohmann::json>>{{"2^32-1", u32max},
                                                                                   {"-1", minus_one}}) {
    cases.push_back({"shard count " + label, with_header([&](auto& h) { h["shard"]["count"] = v; }), "shard.count"});
    cases.push_back({"shard index " + label, with_header([&](auto& h) { h["shard"]["index"] = v; }), "shard.index"});
    cases.push_back({"range to " + label, with_header([&](auto& h) { h["range"]["to"] = v; }), "range.to"});
    cases.push_back({"full range to " + label, with_header([&](auto& h) { h["shard"]["full_range"]["to"] = v; }),
                     "shard.full_range.to"});
    cases.push_back({"schema oid " + label,
                     with_header([&](auto& h) { h["source_identity"]["schema_oid"] = v.is_number_unsigned()
                                                                                       ? nlohmann::json(uint64_t{1} << 32)
                                                                                       : v; }),
                     "source_identity.schema_oid"});
  }
  // The full range as wide as it may be: shard count 2^31 - 1 fits it, but 2^31 - 1 slices of one
  // ledger each cannot hold this part's range.
  cases.push_back({"shard count 2^31-1 of the widest range", with_header([&](auto& h) {
                     h["shard"]["count"] = 2147483647u;
                     h["shard"]["full_range"] = {{"from", 0}, {"to", 2147483647u}};
                   }),
                   "shard 1 of 2147483647"});
  cases.push_back({"shard count 0", with_header([&](auto& h) { h["shard"]["count"] = 0; }), "shard.count"});
  // A range of 2^31 ledgers over the entries of a short one (runs of empty ledgers make a wide
  // range cheap, so the header alone no longer refuses it): the entries do not describe the
  // range and the reader says so in time and memory that do not grow with the width (show: the
  // entries run into the trailer; merge: not a part). Both name the file.
  cases.push_back({"range of 2^31 ledgers", with_header([&](auto& h) {
                     h.erase("shard");
                     h["range"] = {{"from", 0}, {"to", 2147483647u}};
                   }),
                   "crafted.ldm"});
  cases.push_back({"header length 2^32-1 (-1)", m.Bytes(0xffffffffu), "header length 4294967295"});
  cases.push_back({"header length past the end", m.Bytes(static_cast<uint32_t>(good.size())), "truncated"});
  cases.push_back({"trailer length 2^32-1 (-1)", m.Bytes(std::nullopt, 0xffffffffu), "trailer length 4294967295"});
  cases.push_back({"trailer length past the end", m.Bytes(std::nullopt, static_cast<uint32_t>(m.trailer.size() + 100)),
                   "trailer length"});
  // Mandatory keys.
  for (const char* key : {"fingerprint", "source_identity", "range", "profile", "detail", "tool_version", "source",
                          "excluded_columns"})
    cases.push_back({std::string("no ") + key, with_header([&](auto& h) { h.erase(key); }),
                     fmt::format("missing key \"{}\"", key)});
  cases.push_back({"no database in the identity", with_header([&](auto& h) { h["source_identity"].erase("database"); }),
                   "missing key \"source_identity.database\""});
  // A header nested beyond any real one, and a header that would take far more memory than its size.
  cases.push_back({"deep header", with_header([&](auto& h) {
                     nlohmann::json deep = 1;
                     for (int i = 0; i < 100; ++i) deep = nlohmann::json::array({deep});
                     h["extra"] = deep;
                   }),
                   "nested deeper than 16"});
  // Crafted documents are built as text: `raw` replaces the header value "@@RAW@@".
  auto with_raw = [&](const std::function<void(nlohmann::json&)>& place, const std::string& raw) {
    nlohmann::json h = m.header;
    place(h);
    std::string text = h.dump();
    const size_t at = text.find("\"@@RAW@@\"");
    EXPECT_NE(at, std::string::npos);
    return m.WithHeaderText(text.replace(at, 9, raw));
  };
  {
    std::string objects = "[";
    for (int i = 0; i < 400000; ++i) objects += i ? ",{}" : "{}";
    cases.push_back({"header of 400,000 empty objects", with_raw([](auto& h) { h["extra"] = "@@RAW@@"; }, objects + "]"),
                     "times its size"});
  }
  // 80,000 tables (the crafted 48 MB manifest that took 1.28 GB to show): beyond the header bound.
  // 5,000 small tables within the header bound: beyond the table bound, in little memory too.
  for (const auto& [count, columns, expect] : std::vector<std::tuple<int, bool, std::string>>{
           {80000, true, "header length"}, {5000, false, "5000 tables, not 1 to 4096"}}) {
    nlohmann::json t = m.header["profile"]["tables"][0];
    if (!columns) t["columns"].erase(t["columns"].begin() + 1, t["columns"].end());
    t["table"] = "@@NAME@@";
    const std::string one = t.dump();
    const size_t at = one.find("@@NAME@@");
    std::string tables = "[";
    for (int i = 0; i < count; ++i)
      tables += (i ? "," : "") + one.substr(0, at) + fmt::format("t{:05}", i) + one.substr(at + 8);
    const std::string bytes = with_raw([](auto& h) { h["profile"]["tables"] = "@@RAW@@"; }, tables + "]");
    if (count == 80000) {
      EXPECT_GT(bytes.size(), size_t{dump::kMaxManifestHeaderBytes});
    }
    cases.push_back({fmt::format("{} tables ({} bytes)", count, bytes.size()), bytes, expect});
  }
  // A row count beyond 64 bits, and an overlong one.
  {
    ManifestBytes c = m;
    c.entries[0] = static_cast<char>(0xff);
    c.entries.insert(1, std::string(9, static_cast<char>(0xff)));
    cases.push_back({"count beyond 64 bits", c.Bytes(), "64-bit LEB128"});
  }

  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Path("crafted.ldm");
    WriteFileBytes(path, c.bytes);
    ExpectFastSmallRefusal({"manifest", "show", path}, c.expect, "show, " + c.name);
    ExpectFastSmallRefusal({"manifest", "merge", "--out", Path("crafted-merged.ldm"), Path("c-0.ldm"), path}, c.expect,
                           "merge, " + c.name);
    EXPECT_FALSE(fs::exists(Path("crafted-merged.ldm")));
    auto d = RunCli({"diff", "file:" + path, "file:" + Path("c-1.ldm")});
    EXPECT_EQ(d.exit_code, 2) << c.name << ": " << d.err;
  }
}

// A manifest of a wide profile (4000 tables) is shown in a small multiple of its size.
TEST_F(Manifests, AWideManifestIsShownInASmallMultipleOfItsSize) {
  dump::ResolvedProfile profile;
  profile.name = "wide";
  for (int i = 0; i < 4000; ++i) {
    dump::ResolvedTable t;
    t.name = fmt::format("table_{:05}", i);
    t.ledger.column = "seq";
    for (const char* c : {"seq", "amount", "memo"}) {
      dump::CanonicalColumn col;
      col.name = c;
      col.cls = dump::ColumnClass::kInt;
      col.type = "int8";
      t.columns.push_back(col);
    }
    t.key = {"seq"};
    profile.tables.push_back(std::move(t));
  }
  dump::ManifestHeader header;
  header.source = "schema \"wide\"";
  header.detail = dump::ManifestDetail::kFull;
  header.range = {2, 201};
  header.profile = profile;
  header.identity = {std::nullopt, "db", "wide", 1};
  const std::string path = Path("wide.ldm");
  auto writer = dump::ManifestWriter::Create(path, header);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  dump::SummaryBuilder builder(profile, header.range, header.source);
  dump::Chunk c;
  c.range = header.range;
  c.tables = profile.tables.size();
  c.full = true;
  const size_t n = c.range.size();
  c.counts.assign(n * c.tables, 0);
  c.digests.assign(n * c.tables, dump::EmptyDigest());
  for (size_t li = 0; li < n; ++li) {
    for (size_t t = 0; t < c.tables; t += 7) {
      c.counts[li * c.tables + t] = li + 1;
      c.digests[li * c.tables + t].bytes[0] = static_cast<unsigned char>(t);
    }
    c.ledgers.push_back(static_cast<Ledger>(c.range.from + li));
    c.combined.push_back(dump::CombinedDigest(static_cast<Ledger>(c.range.from + li), &c.counts[li * c.tables],
                                              &c.digests[li * c.tables], c.tables));
  }
  builder.Add(c);
  ASSERT_TRUE((*writer)->Add(c).ok());
  ASSERT_TRUE((*writer)->Finish(builder.Finish()).ok());
  const uintmax_t size = fs::file_size(path);

  Shard(old_, schema_, 0, Path("small-0.ldm"));
  Measured small = RunMeasured({"manifest", "show", Path("small-0.ldm")});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  Measured wide = RunMeasured({"manifest", "show", path, "--format", "json"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_EQ(nlohmann::json::parse(wide.out).at("digest").at("tables").size(), 4000u);
  const double growth = (wide.maxrss_kb - small.maxrss_kb) * 1024.0;
  std::printf("[ measured ] show of a %ju-byte manifest of 4000 tables: peak RSS %.1f MB (a small one: %.1f MB), "
              "growth %.1fx its size\n",
              size, wide.maxrss_kb / 1024.0, small.maxrss_kb / 1024.0, growth / static_cast<double>(size));
#ifdef LEDGERDIFF_SANITIZED
  constexpr double kFactor = 64.0;  // AddressSanitizer's redzones and quarantine (33x seen; 9x without)
#else
  constexpr double kFactor = 24.0;
#endif
  EXPECT_LT(growth, kFactor * static_cast<double>(size));
}

// ---- the checkpoint (.partial) scanner ----

// Appends a checkpoint record (dump/checkpoint.h): u32 length | payload | XXH3-128, canonical.
std::string Record(const std::string& payload, std::optional<uint32_t> length = {}) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(payload.data(), payload.size()));
  return U32(length.value_or(static_cast<uint32_t>(payload.size()))) + payload +
         std::string(reinterpret_cast<const char*>(c.digest), 16);
}

TEST_F(Manifests, CraftedCheckpointRecordsFailFastInLittleMemory) {
  // A real checkpoint's header (the job a resume must match): a digest killed after its first chunk.
  const std::string out = Path("ckpt.ldm"), checkpoint = out + ".partial";
  const std::vector<std::string> args = {"digest", "--db", old_, "--schema", schema_, "--range", "2:201", "--jobs",
                                         "1", "--chunk-ledgers", "25", "--out", out};
  const pid_t pid = testing::SpawnCli(
      args, {.stdout_path = "", .stderr_path = "", .stdout_fd = -1, .env = {"LEDGERDIFF_TEST_CHUNK_DELAY_MS=5000"}});
  size_t header_end = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string b = ReadFileBytes(checkpoint);
    if (b.size() > 16) {
      const size_t end = 12 + 4 + U32At(b, 12) + 16;
      if (b.size() > end + 5 && b[end + 4] == 'C') {
        header_end = end;
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  testing::WaitExitCode(pid);
  ASSERT_GT(header_end, 0u) << "the digest never checkpointed a chunk";
  const std::string head = ReadFileBytes(checkpoint).substr(0, header_end);

  auto chunk = [](uint32_t from, uint32_t to, uint32_t tables, const std::string& entries) {
    std::string p = "C";
    p.push_back('\0');
    return p + U32(from) + U32(to) + U32(tables) + entries;
  };
  struct Case {
    std::string name, bytes, expect;
  };
  const std::vector<Case> cases = {
      {"chunk of 2^32-1 (-1) tables", head + Record(chunk(2, 26, 0xffffffffu, std::string(64, '\0'))),
       "4294967295 tables"},
      {"chunk of 2^32-1 ledgers' worth", head + Record(chunk(2, 0xffffffffu, 9, std::string(64, '\0'))),
       "corrupted"},
      {"record length 2^32-1 (-1)", head + Record(chunk(2, 26, 9, std::string(225, '\0')), 0xffffffffu),
       "corrupted"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    WriteFileBytes(checkpoint, c.bytes);
    std::vector<std::string> resume = args;
    resume.push_back("--resume");
    ExpectFastSmallRefusal(resume, c.expect, "digest --resume, " + c.name);
    EXPECT_FALSE(fs::exists(out));
  }
  fs::remove(checkpoint);
}

}  // namespace
}  // namespace ledgerdiff
