// No false alarms and no misses on the real Horizon dumps (issues 3, 14), against the harness's
// real PostgreSQL: every loadable dump renumbered is identical, a table lacking or a trade
// stored flipped is named, a changed, deleted, inserted or duplicated row is reported at exactly
// its ledger and table; the row diff is a multiset; diff's source syntax. Part of the digest_test
// binary (tests/digest_support.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/history_tables.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "report/diff_text_json.h"
#include "tests/digest_support.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"

namespace ledgerdiff {
namespace {

using namespace digest_support;

// ---------------------------------------------------------------------------------------------
// Horizon dumps

using testing::ScenarioDir;

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

}  // namespace
}  // namespace ledgerdiff
