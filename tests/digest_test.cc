// Digest, manifest, diff and dump against the harness's real PostgreSQL: encoding cases, no false
// alarms (reordered parallel ingest, renumbered Horizon dumps), no misses (changed, deleted,
// inserted, duplicated rows), manifests (round trip, corruption), --jobs determinism, the CLI.
#include "dump/digest.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/history_tables.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/dump.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "fixtures/ingester.h"
#include "fixtures/schema.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"
#include "report/diff_text_json.h"

namespace ledgerdiff {
namespace {

using dump::Chunk;
using dump::Digest128;
using testing::CliResult;
using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

std::string Q(const std::string& s) { return pg::QuoteIdent(s); }

void ExecSql(pg::Connection& conn, const std::string& sql) {
  Status s = conn.Run(sql);
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << sql;
}

// Per (ledger, table) entries of a digest.
struct Entries {
  dump::DigestSummary summary;
  std::map<std::pair<Ledger, std::string>, std::pair<uint64_t, Digest128>> e;
  std::vector<Digest128> combined;
};

Result<Entries> DigestEntries(const std::string& conninfo, const std::string& schema, const std::string& profile,
                              std::optional<LedgerRange> range = std::nullopt, int jobs = 1, uint32_t chunk = 0,
                              bool resolve_on_client = true, dump::LookupCache* cache = nullptr) {
  auto spec = dump::LoadProfileSpec(profile);
  if (!spec.ok()) return spec.status();
  dump::DigestOptions o;
  o.resolve_on_client = resolve_on_client;
  o.lookup_cache = cache;
  o.range = range;
  o.jobs = jobs;
  o.chunk_ledgers = chunk;
  Entries out;
  std::vector<std::string> names;
  NullReporter rep;
  auto r = dump::DigestSchema(
      conninfo, schema, *spec, o,
      [&](const Chunk& c) {
        for (size_t i = 0; i < c.ledgers.size(); ++i) {
          out.combined.push_back(c.combined[i]);
          for (size_t t = 0; t < c.tables; ++t) {
            // table names come from the summary later; keyed by index for now
            out.e[{c.ledgers[i], std::to_string(t)}] = {c.counts[c.At(i, t)], c.digests[c.At(i, t)]};
          }
        }
        return Status::Ok();
      },
      rep);
  if (!r.ok()) return r.status();
  out.summary = *r;
  decltype(out.e) named;
  for (auto& [k, v] : out.e) named[{k.first, out.summary.tables[std::stoul(k.second)].table}] = v;
  out.e = std::move(named);
  return out;
}

// A schema with one table "t"(ledger_sequence int, <cols>) for encoding cases (profile auto).
std::string EncodingSchema(const std::string& cols, const std::string& values) {
  auto conn = Connect();
  std::string s = UniqueName("enc");
  EXPECT_TRUE(conn->Run(fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.t (ledger_sequence int, {1}); "
                                    "INSERT INTO {0}.t VALUES {2}",
                                    Q(s), cols, values))
                  .ok());
  return s;
}

Digest128 LedgerDigest(const std::string& schema, Ledger l = 1, const std::string& conninfo = TestConninfo()) {
  auto e = DigestEntries(conninfo, schema, "auto", LedgerRange{1, 3});
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok()) return {};
  return e->e.at({l, "t"}).second;
}

// ---------------------------------------------------------------------------------------------
// Encoding

TEST(Encoding, NullEmptyAndTextNullDiffer) {
  Digest128 a = LedgerDigest(EncodingSchema("v text", "(1, NULL)"));
  Digest128 b = LedgerDigest(EncodingSchema("v text", "(1, '')"));
  Digest128 c = LedgerDigest(EncodingSchema("v text", "(1, 'NULL')"));
  Digest128 d = LedgerDigest(EncodingSchema("v text", "(1, '\\N')"));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(b, c);
  EXPECT_NE(a, d);
  EXPECT_EQ(a, LedgerDigest(EncodingSchema("v text", "(1, NULL)")));
}

TEST(Encoding, FieldBoundariesAreUnambiguous) {
  EXPECT_NE(LedgerDigest(EncodingSchema("a text, b text", "(1, 'a3', 'b')")),
            LedgerDigest(EncodingSchema("a text, b text", "(1, 'a', '3b')")));
  // Two rows vs one row with the same bytes spread differently.
  EXPECT_NE(LedgerDigest(EncodingSchema("a text", "(1, 'ab'), (1, 'c')")),
            LedgerDigest(EncodingSchema("a text", "(1, 'a'), (1, 'bc')")));
}

TEST(Encoding, NegativeZeroDiffersFromZero) {
  EXPECT_NE(LedgerDigest(EncodingSchema("f float8", "(1, '-0')")),
            LedgerDigest(EncodingSchema("f float8", "(1, '0')")));
}

TEST(Encoding, NaNEqualsNaN) {
  EXPECT_EQ(LedgerDigest(EncodingSchema("f float8, n numeric", "(1, 'NaN', 'NaN')")),
            LedgerDigest(EncodingSchema("f float8, n numeric", "(1, 'NaN', 'NaN')")));
  EXPECT_NE(LedgerDigest(EncodingSchema("f float8", "(1, 'NaN')")),
            LedgerDigest(EncodingSchema("f float8", "(1, 'Infinity')")));
}

TEST(Encoding, NumericScaleIsSignificant) {
  EXPECT_NE(LedgerDigest(EncodingSchema("n numeric", "(1, 1.0)")),
            LedgerDigest(EncodingSchema("n numeric", "(1, 1.00)")));
  EXPECT_EQ(LedgerDigest(EncodingSchema("n numeric", "(1, 1.0)")),
            LedgerDigest(EncodingSchema("n numeric", "(1, 1.0)")));
  // Rows equal in value but not in scale sort deterministically: the order does not matter.
  EXPECT_EQ(LedgerDigest(EncodingSchema("n numeric", "(1, 1.0), (1, 1.00)")),
            LedgerDigest(EncodingSchema("n numeric", "(1, 1.00), (1, 1.0)")));
}

TEST(Encoding, TimestampsIndependentOfSessionTimeZoneAndDateStyle) {
  std::string s =
      EncodingSchema("ts timestamptz, t timestamp, d date, i interval",
                     "(1, '2020-01-02 03:04:05.123456+00', '2020-01-02 03:04:05', '2020-01-02', '1 day 2 hours')");
  Digest128 base = LedgerDigest(s);
  for (const char* opts :
       {"-c TimeZone=Asia/Tokyo -c DateStyle=German", "-c TimeZone=America/New_York -c DateStyle=SQL,MDY",
        "-c IntervalStyle=iso_8601 -c extra_float_digits=0"}) {
    EXPECT_EQ(base, LedgerDigest(s, 1, TestConninfo() + fmt::format(" options='{}'", opts))) << opts;
  }
}

TEST(Encoding, JsonbCanonicalJsonAsStored) {
  EXPECT_EQ(LedgerDigest(EncodingSchema("j jsonb", "(1, '{\"b\": 1, \"a\": 2}')")),
            LedgerDigest(EncodingSchema("j jsonb", "(1, '{\"a\":2,\"b\":1}')")));
  EXPECT_NE(LedgerDigest(EncodingSchema("j json", "(1, '{\"b\": 1, \"a\": 2}')")),
            LedgerDigest(EncodingSchema("j json", "(1, '{\"a\":2,\"b\":1}')")));
}

TEST(Encoding, PhysicalOrderDoesNotMatterAndEmptyLedgersAreNotListed) {
  std::string a = EncodingSchema("v text", "(1, 'x'), (1, 'y'), (3, 'z')");
  std::string b = EncodingSchema("v text", "(3, 'z'), (1, 'y'), (1, 'x')");
  auto ea = DigestEntries(TestConninfo(), a, "auto", LedgerRange{1, 3});
  auto eb = DigestEntries(TestConninfo(), b, "auto", LedgerRange{1, 3});
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_EQ(ea->summary.root, eb->summary.root);
  EXPECT_EQ(ea->e.count({2, "t"}), 0u);  // ledger 2 holds no row: not listed
  EXPECT_EQ(ea->e.at({1, "t"}).first, 2u);
}

// The per-(table, ledger) digest is the documented multiset digest, derived here by hand from
// XXH3-128: sum mod 2^128 of the row hashes, then XXH3-128 over (count u64 LE, sum u128 LE).
// Duplicates add (never cancel), and every chunking and job count gives the same entries.
// Rows of t(ledger_sequence, v int8) (columns in name order); texts shorter than 128 bytes.
Digest128 MultisetByHand(const std::string& ledger, const std::vector<std::string>& int_texts) {
  uint64_t lo = 0, hi = 0;
  const char int_tag = static_cast<char>(static_cast<int>(dump::ColumnClass::kInt) + 1);
  for (const auto& v : int_texts) {
    std::string row;
    for (const std::string& field : {ledger, v}) {
      row.push_back(int_tag);
      row.push_back(static_cast<char>(field.size()));
      row += field;
    }
    XXH128_hash_t h = XXH3_128bits(row.data(), row.size());
    uint64_t before = lo;
    lo += h.low64;
    hi += h.high64 + (lo < before ? 1 : 0);
  }
  unsigned char buf[24];
  uint64_t count = int_texts.size();
  for (int i = 0; i < 8; ++i) {
    buf[i] = static_cast<unsigned char>(count >> (8 * i));
    buf[8 + i] = static_cast<unsigned char>(lo >> (8 * i));
    buf[16 + i] = static_cast<unsigned char>(hi >> (8 * i));
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(buf, sizeof buf));
  Digest128 d;
  std::copy(std::begin(c.digest), std::end(c.digest), d.bytes.begin());
  return d;
}

