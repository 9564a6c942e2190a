// Splitting a large differing state bucket (issue 45): a bucket of more than --state-split-rows
// rows is split into sub-buckets by more digits of the same server-side md5, their digests
// compared, down to buckets small enough to read. The differences found are those of reading the
// whole buckets; only the rows shipped change. On the real kahuna dump's schema, its state filled
// from its own history plus many synthetic accounts, under both engines.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dump/state_digest.h"
#include "tests/follow_harness.h"
#include "tests/harness.h"
#include "tests/state_support.h"
#include "verify/state_compare.h"

namespace ledgerdiff {
namespace {

using nlohmann::json;
using testing::ExecSql;
using testing::QueryInt;
using namespace state_support;

// Accounts on top of the dump's own: enough that a top-level bucket holds many rows (kRows /
// kStateBuckets, about 80) and a sub-bucket rarely more than one or two.
constexpr int kSyntheticAccounts = 20000;
// The split threshold of these tests: far below a top-level bucket's rows.
constexpr uint64_t kSplitRows = 4;

void AddAccounts(const std::string& db) {
  ExecSql(db, fmt::format("INSERT INTO accounts SELECT 'GSYNTH' || lpad(n::text, 50, '0'), 1000000000 + n % 977, 0, "
                          "0, n::bigint << 32, 0, '', 0, '', 1, 0, 0, 0, 61 FROM generate_series(1, {}) n",
                          kSyntheticAccounts));
}

Sides ManyAccounts() {
  Sides s = FilledSides();
  AddAccounts(s.left);
  AddAccounts(s.right);
  return s;
}

json StateOf(const testing::CliResult& r) { return json::parse(r.out)["state"]; }

uint64_t Shipped(const json& st, const char* side) { return st["shipped"][side]["rows"].get<uint64_t>(); }

TEST(StateBuckets, OneChangedRowAmongManyIsFoundReadingOnlyItsSubBucket) {
  Sides s = ManyAccounts();
  ExecSql(s.right, "UPDATE accounts SET balance = balance + 1 WHERE account_id = 'GSYNTH' || lpad('12345', 50, '0')");
  const uint64_t accounts = static_cast<uint64_t>(QueryInt(s.left, "SELECT count(*) FROM accounts"));
  ASSERT_GT(accounts, static_cast<uint64_t>(kSyntheticAccounts));
  json first_differences;
  for (const auto& engine : kEngines) {
    auto whole = VerifyRange(s.left, s.right, engine);
    ASSERT_EQ(whole.exit_code, 1) << engine << "\n" << whole.err << whole.out;
    auto split = VerifyRange(s.left, s.right, engine, {"--state-split-rows", std::to_string(kSplitRows)});
    ASSERT_EQ(split.exit_code, 1) << engine << "\n" << split.err << split.out;
    const json ws = StateOf(whole), ss = StateOf(split);
    // The same finding either way: the one account, by key, changed.
    ASSERT_EQ(ss["differing_rows"], 1) << engine << ss.dump();
    EXPECT_EQ(ss["differences"], ws["differences"]) << engine;
    EXPECT_EQ(ss["differences"][0]["kind"], "changed");
    EXPECT_EQ(ss["differences"][0]["key"]["account_id"], "GSYNTH" + std::string(45, '0') + "12345");
    if (first_differences.is_null()) first_differences = ss["differences"];
    EXPECT_EQ(ss["differences"], first_differences) << "engines differ: " << engine;
    // Read whole (the default threshold is far above a bucket's rows): the differing bucket's rows,
    // no split.
    EXPECT_EQ(ws["split_depth"], 0) << ws.dump();
    EXPECT_GT(Shipped(ws, "left"), kSplitRows) << ws.dump();
    EXPECT_LE(Shipped(ws, "left"), accounts / 64) << ws.dump();
    // Split: at most the threshold's rows per side, and the digest statements of the sub-buckets.
    EXPECT_GE(ss["split_depth"], 1) << ss.dump();
    EXPECT_GE(Shipped(ss, "left"), 1u) << ss.dump();
    EXPECT_LE(Shipped(ss, "left"), kSplitRows) << ss.dump();
    EXPECT_LE(Shipped(ss, "right"), kSplitRows) << ss.dump();
    EXPECT_EQ(ss["rows_shipped"], Shipped(ss, "left") + Shipped(ss, "right"));
    EXPECT_LT(ss["bytes_shipped"].get<uint64_t>(), ws["bytes_shipped"].get<uint64_t>()) << engine;
    EXPECT_GT(ss["digest_queries"].get<uint32_t>(), ws["digest_queries"].get<uint32_t>()) << engine;
    EXPECT_EQ(ss["digest_queries"].get<uint32_t>(),
              ws["digest_queries"].get<uint32_t>() + 2 * ss["split_depth"].get<uint32_t>())
        << "one sub-bucket statement per side and depth";
    // The text report says what was read.
    auto text = testing::RunCli({"verify-range", "--left", s.left, "--right", s.right, "--range", kRange, "--engine",
                                 engine, "--state-split-rows", std::to_string(kSplitRows)});
    ASSERT_EQ(text.exit_code, 1) << text.err << text.out;
    EXPECT_NE(text.out.find("found reading "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("buckets split"), std::string::npos) << text.out;
  }
}

TEST(StateBuckets, ManyDifferencesAcrossSplitBucketsAreTheSameAsReadingThemWhole) {
  Sides s = ManyAccounts();
  // Changed, deleted and extra rows spread over the buckets (about one in 60 accounts changed):
  // some sub-buckets hold two differing rows, split again at threshold 1.
  ExecSql(s.right, "UPDATE accounts SET balance = balance + 3 WHERE abs(hashtext(account_id)) % 60 = 0;"
                   "DELETE FROM accounts WHERE abs(hashtext(account_id)) % 997 = 1;"
                   "INSERT INTO accounts SELECT 'GEXTRA' || lpad(n::text, 50, '0'), 5, 0, 0, 0, 0, '', 0, '', 1, 0, 0, "
                   "0, 61 FROM generate_series(1, 40) n");
  for (const auto& engine : kEngines) {
    auto whole = VerifyRange(s.left, s.right, engine, {"--max-rows", "100000"});
    auto split = VerifyRange(s.left, s.right, engine, {"--max-rows", "100000", "--state-split-rows", "1"});
    ASSERT_EQ(whole.exit_code, 1) << engine << "\n" << whole.err << whole.out;
    ASSERT_EQ(split.exit_code, 1) << engine << "\n" << split.err << split.out;
    const json ws = StateOf(whole), ss = StateOf(split);
    EXPECT_GT(ws["differing_rows"].get<uint64_t>(), 300u) << ws["differing_rows"];
    EXPECT_EQ(ss["differing_rows"], ws["differing_rows"]) << engine;
    EXPECT_EQ(ss["differences"], ws["differences"]) << engine;
    EXPECT_EQ(ss["notes"], ws["notes"]) << engine;
    EXPECT_GE(ss["split_depth"], 2) << ss.dump().substr(0, 400);
    EXPECT_LT(ss["rows_shipped"].get<uint64_t>(), ws["rows_shipped"].get<uint64_t>()) << engine;
  }
}

TEST(StateBuckets, RowsOfOneKeyAreReadWhenSplittingMakesNoProgress) {
  Sides s = FilledSides();
  // Offers keyed by (seller, selling asset) in a user profile: the right holds one key in 12 rows,
  // more than the threshold, which no split can divide.
  ExecSql(s.right, "INSERT INTO offers SELECT seller_id, 99990 + n, selling_asset, buying_asset, amount, pricen, priced, "
                   "price, flags, last_modified_ledger FROM (SELECT * FROM offers ORDER BY offer_id LIMIT 1) o, "
                   "generate_series(1, 11) n");
  testing::ScratchDir dir("ledgerdiff-state-buckets-");
  const std::string profile = dir.path + "/profile.json";
  testing::WriteFileBytes(profile, R"({"tables": [{"table": "history_ledgers", "ledger": {"column": "sequence"}}],
    "state": {"ledger": {"table": "key_value_store", "key_column": "key", "value_column": "value",
                         "key": "exp_ingest_last_ledger"},
              "tables": [{"table": "offers", "key": ["seller_id", "selling_asset"]}]}})");
  for (const auto& engine : kEngines) {
    auto whole = VerifyRange(s.left, s.right, engine, {"--profile", profile});
    auto split = VerifyRange(s.left, s.right, engine, {"--profile", profile, "--state-split-rows", "2"});
    ASSERT_EQ(split.exit_code, 1) << engine << "\n" << split.err << split.out;
    const json ws = StateOf(whole), ss = StateOf(split);
    EXPECT_EQ(ss["differing_rows"], 11) << ss.dump();
    EXPECT_EQ(ss["differences"], ws["differences"]) << engine;
    EXPECT_LT(ss["split_depth"].get<uint32_t>(), verify::kStateMaxSplitDepth) << ss.dump();
    EXPECT_GE(Shipped(ss, "right"), 12u) << ss.dump();
  }
}

TEST(StateBuckets, TheThresholdIsAtLeastOne) {
  auto r = testing::RunCli({"verify-range", "--left", "host=/nonexistent", "--right", "host=/nonexistent", "--range",
                            kRange, "--state-split-rows", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--state-split-rows"), std::string::npos) << r.err;
  // A negative count is no huge one (it used to wrap to 2^64 - 5 and be accepted).
  auto negative = testing::RunCli({"verify-range", "--left", "host=/nonexistent", "--right", "host=/nonexistent",
                                   "--range", kRange, "--state-split-rows", "-5"});
  EXPECT_EQ(negative.exit_code, 2) << negative.err;
  EXPECT_NE(negative.err.find("--state-split-rows: Value -5 not in range 1 to 4294967295"), std::string::npos)
      << negative.err;
}

}  // namespace
}  // namespace ledgerdiff
