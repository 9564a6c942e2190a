// Manifests and checkpoints as untrusted input (issues 20, 44): crafted counts and lengths fail
// fast in little memory (measured on the child process), crafted comparison outcomes in parts are
// refused naming the field, an incomplete merge says how many ledgers are held, a wide manifest
// is shown in a small multiple of its size, crafted checkpoint records. Part of the manifest_test
// binary (tests/manifest_support.h).
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
#include "dump/summary_builder.h"
#include "dump/shard.h"
#include "tests/harness.h"
#include "tests/manifest_support.h"

namespace ledgerdiff {
namespace {

using namespace manifest_support;

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