TEST(Engine, LedgerDigestIsTheDocumentedMultisetDigest) {
  std::string s = EncodingSchema("v int8", "(1, 42), (1, -7), (1, 42), (2, 5), (3, 6), (3, 7)");
  auto e = DigestEntries(TestConninfo(), s, "auto", LedgerRange{1, 4});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->e.at({1, "t"}).first, 3u);
  EXPECT_EQ(e->e.at({1, "t"}).second, MultisetByHand("1", {"-7", "42", "42"}));
  EXPECT_NE(e->e.at({1, "t"}).second, MultisetByHand("1", {"-7"}));  // the duplicate pair does not cancel
  EXPECT_NE(e->e.at({1, "t"}).second, MultisetByHand("1", {"-7", "42"}));
  EXPECT_EQ(e->e.at({2, "t"}).second, MultisetByHand("2", {"5"}));
  EXPECT_EQ(e->e.count({4, "t"}), 0u);  // ledger 4 holds no row: not listed
  EXPECT_EQ(dump::EmptyDigest(), MultisetByHand("", {}));
  for (int jobs : {1, 2, 4})
    for (uint32_t chunk : {1u, 2u, 3u}) {
      auto o = DigestEntries(TestConninfo(), s, "auto", LedgerRange{1, 4}, jobs, chunk);
      ASSERT_TRUE(o.ok()) << o.status().message();
      EXPECT_EQ(o->e, e->e) << "jobs " << jobs << " chunk " << chunk;
      EXPECT_EQ(o->summary.root, e->summary.root);
    }
}

// The sum is one 128-bit number: a low half that wraps carries into the high half. On real rows
// too: 64 values whose hashes' low halves wrap many times over give the documented digest.
TEST(Engine, MultisetSumCarriesFromTheLowHalfIntoTheHighHalf) {
  dump::RowMultiset m;
  m.Add(XXH128_hash_t{~uint64_t{0}, 0});
  m.Add(XXH128_hash_t{1, 0});
  EXPECT_EQ(m.lo, 0u);
  EXPECT_EQ(m.hi, 1u);
  EXPECT_EQ(m.count, 2u);
  std::string values;
  std::vector<std::string> texts;
  for (int i = 1; i <= 64; ++i) {
    values += fmt::format("{}(1, {})", i > 1 ? ", " : "", i);
    texts.push_back(std::to_string(i));
  }
  auto e = DigestEntries(TestConninfo(), EncodingSchema("v int8", values), "auto", LedgerRange{1, 1});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->e.at({1, "t"}).second, MultisetByHand("1", texts));
}

TEST(Encoding, UnescapeCopyField) {
  EXPECT_EQ(dump::UnescapeCopyField("\\N"), std::nullopt);
  EXPECT_EQ(*dump::UnescapeCopyField("a\\tb\\\\c\\n"), "a\tb\\c\n");
}

// ---------------------------------------------------------------------------------------------
// Horizon dumps

using testing::DeleteLedger;
using testing::HasColumn;
using testing::LoadableDumps;
using testing::LoadDump;
using testing::Renumber;
using testing::ScenarioDir;

Result<diff::DiffReport> Diff(const diff::Source& a, const diff::Source& b, diff::DiffOptions o = {}) {
  NullReporter rep;
  return diff::DiffSources(a, b, dump::HorizonProfileSpec(), o, rep);
}
diff::Source Db(const std::string& conninfo, const std::string& schema = "public") {
  return diff::SchemaSource{conninfo, schema};
}

TEST(Horizon, EveryLoadableDumpRenumberedIsIdentical) {
  ASSERT_FALSE(ScenarioDir().empty());
  for (const auto& file : LoadableDumps()) {
    SCOPED_TRACE(file);
    std::string a = LoadDump(file), b = LoadDump(file);
    Renumber(b);
    auto r = Diff(Db(a), Db(b));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->identical) << report::RenderDiffText(*r);
    EXPECT_GT(r->ledgers_compared, 0u);
    EXPECT_EQ(r->left_root, r->right_root);
    EXPECT_EQ(r->rows_compared_left, r->rows_compared_right);
  }
}

// offer_ids-horizon.sql does not load on PostgreSQL 15 (a comma missing before is_payment in
// history_operations). Loaded the way psql runs a file by default (on past the error), it leaves
// a database without history_operations and its rows; a diff against the same dump loaded whole
// must say so, not call the rest identical.
TEST(Horizon, APartlyLoadedDumpDiffersFromTheWholeOneByTheTableItLacks) {
  const std::string broken = UniqueName("broken"), whole = UniqueName("whole");
  testing::ScratchDir scratch("ledgerdiff-offer-ids-");
  const std::string fixed_sql = scratch.path + "/offer_ids-fixed.sql";
  std::string sql = testing::ReadFileBytes(ScenarioDir() + "/offer_ids-horizon.sql");
  const std::string missing_comma = "DEFAULT ''::character varying NOT NULL\n    is_payment";
  const size_t at = sql.find(missing_comma);
  ASSERT_NE(at, std::string::npos) << "the scenario changed: the test plants nothing";
  sql.insert(at + std::string("DEFAULT ''::character varying NOT NULL").size(), ",");
  { std::ofstream(fixed_sql) << sql; }
  auto load = [](const std::string& db, const std::string& file, bool stop_on_error) {
    EXPECT_TRUE(testing::TestServer().CreateDatabase(db).ok());
    return std::system(fmt::format("psql -X -q {} -d \"{}\" -f {} >/dev/null 2>&1",
                                   stop_on_error ? "-v ON_ERROR_STOP=1" : "", testing::TestServer().conninfo(db), file)
                           .c_str());
  };
  ASSERT_NE(load(UniqueName("strict"), ScenarioDir() + "/offer_ids-horizon.sql", true), 0) << "the dump loads now";
  ASSERT_EQ(load(broken, ScenarioDir() + "/offer_ids-horizon.sql", false), 0);
  ASSERT_EQ(load(whole, fixed_sql, true), 0);
  const CliResult r = RunCli({"diff", testing::TestServer().conninfo(broken) + "::public",
                              testing::TestServer().conninfo(whole) + "::public", "--format", "json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tables_one_side"]["right"], nlohmann::json::array({"history_operations"})) << r.out;
  EXPECT_EQ(j["tables_one_side"]["left"], nlohmann::json::array()) << r.out;
}

TEST(Horizon, TradeOrientationFlipIsNotADifferenceButAValueChangeIs) {
  std::string a = LoadDump("kahuna-horizon.sql"), b = LoadDump("kahuna-horizon.sql");
  Renumber(b);
  auto c = Connect(b);
  ExecSql(*c,
          "UPDATE history_trades SET price_n = price_n + 1 WHERE history_operation_id = 81604382721 AND \"order\" = 1");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(19));
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].table, "history_trades");
  ASSERT_EQ(r->rows[0].changed.size(), 1u);
}

// The unmodified kahuna dump, loaded once and never changed.
std::string& KahunaLeft() {
  static std::string conninfo = LoadDump("kahuna-horizon.sql");
  return conninfo;
}

// Issue 14: a row shown in canonical orientation while stored flipped says so, in text and JSON.
// Kahuna's trades are stored with a credit base and the native counter (canonical: 'credit...' <
// 'native'); Renumber turns every trade around, so there each is stored flipped.
TEST(Horizon, RowDiffSaysWhenATradeIsStoredFlipped) {
  const char* trade = "history_operation_id = 81604382721 AND \"order\" = 1";  // ledger 19
  const char* base_type =
      "SELECT a.asset_type FROM history_trades t JOIN history_assets a ON a.id = t.base_asset_id "
      "WHERE t.history_operation_id = 81604382721 AND t.\"order\" = 1";
  const std::string note = "row shown in canonical orientation; stored flipped";
  std::string flipped = LoadDump("kahuna-horizon.sql");
  Renumber(flipped);
  auto fc = Connect(flipped);
  auto kc = Connect(KahunaLeft());
  ASSERT_EQ(std::string(fc->Exec(base_type)->Get(0, 0)), "native");
  ASSERT_EQ(std::string(kc->Exec(base_type)->Get(0, 0)), "credit_alphanum4");
  ExecSql(*fc, fmt::format("UPDATE history_trades SET price_n = price_n + 1 WHERE {}", trade));

  // A value change of the flipped trade: stored price_n is canonical price_d.
  auto r = Diff(Db(KahunaLeft()), Db(flipped));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 1u);
  ASSERT_EQ(r->rows[0].changed.size(), 1u) << report::RenderDiffText(*r);
  const diff::ChangedRow& c = r->rows[0].changed[0];
  EXPECT_FALSE(c.left_stored_flipped);
  EXPECT_TRUE(c.right_stored_flipped);
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0].column, "price_d");
  std::string text = report::RenderDiffText(*r);
  EXPECT_NE(text.find("(" + note + " on the right)"), std::string::npos) << text;
  auto j = report::DiffReportToJson(*r);
  EXPECT_EQ(j["rows"][0]["changed"][0]["left_stored_flipped"], false);
  EXPECT_EQ(j["rows"][0]["changed"][0]["right_stored_flipped"], true);
  ASSERT_EQ(j["rows"][0]["notes"].size(), 1u) << j["rows"][0].dump();
  EXPECT_NE(j["rows"][0]["notes"][0].get<std::string>().find(note + " on the right"), std::string::npos);

  // The same trade only on the flipped side (deleted from an unflipped copy): one side's row.
  std::string deleted = LoadDump("kahuna-horizon.sql");
  ExecSql(*Connect(deleted), fmt::format("DELETE FROM history_trades WHERE {}", trade));
  r = Diff(Db(flipped), Db(deleted));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 1u);
  ASSERT_EQ(r->rows[0].only_left.size(), 1u) << report::RenderDiffText(*r);
  EXPECT_TRUE(r->rows[0].OnlyLeftStoredFlipped(0));
  text = report::RenderDiffText(*r);
  EXPECT_NE(text.find("(" + note + ")"), std::string::npos) << text;
  j = report::DiffReportToJson(*r);
  EXPECT_EQ(j["rows"][0]["only_left_stored_flipped"], nlohmann::json::array({true}));
  EXPECT_EQ(j["rows"][0]["notes"], nlohmann::json::array({"only left row 1: " + note}));

  // The same differences on trades stored in canonical orientation: no note.
  std::string changed = LoadDump("kahuna-horizon.sql");
  ExecSql(*Connect(changed), fmt::format("UPDATE history_trades SET price_n = price_n + 1 WHERE {}", trade));
  for (const std::string& right : {changed, deleted}) {
    r = Diff(Db(KahunaLeft()), Db(right));
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->rows.size(), 1u);
    EXPECT_EQ(r->rows[0].changed_total + r->rows[0].only_left_total, 1u);
    if (!r->rows[0].changed.empty()) {
      EXPECT_FALSE(r->rows[0].changed[0].left_stored_flipped);
      EXPECT_FALSE(r->rows[0].changed[0].right_stored_flipped);
      EXPECT_EQ(r->rows[0].changed[0].changes[0].column, "price_n");
    }
    text = report::RenderDiffText(*r);
    EXPECT_EQ(text.find("stored flipped"), std::string::npos) << text;
    j = report::DiffReportToJson(*r);
    EXPECT_EQ(j["rows"][0]["notes"], nlohmann::json::array());
    EXPECT_EQ(j.dump().find("stored flipped"), std::string::npos);
  }
}

