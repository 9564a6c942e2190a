// Verifier soundness (issue 9), the legal differences and the encoding: column order, class-equal
// widenings and ties under a nullable unique index stay identical; known-answer digests pin the
// row encoding; the digest's snapshot; the lookup and invariant checks the digest feeds; an old
// manifest version. Part of the soundness_test binary (tests/soundness_support.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/pg.h"
#include "diff/checks.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "tests/harness.h"
#include "report/diff_text_json.h"
#include "tests/soundness_support.h"

namespace ledgerdiff {
namespace {

using namespace soundness_support;

// ---------------------------------------------------------------------------------------------
// 6. No false alarms

TEST(NoFalseAlarms, ColumnOrderIsNotDataAndRowDiffLabelsAreRight) {
  std::string a = LoadDump(), b = LoadDump();
  // A table rebuilt with its columns in reverse order (CREATE TABLE AS, as ETL tools do).
  auto reverse_columns = [&](const std::string& table) {
    auto c = Connect(b);
    auto cols = c->Exec(fmt::format("SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum DESC) FROM "
                                    "pg_attribute WHERE attrelid = '{}'::regclass AND attnum > 0 AND NOT attisdropped",
                                    table));
    ASSERT_TRUE(cols.ok());
    ExecSql(b, fmt::format("CREATE TABLE reversed AS SELECT {0} FROM {1}; DROP TABLE {1} CASCADE; ALTER TABLE "
                           "reversed RENAME TO {1}",
                           cols->Get(0, 0), table));
  };
  reverse_columns("history_ledgers");
  // The digest reads in physical order (dump/lookup_map.h): a table with lookups reversed too, and
  // one with a dropped column between its live ones and a TOID ledger column moved to the end.
  reverse_columns("history_effects");
  ExecSql(b, "ALTER TABLE history_operations ADD COLUMN scratch int; ALTER TABLE history_operations DROP COLUMN "
             "scratch; ALTER TABLE history_operations ADD COLUMN id_moved bigint; UPDATE history_operations SET "
             "id_moved = id; ALTER TABLE history_operations DROP COLUMN id CASCADE; ALTER TABLE history_operations "
             "RENAME COLUMN id_moved TO id");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->identical) << report::RenderDiffText(*r);
  ExecSql(b, "UPDATE history_ledgers SET successful_transaction_count = successful_transaction_count + 7 WHERE "
             "sequence = 5");
  auto d = Diff(Db(a), Db(b));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->first_divergent_ledger, std::optional<Ledger>(5));
  ASSERT_EQ(d->rows.size(), 1u);
  ASSERT_EQ(d->rows[0].changed.size(), 1u);
  ASSERT_EQ(d->rows[0].changed[0].changes.size(), 1u);
  EXPECT_EQ(d->rows[0].changed[0].changes[0].column, "successful_transaction_count");
  auto l = d->rows[0].changed[0].changes[0].left, rr = d->rows[0].changed[0].changes[0].right;
  ASSERT_TRUE(l && rr);
  EXPECT_EQ(std::stoll(*rr) - std::stoll(*l), 7);
  // A change in each reordered table is found at its ledger.
  ExecSql(b, "UPDATE history_ledgers SET successful_transaction_count = successful_transaction_count - 7 WHERE "
             "sequence = 5");
  for (const std::string& change :
       {std::string("UPDATE history_effects SET type = type + 1000 WHERE (history_operation_id, \"order\") = (SELECT "
                    "history_operation_id, \"order\" FROM history_effects ORDER BY 1 DESC, 2 LIMIT 1)"),
        std::string("UPDATE history_operations SET type = type + 1000 WHERE id = (SELECT max(id) FROM "
                    "history_operations)")}) {
    SCOPED_TRACE(change);
    const int64_t ledger = QueryInt(b, change.find("history_effects") != std::string::npos
                                           ? "SELECT max(history_operation_id) >> 32 FROM history_effects"
                                           : "SELECT max(id) >> 32 FROM history_operations");
    ExecSql(b, change);
    auto e = Diff(Db(a), Db(b));
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_EQ(e->first_divergent_ledger, std::optional<Ledger>(static_cast<Ledger>(ledger)));
    ExecSql(b, std::string(change).replace(change.find("+ 1000"), 6, "- 1000"));
  }
  auto back = Diff(Db(a), Db(b));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->identical) << report::RenderDiffText(*back);
}

