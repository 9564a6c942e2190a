#pragma once
// What the files of the manifest_test binary (manifest_test.cc, manifest_crafted_test.cc) share:
// manifest bytes to split and craft, a child's exit, time and peak memory (measured by this
// binary exec'd in helper mode: kMeasureHelper in manifest_test.cc), and the Manifests fixture
// (two databases and schemas ingested once per binary). Included by test sources only.
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

namespace ledgerdiff::manifest_support {

namespace fs = std::filesystem;
using testing::ReadFileBytes;
using testing::RunCli;
using testing::TestConninfo;
using testing::WriteFileBytes;

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
inline ManifestParts SplitManifest(const std::string& bytes) {
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
inline std::ostream& operator<<(std::ostream& os, const ManifestParts& p) {
  return os << p.header_without_appended.dump() << " + " << p.body.size() << " bytes";
}
using testing::RunCli;
using testing::TestConninfo;
using testing::WriteFileBytes;

inline constexpr long kRssBoundKb = 64 * 1024;

// ---- bytes of a manifest ----

inline uint32_t U32At(const std::string& b, size_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(b[off + i])} << (8 * i);
  return v;
}
inline void PutU32At(std::string& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline std::string U32(uint32_t v) {
  std::string s(4, '\0');
  PutU32At(s, 0, v);
  return s;
}

inline std::string Sha256(const std::string& bytes) {
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

inline std::vector<std::string> SplitNul(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  for (size_t b; (b = s.find('\0', a)) != std::string::npos; a = b + 1) out.push_back(s.substr(a, b - a));
  return out;
}


struct Measured {
  int exit_code = -1;
  std::string out, err;
  long maxrss_kb = 0;  // kilobytes (Linux)
  double seconds = 0;
};

inline Measured RunMeasured(const std::vector<std::string>& args) {
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
inline long RssBoundKb() {
#ifdef LEDGERDIFF_SANITIZED
  static const long bound = kRssBoundKb + RunMeasured({"--version"}).maxrss_kb;
  return bound;
#else
  return kRssBoundKb;
#endif
}

// Exit 2 naming `expect`, under 64 MB on every run, within a second (the best of up to three runs:
// the time is the shared machine's, the memory is ours).
inline void ExpectFastSmallRefusal(const std::vector<std::string>& args, const std::string& expect, const std::string& what) {
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

}  // namespace ledgerdiff::manifest_support