// No misses: each modification at a chosen ledger is reported at exactly that ledger and table.
struct Miss {
  const char* name;
  const char* sql;
  Ledger ledger;
  const char* table;
  int only_left, only_right, changed;
};

class NoMisses : public ::testing::TestWithParam<Miss> {};

TEST_P(NoMisses, ReportedAtExactlyThatLedgerAndTable) {
  const Miss& m = GetParam();
  std::string b = LoadDump("kahuna-horizon.sql");
  auto c = Connect(b);
  ExecSql(*c, m.sql);
  auto r = Diff(Db(KahunaLeft()), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->identical);
  ASSERT_TRUE(r->first_divergent_ledger.has_value());
  EXPECT_EQ(*r->first_divergent_ledger, m.ledger) << report::RenderDiffText(*r);
  ASSERT_EQ(r->divergent_tables.size(), 1u) << report::RenderDiffText(*r);
  EXPECT_EQ(r->divergent_tables[0].table, m.table);
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].only_left_total, static_cast<uint64_t>(m.only_left)) << report::RenderDiffText(*r);
  EXPECT_EQ(r->rows[0].only_right_total, static_cast<uint64_t>(m.only_right)) << report::RenderDiffText(*r);
  EXPECT_EQ(r->rows[0].changed_total, static_cast<uint64_t>(m.changed)) << report::RenderDiffText(*r);
  auto j = report::DiffReportToJson(*r);
  EXPECT_EQ(j["first_divergent_ledger"], m.ledger);
  EXPECT_EQ(j["divergent_tables"][0], m.table);
}

// Ledger 5 of kahuna: operation 21474840577 (5 << 32 | 1 << 12 | 1).
INSTANTIATE_TEST_SUITE_P(
    Kahuna, NoMisses,
    ::testing::Values(
        Miss{"change", "UPDATE history_operations SET type = type + 100 WHERE id = 21474840577", 5,
             "history_operations", 0, 0, 1},
        Miss{"delete", "DELETE FROM history_effects WHERE history_operation_id = 21474844673 AND \"order\" = 1", 5,
             "history_effects", 1, 0, 0},
        Miss{"insert",
             "INSERT INTO history_effects (history_account_id, history_operation_id, \"order\", type, details) "
             "SELECT history_account_id, history_operation_id, 99, type, details FROM history_effects "
             "WHERE history_operation_id = 21474844673 AND \"order\" = 1",
             5, "history_effects", 0, 1, 0},
        Miss{"duplicate_participant",
             "DROP INDEX hist_op_p_id; "
             "INSERT INTO history_operation_participants SELECT * FROM history_operation_participants "
             "WHERE history_operation_id = 21474840577 LIMIT 1",
             5, "history_operation_participants", 0, 1, 0},
        Miss{"duplicate_claimable_balance_join",
             "DROP INDEX index_history_operation_claimable_balances_on_ids; "
             "INSERT INTO history_operation_claimable_balances SELECT * FROM history_operation_claimable_balances "
             "WHERE history_operation_id = 12884905985",
             3, "history_operation_claimable_balances", 0, 1, 0},
        Miss{"ledger_deleted", "DELETE FROM history_ledgers WHERE sequence = 7", 7, "history_ledgers", 1, 0, 0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(NoMisses, TwoChangesReportTheLowerLedgerFirstAndAllListsBoth) {
  std::string b = LoadDump("kahuna-horizon.sql");
  auto c = Connect(b);
  ExecSql(*c, "UPDATE history_ledgers SET total_coins = total_coins + 1 WHERE sequence IN (40, 12, 13)");
  diff::DiffOptions o;
  o.all = true;
  auto r = Diff(Db(KahunaLeft()), Db(b), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(12));
  EXPECT_EQ(r->divergent_ledgers, 3u);
  std::string text = report::RenderDiffText(*r);
  EXPECT_NE(text.find("history_ledgers: 12-13, 40"), std::string::npos) << text;
  EXPECT_NE(text.find("total_coins"), std::string::npos) << text;
}

TEST(Diff, RowDiffIsAMultiset) {
  diff::TableRowDiff out;
  using R = diff::RowValues;
  std::vector<R> l = {R{"1", "a"}, R{"1", "a"}, R{"2", "b"}};
  std::vector<R> r = {R{"1", "a"}, R{"2", "c"}};
  diff::DiffRows(l, r, {0}, {"k", "v"}, 20, out);
  EXPECT_EQ(out.only_left_total, 1u);
  EXPECT_EQ(out.only_right_total, 0u);
  ASSERT_EQ(out.changed_total, 1u);
  EXPECT_EQ(out.changed[0].changes[0].column, "v");
  EXPECT_EQ(*out.changed[0].changes[0].left, "b");
}

TEST(Diff, SourceSyntax) {
  auto m = diff::ParseSource("file:/x/y", "");
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(std::holds_alternative<diff::ManifestSource>(*m));
  EXPECT_EQ(std::get<diff::ManifestSource>(*m).path, "/x/y");
  EXPECT_TRUE(std::holds_alternative<diff::ManifestSource>(*diff::ParseSource("a.ldm", "")));
  // REQUIRES: the text parses as a schema side.
  auto schema_of = [](const std::string& text, const std::optional<std::string>& db) {
    auto s = diff::ParseSource(text, db);
    EXPECT_TRUE(s.ok() && std::holds_alternative<diff::SchemaSource>(*s)) << text;
    return s.ok() && std::holds_alternative<diff::SchemaSource>(*s) ? std::get<diff::SchemaSource>(*s)
                                                                      : diff::SchemaSource{"?", "?"};
  };
  auto u = schema_of("postgresql://u@h/db#my schema", "");
  EXPECT_EQ(u.schema, "my schema");
  EXPECT_EQ(u.conninfo, "postgresql://u@h/db");
  EXPECT_EQ(schema_of("host=/tmp dbname=b::public", "").conninfo, "host=/tmp dbname=b");
  EXPECT_EQ(schema_of("s1", "host=x").schema, "s1");
  EXPECT_FALSE(diff::ParseSource("s1", std::nullopt).ok());
  // "" is a database too: libpq's defaults, the PG* environment of a reader.
  EXPECT_EQ(schema_of("s1", "").conninfo, "");
}

TEST(Diff, MissingSchemaIsAClearUsageError) {
  auto r = Diff(Db(TestConninfo(), "no_such_schema"), Db(TestConninfo(), "public"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), Status::Kind::kUsage);
  EXPECT_NE(r.status().message().find("no_such_schema"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Manifests

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (UniqueName("ldm") + "_" + name)).string();
}

TEST(Manifest, RoundTripAndSchemaVsManifestEqualsSchemaVsSchema) {
  for (auto detail : {dump::ManifestDetail::kCompact, dump::ManifestDetail::kFull}) {
    std::string path = TempPath("m.ldm");
    NullReporter rep;
    auto s = dump::DigestToManifest(KahunaLeft(), "public", dump::HorizonProfileSpec(), {}, path, detail, rep);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto back = dump::ReadManifestSummary(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->root, s->root);
    EXPECT_EQ(back->rows, s->rows);
    EXPECT_EQ(back->range, s->range);
    // identical vs the schema and vs itself
    auto r = Diff(diff::ManifestSource{path}, Db(KahunaLeft()));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->identical) << report::RenderDiffText(*r);
    EXPECT_EQ(r->left_root, r->right_root);
    // a change: same first ledger and tables as schema vs schema
    std::string b = LoadDump("kahuna-horizon.sql");
    ExecSql(*Connect(b), "UPDATE history_effects SET type = type + 1 WHERE history_operation_id = 21474844673");
    auto rs = Diff(Db(KahunaLeft()), Db(b));
    auto rm = Diff(diff::ManifestSource{path}, Db(b));
    ASSERT_TRUE(rs.ok() && rm.ok());
    EXPECT_EQ(rs->first_divergent_ledger, rm->first_divergent_ledger);
    ASSERT_EQ(rm->divergent_tables.size(), 1u);
    EXPECT_EQ(rm->divergent_tables[0].table, "history_effects");
    EXPECT_FALSE(rm->rows[0].left_available);
    EXPECT_GT(rm->rows[0].only_right_total, 0u);
    std::filesystem::remove(path);
  }
}

TEST(Manifest, CompactSizeAndSubRange) {
  std::string path = TempPath("c.ldm");
  NullReporter rep;
  auto s = dump::DigestToManifest(KahunaLeft(), "public", dump::HorizonProfileSpec(), {}, path,
                                  dump::ManifestDetail::kCompact, rep);
  ASSERT_TRUE(s.ok());
  diff::DiffOptions o;
  o.range = LedgerRange{10, 20};
  auto r = Diff(diff::ManifestSource{path}, Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->identical);
  EXPECT_EQ(r->ledgers_compared, 11u);
  o.range = LedgerRange{50, 70};
  auto bad = Diff(diff::ManifestSource{path}, Db(KahunaLeft()), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("outside"), std::string::npos);
}

TEST(Manifest, CorruptTruncatedAndForeignVersionAreRejected) {
  std::string path = TempPath("good.ldm");
  NullReporter rep;
  ASSERT_TRUE(dump::DigestToManifest(KahunaLeft(), "public", dump::HorizonProfileSpec(), {}, path,
                                     dump::ManifestDetail::kCompact, rep)
                  .ok());
  std::string good = testing::ReadFileBytes(path);
  std::string corrupt = good;
  corrupt[corrupt.size() - 200] ^= 0x40;
  std::string truncated = good.substr(0, good.size() / 2 + 37);
  std::string foreign = good;
  foreign[8] = 9;
  std::string notone = "hello world, not a manifest at all";
  for (auto& [name, bytes, expect] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"corrupt", corrupt, "corrupted"},
           {"truncated", truncated, "truncated"},
           {"foreign", foreign, "version 9"},
           {"notone", notone, "not a ledgerdiff manifest"}}) {
    std::string p = TempPath(name + ".ldm");
    testing::WriteFileBytes(p, bytes);
    auto r = dump::ReadManifestSummary(p);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().message().find(expect), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().exit_code(), ExitCode::kUsage);
    auto d = Diff(diff::ManifestSource{p}, Db(KahunaLeft()));
    EXPECT_FALSE(d.ok()) << name;
    auto cli = testing::RunCli({"diff", "--db", KahunaLeft(), "file:" + p, "public"});
    EXPECT_EQ(cli.exit_code, 2) << name << cli.err;
    const std::string error = testing::AfterTargetLine(cli.err);  // the sides, when the digest had begun
    EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << cli.err;
  }
}