TEST(NoFalseAlarms, TimestampVersusTimestamptzAtUtcIsEqualAndNoted) {
  std::string a = LoadDump(), b = LoadDump();
  ExecSql(b, "ALTER TABLE history_ledgers ALTER COLUMN closed_at TYPE timestamptz USING closed_at AT TIME ZONE 'UTC'");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->identical) << report::RenderDiffText(*r);
  ASSERT_EQ(r->schema_notes.size(), 1u);
  EXPECT_NE(r->schema_notes[0].find("history_ledgers.closed_at is timestamp on the left, timestamptz"),
            std::string::npos);
  ExecSql(b, "UPDATE history_ledgers SET closed_at = closed_at + interval '1 second' WHERE sequence = 6");
  auto d = Diff(Db(a), Db(b));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->first_divergent_ledger, std::optional<Ledger>(6));
}

// Issue 22: a common column of another type class (jsonb against json, bigint against numeric) is a
// schema difference, and its table differs at every ledger holding a row of it (the digest tags
// values with their class) while the rows read the same as text. The row diff carries the columns
// and the ledger line says why in place of an empty row diff.
TEST(Schema, ColumnsOfAnotherTypeClassExplainTheEmptyRowDiff) {
  std::string a = LoadDump(), b = LoadDump();
  ExecSql(b, "ALTER TABLE history_effects ALTER COLUMN details TYPE json USING details::json; ALTER TABLE "
             "history_ledgers ALTER COLUMN fee_pool TYPE numeric");
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(std::set<std::string>(r->schema_differences.begin(), r->schema_differences.end()),
            (std::set<std::string>{"column history_ledgers.fee_pool is int on the left, numeric on the right",
                                   "column history_effects.details is jsonb on the left, json on the right"}));
  ASSERT_TRUE(r->first_divergent_ledger);
  const Ledger first = *r->first_divergent_ledger;
  // Every ledger holding a ledger row differs in history_ledgers.
  for (const auto& t : r->tables) {
    if (t.table == "history_ledgers") {
      EXPECT_EQ(t.divergent_ledgers, r->coverage.left.held);
    }
  }
  const std::string text = report::RenderDiffText(*r);
  const nlohmann::json j = report::DiffReportToJson(*r);
  ASSERT_EQ(r->rows.size(), j["rows"].size());
  ASSERT_FALSE(r->rows.empty());
  std::set<std::string> explained;
  for (size_t i = 0; i < r->rows.size(); ++i) {
    const diff::TableRowDiff& rd = r->rows[i];
    SCOPED_TRACE(rd.table);
    EXPECT_TRUE(rd.NoRowDiffers());
    ASSERT_EQ(rd.class_differences.size(), 1u);
    const diff::ColumnClassDifference& c = rd.class_differences[0];
    const std::string column = rd.table == "history_ledgers" ? "fee_pool (int on the left, numeric on the right)"
                                                             : "details (jsonb on the left, json on the right)";
    EXPECT_EQ(c.column + " (" + c.left + " on the left, " + c.right + " on the right)", column);
    EXPECT_NE(text.find(fmt::format("{} at ledger {}: columns of another type class: {}; the rows read the same as "
                                    "text\n",
                                    rd.table, first, column)),
              std::string::npos)
        << text;
    EXPECT_EQ(j["rows"][i]["class_differences"], nlohmann::json::array({{{"column", c.column},
                                                                           {"left", c.left},
                                                                           {"right", c.right}}}));
    explained.insert(rd.table);
  }
  EXPECT_TRUE(explained.count("history_ledgers")) << text;
  EXPECT_EQ(text.find(fmt::format("at ledger {}:\n", first)), std::string::npos) << "an empty row diff\n" << text;
}

