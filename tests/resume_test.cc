// Resumable digest and verify-range (dump/checkpoint.h, `--resume`): a run killed with SIGKILL
// half-way leaves OUT.partial; `--resume` takes the ledgers in it without digesting them again and
// writes the manifest an uninterrupted run writes, byte for byte, with the same verdict. A resume
// of another job, a corrupted checkpoint, a missing one, or a second run on the same checkpoint
// is a one-line exit 2. The kills land mid-run through the test-only hook
// LEDGERDIFF_TEST_CHUNK_DELAY_MS (a pause after each checkpointed chunk).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
using testing::WriteFileBytes;

struct ChunkRecord {
  size_t offset;    // of the record's length field
  uint32_t length;  // of the payload
  int side;
};
// Chunk records of a checkpoint, per the layout in dump/checkpoint.h. A record torn at the end
// is not listed.
std::vector<ChunkRecord> ChunkRecords(const std::string& bytes) {
  std::vector<ChunkRecord> out;
  size_t off = 12;
  while (off + 4 <= bytes.size()) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<unsigned char>(bytes[off + i])} << (8 * i);
    if (off + 4 + len + 16 > bytes.size()) break;
    if (len > 1 && bytes[off + 4] == 'C') out.push_back({off, len, bytes[off + 5]});
    off += 4 + len + 16;
  }
  return out;
}

// A ledgerdiff child process with stdout and stderr in files.
struct Child {
  pid_t pid = -1;
  std::string out_path, err_path;
  testing::CliResult Wait() {
    testing::CliResult r;
    r.exit_code = testing::WaitExitCode(pid);
    r.out = ReadFileBytes(out_path);
    r.err = ReadFileBytes(err_path);
    return r;
  }
};

// Starts ledgerdiff pausing `chunk_delay_ms` after each checkpointed chunk; its output goes to
// `dir`/`tag`.stdout and .stderr.
Child Start(const std::vector<std::string>& args, const std::string& chunk_delay_ms, const fs::path& dir,
            const std::string& tag) {
  Child c;
  c.out_path = (dir / (tag + ".stdout")).string();
  c.err_path = (dir / (tag + ".stderr")).string();
  c.pid = testing::SpawnCli(args, {.stdout_path = c.out_path,
                                   .stderr_path = c.err_path,
                                   .env = {"LEDGERDIFF_TEST_CHUNK_DELAY_MS=" + chunk_delay_ms}});
  return c;
}

// Chunk records of `side` in the checkpoint file.
size_t SideRecords(const std::string& checkpoint, int side) {
  const auto all = ChunkRecords(ReadFileBytes(checkpoint));
  return static_cast<size_t>(
      std::count_if(all.begin(), all.end(), [&](const ChunkRecord& r) { return r.side == side; }));
}

// Waits until `checkpoint` holds at least `records` chunk records of each of `sides` sides, then
// SIGKILLs the child.
void KillOnceCheckpointed(Child& c, const std::string& checkpoint, size_t records, int sides = 1) {
  auto enough = [&] {
    for (int s = 0; s < sides; ++s)
      if (SideRecords(checkpoint, s) < records) return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !enough())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(c.pid, SIGKILL);
  testing::CliResult r = c.Wait();
  ASSERT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  ASSERT_TRUE(enough()) << "the run never checkpointed: " << r.err;
}

// Waits until `path` grows past `size` (a resume appends its marker once it holds the lock).
void AwaitGrowth(const std::string& path, uintmax_t size) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::error_code ec;
  while (std::chrono::steady_clock::now() < deadline && fs::file_size(path, ec) <= size)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// The JSON of a run without what legitimately differs between two runs (paths, timings, resume).
nlohmann::json Comparable(nlohmann::json j) {
  for (const char* k : {"manifest", "resume", "seconds", "digest_seconds", "row_diff_seconds", "phases"}) j.erase(k);
  return j;
}