// ---------------------------------------------------------------------------------------------
// Determinism and our own schema

// The workers share chunks by their tables (one unit per table and chunk): however many workers
// and chunks, the same entries, combined digests and root; progress only grows, to the total.
TEST(Digest, EntriesDoNotDependOnJobsOrChunks) {
  auto a = DigestEntries(KahunaLeft(), "public", "horizon", std::nullopt, 1, 0);
  ASSERT_TRUE(a.ok()) << a.status().message();
  for (int jobs : {2, 4, 9})
    for (uint32_t chunk : {0u, 1u, 3u, 40u}) {
      auto b = DigestEntries(KahunaLeft(), "public", "horizon", std::nullopt, jobs, chunk);
      ASSERT_TRUE(b.ok()) << b.status().message();
      EXPECT_EQ(a->summary.root, b->summary.root) << "jobs " << jobs << " chunk " << chunk;
      EXPECT_EQ(a->e, b->e) << "jobs " << jobs << " chunk " << chunk;
      EXPECT_EQ(a->combined, b->combined) << "jobs " << jobs << " chunk " << chunk;
    }

  struct Recorder : Reporter {
    std::vector<Progress> updates;
    void Note(std::string_view) override {}
    void Update(const Progress& p) override { updates.push_back(p); }
  } recorder;
  dump::DigestOptions o;
  o.jobs = 3;
  o.chunk_ledgers = 5;
  auto spec = dump::LoadProfileSpec("horizon");
  ASSERT_TRUE(spec.ok());
  auto r = dump::DigestSchema(KahunaLeft(), "public", *spec, o, nullptr, recorder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->root, a->summary.root);
  ASSERT_FALSE(recorder.updates.empty());
  for (size_t i = 1; i < recorder.updates.size(); ++i)
    EXPECT_GE(recorder.updates[i].done, recorder.updates[i - 1].done);
  EXPECT_EQ(recorder.updates.back().done, r->range.size());
  EXPECT_EQ(recorder.updates.back().total, r->range.size());
}

// Client-side resolution (dump/lookup_map.h) must give exactly the canonical joins' digests:
// every real dump, renumbered (every trade turned around), with an id whose lookup row is gone,
// a natural key with escapes and NULLs, and a duplicate lookup id (which falls back to the joins).
TEST(Digest, ClientResolutionGivesTheCanonicalJoinsDigests) {
  auto same = [](const std::string& conninfo, const std::string& schema) -> size_t {
    auto client = DigestEntries(conninfo, schema, "horizon", std::nullopt, 2, 0, true);
    auto joins = DigestEntries(conninfo, schema, "horizon", std::nullopt, 2, 0, false);
    EXPECT_TRUE(client.ok()) << client.status().message();
    EXPECT_TRUE(joins.ok()) << joins.status().message();
    if (!client.ok() || !joins.ok()) return 0;
    EXPECT_EQ(client->summary.root, joins->summary.root);
    EXPECT_EQ(client->e, joins->e);
    EXPECT_EQ(client->combined, joins->combined);
    EXPECT_GT(client->summary.rows, 0u);
    EXPECT_EQ(joins->summary.tables_resolved_on_client, 0u);
    return client->summary.tables_resolved_on_client;
  };
  for (const auto& file : LoadableDumps()) {
    SCOPED_TRACE(file);
    std::string a = LoadDump(file);
    EXPECT_GE(same(a, "public"), 4u);  // effects, trades, both participants at least
    Renumber(a);
    EXPECT_GE(same(a, "public"), 4u);
  }
  std::string a = LoadDump("kahuna-horizon.sql");
  Renumber(a);
  auto c = Connect(a);
  // An effect whose account is gone, a trade whose asset is gone, an asset code with a tab and a
  // backslash (COPY escapes), an issuer NULL (orientation stops at the NULL pair).
  ExecSql(*c, "DELETE FROM history_accounts WHERE id = (SELECT min(history_account_id) FROM history_effects)");
  ExecSql(*c, "DELETE FROM history_assets WHERE id = (SELECT max(base_asset_id) FROM history_trades)");
  ExecSql(*c, "UPDATE history_assets SET asset_code = E'A\\tB\\\\' WHERE id = (SELECT min(id) FROM history_assets)");
  ExecSql(*c, "ALTER TABLE history_assets ALTER COLUMN asset_issuer DROP NOT NULL");
  ExecSql(*c, "UPDATE history_assets SET asset_issuer = NULL WHERE id = (SELECT max(id) FROM history_assets)");
  EXPECT_GE(same(a, "public"), 4u);
  auto before = DigestEntries(a, "public", "horizon");
  ASSERT_TRUE(before.ok());
  // Sparse ids (a lookup row far past the others, no history row naming it): the map gives up
  // its dense index and searches; the digests do not move.
  ExecSql(*c, "INSERT INTO history_accounts (id, address) VALUES (1099511627776, 'GSPARSEACCOUNT')");
  EXPECT_GE(same(a, "public"), 4u);
  auto sparse = DigestEntries(a, "public", "horizon");
  ASSERT_TRUE(sparse.ok());
  EXPECT_EQ(sparse->summary.root, before->summary.root);
  // A duplicate lookup id: the joins yield a row twice; the client path must give the same.
  ExecSql(*c, "ALTER TABLE history_assets DROP CONSTRAINT IF EXISTS history_assets_pkey CASCADE");
  ExecSql(*c,
          "ALTER TABLE history_assets DROP CONSTRAINT IF EXISTS history_assets_asset_code_asset_type_asset_issuer_key");
  auto joined = [&] {
    auto r = c->Exec("SELECT count(*) FROM history_trades t JOIN history_assets a ON a.id = t.counter_asset_id");
    return r.ok() ? r->GetInt(0, 0) : -1;
  };
  int64_t trades_joined = joined();
  ASSERT_GT(trades_joined, 0);
  ExecSql(*c,
          "INSERT INTO history_assets SELECT * FROM history_assets WHERE id = (SELECT min(counter_asset_id) FROM "
          "history_trades)");
  EXPECT_GT(joined(), trades_joined) << "a trade's counter asset is now twice in history_assets";
  EXPECT_EQ(same(a, "public"), 0u);  // back to the joins
  auto after = DigestEntries(a, "public", "horizon");
  ASSERT_TRUE(after.ok());
  EXPECT_NE(before->summary.root, after->summary.root);

  // Our own schema: base_is_exact true/false/NULL, many trades both ways.
  auto conn = Connect();
  std::string own = UniqueName("client");
  ExecSql(*conn, "CREATE SCHEMA " + Q(own));
  ASSERT_TRUE(fixtures::CreateHistorySchema(*conn, own).ok());
  ASSERT_TRUE(fixtures::IngestJob(*conn, own, LedgerRange{1, 300}, {}).ok());
  EXPECT_GE(same(TestConninfo(), own), 4u);
}