// Two rows tied on the key (ledger 1, k NULL), in opposite physical order per side, under a
// unique index that must not be trusted: over a nullable column, or left invalid by a failed
// CREATE UNIQUE INDEX CONCURRENTLY.
std::string TiedRows(bool reversed, bool invalid_index) {
  std::string s = UniqueName("tie");
  std::string rows = reversed ? "(1, NULL, 'b'), (1, NULL, 'a'), (2, 1, 'c')" : "(1, NULL, 'a'), (1, NULL, 'b'), (2, 1, 'c')";
  ExecSql(TestConninfo(), fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.t (ledger_sequence int NOT NULL, k int, "
                                      "v text); INSERT INTO {0}.t VALUES {1}",
                                      pg::QuoteIdent(s), rows));
  auto c = Connect();
  if (invalid_index) {
    EXPECT_FALSE(c->Run(fmt::format("CREATE UNIQUE INDEX CONCURRENTLY t_ledger ON {}.t (ledger_sequence)",
                                    pg::QuoteIdent(s))).ok());
    EXPECT_EQ(QueryInt(TestConninfo(), fmt::format("SELECT count(*) FROM pg_index WHERE NOT indisvalid AND indrelid = "
                                                   "'{}.t'::regclass", s)),
              1);
  } else {
    ExecSql(TestConninfo(), fmt::format("CREATE UNIQUE INDEX ON {}.t (ledger_sequence, k)", pg::QuoteIdent(s)));
  }
  return s;
}

