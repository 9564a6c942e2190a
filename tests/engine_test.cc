// The two digest engines (dump/canonical.h DigestEngine) reach the same verdicts: on encoding
// cases where PostgreSQL's own hash functions decide differently from the text rules, on every
// real Horizon dump renumbered and then broken by planted changes (the same first divergent
// ledger, the same tables), on every bug the self-test injects, and through the CLI (manifests of
// different engines are never compared; a resumed or followed run keeps its engine).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/profile.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"
#include "report/diff_text_json.h"

namespace ledgerdiff {
namespace {

using dump::Digest128;
using dump::DigestEngine;
using nlohmann::json;
using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

constexpr DigestEngine kEngines[] = {DigestEngine::kText, DigestEngine::kServerHash};

// ---------------------------------------------------------------------------------------------
// Encoding: one table t(ledger_sequence int, <cols>) per side, digested by profile auto.

std::string EncodingSchema(const std::string& cols, const std::string& values) {
  auto conn = Connect();
  const std::string s = UniqueName("enc");
  const Status st = conn->Run(fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.t (ledger_sequence int, {1}); "
                                          "INSERT INTO {0}.t VALUES {2}",
                                          pg::QuoteIdent(s), cols, values));
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

// Ledger 1's digest of `schema` by `engine` (nullopt when the digest fails: a test failure).
std::optional<Digest128> LedgerOne(const std::string& schema, DigestEngine engine,
                                   const std::string& conninfo = TestConninfo()) {
  auto spec = dump::LoadProfileSpec("auto");
  EXPECT_TRUE(spec.ok());
  dump::DigestOptions o;
  o.range = LedgerRange{1, 3};
  o.engine = engine;
  std::optional<Digest128> one;
  NullReporter quiet;
  auto r = dump::DigestSchema(
      conninfo, schema, *spec, o,
      [&](const dump::Chunk& c) {
        for (size_t i = 0; i < c.ledgers.size(); ++i)
          if (c.ledgers[i] == 1) one = c.combined[i];
        return Status::Ok();
      },
      quiet);
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.ok() ? r->engine : engine, engine);
  return one;
}

struct EncodingCase {
  const char* name;
  const char* cols_a;
  const char* values_a;
  const char* cols_b;  // nullptr: cols_a
  const char* values_b;
  bool equal;  // the documented answer (dump/README.md "Canonical encoding"), for both engines
};

// Where PostgreSQL's hash functions and the text rules part: hashint8 folds an int8's halves
// (0 and 4294967297 collide), jsonb_hash ignores a number's scale, interval_hash calls 1 day and
// 24 hours equal, numeric_hash ignores scale; a sum of linear row hashes would not see values
// swapped between rows.
const EncodingCase kEncodingCases[] = {
    {"null_vs_empty", "v text", "(1, NULL)", nullptr, "(1, '')", false},
    {"null_vs_text_null", "v text", "(1, NULL)", nullptr, "(1, 'NULL')", false},
    {"empty_vs_backslash_n", "v text", "(1, '')", nullptr, "(1, '\\N')", false},
    {"field_boundaries", "a text, b text", "(1, 'a3', 'b')", nullptr, "(1, 'a', '3b')", false},
    {"row_boundaries", "a text", "(1, 'ab'), (1, 'c')", nullptr, "(1, 'a'), (1, 'bc')", false},
    {"case", "v text", "(1, 'a')", nullptr, "(1, 'A')", false},
    {"bpchar_padding", "v char(3)", "(1, 'a')", nullptr, "(1, 'a  ')", true},
    {"negative_zero", "f float8", "(1, '-0')", nullptr, "(1, '0')", false},
    {"float_nan", "f float8", "(1, 'NaN')", nullptr, "(1, 'NaN')", true},
    {"nan_vs_infinity", "f float8", "(1, 'NaN')", nullptr, "(1, 'Infinity')", false},
    {"numeric_scale", "n numeric", "(1, 1.0)", nullptr, "(1, 1.00)", false},
    {"numeric_nan", "n numeric", "(1, 'NaN')", nullptr, "(1, 'NaN')", true},
    {"numeric_scale_rows_reordered", "n numeric", "(1, 1.0), (1, 1.00)", nullptr, "(1, 1.00), (1, 1.0)", true},
    {"int8_halves", "v int8", "(1, 0)", nullptr, "(1, 4294967297)", false},
    {"int8_sign", "v int8", "(1, -1)", nullptr, "(1, 4294967295)", false},
    {"int4_vs_int8_same_value", "v int4", "(1, 5)", "v int8", "(1, 5)", true},
    // The same instant in UTC: the digest sees equal values (the column's type change is the schema
    // comparison's to report).
    {"timestamptz_utc_vs_timestamp", "v timestamptz", "(1, '2020-01-02 03:04:05+00')", "v timestamp",
     "(1, '2020-01-02 03:04:05')", true},
    {"timestamptz_other_instant", "v timestamptz", "(1, '2020-01-02 03:04:05+00')", nullptr,
     "(1, '2020-01-02 03:04:05+01')", false},
    {"timestamp_microsecond", "v timestamp", "(1, '2020-01-02 03:04:05')", nullptr,
     "(1, '2020-01-02 03:04:05.000001')", false},
    {"interval_day_vs_hours", "v interval", "(1, '1 day')", nullptr, "(1, '24 hours')", false},
    {"interval_month_vs_30_days", "v interval", "(1, '1 mon')", nullptr, "(1, '30 days')", false},
    {"interval_same_fields", "v interval", "(1, '1 year 2 mons')", nullptr, "(1, '14 mons')", true},
    // Native datetime hashing (timestamp_send, date_send, time_send) keeps the text's decisions.
    {"date_vs_timestamp_midnight", "v date", "(1, '2020-01-02')", "v timestamp", "(1, '2020-01-02 00:00:00')", false},
    {"date_next_day", "v date", "(1, '2020-01-02')", nullptr, "(1, '2020-01-03')", false},
    {"time_microsecond", "v time", "(1, '03:04:05')", nullptr, "(1, '03:04:05.000001')", false},
    {"timestamp_infinity", "v timestamp", "(1, 'infinity')", nullptr, "(1, '-infinity')", false},
    {"jsonb_key_order", "j jsonb", "(1, '{\"b\": 1, \"a\": 2}')", nullptr, "(1, '{\"a\":2,\"b\":1}')", true},
    {"jsonb_number_scale", "j jsonb", "(1, '{\"a\": 1.0}')", nullptr, "(1, '{\"a\": 1.00}')", false},
    {"json_as_written", "j json", "(1, '{\"b\": 1, \"a\": 2}')", nullptr, "(1, '{\"a\":2,\"b\":1}')", false},
    {"bytea_length", "v bytea", "(1, '\\x00')", nullptr, "(1, '\\x0000')", false},
    {"array_order", "v int[]", "(1, '{1,2}')", nullptr, "(1, '{2,1}')", false},
    {"bool", "v bool", "(1, true)", nullptr, "(1, false)", false},
    {"values_swapped_between_rows", "a int, b text", "(1, 1, 'x'), (1, 2, 'y')", nullptr, "(1, 1, 'y'), (1, 2, 'x')",
     false},
    {"values_swapped_between_columns", "a text, b text", "(1, 'x', 'y')", nullptr, "(1, 'y', 'x')", false},
    {"duplicated_rows_vs_other_duplicates", "v text", "(1, 'x'), (1, 'x')", nullptr, "(1, 'y'), (1, 'y')", false},
    {"multiset_reordered", "a int, b text", "(1, 1, 'x'), (1, 2, 'y'), (1, 1, 'x')", nullptr,
     "(1, 1, 'x'), (1, 1, 'x'), (1, 2, 'y')", true},
};

class EngineEncoding : public ::testing::TestWithParam<EncodingCase> {};

TEST_P(EngineEncoding, BothEnginesGiveTheDocumentedAnswer) {
  const EncodingCase& c = GetParam();
  const std::string a = EncodingSchema(c.cols_a, c.values_a);
  const std::string b = EncodingSchema(c.cols_b ? c.cols_b : c.cols_a, c.values_b);
  for (DigestEngine engine : kEngines) {
    SCOPED_TRACE(dump::ToString(engine));
    const auto da = LedgerOne(a, engine), db = LedgerOne(b, engine);
    ASSERT_TRUE(da && db);
    EXPECT_EQ(*da == *db, c.equal);
    // Deterministic: the same rows digested again give the same digest.
    EXPECT_EQ(LedgerOne(a, engine), da);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EngineEncoding, ::testing::ValuesIn(kEncodingCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The engines are different functions: the same rows give other digests (a manifest records which).
TEST(EngineEncodingSession, DigestsDifferBetweenEnginesAndNotWithTheSession) {
  const std::string s = EncodingSchema(
      "ts timestamptz, t timestamp, d date, i interval, f float8, n numeric",
      "(1, '2020-01-02 03:04:05.123456+00', '2020-01-02 03:04:05', '2020-01-02', '1 day 2 hours', 0.1, 1.50)");
  const auto text = LedgerOne(s, DigestEngine::kText), server = LedgerOne(s, DigestEngine::kServerHash);
  ASSERT_TRUE(text && server);
  EXPECT_NE(*text, *server);
  for (DigestEngine engine : kEngines)
    for (const char* opts :
         {"-c TimeZone=Asia/Tokyo -c DateStyle=German", "-c TimeZone=America/New_York -c DateStyle=SQL,MDY",
          "-c IntervalStyle=iso_8601 -c extra_float_digits=0 -c lc_monetary=C"}) {
      SCOPED_TRACE(fmt::format("{} {}", dump::ToString(engine), opts));
      EXPECT_EQ(LedgerOne(s, engine, TestConninfo() + fmt::format(" options='{}'", opts)),
                engine == DigestEngine::kText ? text : server);
    }
}

// ---------------------------------------------------------------------------------------------
// Every loadable Horizon dump: identical to itself renumbered under both engines; each planted
// change is found by both at the same first divergent ledger in the same tables.

struct Verdict {
  bool identical = false;
  std::optional<Ledger> first;
  uint64_t divergent_ledgers = 0, ledgers = 0, rows_left = 0, rows_right = 0;
  std::vector<std::string> tables;
  std::string text;
};

Verdict DiffBy(DigestEngine engine, const std::string& a, const std::string& b) {
  diff::DiffOptions o;
  o.engine = engine;
  o.all = true;
  NullReporter quiet;
  auto r = diff::DiffSources(diff::SchemaSource{a, "public"}, diff::SchemaSource{b, "public"},
                             dump::HorizonProfileSpec(), o, quiet);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Verdict v;
  if (!r.ok()) return v;
  EXPECT_EQ(r->engine, engine);
  v.identical = r->identical;
  v.first = r->first_divergent_ledger;
  v.divergent_ledgers = r->divergent_ledgers;
  v.ledgers = r->ledgers_compared;
  v.rows_left = r->rows_compared_left;
  v.rows_right = r->rows_compared_right;
  for (const auto& t : r->divergent_tables) v.tables.push_back(t.table);
  v.text = report::RenderDiffText(*r);
  return v;
}

// Runs `sql` (which returns the changed rows' ledgers) on `conninfo`; the lowest, or nullopt when
// the dump has no row the plant applies to.
std::optional<Ledger> Plant(const std::string& conninfo, const std::string& sql) {
  auto c = Connect(conninfo);
  auto r = c->Exec(sql);
  EXPECT_TRUE(r.ok()) << r.status().message() << "\n" << sql;
  if (!r.ok() || r->size() == 0) return std::nullopt;
  Ledger lowest = std::stoull(std::string(r->Get(0, 0)));
  for (int i = 1; i < r->size(); ++i) lowest = std::min<Ledger>(lowest, std::stoull(std::string(r->Get(i, 0))));
  return lowest;
}

// Each plant returns the ledgers of the rows it changed.
const char* const kPlants[] = {
    // A timestamp a microsecond off, at the middle ledger.
    "UPDATE history_ledgers SET closed_at = closed_at + interval '1 microsecond' WHERE sequence = "
    "(SELECT sequence FROM history_ledgers ORDER BY sequence OFFSET (SELECT count(*) / 2 FROM history_ledgers) LIMIT 1) "
    "RETURNING sequence",
    // A jsonb value gaining a key, at the last effect.
    "UPDATE history_effects SET details = details || '{\"planted\": 1.0}' WHERE (history_operation_id, \"order\") = "
    "(SELECT history_operation_id, \"order\" FROM history_effects ORDER BY history_operation_id DESC, \"order\" DESC "
    "LIMIT 1) RETURNING history_operation_id >> 32",
    // Two operations of one ledger swapping their types (a sum of linear row hashes would not
    // change).
    "WITH pair AS (SELECT x.id AS ix, y.id AS iy, x.type AS tx, y.type AS ty FROM history_operations x "
    "JOIN history_operations y ON x.id >> 32 = y.id >> 32 AND x.id < y.id AND x.type <> y.type "
    "ORDER BY x.id LIMIT 1) "
    "UPDATE history_operations o SET type = CASE WHEN o.id = pair.ix THEN pair.ty ELSE pair.tx END FROM pair "
    "WHERE o.id IN (pair.ix, pair.iy) RETURNING o.id >> 32",
    // The same with two effects of one ledger.
    "WITH pair AS (SELECT x.history_operation_id AS ox, x.\"order\" AS rx, y.history_operation_id AS oy, "
    "y.\"order\" AS ry, x.type AS tx, y.type AS ty FROM history_effects x JOIN history_effects y "
    "ON x.history_operation_id >> 32 = y.history_operation_id >> 32 "
    "AND (x.history_operation_id, x.\"order\") < (y.history_operation_id, y.\"order\") AND x.type <> y.type "
    "ORDER BY x.history_operation_id, x.\"order\" LIMIT 1) "
    "UPDATE history_effects e SET type = CASE WHEN (e.history_operation_id, e.\"order\") = (pair.ox, pair.rx) "
    "THEN pair.ty ELSE pair.tx END FROM pair WHERE (e.history_operation_id, e.\"order\") IN "
    "((pair.ox, pair.rx), (pair.oy, pair.ry)) RETURNING e.history_operation_id >> 32",
    // A transaction's fee_charged one stroop off, at the first transaction.
    "UPDATE history_transactions SET fee_charged = fee_charged + 1 WHERE id = (SELECT min(id) FROM "
    "history_transactions) RETURNING ledger_sequence",
};

TEST(EngineHorizon, EveryDumpRenumberedIdenticalAndEveryPlantFoundAtTheSameLedger) {
  ASSERT_FALSE(testing::ScenarioDir().empty());
  std::map<const char*, int> applied;  // dumps each plant applied to
  for (const auto& file : testing::LoadableDumps()) {
    SCOPED_TRACE(file);
    const std::string a = testing::LoadDump(file), b = testing::LoadDump(file);
    testing::Renumber(b);
    std::map<DigestEngine, Verdict> clean;
    for (DigestEngine engine : kEngines) {
      clean[engine] = DiffBy(engine, a, b);
      EXPECT_TRUE(clean[engine].identical) << dump::ToString(engine) << "\n" << clean[engine].text;
      EXPECT_GT(clean[engine].ledgers, 0u);
    }
    EXPECT_EQ(clean[DigestEngine::kText].ledgers, clean[DigestEngine::kServerHash].ledgers);
    EXPECT_EQ(clean[DigestEngine::kText].rows_left, clean[DigestEngine::kServerHash].rows_left);
    std::optional<Ledger> expected;
    int planted = 0;
    for (const char* sql : kPlants) {
      const std::optional<Ledger> at = Plant(b, sql);
      if (!at) continue;
      ++planted;
      ++applied[sql];
      expected = expected ? std::min(*expected, *at) : *at;
      SCOPED_TRACE(sql);
      const Verdict text = DiffBy(DigestEngine::kText, a, b), server = DiffBy(DigestEngine::kServerHash, a, b);
      EXPECT_FALSE(text.identical);
      EXPECT_FALSE(server.identical);
      EXPECT_EQ(text.first, expected) << text.text;
      EXPECT_EQ(server.first, expected) << server.text;
      EXPECT_EQ(server.divergent_ledgers, text.divergent_ledgers) << text.text << server.text;
      EXPECT_EQ(server.tables, text.tables) << text.text << server.text;
    }
    // The ledger plant applies to every dump.
    EXPECT_GE(planted, 1);
  }
  for (const char* sql : kPlants) EXPECT_GT(applied[sql], 0) << "applied to no dump: " << sql;
}

// ---------------------------------------------------------------------------------------------
// Every bug the self-test injects (fixtures::AllBugKinds) is caught by the server-hash engine
// at the ledger and in the tables the text engine names.

TEST(EngineSelftest, EveryInjectedBugCaughtAsTheTextEngineCatchesIt) {
  std::map<std::string, json> by_engine;
  for (DigestEngine engine : kEngines) {
    auto r = RunCli({"selftest", "--db", TestConninfo(), "--range", "2:401", "--engine", dump::ToString(engine),
                     "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << dump::ToString(engine) << "\n" << r.err << r.out;
    by_engine[dump::ToString(engine)] = json::parse(r.out);
  }
  const json& text = by_engine["text"];
  const json& server = by_engine["server-hash"];
  EXPECT_EQ(server["passed"], true);
  ASSERT_EQ(server["cases"].size(), text["cases"].size());
  ASSERT_GE(server["cases"].size(), 11u);
  for (size_t i = 0; i < text["cases"].size(); ++i) {
    const json& t = text["cases"][i];
    const json& s = server["cases"][i];
    SCOPED_TRACE(t.dump());
    EXPECT_EQ(s["kind"], t["kind"]);
    EXPECT_EQ(s["ledger"], t["ledger"]);
    EXPECT_EQ(s["caught"], true) << s.dump();
    EXPECT_EQ(s["reported_ledger"], t["reported_ledger"]) << s.dump();
    EXPECT_EQ(s["divergent_tables"], t["divergent_tables"]) << s.dump();
  }
}

// ---------------------------------------------------------------------------------------------
// The CLI: each output names the engine; manifests of different engines are never compared.

TEST(EngineCli, ManifestsOfDifferentEnginesAreAUsageErrorNamingBoth) {
  const std::string db = testing::LoadDump("kahuna-horizon.sql");
  testing::ScratchDir dir("ledgerdiff-engine-");
  const std::string text_ldm = dir.path + "/text.ldm", server_ldm = dir.path + "/server.ldm";
  auto t = RunCli({"digest", "--db", db, "--schema", "public", "--out", text_ldm, "--format", "json"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(json::parse(t.out)["engine"], "text");
  auto s = RunCli(
      {"digest", "--db", db, "--schema", "public", "--engine", "server-hash", "--out", server_ldm, "--format", "json"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(json::parse(s.out)["engine"], "server-hash");
  EXPECT_NE(json::parse(t.out)["root"], json::parse(s.out)["root"]);

  // Each manifest against the database it came from, by its own engine: identical.
  for (const auto& [ldm, engine] : {std::pair{text_ldm, "text"}, std::pair{server_ldm, "server-hash"}}) {
    auto d = RunCli({"diff", ldm, db + "::public", "--format", "json"});
    EXPECT_EQ(d.exit_code, 0) << d.err << d.out;
    EXPECT_EQ(json::parse(d.out)["engine"], engine) << d.out;
  }
  auto mixed = RunCli({"diff", text_ldm, server_ldm});
  EXPECT_EQ(mixed.exit_code, 2) << mixed.err << mixed.out;
  EXPECT_NE(mixed.err.find("engine text"), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("engine server-hash"), std::string::npos) << mixed.err;
  auto conflicting = RunCli({"diff", server_ldm, db + "::public", "--engine", "text"});
  EXPECT_EQ(conflicting.exit_code, 2) << conflicting.err << conflicting.out;
  EXPECT_NE(conflicting.err.find("--engine text"), std::string::npos) << conflicting.err;
  auto merged = RunCli({"manifest", "merge", "--out", dir.path + "/m.ldm", text_ldm, server_ldm});
  EXPECT_EQ(merged.exit_code, 2) << merged.err << merged.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/m.ldm"));
}

TEST(EngineCli, VerifyRangeNamesItsEngineAndBothEnginesFindTheSameLedger) {
  const std::string left = testing::LoadDump("kahuna-horizon.sql"), right = testing::LoadDump("kahuna-horizon.sql");
  testing::Renumber(right);
  testing::ScratchDir dir("ledgerdiff-engine-vr-");
  const std::string out = dir.path + "/vr.ldm";
  auto r = RunCli({"verify-range", "--left", left, "--right", right, "--range", "1:61", "--engine", "server-hash",
                   "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(engine server-hash)"), std::string::npos) << r.out;
  // Its manifest says which engine made it: a diff against the left side uses it.
  auto d = RunCli({"diff", out, left + "::public", "--format", "json"});
  EXPECT_EQ(d.exit_code, 0) << d.err << d.out;
  EXPECT_EQ(json::parse(d.out)["engine"], "server-hash");

  {
    auto c = Connect(right);
    ASSERT_TRUE(c->Run("UPDATE history_ledgers SET closed_at = closed_at + interval '1 second' WHERE sequence = 30")
                    .ok());
  }
  const std::string out2 = dir.path + "/vr2.ldm";
  auto first = RunCli({"verify-range", "--left", left, "--right", right, "--range", "1:61", "--engine", "server-hash",
                       "--out", out2, "--format", "json"});
  ASSERT_EQ(first.exit_code, 1) << first.err << first.out;
  EXPECT_EQ(json::parse(first.out)["first_divergent_ledger"], 30) << first.out;
  EXPECT_EQ(json::parse(first.out)["engine"], "server-hash") << first.out;
  auto text = RunCli({"verify-range", "--left", left, "--right", right, "--range", "1:61", "--format", "json"});
  ASSERT_EQ(text.exit_code, 1) << text.err << text.out;
  EXPECT_EQ(json::parse(text.out)["first_divergent_ledger"], 30) << text.out;
  EXPECT_EQ(json::parse(text.out)["engine"], "text") << text.out;
}

}  // namespace
}  // namespace ledgerdiff
