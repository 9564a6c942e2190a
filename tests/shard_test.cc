// Sharded digests (dump/shard.h, `digest --shards`, `manifest merge|show`): the Indexed Job
// simulated on one machine. N shard processes run in parallel with JOB_COMPLETION_INDEX=0..N-1;
// their merge is byte-identical to a single digest of the whole range; a missing, duplicate or
// foreign part is refused with exit 2 and nothing written. verify-range --shards: the parts' merge
// gives the unsharded verify-range's outcome and manifest.
#include "dump/shard.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/pg.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;
using testing::TestConninfo;

using testing::ReadFileBytes;

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
  // Exact boundaries of an uneven range: the remainder goes to the first slices, one ledger each.
  const std::vector<LedgerRange> want = {{2, 3335}, {3336, 6668}, {6669, 10001}};
  for (uint32_t k = 0; k < 3; ++k) {
    auto s = dump::ShardSlice({2, 10001}, 3, k);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->from, want[k].from) << "shard " << k;
    EXPECT_EQ(s->to, want[k].to) << "shard " << k;
  }
  auto top = dump::ShardSlice({2147483000, 2147483647}, 3, 2);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->to, 2147483647u);
  EXPECT_EQ(dump::ShardSlice({1, 3}, 4, 0).status().exit_code(), ExitCode::kUsage);
  EXPECT_EQ(dump::ShardSlice({1, 30}, 4, 4).status().exit_code(), ExitCode::kUsage);
  EXPECT_EQ(dump::ShardSlice({1, 30}, 0, 0).status().exit_code(), ExitCode::kUsage);
}

class ShardCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    schema_ = testing::UniqueName("shard");
    auto r = RunCli({"ingest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--workers", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    dir_ = testing::FreshTempDir("ledgerdiff-shard-test");
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
    EXPECT_EQ(ReadFileBytes(Path(prefix + "full.ldm")), ReadFileBytes(Path("single.ldm"))) << n << " shards";
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

// CutManifest (verify-range --follow --recheck): a cut is byte for byte the digest of its ledgers,
// consecutive cuts concatenate back to the whole, and what cannot be cut is refused (exit 2).
TEST_F(ShardCli, ACutIsTheDigestOfItsLedgersAndCutsConcatenateBackToTheWhole) {
  const auto digest = [&](const std::string& range, const std::string& out) {
    auto r = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", range, "--manifest-detail",
                     "full", "--out", Path(out)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  digest("2:601", "cut-whole.ldm");
  digest("100:250", "cut-sub.ldm");
  auto cut = dump::CutManifest(Path("cut-whole.ldm"), {100, 250}, Path("cut-100.ldm"));
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  EXPECT_EQ(cut->summary.range.from, 100u);
  EXPECT_EQ(ReadFileBytes(Path("cut-100.ldm")), ReadFileBytes(Path("cut-sub.ldm")));
  ASSERT_TRUE(dump::CutManifest(Path("cut-whole.ldm"), {2, 99}, Path("cut-2.ldm")).ok());
  ASSERT_TRUE(dump::CutManifest(Path("cut-whole.ldm"), {251, 601}, Path("cut-251.ldm")).ok());
  auto joined = dump::ConcatenateManifests({Path("cut-2.ldm"), Path("cut-100.ldm"), Path("cut-251.ldm")},
                                           Path("cut-joined.ldm"));
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  EXPECT_EQ(ReadFileBytes(Path("cut-joined.ldm")), ReadFileBytes(Path("cut-whole.ldm")));
  // One ledger, the first and the last.
  ASSERT_TRUE(dump::CutManifest(Path("cut-whole.ldm"), {2, 2}, Path("cut-one.ldm")).ok());
  ASSERT_TRUE(dump::CutManifest(Path("cut-whole.ldm"), {601, 601}, Path("cut-last.ldm")).ok());
  // Refused, nothing written: outside the range, onto itself, a compact manifest.
  for (const LedgerRange& r : {LedgerRange{1, 5}, LedgerRange{600, 602}, LedgerRange{9, 8}}) {
    auto bad = dump::CutManifest(Path("cut-whole.ldm"), r, Path("cut-bad.ldm"));
    EXPECT_EQ(bad.status().exit_code(), ExitCode::kUsage) << r.str();
    EXPECT_NE(bad.status().message().find("not within"), std::string::npos) << bad.status().message();
  }
  EXPECT_EQ(dump::CutManifest(Path("cut-whole.ldm"), {2, 5}, Path("cut-whole.ldm")).status().exit_code(),
            ExitCode::kUsage);
  auto compact = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--out",
                         Path("cut-compact.ldm")});
  ASSERT_EQ(compact.exit_code, 0) << compact.err;
  auto refused = dump::CutManifest(Path("cut-compact.ldm"), {2, 5}, Path("cut-bad.ldm"));
  EXPECT_EQ(refused.status().exit_code(), ExitCode::kUsage);
  EXPECT_NE(refused.status().message().find("compact"), std::string::npos) << refused.status().message();
  EXPECT_FALSE(fs::exists(Path("cut-bad.ldm")));
}

// A Slurm array's SLURM_ARRAY_TASK_ID picks the shard; 600 ledgers in 7 shards leave a remainder
// of 5, which goes to the first five slices (86 ledgers each, then 85), read back from each part.
TEST_F(ShardCli, SlurmIndexGivesExactSlicesOfAnUnevenRange) {
  RunShards(7, "slurm-", "SLURM_ARRAY_TASK_ID");
  const std::vector<std::pair<int, int>> want = {{2, 87},    {88, 173},  {174, 259}, {260, 345},
                                                 {346, 431}, {432, 516}, {517, 601}};
  std::vector<std::string> merge = {"manifest", "merge", "--out", Path("slurm-full.ldm")};
  for (size_t k = 0; k < want.size(); ++k) {
    auto show = RunCli({"manifest", "show", Path("slurm-" + std::to_string(k) + ".ldm"), "--format", "json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    auto j = nlohmann::json::parse(show.out);
    EXPECT_EQ(j.at("shard").at("index"), k);
    EXPECT_EQ(j.at("range").at("from"), want[k].first) << "shard " << k;
    EXPECT_EQ(j.at("range").at("to"), want[k].second) << "shard " << k;
    merge.push_back(Path("slurm-" + std::to_string(k) + ".ldm"));
  }
  auto merged = RunCli(merge);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  auto single = RunCli(
      {"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--out", Path("slurm-single.ldm")});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(RootOf(Path("slurm-full.ldm")), RootOf(Path("slurm-single.ldm")));
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
  EXPECT_EQ(ReadFileBytes(Path("flag-0.ldm")), ReadFileBytes(Path("aws-0.ldm")));
}

TEST_F(ShardCli, MissingDuplicateOrForeignPartsAreRefused) {
  RunShards(3, "m-");
  const std::string out = Path("m-full.ldm");
  auto missing = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("missing shard 1 (ledgers 202:401)"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(out));
  auto dup =
      RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("m-1.ldm"), Path("m-1.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.err.find("duplicate shard 1 of 3"), std::string::npos) << dup.err;
  EXPECT_FALSE(fs::exists(out));
  // A part of another split (2 shards) does not fit.
  RunShards(2, "two-");
  auto foreign = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("two-1.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("different splits"), std::string::npos) << foreign.err;
  // A part of the same split of another range (3 shards of 2:598): its slice 201:399 is not 202:401.
  auto other = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:598", "--shards", "3",
                       "--shard", "1", "--out", Path("other-1.ldm")});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  auto ranged = RunCli({"manifest", "merge", "--out", out, Path("m-0.ldm"), Path("other-1.ldm"), Path("m-2.ldm")});
  EXPECT_EQ(ranged.exit_code, 2);
  EXPECT_NE(ranged.err.find("covers range 2:598"), std::string::npos) << ranged.err;
  EXPECT_NE(ranged.err.find("parts of different digests"), std::string::npos) << ranged.err;
  EXPECT_FALSE(fs::exists(out));
  // A complete manifest is not a part.
  auto whole =
      RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--out", Path("whole.ldm")});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto notpart = RunCli({"manifest", "merge", "--out", out, Path("whole.ldm")});
  EXPECT_EQ(notpart.exit_code, 2);
  EXPECT_NE(notpart.err.find("not a partial manifest"), std::string::npos) << notpart.err;
  // A corrupted part.
  std::string bytes = ReadFileBytes(Path("m-1.ldm"));
  bytes[bytes.size() / 2] ^= 0x5a;
  testing::WriteFileBytes(Path("m-bad.ldm"), bytes);
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
  EXPECT_EQ(with({"--shards", "3", "--shard", "0", "--out", Path("x.ldm")}).exit_code, 2);     // no --range
  EXPECT_EQ(with({"--range", "2:601", "--shards", "3", "--shard", "0"}).exit_code, 2);         // no --out
  EXPECT_EQ(with({"--range", "2:601", "--shard", "0", "--out", Path("x.ldm")}).exit_code, 2);  // no --shards
  EXPECT_EQ(with({"--range", "2:3", "--shards", "3", "--shard", "0", "--out", Path("x.ldm")}).exit_code, 2);
  EXPECT_FALSE(fs::exists(Path("x.ldm")));
  auto show_missing = RunCli({"manifest", "show", Path("nope.ldm")});
  EXPECT_EQ(show_missing.exit_code, 2);
  auto merge_nothing = RunCli({"manifest", "merge", "--out", Path("x.ldm")});
  EXPECT_EQ(merge_nothing.exit_code, 2);
}

// verify-range --shards N: each shard compares its slice and writes a part; the merged parts carry
// the outcome and the manifest of the unsharded verify-range --out, for an identical and for a
// divergent pair of schemas.
class VerifyRangeShards : public ShardCli {
 protected:
  // Shard processes run concurrently, each with only JOB_COMPLETION_INDEX; returns their exit codes.
  static std::vector<int> RunVerifyShards(uint32_t n, const std::string& right, const std::string& prefix) {
    std::vector<testing::CliResult> results(n);
    std::vector<std::thread> threads;
    for (uint32_t k = 0; k < n; ++k)
      threads.emplace_back([&, k] {
        results[k] = RunCli(
            VerifyArgs(right, {"--shards", std::to_string(n), "--out", Path(prefix + std::to_string(k) + ".ldm")}),
            {"JOB_COMPLETION_INDEX=" + std::to_string(k)});
      });
    for (auto& t : threads) t.join();
    std::vector<int> codes;
    for (uint32_t k = 0; k < n; ++k) {
      EXPECT_NE(results[k].exit_code, 2) << "shard " << k << ": " << results[k].err;
      codes.push_back(results[k].exit_code);
    }
    return codes;
  }
  static std::vector<std::string> VerifyArgs(const std::string& right, std::vector<std::string> extra) {
    std::vector<std::string> args = {"verify-range", "--range",        "2:601",        "--left",
                                     TestConninfo(), "--right",        TestConninfo(), "--left-schema",
                                     schema_,        "--right-schema", right};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static testing::CliResult Merge(const std::string& prefix, uint32_t n) {
    std::vector<std::string> args = {"manifest", "merge", "--manifest-detail",
                                     "full",     "--out", Path(prefix + "full.ldm")};
    for (uint32_t k = 0; k < n; ++k) args.push_back(Path(prefix + std::to_string(k) + ".ldm"));
    args.insert(args.end(), {"--format", "json"});
    return RunCli(args);
  }
};

TEST_F(VerifyRangeShards, MergedPartsGiveTheUnshardedVerdictAndManifest) {
  const std::string right = testing::UniqueName("shard_right");
  auto ingest = RunCli(
      {"ingest", "--db", TestConninfo(), "--schema", right, "--range", "2:601", "--workers", "2", "--job-size", "50"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;

  // Identical sides.
  auto single = RunCli(VerifyArgs(right, {"--out", Path("vr-single.ldm"), "--format", "json"}));
  ASSERT_EQ(single.exit_code, 0) << single.out << single.err;
  EXPECT_EQ(RunVerifyShards(3, right, "vr-"), (std::vector<int>{0, 0, 0}));
  auto merged = Merge("vr-", 3);
  ASSERT_EQ(merged.exit_code, 0) << merged.out << merged.err;
  auto mj = nlohmann::json::parse(merged.out);
  EXPECT_EQ(mj.at("comparison").at("identical"), true);
  EXPECT_EQ(mj.at("comparison").at("ledgers_compared"), 600);
  EXPECT_EQ(mj.at("comparison").at("rows_left"), nlohmann::json::parse(single.out).at("rows_compared").at("left"));
  EXPECT_EQ(ReadFileBytes(Path("vr-full.ldm")), ReadFileBytes(Path("vr-single.ldm")));
  // The entries are the left side's: the same roots as a plain digest of it.
  auto digest = RunCli({"digest", "--db", TestConninfo(), "--schema", schema_, "--range", "2:601", "--format", "json"});
  ASSERT_EQ(digest.exit_code, 0) << digest.err;
  EXPECT_EQ(mj.at("root"), nlohmann::json::parse(digest.out).at("root"));

  // One changed row at ledger 450 on the right: shard 2 (402:601) is divergent, the others not; the
  // merge says so with the unsharded run's first divergent ledger and exits 1, as does show.
  auto conn = testing::Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(
      conn->Run(fmt::format("UPDATE {}.history_transactions SET max_fee = max_fee + 1 WHERE ledger_sequence = 450",
                            pg::QuoteIdent(right)))
          .ok());
  auto single_bad = RunCli(VerifyArgs(right, {"--out", Path("vb-single.ldm"), "--format", "json"}));
  ASSERT_EQ(single_bad.exit_code, 1) << single_bad.out << single_bad.err;
  EXPECT_EQ(nlohmann::json::parse(single_bad.out).at("first_divergent_ledger"), 450);
  EXPECT_EQ(RunVerifyShards(3, right, "vb-"), (std::vector<int>{0, 0, 1}));
  auto merged_bad = Merge("vb-", 3);
  EXPECT_EQ(merged_bad.exit_code, 1) << merged_bad.out << merged_bad.err;
  auto bj = nlohmann::json::parse(merged_bad.out);
  EXPECT_EQ(bj.at("comparison").at("identical"), false);
  EXPECT_EQ(bj.at("comparison").at("first_divergent_ledger"), 450);
  EXPECT_EQ(bj.at("comparison").at("divergent_ledgers"), 1);
  EXPECT_EQ(ReadFileBytes(Path("vb-full.ldm")), ReadFileBytes(Path("vb-single.ldm")));
  // A cut of a comparison's manifest keeps its divergence where it lies, and is never more identical
  // than its source (dump::CutManifest).
  auto with = dump::CutManifest(Path("vb-single.ldm"), {402, 601}, Path("vb-cut-with.ldm"));
  ASSERT_TRUE(with.ok()) << with.status().message();
  ASSERT_TRUE(with->comparison);
  EXPECT_FALSE(with->comparison->identical);
  EXPECT_EQ(with->comparison->first_divergent_ledger, std::optional<Ledger>(450));
  auto without = dump::CutManifest(Path("vb-single.ldm"), {2, 401}, Path("vb-cut-without.ldm"));
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_FALSE(without->comparison->identical);
  EXPECT_FALSE(without->comparison->first_divergent_ledger);
  EXPECT_EQ(RunCli({"manifest", "show", Path("vb-cut-with.ldm")}).exit_code, 1);
  auto show = RunCli({"manifest", "show", Path("vb-full.ldm")});
  EXPECT_EQ(show.exit_code, 1);
  EXPECT_NE(show.out.find("first divergent ledger 450"), std::string::npos) << show.out;

  // Refused: a missing part, a digest part among verify-range parts, --shards without --out.
  auto missing = RunCli({"manifest", "merge", "--out", Path("vx.ldm"), Path("vb-0.ldm"), Path("vb-2.ldm")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("missing shard 1"), std::string::npos) << missing.err;
  RunShards(3, "vd-");
  auto mixed =
      RunCli({"manifest", "merge", "--out", Path("vx.ldm"), Path("vb-0.ldm"), Path("vd-1.ldm"), Path("vb-2.ldm")});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("parts of different commands"), std::string::npos) << mixed.err;
  EXPECT_FALSE(fs::exists(Path("vx.ldm")));
  auto no_out = RunCli(VerifyArgs(right, {"--shards", "3", "--shard", "0"}));
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("--shards needs --out"), std::string::npos) << no_out.err;
  auto no_index = RunCli(VerifyArgs(right, {"--shards", "3", "--out", Path("vx.ldm")}));
  EXPECT_EQ(no_index.exit_code, 2);
  EXPECT_NE(no_index.err.find("JOB_COMPLETION_INDEX"), std::string::npos) << no_index.err;
  EXPECT_FALSE(fs::exists(Path("vx.ldm")));
}

}  // namespace
}  // namespace ledgerdiff