TEST(NoFalseAlarms, UniqueShortcutOnlyForValidNotNullIndexes) {
  auto spec = dump::ParseProfileSpecJson(
      R"({"name": "tie", "tables": [{"table": "t", "ledger": {"column": "ledger_sequence"}, "key": ["ledger_sequence", "k"]}]})",
      "test");
  ASSERT_TRUE(spec.ok());
  for (bool invalid : {false, true}) {
    SCOPED_TRACE(invalid ? "invalid index" : "nullable key column");
    std::string a = TiedRows(false, invalid), b = TiedRows(true, invalid);
    for (const auto& r : {LedgerRange{1, 2}, LedgerRange{1, 1}}) {
      diff::DiffOptions o;
      o.range = r;
      auto d = Diff(Db(TestConninfo(), a), Db(TestConninfo(), b), o, *spec);
      ASSERT_TRUE(d.ok()) << d.status().message();
      EXPECT_TRUE(d->identical) << report::RenderDiffText(*d);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 9. Encoding: raw tag bytes at field boundaries, known answers, base_is_exact

// The digest of ledger 1 of a one-table schema t(ledger_sequence int, <cols>) (profile auto).
std::string LedgerOneDigest(const std::string& cols, const std::string& values) {
  std::string s = UniqueName("kat");
  ExecSql(TestConninfo(), fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.t (ledger_sequence int, {1}); "
                                      "INSERT INTO {0}.t VALUES {2}",
                                      pg::QuoteIdent(s), cols, values));
  auto spec = dump::LoadProfileSpec("auto");
  dump::DigestOptions o;
  o.range = LedgerRange{1, 1};
  std::string hex;
  NullReporter rep;
  auto r = dump::DigestSchema(
      TestConninfo(), s, *spec, o,
      [&](const dump::Chunk& c) {
        hex = c.ledgers.empty() ? "0:" : fmt::format("{}:{}", c.counts[c.At(0, 0)], c.digests[c.At(0, 0)].Hex());
        return Status::Ok();
      },
      rep);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return hex;
}

TEST(Encoding, RawTagByteAtAFieldBoundaryIsNotAmbiguous) {
  EXPECT_NE(LedgerOneDigest("a text, b text", "(1, 'x' || chr(4) || 'y', 'z')"),
            LedgerOneDigest("a text, b text", "(1, 'x', 'y' || chr(4) || 'z')"));
  EXPECT_NE(LedgerOneDigest("a text, b text", "(1, 'x' || chr(1), 'y')"),
            LedgerOneDigest("a text, b text", "(1, 'x', chr(1) || 'y')"));
}

// Golden digests, computed once (re-pinned for manifest version 3, the multiset digest): any
// change to the row encoding, the class tags, the canonical column order, the per-ledger digest
// or the session pinning shows here (and needs a manifest version bump).
TEST(Encoding, KnownAnswers) {
  struct Case {
    const char* cols;
    const char* values;
    const char* golden;
  };
  const Case cases[] = {
      {"v int8", "(1, 42), (1, -7), (1, NULL)", "3:e8e28deaaa840ad49f29607178ef84cb"},
      {"v numeric", "(1, 1.50), (1, -0.0001)", "2:57a5f9cd432933b6bc91509d28e24b2b"},
      {"v float8", "(1, 0.1), (1, '-0'), (1, 'NaN')", "3:47883320ffba1c8cf88b14c7921f009c"},
      {"v text", "(1, 'héllo'), (1, E'tab\\there'), (1, '')", "3:0b38c8df7468bcb3cc05692543c53682"},
      {"v bool", "(1, true), (1, false)", "2:79227546bfdf70b575d5e1d10b4d56b1"},
      {"v timestamptz", "(1, '2020-01-02 03:04:05.678+02')", "1:f333ee2be51f2e288641959fa9c56f50"},
      {"v interval", "(1, '1 day 02:03:04')", "1:221459e142d6a81de588385ba0d01b43"},
      {"v json", "(1, '{\"b\": 1,  \"a\": [1, 2]}')", "1:c6c709ea27d6d6f923d37adf3a1ed32f"},
      {"v jsonb", "(1, '{\"b\": 1,  \"a\": [1, 2]}')", "1:1a30d99e3f4d9407cd503e16a2674957"},
      {"v bytea", "(1, '\\x00ff10')", "1:b9f314a84cf922d9a75c9cfaed9e65cc"},
      {"v int4[]", "(1, '{1,NULL,3}')", "1:64a4e793e5b41b20a4596d1137b17649"},
      {"v uuid", "(1, '00000000-0000-0000-0000-000000000001')", "1:e36afed4a3a2c2dfce7e2bf29380b3b0"},
      {"zz text, aa int8", "(1, 'last', 1)", "1:816374d03d25b77afc9c5b36c5217aeb"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.cols);
    EXPECT_EQ(LedgerOneDigest(c.cols, c.values), c.golden);
  }
}

// Renumbers asset ids in reverse (every trade turns around to keep base < counter) and flips
// every trade's columns the way Horizon would have stored it.
void ReverseAssets(const std::string& conninfo) {
  DropForeignKeys(conninfo);
  ExecSql(conninfo, "UPDATE history_assets SET id = 1000 - id; "
                    "UPDATE history_trades SET base_asset_id = 1000 - counter_asset_id, counter_asset_id = 1000 - "
                    "base_asset_id, base_account_id = counter_account_id, counter_account_id = base_account_id, "
                    "base_amount = counter_amount, counter_amount = base_amount, base_offer_id = counter_offer_id, "
                    "counter_offer_id = base_offer_id, price_n = price_d, price_d = price_n, base_is_seller = NOT "
                    "base_is_seller, base_is_exact = NOT base_is_exact");
}

TEST(Encoding, BaseIsExactFlipsWithTheTradeAndAChangeIsFound) {
  std::string a = LoadDump(), b = LoadDump();
  const char* mixed = "UPDATE history_trades SET base_is_exact = CASE WHEN history_operation_id = 81604382721 AND "
                      "\"order\" = 1 THEN true WHEN \"order\" % 3 = 0 THEN true WHEN \"order\" % 3 = 1 THEN false END";
  ExecSql(a, mixed);
  ExecSql(b, mixed);
  ASSERT_GT(QueryInt(a, "SELECT count(DISTINCT base_is_exact) FROM history_trades"), 0);
  ReverseAssets(b);
  auto r = Diff(Db(a), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->identical) << report::RenderDiffText(*r);
  ExecSql(b, "UPDATE history_trades SET base_is_exact = NOT base_is_exact WHERE history_operation_id = 81604382721 "
             "AND \"order\" = 1");
  auto d = Diff(Db(a), Db(b));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->first_divergent_ledger, std::optional<Ledger>(19));
  ASSERT_EQ(d->rows.size(), 1u);
  ASSERT_EQ(d->rows[0].changed.size(), 1u);
  ASSERT_EQ(d->rows[0].changed[0].changes.size(), 1u);
  EXPECT_EQ(d->rows[0].changed[0].changes[0].column, "base_is_exact");
}

// ---------------------------------------------------------------------------------------------
// 7. The checks and the row diff read the digest's snapshot

TEST(Snapshot, TheDigestSnapshotStaysImportableUntilBeforeCommitReturns) {
  std::string s = UniqueName("snap");
  ExecSql(TestConninfo(), fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.history_ledgers (sequence int, x text); "
                                      "INSERT INTO {0}.history_ledgers VALUES (1, 'a'), (2, 'b'), (3, 'c')",
                                      pg::QuoteIdent(s)));
  dump::DigestOptions o;
  int64_t seen_in_snapshot = -1, seen_by_the_digests_session = -1;
  o.before_commit = [&](const std::string& id, const dump::SeenReferences&, pg::Connection& in_snapshot) -> Status {
    // A writer commits after the digest read the table...
    auto w = Connect();
    Status st = w->Run(fmt::format("INSERT INTO {}.history_ledgers VALUES (2, 'late')", pg::QuoteIdent(s)));
    if (!st.ok()) return st;
    // ...and a reader in the digest's snapshot does not see it.
    auto r = Connect();
    LD_RETURN_IF_ERROR(r->Run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    LD_RETURN_IF_ERROR(r->Run("SET TRANSACTION SNAPSHOT " + pg::QuoteLiteral(id)));
    LD_ASSIGN_OR_RETURN(pg::Rows rows,
                        r->Exec(fmt::format("SELECT count(*) FROM {}.history_ledgers", pg::QuoteIdent(s))));
    seen_in_snapshot = rows.GetInt(0, 0);
    // The digest's own session, handed over for the checks, reads the same instant.
    LD_ASSIGN_OR_RETURN(pg::Rows own,
                        in_snapshot.Exec(fmt::format("SELECT count(*) FROM {}.history_ledgers", pg::QuoteIdent(s))));
    seen_by_the_digests_session = own.GetInt(0, 0);
    return Status::Ok();
  };
  NullReporter rep;
  auto d = dump::DigestSchema(TestConninfo(), s, dump::HorizonProfileSpec(), o, {}, rep);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->rows, 3u);
  EXPECT_EQ(seen_in_snapshot, 3);
  EXPECT_EQ(seen_by_the_digests_session, 3);
  EXPECT_EQ(QueryInt(TestConninfo(), fmt::format("SELECT count(*) FROM {}.history_ledgers", pg::QuoteIdent(s))), 4);
}