class Resume : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    left_ = testing::UniqueName("resume_l");
    right_ = testing::UniqueName("resume_r");
    for (const auto& s : {left_, right_}) {
      auto r = RunCli({"ingest", "--db", TestConninfo(), "--schema", s, "--range", "2:401", "--workers", "1"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // The right side differs at ledger 60: inside the part a killed verify-range checkpoints.
    auto conn = testing::Connect();
    ASSERT_TRUE(conn->Run(fmt::format("UPDATE {} SET fee_pool = fee_pool + 1 WHERE sequence = 60",
                                      pg::Qualified(right_, "history_ledgers")))
                    .ok());
    dir_ = testing::FreshTempDir("ledgerdiff-resume-test");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string Path(const std::string& name) { return (dir_ / name).string(); }

  static std::vector<std::string> DigestArgs(const std::string& out) {
    return {"digest",          "--db", TestConninfo(), "--schema", left_,      "--range", "2:401", "--jobs", "1",
            "--chunk-ledgers", "25",   "--out",        out,        "--format", "json"};
  }
  static std::vector<std::string> VerifyRangeArgs(const std::string& out) {
    return {"verify-range",
            "--left",
            TestConninfo(),
            "--right",
            TestConninfo(),
            "--left-schema",
            left_,
            "--right-schema",
            right_,
            "--range",
            "2:401",
            "--jobs",
            "1",
            "--out",
            out,
            "--format",
            "json"};
  }
  static std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  static inline std::string left_, right_;
  static inline fs::path dir_;
};

TEST_F(Resume, KilledDigestResumesToTheSameBytesWithoutRedoingWork) {
  auto whole = RunCli(DigestArgs(Path("whole.ldm")));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_FALSE(fs::exists(Path("whole.ldm.partial"))) << "a finished run leaves no checkpoint";
  EXPECT_EQ(nlohmann::json::parse(whole.out).at("resume").at("ledgers_resumed"), 0);

  const std::string out = Path("killed.ldm"), checkpoint = out + ".partial";
  Child c = Start(DigestArgs(out), "150", dir_, "digest-killed");
  KillOnceCheckpointed(c, checkpoint, 3);
  ASSERT_FALSE(fs::exists(out));
  const size_t records = ChunkRecords(ReadFileBytes(checkpoint)).size();
  ASSERT_LT(records, 16u) << "the kill came after the last chunk (400 ledgers / 25)";

  // Starting over by accident is refused: the checkpoint says to resume.
  auto again = RunCli(DigestArgs(out));
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("--resume"), std::string::npos) << again.err;
  EXPECT_EQ(Lines(again.err), 1u) << again.err;
  // Another job (range, schema) may not take it.
  auto other_range = RunCli(
      With({"digest", "--db", TestConninfo(), "--schema", left_, "--range", "2:400", "--out", out, "--resume"}, {}));
  EXPECT_EQ(other_range.exit_code, 2) << other_range.err;
  EXPECT_NE(other_range.err.find("range"), std::string::npos) << other_range.err;
  EXPECT_EQ(Lines(other_range.err), 1u) << other_range.err;
  auto other_schema =
      RunCli({"digest", "--db", TestConninfo(), "--schema", right_, "--range", "2:401", "--out", out, "--resume"});
  EXPECT_EQ(other_schema.exit_code, 2) << other_schema.err;
  EXPECT_NE(other_schema.err.find("source.schema"), std::string::npos) << other_schema.err;
  auto other_detail = RunCli(With(DigestArgs(out), {"--resume", "--manifest-detail", "full"}));
  EXPECT_EQ(other_detail.exit_code, 2) << other_detail.err;
  EXPECT_NE(other_detail.err.find("detail"), std::string::npos) << other_detail.err;
  // Issue 24: nor another engine (its digests are not comparable with the checkpoint's).
  auto other_engine = RunCli(With(DigestArgs(out), {"--resume", "--engine", "server-hash"}));
  EXPECT_EQ(other_engine.exit_code, 2) << other_engine.err;
  EXPECT_NE(other_engine.err.find("engine"), std::string::npos) << other_engine.err;
  EXPECT_EQ(Lines(other_engine.err), 1u) << other_engine.err;
  ASSERT_TRUE(fs::exists(checkpoint)) << "a refused resume keeps the checkpoint";

  // The resume, slowed so that a second one can try while it holds the checkpoint.
  const uintmax_t killed_size = fs::file_size(checkpoint);
  Child resumed = Start(With(DigestArgs(out), {"--resume"}), "100", dir_, "digest-resumed");
  AwaitGrowth(checkpoint, killed_size);
  auto concurrent = RunCli(With(DigestArgs(out), {"--resume"}));
  EXPECT_EQ(concurrent.exit_code, 2) << concurrent.err;
  EXPECT_NE(concurrent.err.find("in use"), std::string::npos) << concurrent.err;
  testing::CliResult r = resumed.Wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const uint64_t taken = j.at("resume").at("ledgers_resumed").get<uint64_t>();
  EXPECT_GE(taken, 25u * records);
  EXPECT_LT(taken, 400u);
  EXPECT_EQ(j.at("resume").at("ledgers_digested").get<uint64_t>(), 400u - taken);
  EXPECT_EQ(j.at("root"), nlohmann::json::parse(whole.out).at("root"));
  EXPECT_EQ(ReadFileBytes(out), ReadFileBytes(Path("whole.ldm")));
  EXPECT_FALSE(fs::exists(checkpoint));
  EXPECT_NE(r.err.find("resuming from checkpoint"), std::string::npos) << r.err;

  auto nothing = RunCli(With(DigestArgs(out), {"--resume"}));
  EXPECT_EQ(nothing.exit_code, 2) << nothing.err;
  EXPECT_NE(nothing.err.find("no checkpoint"), std::string::npos) << nothing.err;
  EXPECT_EQ(Lines(nothing.err), 1u) << nothing.err;
}

TEST_F(Resume, CorruptedCheckpointIsRefusedAndATornTailIsDropped) {
  auto whole = RunCli(DigestArgs(Path("whole2.ldm")));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::string out = Path("corrupt.ldm"), checkpoint = out + ".partial";
  Child c = Start(DigestArgs(out), "150", dir_, "digest-corrupt");
  KillOnceCheckpointed(c, checkpoint, 3);
  const std::string good = ReadFileBytes(checkpoint);
  const auto records = ChunkRecords(good);
  ASSERT_GE(records.size(), 3u);

  // A flipped byte inside a chunk that is not the last: a checksum mismatch, exit 2.
  std::string bad = good;
  bad[records[0].offset + 4 + records[0].length / 2] ^= 0x01;
  WriteFileBytes(checkpoint, bad);
  auto corrupt = RunCli(With(DigestArgs(out), {"--resume"}));
  EXPECT_EQ(corrupt.exit_code, 2) << corrupt.err;
  EXPECT_NE(corrupt.err.find("corrupted"), std::string::npos) << corrupt.err;
  EXPECT_NE(corrupt.err.find("checksum mismatch"), std::string::npos) << corrupt.err;
  EXPECT_EQ(Lines(corrupt.err), 1u) << corrupt.err;
  EXPECT_FALSE(fs::exists(out));
  // The payload's last byte (a digest byte: the record still parses) of a record that is not the
  // last: only the checksum can tell, and it must (a replay that skipped it would resume wrong digests).
  bad = good;
  bad[records[1].offset + 4 + records[1].length - 1] ^= 0x80;
  WriteFileBytes(checkpoint, bad);
  auto flipped = RunCli(With(DigestArgs(out), {"--resume"}));
  EXPECT_EQ(flipped.exit_code, 2) << flipped.err;
  EXPECT_NE(flipped.err.find("checksum mismatch"), std::string::npos) << flipped.err;
  EXPECT_FALSE(fs::exists(out));

  // A record missing between two others (a hole in the digested ledgers): refused, exit 2.
  bad = good.substr(0, records[1].offset) + good.substr(records[1].offset + 4 + records[1].length + 16);
  WriteFileBytes(checkpoint, bad);
  auto hole = RunCli(With(DigestArgs(out), {"--resume"}));
  EXPECT_EQ(hole.exit_code, 2) << hole.err;
  EXPECT_NE(hole.err.find("out of order"), std::string::npos) << hole.err;
  EXPECT_FALSE(fs::exists(out));

  // The last record whole in length but not in content (its pwrite cut off by a crash after the
  // file grew): torn, not corrupt; the records before it are resumed.
  ASSERT_EQ(records.back().offset + 4 + records.back().length + 16, good.size()) << "a chunk record is the last";
  bad = good;
  bad[records.back().offset + 4 + records.back().length - 1] ^= 0x80;
  WriteFileBytes(checkpoint, bad);
  auto garbled = RunCli(With(DigestArgs(out), {"--resume"}));
  ASSERT_EQ(garbled.exit_code, 0) << garbled.err;
  EXPECT_EQ(nlohmann::json::parse(garbled.out).at("resume").at("ledgers_resumed").get<uint64_t>(),
            25u * (records.size() - 1));
  EXPECT_EQ(ReadFileBytes(out), ReadFileBytes(Path("whole2.ldm")));
  ASSERT_FALSE(fs::exists(checkpoint));
  fs::remove(out);

  // The last record cut short (a crash while it was written): the valid prefix is resumed.
  WriteFileBytes(checkpoint, good.substr(0, good.size() - 7));
  auto torn = RunCli(With(DigestArgs(out), {"--resume"}));
  ASSERT_EQ(torn.exit_code, 0) << torn.err;
  EXPECT_EQ(nlohmann::json::parse(torn.out).at("resume").at("ledgers_resumed").get<uint64_t>(),
            25u * (records.size() - 1));
  EXPECT_EQ(ReadFileBytes(out), ReadFileBytes(Path("whole2.ldm")));
  EXPECT_FALSE(fs::exists(checkpoint));
}

TEST_F(Resume, ALostConnectionSaysHowToContinue) {
  auto whole = RunCli(DigestArgs(Path("whole3.ldm")));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::string out = Path("lost.ldm"), checkpoint = out + ".partial";
  Child c = Start(DigestArgs(out), "150", dir_, "digest-lost");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && SideRecords(checkpoint, 0) < 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(SideRecords(checkpoint, 0), 2u);
  auto conn = testing::Connect();
  ASSERT_TRUE(conn->Run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE "
                        "'ledgerdiff digest%'")
                  .ok());
  testing::CliResult lost = c.Wait();
  ASSERT_EQ(lost.exit_code, 3) << "a lost connection is a runtime failure: " << lost.err;
  EXPECT_NE(lost.err.find("rerun with --resume"), std::string::npos) << lost.err;
  EXPECT_EQ(Lines(testing::AfterTargetLine(lost.err)), 1u) << lost.err;
  auto r = RunCli(With(DigestArgs(out), {"--resume"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(nlohmann::json::parse(r.out).at("resume").at("ledgers_resumed").get<uint64_t>(), 50u);
  EXPECT_EQ(ReadFileBytes(out), ReadFileBytes(Path("whole3.ldm")));
}

TEST_F(Resume, KilledVerifyRangeResumesToTheSameVerdictAndBytes) {
  auto whole = RunCli(VerifyRangeArgs(Path("vr-whole.ldm")));
  ASSERT_EQ(whole.exit_code, 1) << whole.out << whole.err;  // the right side differs at ledger 60
  const auto wj = nlohmann::json::parse(whole.out);
  ASSERT_EQ(wj.at("first_divergent_ledger"), 60);
  EXPECT_FALSE(fs::exists(Path("vr-whole.ldm.partial")));

  const std::string out = Path("vr-killed.ldm"), checkpoint = out + ".partial";
  // --jobs 1 over 400 ledgers: 4 chunks of 100 per side, 8 records in all.
  Child c = Start(VerifyRangeArgs(out), "400", dir_, "vr-killed");
  KillOnceCheckpointed(c, checkpoint, 1, /*sides=*/2);
  ASSERT_FALSE(fs::exists(out));
  ASSERT_LT(ChunkRecords(ReadFileBytes(checkpoint)).size(), 8u);

  auto other = RunCli(With({"verify-range", "--left", TestConninfo(), "--right", TestConninfo(), "--left-schema", left_,
                            "--right-schema", left_, "--range", "2:401", "--jobs", "1", "--out", out},
                           {"--resume"}));
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("right."), std::string::npos) << other.err;
  EXPECT_EQ(Lines(other.err), 1u) << other.err;
  auto other_engine = RunCli(With(VerifyRangeArgs(out), {"--resume", "--engine", "server-hash"}));
  EXPECT_EQ(other_engine.exit_code, 2) << other_engine.err;
  EXPECT_NE(other_engine.err.find("engine"), std::string::npos) << other_engine.err;
  EXPECT_EQ(Lines(other_engine.err), 1u) << other_engine.err;

  auto r = RunCli(With(VerifyRangeArgs(out), {"--resume"}));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto rj = nlohmann::json::parse(r.out);
  EXPECT_GT(rj.at("resume").at("ledgers_resumed").get<uint64_t>(), 0u);
  EXPECT_EQ(Comparable(rj), Comparable(wj));
  EXPECT_EQ(ReadFileBytes(out), ReadFileBytes(Path("vr-whole.ldm")));
  EXPECT_FALSE(fs::exists(checkpoint));
}

}  // namespace
}  // namespace ledgerdiff