// A lookup cache (verify-range --follow's cycles) reads only the rows above the highest id it
// keeps, and the table whole again when a row at or below it appeared or went (an account row
// committed late under a lower id): the digests are always those of a fresh read.
TEST(Digest, ALookupCacheReadsOnlyNewRowsAndReadsWholeWhenARowBelowChanges) {
  std::string a = LoadDump("kahuna-horizon.sql");
  Renumber(a);
  auto c = Connect(a);
  dump::LookupCache cache;
  auto fresh = [&] { return DigestEntries(a, "public", "horizon"); };
  auto cached = [&] { return DigestEntries(a, "public", "horizon", std::nullopt, 2, 0, true, &cache); };
  auto first = cached();
  ASSERT_TRUE(first.ok()) << first.status().message();
  const uint64_t lookups = cache.full_reads();
  ASSERT_GE(lookups, 2u);  // accounts and assets at least
  EXPECT_EQ(cache.extensions(), 0u);
  uint64_t read = cache.rows_read();
  // Nothing new: no row read, same digests.
  auto again = cached();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache.full_reads(), lookups);
  EXPECT_EQ(cache.extensions(), lookups);
  EXPECT_EQ(cache.rows_read(), read);
  EXPECT_EQ(again->e, first->e);
  // Two accounts above the highest id, one referenced by an effect: only they are read.
  auto top = c->Exec("SELECT max(id) FROM history_accounts");
  ASSERT_TRUE(top.ok());
  const int64_t max_id = top->GetInt(0, 0);
  ExecSql(*c, fmt::format("INSERT INTO history_accounts (id, address) VALUES ({}, 'GNEWACCOUNTONE'), ({}, "
                          "'GNEWACCOUNTTWO')",
                          max_id + 1, max_id + 2));
  ExecSql(*c, fmt::format("UPDATE history_effects SET history_account_id = {} WHERE history_operation_id = (SELECT "
                          "max(history_operation_id) FROM history_effects)",
                          max_id + 2));
  auto grown = cached();
  auto grown_fresh = fresh();
  ASSERT_TRUE(grown.ok() && grown_fresh.ok());
  EXPECT_EQ(cache.full_reads(), lookups);
  EXPECT_EQ(cache.rows_read(), read + 2);
  EXPECT_EQ(grown->e, grown_fresh->e);
  EXPECT_EQ(grown->summary.root, grown_fresh->summary.root);
  EXPECT_NE(grown->summary.root, first->summary.root);
  read = cache.rows_read();
  // An account an effect references goes, then comes back (a late commit under a lower id):
  // each time the cache reads the table whole, and the digests are a fresh read's.
  auto referenced = c->Exec("SELECT min(history_account_id) FROM history_effects");
  ASSERT_TRUE(referenced.ok());
  const int64_t gone = referenced->GetInt(0, 0);
  auto address = c->Exec(fmt::format("SELECT address FROM history_accounts WHERE id = {}", gone));
  ASSERT_TRUE(address.ok());
  const std::string gone_address(address->Get(0, 0));
  ExecSql(*c, fmt::format("DELETE FROM history_accounts WHERE id = {}", gone));
  auto without = cached();
  auto without_fresh = fresh();
  ASSERT_TRUE(without.ok() && without_fresh.ok());
  EXPECT_EQ(cache.full_reads(), lookups + 1);
  EXPECT_EQ(without->summary.root, without_fresh->summary.root);
  EXPECT_NE(without->summary.root, grown->summary.root);
  ExecSql(*c, fmt::format("INSERT INTO history_accounts (id, address) VALUES ({}, {})", gone, pg::QuoteLiteral(gone_address)));
  auto back = cached();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(cache.full_reads(), lookups + 2);
  EXPECT_EQ(back->summary.root, grown->summary.root);
  EXPECT_EQ(back->e, grown->e);
  // One referenced account goes and another comes under a lower id, the count unchanged: the
  // ids' sums tell (the kept row of the gone id would still resolve it).
  ExecSql(*c, fmt::format("DELETE FROM history_accounts WHERE id = {}", gone));
  ExecSql(*c, "INSERT INTO history_accounts (id, address) VALUES (-7, 'GLATEACCOUNT')");
  auto swapped = cached();
  auto swapped_fresh = fresh();
  ASSERT_TRUE(swapped.ok() && swapped_fresh.ok());
  EXPECT_EQ(cache.full_reads(), lookups + 3);
  EXPECT_EQ(swapped->summary.root, swapped_fresh->summary.root);
  EXPECT_EQ(swapped->summary.root, without->summary.root);
}

TEST(Digest, SerialAndReorderedParallelIngestAreIdentical) {
  auto conn = Connect();
  std::string serial = UniqueName("serial"), parallel = UniqueName("parallel");
  for (const auto& s : {serial, parallel}) {
    ExecSql(*conn, "CREATE SCHEMA " + Q(s));
    ASSERT_TRUE(fixtures::CreateHistorySchema(*conn, s).ok());
  }
  const LedgerRange range{1, 400};
  fixtures::IngestJobOptions opts;
  auto r = fixtures::IngestJob(*conn, serial, range, opts);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto jobs = SplitJobs(range, 37);
  std::mt19937 rng(7);
  std::shuffle(jobs.begin(), jobs.end(), rng);
  for (const auto& j : jobs) {
    auto rj = fixtures::IngestJob(*conn, parallel, j, opts);
    ASSERT_TRUE(rj.ok()) << rj.status().message();
  }
  diff::DiffOptions o;
  o.jobs = 3;
  auto d = Diff(Db(TestConninfo(), serial), Db(TestConninfo(), parallel), o);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->identical) << report::RenderDiffText(*d);
  EXPECT_EQ(d->ledgers_compared, 400u);
  EXPECT_GT(d->rows_compared_left, 1000u);

  // A bug injected into one job is found at its ledger.
  std::string buggy = UniqueName("buggy");
  ExecSql(*conn, "CREATE SCHEMA " + Q(buggy));
  ASSERT_TRUE(fixtures::CreateHistorySchema(*conn, buggy).ok());
  auto pick =
      conn->Exec(fmt::format("SELECT (min(history_operation_id) >> 32)::int FROM {} "
                             "WHERE history_operation_id >= (200::bigint << 32)",
                             pg::Qualified(serial, "history_operation_participants")));
  ASSERT_TRUE(pick.ok() && !pick->IsNull(0, 0));
  const Ledger target = static_cast<Ledger>(pick->GetInt(0, 0));
  fixtures::IngestJobOptions bug = opts;
  bug.bug = {fixtures::BugKind::kDuplicateRow, target};
  auto rb = fixtures::IngestJob(*conn, buggy, range, bug);
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  auto db = Diff(Db(TestConninfo(), serial), Db(TestConninfo(), buggy));
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->first_divergent_ledger, std::optional<Ledger>(target)) << report::RenderDiffText(*db);
  ASSERT_EQ(db->rows.size(), 1u);
  EXPECT_EQ(db->rows[0].only_right_total, 1u) << report::RenderDiffText(*db);

  // Manifest size for our 9-table schema.
  std::string path = TempPath("own.ldm");
  NullReporter rep;
  auto s = dump::DigestToManifest(TestConninfo(), serial, dump::HorizonProfileSpec(), {}, path,
                                  dump::ManifestDetail::kCompact, rep);
  ASSERT_TRUE(s.ok());
  double bpl = static_cast<double>(s->manifest_bytes) / static_cast<double>(s->range.size());
  std::printf("compact manifest: %.1f bytes/ledger (%zu tables)\n", bpl, s->tables.size());
  EXPECT_LE(bpl, 64.0 + 2000.0 / 400);  // header amortised over 400 ledgers

  // Canonical dumps of the two schemas are byte-identical.
  std::string d1 = TempPath("d1"), d2 = TempPath("d2");
  dump::DumpOptions dopt;
  dopt.out = d1;
  ASSERT_TRUE(dump::DumpSchema(TestConninfo(), serial, dump::HorizonProfileSpec(), dopt, rep).ok());
  dopt.out = d2;
  ASSERT_TRUE(dump::DumpSchema(TestConninfo(), parallel, dump::HorizonProfileSpec(), dopt, rep).ok());
  for (const auto& e : std::filesystem::directory_iterator(d1)) {
    std::string other = (std::filesystem::path(d2) / e.path().filename()).string();
    EXPECT_EQ(testing::ReadFileBytes(e.path().string()), testing::ReadFileBytes(other)) << e.path();
  }
}

TEST(Digest, UserProfileFromJson) {
  auto conn = Connect();
  std::string s = UniqueName("user");
  ExecSql(
      *conn,
      fmt::format(
          "CREATE SCHEMA {0}; CREATE TABLE {0}.accts (id int, addr text); "
          "CREATE TABLE {0}.moves (seq int, acct int, note text, created_at timestamptz DEFAULT now()); "
          "INSERT INTO {0}.accts VALUES (1, 'GA'), (2, 'GB'); INSERT INTO {0}.moves VALUES (5, 1, 'x'), (6, 2, 'y')",
          Q(s)));
  std::string path = TempPath("profile.json");
  testing::WriteFileBytes(
      path, R"({"name": "mine", "tables": [{"table": "moves", "ledger": {"column": "seq"}, "key": ["acct"],
                     "resolve": [{"column": "acct", "lookup": "accts", "id": "id", "natural": ["addr"]}]}]})");
  auto spec = dump::LoadProfileSpec(path);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto conn2 = Connect();
  auto p = dump::ResolveProfile(*conn2, s, *spec);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->tables.size(), 1u);
  // Canonical columns in name order (physical order is not data): acct.addr, note, seq.
  ASSERT_EQ(p->tables[0].columns.size(), 3u);
  EXPECT_EQ(p->tables[0].columns[0].name, "acct.addr");
  EXPECT_EQ(p->tables[0].columns[2].name, "seq");
  EXPECT_EQ(p->ExcludedColumns(), std::vector<std::string>{"moves.created_at"});
  EXPECT_EQ(p->lookup_tables, std::vector<std::string>{"accts"});
  testing::WriteFileBytes(path, "{nope");
  EXPECT_EQ(dump::LoadProfileSpec(path).status().kind(), Status::Kind::kUsage);
}

// ---------------------------------------------------------------------------------------------
// CLI