// ---------------------------------------------------------------------------------------------
// 8. The lookup and invariant checks take the references the digest saw (diff/checks.h)

// A dump with broken references: a referenced account deleted, an operation participant whose
// account never existed (ledger `*ledger`), an unreferenced account, and a transaction
// participant without a ledger whose account is missing (seen only by a scan of every row).
std::string BrokenReferencesDump(Ledger* ledger) {
  std::string c = LoadDump();
  ExecSql(c, "ALTER TABLE history_transaction_participants ALTER COLUMN history_transaction_id DROP NOT NULL; "
             "DELETE FROM history_accounts WHERE id = (SELECT min(history_account_id) FROM "
             "history_transaction_participants); "
             "INSERT INTO history_accounts (id, address) VALUES (88888, 'GUNUSED'); "
             "CREATE TEMP TABLE x AS SELECT * FROM history_operation_participants ORDER BY history_operation_id "
             "DESC LIMIT 1; UPDATE x SET history_account_id = 31337; "
             "INSERT INTO history_operation_participants SELECT * FROM x; "
             "CREATE TEMP TABLE y AS SELECT * FROM history_transaction_participants LIMIT 1; "
             "UPDATE y SET history_transaction_id = NULL, history_account_id = 31338; "
             "INSERT INTO history_transaction_participants SELECT * FROM y");
  *ledger = static_cast<Ledger>(QueryInt(c, "SELECT history_operation_id >> 32 FROM history_operation_participants "
                                            "WHERE history_account_id = 31337"));
  return c;
}

nlohmann::json ChecksJson(const diff::DiffReport& r) {
  nlohmann::json j = report::DiffReportToJson(r);
  return {{"lookups", j["lookups"]}, {"invariants", j["invariants"]}};
}

