// Sharded digests (dump/shard.h, `digest --shards`, `manifest merge|show`): the Indexed Job
// simulated on one machine. N shard processes run in parallel with JOB_COMPLETION_INDEX=0..N-1;
// their merge is byte-identical to a single digest of the whole range; a missing, duplicate or
// foreign part is refused with exit 2 and nothing written.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "dump/shard.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;
using testing::TestConninfo;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ShardSlice, CoversTheRangeInOrderWithoutGapOrOverlap) {
  for (uint32_t n : {1u, 2u, 3u, 4u, 7u, 10u}) {
    LedgerRange range{2, 10001};
    uint64_t next = range.from;
    for (uint32_t k = 0; k < n; ++k) {
      auto s = dump::ShardSlice(range, n, k);
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_EQ(s->from, next);
      // Balanced: sizes differ by at most one ledger.
      EXPECT_LE(s->size(), range.size() / n + 1);
      EXPECT_GE(s->size(), range.size() / n);
      next = uint64_t{s->to} + 1;
    }
    EXPECT_EQ(next, uint64_t{range.to} + 1);
  }
  auto top = dump::ShardSlice({2147483000, 2147483647}, 3, 2);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->to, 2147483647u);
  EXPECT_EQ(dump::ShardSlice({1, 3}, 4, 0).status().exit_code(), ExitCode::kError);
  EXPECT_EQ(dump::ShardSlice({1, 30}, 4, 4).status().exit_code(), ExitCode::kError);
  EXPECT_EQ(dump::ShardSlice({1, 30}, 0, 0).status().exit_code(), ExitCode::kError);
}

class ShardCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    schema_ = testing::UniqueName("shard");
    auto r = RunCli({"ingest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--workers", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    dir_ = fs::temp_directory_path() / ("ledgerdiff_shard_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string Path(const std::string& name) { return (dir_ / name).string(); }

  // Runs the N shard processes concurrently, each with only its index in the environment.
  static void RunShards(uint32_t n, const std::string& prefix, const std::string& env_name = "JOB_COMPLETION_INDEX") {
    std::vector<testing::CliResult> results(n);
    std::vector<std::thread> threads;
    for (uint32_t k = 0; k < n; ++k) {
      threads.emplace_back([&, k] {
        results[k] = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--shards",
                             std::to_string(n), "--out", Path(prefix + std::to_string(k) + ".ldm")},
                            {env_name + "=" + std::to_string(k)});
      });
    }
    for (auto& t : threads) t.join();
    for (uint32_t k = 0; k < n; ++k) ASSERT_EQ(results[k].exit_code, 0) << "shard " << k << ": " << results[k].err;
  }

  static std::string RootOf(const std::string& manifest) {
    auto r = RunCli({"manifest", "show", manifest, "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("digest").at("root").get<std::string>();
  }

  static inline std::string schema_;
  static inline fs::path dir_;
};

TEST_F(ShardCli, MergedShardsAreByteIdenticalToOneDigest) {
  auto single = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--out",
                        Path("single.ldm"), "--format", "json"});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  const std::string root = nlohmann::json::parse(single.out).at("root").get<std::string>();
  for (uint32_t n : {1u, 3u}) {
    const std::string prefix = "p" + std::to_string(n) + "-";
    RunShards(n, prefix);
    std::vector<std::string> args = {"manifest", "merge", "--out", Path(prefix + "full.ldm")};
    for (uint32_t k = n; k-- > 0;) args.push_back(Path(prefix + std::to_string(k) + ".ldm"));  // any order
    args.insert(args.end(), {"--format", "json"});
    auto merged = RunCli(args);
    ASSERT_EQ(merged.exit_code, 0) << merged.err;
    EXPECT_EQ(nlohmann::json::parse(merged.out).at("root").get<std::string>(), root) << n << " shards";
    EXPECT_EQ(ReadAll(Path(prefix + "full.ldm")), ReadAll(Path("single.ldm"))) << n << " shards";
    // A part's own root is its slice's, not the whole range's.
    if (n > 1) {
      EXPECT_NE(RootOf(Path(prefix + "0.ldm")), root);
    }
  }
  // diff takes the merged manifest like any other.
  auto d = RunCli({"diff", "file:" + Path("p3-full.ldm"), "--db", TestConninfo(), schema_, "--range", "2:601"});
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  // The full-detail merge carries the same roots.
  auto full = RunCli({"manifest", "merge", "--manifest-detail", "full", "--out", Path("p3-fulldetail.ldm"),
                      Path("p3-0.ldm"), Path("p3-1.ldm"), Path("p3-2.ldm")});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(RootOf(Path("p3-fulldetail.ldm")), root);
}