TEST(Cli, DigestDiffAndExitCodes) {
  std::string b = LoadDump("kahuna-horizon.sql");
  std::string path = TempPath("cli.ldm");
  auto d = testing::RunCli({"digest", "--db", KahunaLeft(), "--schema", "public", "--out", path, "--jobs", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("root "), std::string::npos);
  EXPECT_NE(d.out.find("excluded columns: history_ledgers.created_at"), std::string::npos) << d.out;
  auto same = testing::RunCli({"diff", "--db", KahunaLeft(), "public", b + "::public"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  // The sides first (issue 22), then the verdict.
  EXPECT_EQ(same.out.rfind("target: left: database ", 0), 0u) << same.out;
  EXPECT_EQ(same.out.find("\nidentical: 61 ledgers"), same.out.find('\n')) << same.out;
  auto vs_manifest = testing::RunCli({"diff", path, b + "::public", "--format", "json"});
  EXPECT_EQ(vs_manifest.exit_code, 0) << vs_manifest.err;
  auto j = nlohmann::json::parse(vs_manifest.out);
  EXPECT_EQ(j["identical"], true);
  EXPECT_TRUE(j["first_divergent_ledger"].is_null());
  ExecSql(*Connect(b), "UPDATE history_transactions SET memo = 'x' WHERE ledger_sequence = 33");
  auto differ = testing::RunCli({"diff", "--db", KahunaLeft(), "public", b + "::public", "--format", "json", "--all"});
  EXPECT_EQ(differ.exit_code, 1) << differ.err;
  auto jd = nlohmann::json::parse(differ.out);
  EXPECT_EQ(jd["first_divergent_ledger"], 33);
  EXPECT_EQ(jd["divergent_tables"][0], "history_transactions");
  EXPECT_TRUE(jd.contains("all_divergent"));
  auto missing = testing::RunCli({"digest", "--db", KahunaLeft(), "--schema", "nope"});
  EXPECT_EQ(missing.exit_code, 2);
  auto dumped = testing::RunCli({"dump", "--db", KahunaLeft(), "--schema", "public", "--range", "1:3"});
  EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  EXPECT_NE(dumped.out.find("\"table\":\"history_ledgers\""), std::string::npos);
}


// Issue 22: coverage is part of the verdict. Which ledgers each side holds is read off
// history_ledgers; a ledger of the range that a side lacks is "incomplete" (exit 1), listed, and
// accepted (still listed) with allow_gaps; rows at ledgers without a history_ledgers row are named.
LedgerRange HeldLedgers(const std::string& conninfo) {
  auto c = Connect(conninfo);
  auto r = c->Exec("SELECT min(sequence), max(sequence) FROM history_ledgers");
  EXPECT_TRUE(r.ok());
  return {static_cast<Ledger>(std::stoul(std::string(r->Get(0, 0)))),
          static_cast<Ledger>(std::stoul(std::string(r->Get(0, 1))))};
}

TEST(Coverage, ARangePastTheDataIsIncompleteAndAllowGapsAcceptsIt) {
  const LedgerRange held = HeldLedgers(KahunaLeft());
  diff::DiffOptions o;
  o.range = LedgerRange{held.from, held.to + 1000};
  auto r = Diff(Db(KahunaLeft()), Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIncomplete);
  EXPECT_FALSE(r->identical);
  EXPECT_FALSE(r->first_divergent_ledger);
  ASSERT_TRUE(r->coverage.checked);
  for (const diff::SideCoverage* side : {&r->coverage.left, &r->coverage.right}) {
    EXPECT_EQ(side->first, std::optional<Ledger>(held.from));
    EXPECT_EQ(side->last, std::optional<Ledger>(held.to));
    EXPECT_EQ(side->held, held.size());
    EXPECT_EQ(side->missing_ledgers, 1000u);
    ASSERT_EQ(side->missing.size(), 1u);
    EXPECT_EQ(side->missing[0], (LedgerRange{held.to + 1, held.to + 1000}));
  }
  const std::string text = report::RenderDiffText(*r);
  EXPECT_NE(text.find(fmt::format("incomplete: 1,000 ledgers missing on both sides: {}-{}", held.to + 1, held.to + 1000)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nincomplete: ledgers of "), std::string::npos) << text;
  const nlohmann::json j = report::DiffReportToJson(*r);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(j["identical"], false);
  EXPECT_EQ(j["coverage"]["complete"], false);
  EXPECT_EQ(j["coverage"]["left"]["missing"], nlohmann::json::parse(fmt::format("[[{},{}]]", held.to + 1, held.to + 1000)));

  o.allow_gaps = true;
  r = Diff(Db(KahunaLeft()), Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIdentical);
  EXPECT_TRUE(r->identical);
  EXPECT_EQ(r->coverage.left.missing_ledgers, 1000u);  // still listed
  EXPECT_NE(report::RenderDiffText(*r).find("gaps (accepted by --allow-gaps)"), std::string::npos);

  // The range inside the data: complete.
  o.allow_gaps = false;
  o.range = held;
  r = Diff(Db(KahunaLeft()), Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIdentical);
  EXPECT_TRUE(r->coverage.complete());
}

TEST(Coverage, AGapInsideBothSidesIsIncompleteWithOrWithoutARange) {
  std::string a = LoadDump("kahuna-horizon.sql"), b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(a);
  const Ledger gap = held.from + (held.to - held.from) / 2;
  DeleteLedger(a, gap);
  DeleteLedger(b, gap);
  for (bool ranged : {false, true}) {
    SCOPED_TRACE(ranged);
    diff::DiffOptions o;
    if (ranged) o.range = held;
    auto r = Diff(Db(a), Db(b), o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->verdict, diff::Verdict::kIncomplete) << report::RenderDiffText(*r);
    EXPECT_EQ(r->coverage.left.missing, std::vector<LedgerRange>{(LedgerRange{gap, gap})});
    EXPECT_EQ(r->coverage.right.missing, std::vector<LedgerRange>{(LedgerRange{gap, gap})});
    EXPECT_EQ(r->coverage.left.held, held.size() - 1);
    EXPECT_TRUE(r->coverage.left.orphans.empty());
  }
}

// A gap on one side only, under an explicit --range (a job the new database never ingested, and
// its data ending two ledgers early), with either engine: the coverage names that side and those
// ledgers, and says nothing of the other side, which holds them all. verify-range compares two
// databases that ingest on their own, so a ledger one side has not written at all is not yet
// there, not wrong: the verdict is incomplete (exit 1), nothing is divergent, and the ledgers both
// hold are compared (diff/README.md). A change of that rule is a change of this test.
TEST(Coverage, AGapOnOneSideUnderARangeIsIncompleteAndNamesThatSideAndItsLedgers) {
  std::string b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(b);
  const Ledger gap = held.from + (held.to - held.from) / 2;
  ASSERT_LT(gap + 2, held.to - 1);
  for (Ledger l : {gap, held.to - 1, held.to}) DeleteLedger(b, l);
  const std::string missing = fmt::format("{}, {}-{}", gap, held.to - 1, held.to);
  testing::ScratchDir dir("ledgerdiff_coverage");
  for (const std::string engine : {"text", "server-hash"}) {
    SCOPED_TRACE(engine);
    const std::vector<std::string> args = {"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", b,
                                           "--engine", engine};
    std::vector<std::string> json_args = args;
    json_args.insert(json_args.end(), {"--format", "json"});
    auto r = RunCli(json_args);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
    const auto& cov = j["coverage"];
    EXPECT_EQ(cov["checked"], true);
    EXPECT_EQ(cov["explicit_range"], true);
    EXPECT_EQ(cov["complete"], false) << "one side lacks ledgers: the coverage is not complete";
    EXPECT_EQ(cov["left"]["held"], held.size());
    EXPECT_EQ(cov["left"]["missing"], nlohmann::json::array());
    EXPECT_EQ(cov["left"]["missing_ledgers"], 0);
    EXPECT_EQ(cov["right"]["held"], held.size() - 3);
    EXPECT_EQ(cov["right"]["first"], held.from);
    EXPECT_EQ(cov["right"]["last"], held.to - 2);
    EXPECT_EQ(cov["right"]["missing"],
              nlohmann::json::parse(fmt::format("[[{0},{0}],[{1},{2}]]", gap, held.to - 1, held.to)));
    EXPECT_EQ(cov["right"]["missing_ledgers"], 3);
    EXPECT_EQ(cov["right"]["missing_ranges"], 2);
    EXPECT_EQ(j["verdict"], "incomplete");
    EXPECT_TRUE(j["first_divergent_ledger"].is_null()) << j["first_divergent_ledger"];

    std::vector<std::string> text_args = args;
    text_args.insert(text_args.end(), {"--junit", dir.path + "/" + engine + ".xml"});
    auto t = RunCli(text_args);
    EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
    EXPECT_NE(t.out.find(fmt::format("coverage (history_ledgers): left holds {} ledgers ({} to {}); right holds {} "
                                     "ledgers ({} to {})",
                                     held.size(), held.from, held.to, held.size() - 3, held.from, held.to - 2)),
              std::string::npos)
        << t.out;
    EXPECT_NE(t.out.find("\nincomplete: 3 ledgers missing on the right: " + missing + "\n"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("missing on the left"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("missing on both sides"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("divergent"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("incomplete: ledgers of " + held.str() + " are missing (left 0, right 3, of "), std::string::npos)
        << t.out;
    const std::string junit = testing::ReadFileBytes(dir.path + "/" + engine + ".xml");
    EXPECT_NE(junit.find("incomplete: right: 3 ledgers missing: " + missing), std::string::npos) << junit;
  }
  // A difference at a ledger both sides hold still takes precedence over the gap: divergent there.
  const Ledger changed = gap - 2;
  ExecSql(*Connect(b), fmt::format("UPDATE history_ledgers SET total_coins = total_coins + 1 WHERE sequence = {}", changed));
  for (const std::string engine : {"text", "server-hash"}) {
    SCOPED_TRACE(engine);
    auto r = RunCli({"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", b, "--engine", engine,
                     "--format", "json"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
    EXPECT_EQ(j["verdict"], "divergent");
    EXPECT_EQ(j["first_divergent_ledger"], changed);
    EXPECT_EQ(j["divergent_ledgers"], 1) << "the gap's ledgers are not divergent";
    EXPECT_EQ(j["coverage"]["right"]["missing_ledgers"], 3);
  }
  // diff compares what one job wrote on both sides: there a ledger one side lacks is a wrong write.
  diff::DiffOptions o;
  o.range = held;
  auto d = Diff(Db(KahunaLeft()), Db(b), o);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(d->first_divergent_ledger, std::optional<Ledger>(changed));
  EXPECT_EQ(d->divergent_ledgers, 4u) << "the changed ledger and the three of the gap";
}

TEST(Coverage, ALostLedgerRowIsDivergentAndItsRowsAreNamed) {
  std::string b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(b);
  // A ledger with operations: its header row goes, its other rows stay.
  auto c = Connect(b);
  auto q = c->Exec("SELECT max(ledger_sequence) FROM history_transactions");
  ASSERT_TRUE(q.ok());
  const Ledger lost = static_cast<Ledger>(std::stoul(std::string(q->Get(0, 0))));
  ExecSql(*c, fmt::format("DELETE FROM history_ledgers WHERE sequence = {}", lost));
  auto r = Diff(Db(KahunaLeft()), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);  // a difference takes precedence over a gap
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(lost));
  EXPECT_TRUE(r->coverage.left.missing.empty());
  const std::vector<LedgerRange> at_lost{{lost, lost}};
  if (lost == held.to) {
    // The right side's data now ends before `lost`: beyond its data, not a gap inside it.
    EXPECT_EQ(r->coverage.right.not_held, at_lost);
  } else {
    EXPECT_EQ(r->coverage.right.missing, at_lost);
  }
  bool transactions_named = false;
  for (const auto& o : r->coverage.right.orphans)
    if (o.table == "history_transactions") {
      transactions_named = true;
      EXPECT_EQ(o.at, at_lost);
      EXPECT_GT(o.rows, 0u);
    }
  EXPECT_TRUE(transactions_named) << report::RenderDiffText(*r);
  EXPECT_NE(report::RenderDiffText(*r).find("history_transactions (right): "), std::string::npos);
  // verify-range too: a ledger that lost its header row while its other rows stay was written,
  // wrongly; it is not a ledger the side has yet to write (not incomplete).
  auto v = RunCli({"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", b, "--format", "json"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  const auto j = nlohmann::json::parse(v.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << v.out << v.err;
  EXPECT_EQ(j["verdict"], "divergent");
  EXPECT_EQ(j["first_divergent_ledger"], lost);
  // Against a side that has no row of that ledger at all: both lack its header, but one side's
  // rows there were written (wrongly), so the ledger is compared and diverges, not a gap.
  const std::string none = LoadDump("kahuna-horizon.sql");
  DeleteLedger(none, lost);
  auto w = RunCli({"verify-range", "--range", held.str(), "--left", none, "--right", b, "--format", "json"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  const auto k = nlohmann::json::parse(w.out, nullptr, false);
  ASSERT_FALSE(k.is_discarded()) << w.out << w.err;
  EXPECT_EQ(k["verdict"], "divergent");
  EXPECT_EQ(k["first_divergent_ledger"], lost);
}

TEST(Coverage, EveryOutputFormatOfVerifyRangeSaysIncomplete) {
  const LedgerRange held = HeldLedgers(KahunaLeft());
  testing::ScratchDir dir("ledgerdiff_coverage");
  const std::string range = fmt::format("{}:{}", held.from, held.to + 50);
  auto r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(),
                            "--junit", dir.path + "/v.xml", "--markdown", dir.path + "/v.md", "--report",
                            dir.path + "/html"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\nincomplete: ledgers of " + range), std::string::npos) << r.out;
  const std::string junit = testing::ReadFileBytes(dir.path + "/v.xml");
  EXPECT_NE(junit.find("name=\"verdict\" value=\"incomplete\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("incomplete: left: 50 ledgers missing"), std::string::npos) << junit;
  EXPECT_NE(testing::ReadFileBytes(dir.path + "/v.md").find("incomplete"), std::string::npos);
  const std::string html = testing::ReadFileBytes(dir.path + "/html/index.html");
  EXPECT_NE(html.find("incomplete: left: 50 ledgers missing"), std::string::npos);
  EXPECT_NE(html.find("ledgerdiff verify-range --range"), std::string::npos) << "the look-again command";
  r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(), "--format",
                       "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(j["coverage"]["right"]["missing_ledgers"], 50);
  // --metrics: an identical run, then the incomplete one over the same file, which keeps the
  // identical run's last success; prometheus_client's parser reads both.
  const std::string metrics = dir.path + "/deep/ledgerdiff.prom";
  auto ok = testing::RunCli({"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", KahunaLeft(),
                             "--metrics", metrics});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const std::string first = testing::ReadFileBytes(metrics);
  auto again = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(),
                                "--metrics", metrics});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  const std::string second = testing::ReadFileBytes(metrics);
  const std::string parse = "/usr/bin/python3 '" + testing::SourceDir() + "/tests/parse_metrics.py' '" + metrics + "' >/dev/null";
  EXPECT_EQ(std::system(parse.c_str()), 0) << second;
  for (const auto& [text, verdict] : {std::pair{first, "identical"}, std::pair{second, "incomplete"}}) {
    EXPECT_NE(text.find(fmt::format("ledgerdiff_verdict{{command=\"verify-range\",verdict=\"{}\"}} 1\n", verdict)),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(fmt::format("\nledgerdiff_verified_through_ledger {}\n", held.to)), std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("\nledgerdiff_head_ledger{{side=\"right\"}} {}\n", held.to)), std::string::npos)
        << text;
  }
  EXPECT_NE(second.find("\nledgerdiff_missing_ledgers{side=\"right\"} 50\n"), std::string::npos) << second;
  const auto success = [](const std::string& text) {
    const size_t at = text.find("\nledgerdiff_last_success_timestamp_seconds ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at + 1) - at);
  };
  EXPECT_FALSE(success(first).empty()) << first;
  EXPECT_EQ(success(second), success(first)) << second;

  // The look-again command spans every missing ledger, not only the first.
  const std::string missing = fmt::format("--range {}:{} ", held.to + 1, held.to + 50);
  EXPECT_NE(j["look_again"].get<std::string>().find(missing), std::string::npos) << j["look_again"];
  r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(),
                       "--allow-gaps"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gaps (accepted by --allow-gaps): 50 ledgers missing on both sides"), std::string::npos) << r.out;

  // Sharded: the second slice lies partly past the data; the merged outcome is incomplete.
  std::vector<std::string> parts;
  for (int k = 0; k < 2; ++k) {
    parts.push_back(dir.path + fmt::format("/part-{}.ldm", k));
    r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(), "--shards",
                         "2", "--shard", std::to_string(k), "--out", parts.back()});
    EXPECT_EQ(r.exit_code, k == 0 ? 0 : 1) << r.out << r.err;
  }
  r = testing::RunCli({"manifest", "merge", "--out", dir.path + "/full.ldm", parts[0], parts[1]});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("incomplete: the "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ledgers missing: 50 left, 50 right"), std::string::npos) << r.out;
}


// Issue 22: cost follows the data. Only ledgers holding a row are listed (digest chunks,
// manifests, checkpoints, the diff); with ledger-leading indexes the digest reads no statement
// over an empty span, so a stray row at the last possible ledger costs as much as any other.
// What a digest of `conninfo` emitted: its chunks and the ledgers they list.
struct ChunkTrace {
  std::vector<LedgerRange> spans;
  uint64_t listed = 0;
  std::string root;
};
ChunkTrace TraceDigest(const std::string& conninfo, std::optional<LedgerRange> range = std::nullopt,
                       uint32_t chunk = 0) {
  dump::DigestOptions o;
  o.range = range;
  o.chunk_ledgers = chunk;
  ChunkTrace trace;
  NullReporter rep;
  auto r = dump::DigestSchema(
      conninfo, "public", dump::HorizonProfileSpec(), o,
      [&](const Chunk& c) {
        trace.spans.push_back(c.range);
        trace.listed += c.ledgers.size();
        return Status::Ok();
      },
      rep);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok()) trace.root = r->root;
  return trace;
}

TEST(Sparse, AStrayRowAtTheLastLedgerIsFoundWithoutWalkingTheRange) {
  const Ledger kLast = 2147483647;
  std::string b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(b);
  auto c = Connect(b);
  // One effect copied to the last ledger a TOID can name (operation 1 of its transaction 1).
  ExecSql(*c, fmt::format("CREATE TEMP TABLE stray AS SELECT * FROM history_effects ORDER BY history_operation_id "
                          "LIMIT 1; UPDATE stray SET history_operation_id = {}; "
                          "INSERT INTO history_effects SELECT * FROM stray",
                          (int64_t{kLast} << 32) | 4097));
  const auto started = std::chrono::steady_clock::now();
  auto r = Diff(Db(KahunaLeft()), Db(b));
  const double seconds = SecondsSince(started);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::printf("[ measured ] diff of kahuna against a copy with a stray effect at ledger %u: %.2f s\n", kLast, seconds);
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(kLast));
  EXPECT_EQ(r->ledgers_compared, uint64_t{kLast} - held.from + 1);  // every ledger of the range, compared
  bool named = false;
  for (const auto& o : r->coverage.right.orphans)
    if (o.table == "history_effects") {
      named = true;
      EXPECT_EQ(o.at, (std::vector<LedgerRange>{{kLast, kLast}}));
    }
  EXPECT_TRUE(named) << report::RenderDiffText(*r);
  ASSERT_EQ(r->rows.size(), 1u) << report::RenderDiffText(*r);
  EXPECT_EQ(r->rows[0].table, "history_effects");

  // The digest of the stray side: the data's chunk and one chunk at the stray ledger, which
  // takes the empty span before it unread; the ledgers listed are those holding a row.
  const ChunkTrace trace = TraceDigest(b);
  ASSERT_EQ(trace.spans.size(), 2u);
  EXPECT_EQ(trace.spans[0].from, held.from);
  EXPECT_EQ(trace.spans[1].to, kLast);
  EXPECT_EQ(trace.listed, held.size() + 1);

  // Its manifest is as small as the data's, and a diff against it finds the same ledger.
  testing::ScratchDir dir("ledgerdiff_sparse");
  const std::string path = dir.path + "/stray.ldm";
  auto m = testing::RunCli({"digest", "--db", b, "--schema", "public", "--out", path});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto plain = testing::RunCli({"digest", "--db", KahunaLeft(), "--schema", "public", "--out", dir.path + "/plain.ldm"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_LT(std::filesystem::file_size(path), std::filesystem::file_size(dir.path + "/plain.ldm") + 200);
  auto d = testing::RunCli({"diff", "--db", KahunaLeft(), "public", "file:" + path, "--format", "json"});
  EXPECT_EQ(d.exit_code, 1) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["first_divergent_ledger"], kLast);
}

TEST(Sparse, AStrayRowOfEveryTableIsNamedAtItsFarLedger) {
  // One row of every history table that has rows (but history_ledgers: a stray ledger row is a
  // held ledger, coverage's business) copied to a ledger of its own near 2^31: the probe that
  // plans the chunks must find each (a table it forgot would be skipped unread).
  std::string b = LoadDump("kahuna-horizon.sql");
  auto c = Connect(b);
  std::map<std::string, Ledger> stray_at;
  Ledger far = 2147483647;
  for (const auto& t : HorizonHistoryTables()) {
    const std::string name = t.name;
    if (name == kLedgerTable || !HasColumn(*c, name, t.ledger_column)) continue;
    auto n = c->Exec(fmt::format("SELECT count(*) FROM {}", Q(name)));
    ASSERT_TRUE(n.ok());
    if (n->GetInt(0, 0) == 0) continue;
    const Ledger at = far--;
    std::string set = t.kind == LedgerColumnKind::kToid
                          ? fmt::format("{} = {}", Q(t.ledger_column), (int64_t{at} << 32) | 4097)
                          : fmt::format("{} = {}", Q(t.ledger_column), at);
    if (name == "history_transactions") set += fmt::format(", id = {}", (int64_t{at} << 32) | 4096);
    ExecSql(*c, fmt::format("CREATE TEMP TABLE s AS SELECT * FROM {0} LIMIT 1; UPDATE s SET {1}; "
                            "INSERT INTO {0} SELECT * FROM s; DROP TABLE s",
                            Q(name), set));
    stray_at[name] = at;
  }
  ASSERT_GE(stray_at.size(), 5u);
  auto r = Diff(Db(KahunaLeft()), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(far + 1));
  EXPECT_EQ(r->divergent_ledgers, stray_at.size());
  std::map<std::string, Ledger> named;
  for (const auto& o : r->coverage.right.orphans) {
    ASSERT_EQ(o.at.size(), 1u) << o.table;
    EXPECT_EQ(o.at[0].from, o.at[0].to);
    named[o.table] = o.at[0].from;
  }
  EXPECT_EQ(named, stray_at) << report::RenderDiffText(*r);
}

TEST(Sparse, EntriesAndRootsDoNotDependOnProbingOrChunking) {
  // A gap inside the data and a range far past it: the probing digest (indexes led by the ledger
  // column) and the digest cut by width (one such index dropped) list the same ledgers and give
  // the same root, whatever the chunk size.
  std::string a = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(a);
  DeleteLedger(a, held.from + 10);
  std::string b = LoadDump("kahuna-horizon.sql");
  DeleteLedger(b, held.from + 10);
  ExecSql(*Connect(b), "DROP INDEX hop_by_hoid");  // history_operation_participants: no probe
  const LedgerRange range{held.from, held.to + 100000};
  const ChunkTrace probed = TraceDigest(a, range);
  EXPECT_LE(probed.spans.size(), 2u) << "the empty tail is read by no chunk of its own";
  EXPECT_EQ(probed.listed, held.size() - 1);
  for (uint32_t chunk : {0u, 7u, 50000u}) {
    SCOPED_TRACE(chunk);
    const ChunkTrace p = TraceDigest(a, range, chunk);
    const ChunkTrace w = TraceDigest(b, range, chunk);
    EXPECT_EQ(p.root, probed.root);
    EXPECT_EQ(w.root, probed.root);
    EXPECT_EQ(w.listed, probed.listed);
    EXPECT_GE(w.spans.size(), p.spans.size());
  }
  diff::DiffOptions o;
  o.range = range;
  o.allow_gaps = true;
  auto r = Diff(Db(a), Db(b), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIdentical) << report::RenderDiffText(*r);
  EXPECT_EQ(r->coverage.left.missing_ledgers, 1u + 100000u);
}

// ---------------------------------------------------------------------------------------------
// Progress (issue 22): the ETA weighs ledgers by the rows the server's statistics put in them.

struct ProgressRecorder : Reporter {
  std::vector<Progress> updates;
  void Note(std::string_view) override {}
  void Update(const Progress& p) override { updates.push_back(p); }
};

// A schema of ours holding `range` of the stellar density, whose rows per ledger grow along it.
// `analyzed`: with the statistics ANALYZE gathers; else with none. Autovacuum is off: no
// statistics come or change but the test's.
std::string GrowingSchema(const LedgerRange& range, bool analyzed) {
  auto conn = Connect();
  const std::string schema = UniqueName(analyzed ? "growing" : "unanalyzed");
  ExecSql(*conn, "CREATE SCHEMA " + Q(schema));
  EXPECT_TRUE(fixtures::CreateHistorySchema(*conn, schema).ok());
  std::vector<std::string> tables = fixtures::HistoryTables();
  for (const auto& t : fixtures::LookupTables()) tables.push_back(t);
  for (const auto& t : tables)
    ExecSql(*conn, fmt::format("ALTER TABLE {} SET (autovacuum_enabled = false)", pg::Qualified(schema, t)));
  auto r = fixtures::IngestJob(*conn, schema, range, {});
  EXPECT_TRUE(r.ok()) << r.status().message();
  // The ingest's writes counted now, not after the analyze (where they would make it stale).
  ExecSql(*conn, "SELECT pg_stat_force_next_flush()");
  if (analyzed)
    for (const auto& t : tables) ExecSql(*conn, "ANALYZE " + pg::Qualified(schema, t));
  return schema;
}

// The progress a digest of `schema` over `range` reports, and its summary.
std::pair<std::vector<Progress>, dump::DigestSummary> DigestProgress(const std::string& schema,
                                                                     const LedgerRange& range) {
  ProgressRecorder recorder;
  dump::DigestOptions o;
  o.range = range;
  o.jobs = 2;
  o.chunk_ledgers = 500;
  auto spec = dump::LoadProfileSpec("horizon");
  EXPECT_TRUE(spec.ok());
  if (!spec.ok()) return {};
  auto r = dump::DigestSchema(TestConninfo(), schema, *spec, o, nullptr, recorder);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return {recorder.updates, *r};
}

TEST(Progress, DigestWorkIsTheRowsTheStatisticsPutInTheRange) {
  const LedgerRange held{2, 3000};
  const std::string schema = GrowingSchema(held, /*analyzed=*/true);
  for (const LedgerRange range : {held, LedgerRange{2000, 3000}}) {
    SCOPED_TRACE(range.str());
    const auto [updates, summary] = DigestProgress(schema, range);
    ASSERT_FALSE(updates.empty());
    const uint64_t estimated = updates.front().work_total;
    const double rows = static_cast<double>(summary.rows);
    std::printf("[ measured ] digest of ledgers %s: %llu rows estimated from the statistics, %llu read\n",
                range.str().c_str(), static_cast<unsigned long long>(estimated),
                static_cast<unsigned long long>(summary.rows));
    EXPECT_GE(static_cast<double>(estimated), rows / 1.5);
    EXPECT_LE(static_cast<double>(estimated), rows * 1.5);
    for (size_t i = 0; i < updates.size(); ++i) {
      EXPECT_EQ(updates[i].work_total, estimated) << i;
      if (i) {
        EXPECT_GE(updates[i].work_done, updates[i - 1].work_done) << i;
      }
    }
    EXPECT_EQ(updates.back().done, range.size());
    EXPECT_EQ(updates.back().work_done, estimated);
    if (range.from != held.from) continue;
    // The rows grow along the range: when half the ledgers are done, far less than half the
    // estimated rows are (each span's share comes from the histogram, not from its width).
    const auto half = std::find_if(updates.begin(), updates.end(),
                                   [&](const Progress& p) { return 2 * p.done >= range.size(); });
    ASSERT_NE(half, updates.end());
    EXPECT_LT(static_cast<double>(half->work_done), 0.4 * static_cast<double>(estimated))
        << half->done << " of " << range.size() << " ledgers";
  }
}

// Without statistics that describe the rows the ETA counts ledgers: never analyzed (and the
// digest does not analyze), or analyzed before most of the rows came.
// An ingest ANALYZEs the schema it wrote: the digest of a freshly ingested schema estimates its
// work by rows, not ledgers.
TEST(Progress, AnIngestLeavesStatisticsSoItsSchemasDigestCountsRows) {
  const std::string schema = UniqueName("ingest_analyzed");
  auto r = testing::RunCli({"ingest", "--db", testing::TestConninfo(), "--range", "2:1201", "--schema", schema,
                            "--workers", "2", "--job-size", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto [updates, summary] = DigestProgress(schema, LedgerRange{2, 1201});
  ASSERT_FALSE(updates.empty());
  const double rows = static_cast<double>(summary.rows);
  EXPECT_GE(static_cast<double>(updates.front().work_total), rows / 1.5) << summary.rows;
  EXPECT_LE(static_cast<double>(updates.front().work_total), rows * 1.5) << summary.rows;
}

TEST(Progress, DigestWithoutStatisticsOfItsRowsCountsLedgers) {
  const LedgerRange range{2, 1200};
  const std::string never = GrowingSchema(range, /*analyzed=*/false);
  const std::string stale = GrowingSchema(range, /*analyzed=*/true);
  {
    auto conn = Connect();
    auto more = fixtures::IngestJob(*conn, stale, {1201, 2400}, {});
    ASSERT_TRUE(more.ok()) << more.status().message();
    ExecSql(*conn, "SELECT pg_stat_force_next_flush()");  // its writes counted before it goes idle
  }
  for (const auto& [schema, digested] : {std::pair{never, range}, std::pair{stale, LedgerRange{2, 2400}}}) {
    SCOPED_TRACE(schema);
    const auto [updates, summary] = DigestProgress(schema, digested);
    ASSERT_FALSE(updates.empty());
    EXPECT_GT(summary.rows, 0u);
    for (const Progress& p : updates) {
      EXPECT_EQ(p.work_total, 0u);
      EXPECT_EQ(p.work_done, 0u);
    }
    EXPECT_EQ(updates.back().done, digested.size());
  }
  // Nothing was written into the schema: still no statistics.
  auto conn = Connect();
  auto stats = conn->Exec("SELECT count(*) FROM pg_stats WHERE schemaname = $1", {never});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->GetInt(0, 0), 0);
}

}  // namespace
}  // namespace ledgerdiff