TEST(Checks, DiffFindsTheSameLookupAndInvariantFactsFromTheDigestAsFromAScan) {
  Ledger planted = 0;
  std::string a = LoadDump(), b = BrokenReferencesDump(&planted);
  ASSERT_GT(planted, 0u);
  ExecSql(a, "ALTER TABLE history_transaction_participants ALTER COLUMN history_transaction_id DROP NOT NULL");
  const Ledger top = static_cast<Ledger>(QueryInt(a, "SELECT max(sequence) FROM history_ledgers"));
  for (std::optional<LedgerRange> range : {std::optional<LedgerRange>(), std::optional<LedgerRange>({1, top})}) {
    SCOPED_TRACE(range ? range->str() : "no --range");
    diff::DiffOptions client, scan;
    client.range = scan.range = range;
    scan.resolve_on_client = false;
    auto c = Diff(Db(a), Db(b), client), s = Diff(Db(a), Db(b), scan);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(ChecksJson(*c).dump(2), ChecksJson(*s).dump(2));
    EXPECT_FALSE(c->identical);
    const std::string text = report::RenderDiffText(*c);
    const auto* accounts = Lookup(*c, "history_accounts");
    ASSERT_NE(accounts, nullptr);
    std::string missing;
    for (const auto& i : accounts->issues)
      if (i.kind == "referenced_id_missing" && i.side == Side::kRight) missing = i.detail;
    EXPECT_NE(missing.find("31337"), std::string::npos) << text;
    // The participant without a ledger references 31338: every row counts without --range.
    EXPECT_EQ(missing.find("31338") != std::string::npos, !range) << text;
    EXPECT_EQ(Violations(*c, "history_operation_participants_account_exists", "right"),
              static_cast<uint64_t>(QueryInt(b, "SELECT count(*) FROM history_operation_participants p WHERE NOT "
                                                "EXISTS (SELECT 1 FROM history_accounts a WHERE a.id = "
                                                "p.history_account_id)")));
    EXPECT_EQ(Violations(*c, "history_operation_participants_account_exists", "left"), 0u);
    EXPECT_GT(Violations(*c, "history_transaction_participants_account_exists", "right"), 0u);
  }
}

// In the digest's snapshot, the checks read facts from what it saw and from a scan.
std::string InvariantsText(const std::vector<diff::InvariantResult>& v) {
  std::string out;
  for (const auto& r : v)
    out += fmt::format("{} {} {} {}\n", r.name, ToString(r.side), r.violations, r.first_ledger ? int64_t(*r.first_ledger) : -1);
  return out;
}