TEST_F(ShardCli, AwsBatchIndexAndShowDescribePart) {
  RunShards(2, "aws-", "AWS_BATCH_JOB_ARRAY_INDEX");
  auto show = RunCli({"manifest", "show", Path("aws-1.ldm"), "--format", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j.at("shard").at("index"), 1);
  EXPECT_EQ(j.at("shard").at("count"), 2);
  EXPECT_EQ(j.at("complete"), false);
  EXPECT_EQ(j.at("range").at("from"), 302);  // 600 ledgers: 2..301 and 302..601
  EXPECT_EQ(j.at("range").at("to"), 601);
  auto text = RunCli({"manifest", "show", Path("aws-1.ldm")});
  EXPECT_NE(text.out.find("shard 1 of 2 of range 2:601"), std::string::npos) << text.out;
  // The explicit flag wins over the environment.
  auto flag = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--shards", "2",
                      "--shard", "0", "--out", Path("flag-0.ldm")},
                     {"JOB_COMPLETION_INDEX=1"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(ReadAll(Path("flag-0.ldm")), ReadAll(Path("aws-0.ldm")));
}

TEST_F(ShardCli, MissingDuplicateOrForeignPartsAreRefused) {
  RunShards(3, "m-");
  const std::string out = Path("m-full.ldm");
  auto missing = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("missing shard 1 (ledgers 202:401)"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(out));
  auto dup = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("m-1.ldm"), Path("m-1.ldm"),
                     Path("m-2.ldm")});
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.err.find("duplicate shard 1 of 3"), std::string::npos) << dup.err;
  EXPECT_FALSE(fs::exists(out));
  // A part of another split (2 shards) does not fit.
  RunShards(2, "two-");
  auto foreign = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("two-1.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("different splits"), std::string::npos) << foreign.err;
  // A complete manifest is not a part.
  auto whole = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--out",
                       Path("whole.ldm")});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto notpart = RunCli({"manifest", "merge", "--out", out, Path("whole.ldm")});
  EXPECT_EQ(notpart.exit_code, 2);
  EXPECT_NE(notpart.err.find("not a partial manifest"), std::string::npos) << notpart.err;
  // A corrupted part.
  std::string bytes = ReadAll(Path("m-1.ldm"));
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(Path("m-bad.ldm"), std::ios::binary) << bytes;
  auto bad = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("m-bad.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));
}

TEST_F(ShardCli, BadShardFlagsExitTwoBeforeTouchingTheDatabase) {
  const std::vector<std::string> base = {"digest", "--db", "host=/nonexistent", "--schema", schema_};
  auto with = [&](std::vector<std::string> extra, std::vector<std::string> env = {}) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args, env);
  };
  auto no_index = with({"--range", "2:601", "--shards", "3", "--out", Path("x.ldm")});
  EXPECT_EQ(no_index.exit_code, 2);
  EXPECT_NE(no_index.err.find("JOB_COMPLETION_INDEX"), std::string::npos) << no_index.err;
  auto out_of_range = with({"--range", "2:601", "--shards", "3", "--out", Path("x.ldm")}, {"JOB_COMPLETION_INDEX=3"});
  EXPECT_EQ(out_of_range.exit_code, 2);
  EXPECT_NE(out_of_range.err.find("out of range"), std::string::npos) << out_of_range.err;
  auto garbage = with({"--range", "2:601", "--shards", "3", "--out", Path("x.ldm")}, {"JOB_COMPLETION_INDEX=1x"});
  EXPECT_EQ(garbage.exit_code, 2);
  EXPECT_EQ(with({"--shards", "3", "--shard", "0", "--out", Path("x.ldm")}).exit_code, 2);       // no --range
  EXPECT_EQ(with({"--range", "2:601", "--shards", "3", "--shard", "0"}).exit_code, 2);            // no --out
  EXPECT_EQ(with({"--range", "2:601", "--shard", "0", "--out", Path("x.ldm")}).exit_code, 2);     // no --shards
  EXPECT_EQ(with({"--range", "2:3", "--shards", "3", "--shard", "0", "--out", Path("x.ldm")}).exit_code, 2);
  EXPECT_FALSE(fs::exists(Path("x.ldm")));
  auto show_missing = RunCli({"manifest", "show", Path("nope.ldm")});
  EXPECT_EQ(show_missing.exit_code, 2);
  auto merge_nothing = RunCli({"manifest", "merge", "--out", Path("x.ldm")});
  EXPECT_EQ(merge_nothing.exit_code, 2);
}

}  // namespace
}  // namespace ledgerdiff