TEST(Checks, TheDigestsReferencesAreTakenOnlyWhereTheyCoverWhatAScanWouldRead) {
  Ledger planted = 0;
  std::string b = BrokenReferencesDump(&planted);
  const int64_t first_missing = QueryInt(b, "SELECT min(history_operation_id >> 32) FROM history_operation_participants "
                                            "p WHERE NOT EXISTS (SELECT 1 FROM history_accounts a WHERE a.id = "
                                            "p.history_account_id)");
  ASSERT_GT(first_missing, 0);
  const dump::ProfileSpec spec = dump::HorizonProfileSpec();
  dump::DigestOptions o;
  o.jobs = 3;
  o.chunk_ledgers = 7;  // many units, several workers: references merged across them
  Status inside = Status::Ok();
  std::string outcome;
  o.before_commit = [&](const std::string& id, const dump::SeenReferences& seen, pg::Connection&) -> Status {
    auto conn = Connect(b);
    LD_RETURN_IF_ERROR(conn->Run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    LD_RETURN_IF_ERROR(conn->Run("SET TRANSACTION SNAPSHOT " + pg::QuoteLiteral(id)));
    LD_ASSIGN_OR_RETURN(dump::ResolvedProfile profile, dump::ResolveProfile(*conn, "public", spec));
    // The operation participant planted with account 31337, as the resolution saw it.
    const dump::JoinReferences* op = seen.Find("history_operation_participants", "t.\"history_account_id\"",
                                               "history_accounts");
    if (!op) return Status::Runtime("no references seen for history_operation_participants");
    EXPECT_TRUE(std::binary_search(op->missing_ids.begin(), op->missing_ids.end(), 31337));
    EXPECT_TRUE(std::is_sorted(op->missing_ids.begin(), op->missing_ids.end()));
    EXPECT_EQ(op->first_missing_ledger, std::optional<Ledger>(static_cast<Ledger>(first_missing)));
    LD_ASSIGN_OR_RETURN(auto outside, dump::CountRowsOutsideRange(*conn, "public", profile, seen.range));
    auto facts = [&](const std::optional<LedgerRange>& range, const diff::KnownReferences& known) {
      auto f = diff::ReadLookupFacts(*conn, "public", spec, profile, range, known);
      EXPECT_TRUE(f.ok()) << f.status().message();
      std::map<std::string, std::set<std::string>> referenced;
      if (f.ok())
        for (const auto& l : *f) referenced[l.table] = l.ReferencedIds();
      return referenced;
    };
    const diff::KnownReferences known{&seen, seen.range, outside};
    // Scoped to the digest's range: the same facts with or without what it saw.
    EXPECT_EQ(facts(seen.range, known), facts(seen.range, {}));
    // Every row counting: the participant without a ledger makes its table's references a scan.
    auto all = facts(std::nullopt, known);
    EXPECT_EQ(all, facts(std::nullopt, {}));
    EXPECT_EQ(all["history_accounts"].count("31338"), 1u);
    // A planted reference only the digest "saw" shows where its facts were taken.
    dump::SeenReferences tampered = seen;
    for (auto& j : tampered.joins)
      if (j.table == "history_effects" && j.lookup_table == "history_accounts") j.missing_ids.push_back(999999999);
    const diff::KnownReferences tampered_known{&tampered, seen.range, outside};
    EXPECT_EQ(facts(seen.range, tampered_known)["history_accounts"].count("999999999"), 1u) << "taken from the digest";
    EXPECT_EQ(facts(LedgerRange{seen.range.from, seen.range.to - 1}, tampered_known)["history_accounts"].count(
                  "999999999"),
              0u)
        << "another range: scanned";
    EXPECT_EQ(facts(std::nullopt, tampered_known)["history_accounts"].count("999999999"), 0u)
        << "rows outside the digest's range: scanned";
    dump::SeenReferences partial = tampered;
    std::erase_if(partial.joins, [](const dump::JoinReferences& j) { return j.table == "history_trades"; });
    const diff::KnownReferences partial_known{&partial, seen.range, outside};
    EXPECT_EQ(facts(seen.range, partial_known)["history_accounts"].count("999999999"), 0u)
        << "a join the digest did not resolve: scanned";
    // Invariants: a reference rule from the digest, the same counts and first ledgers as its SQL.
    LD_ASSIGN_OR_RETURN(auto from_digest, diff::CheckInvariants(*conn, "public", profile, seen.range, Side::kRight, &seen));
    LD_ASSIGN_OR_RETURN(auto from_sql, diff::CheckInvariants(*conn, "public", profile, seen.range, Side::kRight, nullptr));
    EXPECT_EQ(InvariantsText(from_digest), InvariantsText(from_sql));
    EXPECT_NE(InvariantsText(from_digest).find("history_operation_participants_account_exists right"),
              std::string::npos);
    for (auto& j : tampered.joins)
      if (j.table == "history_operation_participants") j.missing_rows += 1000;
    LD_ASSIGN_OR_RETURN(auto tampered_inv,
                        diff::CheckInvariants(*conn, "public", profile, seen.range, Side::kRight, &tampered));
    for (const auto& v : tampered_inv)
      if (v.name == "history_operation_participants_account_exists") {
        outcome = "checked";
        EXPECT_GE(v.violations, 1001u) << "taken from the digest";
      }
    return Status::Ok();
  };
  NullReporter rep;
  auto d = dump::DigestSchema(b, "public", spec, o, {}, rep);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(outcome, "checked");
}

// ---------------------------------------------------------------------------------------------
// 10. Manifest version

TEST(Manifest, OldVersionIsAClearErrorSayingToReSave) {
  std::string conninfo = LoadDump();
  std::string path = (std::filesystem::temp_directory_path() / (UniqueName("old") + ".ldm")).string();
  NullReporter rep;
  auto s = dump::DigestToManifest(conninfo, "public", dump::HorizonProfileSpec(), {}, path,
                                  dump::ManifestDetail::kCompact, rep);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(dump::ManifestReader::Open(path).ok());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const char v1[4] = {1, 0, 0, 0};
    f.write(v1, 4);
  }
  auto r = diff::DiffSources(diff::ManifestSource{path}, Db(conninfo), dump::HorizonProfileSpec(), {}, rep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), Status::Kind::kUsage);
  EXPECT_NE(r.status().message().find("version 1 is not supported"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("re-save"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ledgerdiff
