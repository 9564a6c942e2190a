// The state tables at a common ledger (issue 45): verify-range compares what Horizon serves now
// (accounts, signers, trust lines, offers) when both sides' state stands at the same ledger.
// Every case runs on the real kahuna dump's schema, its state filled from its own history
// (accounts from history_accounts, trust lines and offers from history_trades), the ledger in
// key_value_store exp_ingest_last_ledger, under both engines.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/stage_timer.h"
#include "tests/follow_harness.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"
#include "tests/state_support.h"

namespace ledgerdiff {
namespace {

using nlohmann::json;
using testing::ExecSql;
using testing::LoadDump;
using testing::QueryInt;
using testing::RunCli;
using namespace state_support;

const json* FindDifference(const json& state, const std::string& table, const std::string& kind) {
  for (const auto& d : state["differences"])
    if (d["table"] == table && d["kind"] == kind) return &d;
  return nullptr;
}

// The state of a verify-range that must find the history identical and the state divergent with
// `differing_rows` differing keys; null (and a test failure) when it does not.
json DivergentState(const Sides& s, const std::string& engine, int64_t differing_rows,
                    const std::vector<std::string>& extra = {}) {
  auto r = VerifyRange(s.left, s.right, engine, extra);
  if (r.exit_code != 1) {
    ADD_FAILURE() << engine << ": exit " << r.exit_code << "\n" << r.err << r.out;
    return nullptr;
  }
  const json j = json::parse(r.out);
  EXPECT_EQ(j["verdict"], "divergent") << engine;
  EXPECT_EQ(j["history_verdict"], "identical") << engine;
  EXPECT_EQ(j["state"]["verdict"], "divergent") << engine;
  EXPECT_EQ(j["state"]["differing_rows"], differing_rows) << engine << j["state"].dump();
  return j["state"];
}

TEST(State, FilledStateHasRowsInEveryTableTheTestsChange) {
  Sides s = FilledSides();
  EXPECT_GT(QueryInt(s.left, "SELECT count(*) FROM accounts"), 10);
  EXPECT_GT(QueryInt(s.left, "SELECT count(*) FROM trust_lines"), 0);
  EXPECT_GT(QueryInt(s.left, "SELECT count(*) FROM offers"), 0);
}

TEST(State, TwoCopiesAtTheSameLedgerAreIdenticalWithStateCompared) {
  Sides s = FilledSides();
  const int64_t accounts = QueryInt(s.left, "SELECT count(*) FROM accounts");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(s.left, s.right, engine);
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "identical") << engine;
    const json& st = j["state"];
    EXPECT_EQ(st["compared"], true) << engine << st.dump();
    EXPECT_EQ(st["verdict"], "identical") << engine;
    EXPECT_EQ(st["ledger_left"], 61);
    EXPECT_EQ(st["ledger_right"], 61);
    bool saw_accounts = false;
    for (const auto& t : st["tables"])
      if (t["table"] == "accounts") {
        saw_accounts = true;
        EXPECT_EQ(t["left_rows"], accounts);
        EXPECT_EQ(t["right_rows"], accounts);
        EXPECT_EQ(t["identical"], true);
      }
    EXPECT_TRUE(saw_accounts) << st.dump();
    // The state line answers for the state tables: they are off the list of tables without a
    // ledger mapping, and what truly has neither a ledger nor a key stays on it.
    const auto& no_mapping = j["uncompared_tables"];
    EXPECT_EQ(std::count(no_mapping.begin(), no_mapping.end(), "accounts"), 0) << no_mapping.dump();
    EXPECT_EQ(std::count(no_mapping.begin(), no_mapping.end(), "key_value_store"), 1) << no_mapping.dump();
    // The state tables are no longer listed as having no ledger mapping.
    auto text = RunCli({"verify-range", "--left", s.left, "--right", s.right, "--range", kRange, "--engine", engine});
    ASSERT_EQ(text.exit_code, 0) << text.err << text.out;
    EXPECT_NE(text.out.find("state: identical at ledger 61"), std::string::npos) << text.out;
    const auto unmapped = text.out.find("not compared (no ledger mapping)");
    if (unmapped != std::string::npos) {
      const std::string line = text.out.substr(unmapped, text.out.find('\n', unmapped) - unmapped);
      for (const char* table : {"accounts,", "offers", "trust_lines", "accounts_signers"})
        EXPECT_EQ(line.find(table), std::string::npos) << line;
    }
  }
}

TEST(State, DiffWhichComparesNoStateStillListsTheStateTablesAsNotCompared) {
  Sides s = FilledSides();
  auto r = RunCli({"diff", s.left + "::public", s.right + "::public", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json unmapped = json::parse(r.out)["uncompared_tables"];
  for (const char* table : {"accounts", "accounts_signers", "offers", "trust_lines"})
    EXPECT_EQ(std::count(unmapped.begin(), unmapped.end(), table), 1) << table << " " << unmapped.dump();
}

TEST(State, AChangedBalanceADeletedSignerAndAnExtraOfferAreNamedByKey) {
  Sides s = FilledSides();
  const std::string account = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H";
  const std::string signer = "GCQZP3IU7XU6EJ63JZXKCQOYT2RNXN3HB5CNHENNUEUHSMA4VUJJJSEN";
  ExecSql(s.right, fmt::format("UPDATE accounts SET balance = balance + 1 WHERE account_id = '{0}';"
                               "DELETE FROM accounts_signers WHERE account_id = '{1}';"
                               "INSERT INTO offers VALUES ('{0}', 99999, 'USD', 'EUR', 5, 1, 2, 0.5, 0, 61);",
                               account, signer));
  for (const auto& engine : kEngines) {
    const json st = DivergentState(s, engine, 3);
    ASSERT_TRUE(st.is_object()) << engine;
    const json* changed = FindDifference(st, "accounts", "changed");
    ASSERT_NE(changed, nullptr) << engine << st.dump();
    EXPECT_EQ((*changed)["key"]["account_id"], account);
    EXPECT_NE((*changed)["left"]["balance"], (*changed)["right"]["balance"]);
    EXPECT_EQ((*changed)["left"]["home_domain"], (*changed)["right"]["home_domain"]);
    const json* signer_gone = FindDifference(st, "accounts_signers", "only left");
    ASSERT_NE(signer_gone, nullptr) << engine << st.dump();
    EXPECT_EQ((*signer_gone)["key"]["signer"], signer);
    EXPECT_EQ((*signer_gone)["key"]["account_id"], signer);
    EXPECT_TRUE((*signer_gone)["right"].is_null());
    const json* extra = FindDifference(st, "offers", "only right");
    ASSERT_NE(extra, nullptr) << engine << st.dump();
    EXPECT_EQ((*extra)["key"]["offer_id"], "99999");
    for (const auto& t : st["tables"])
      EXPECT_EQ(t["identical"], t["table"] != "accounts" && t["table"] != "accounts_signers" && t["table"] != "offers")
          << engine << t.dump();
    auto text = RunCli({"verify-range", "--left", s.left, "--right", s.right, "--range", kRange, "--engine", engine});
    ASSERT_EQ(text.exit_code, 1) << text.err << text.out;
    EXPECT_NE(text.out.find(fmt::format("accounts: account_id={}: changed: balance left", account)), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("offers: offer_id=99999: only right"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("divergent: the state tables differ"), std::string::npos) << text.out;
  }
  // JUnit, Markdown and HTML carry the state's check and the combined verdict.
  testing::ScratchDir dir("ledgerdiff-state-reports-");
  auto r = RunCli({"verify-range", "--left", s.left, "--right", s.right, "--range", kRange, "--junit",
                   dir.path + "/junit.xml", "--markdown", dir.path + "/summary.md", "--report", dir.path + "/html",
                   "--metrics", dir.path + "/state.prom"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  // ...and so does the metrics file: compared, divergent, three rows.
  const auto m = testing::Samples(testing::ReadFileBytes(dir.path + "/state.prom"));
  EXPECT_EQ(m.at("ledgerdiff_state_compared"), "1");
  EXPECT_EQ(m.at("ledgerdiff_state_divergent"), "1");
  EXPECT_EQ(m.at("ledgerdiff_state_differing_rows"), "3");
  EXPECT_EQ(m.count("ledgerdiff_state_last_agreed_ledger"), 0u);
  const std::string junit = testing::ReadFileBytes(dir.path + "/junit.xml");
  const auto state_case = junit.find("<testcase classname=\"ledgerdiff.verify-range\" name=\"state\">");
  ASSERT_NE(state_case, std::string::npos) << junit;
  EXPECT_NE(junit.find("<failure", state_case), std::string::npos) << junit;
  EXPECT_NE(junit.find("offers: offer_id=99999: only right"), std::string::npos) << junit;
  const std::string markdown = testing::ReadFileBytes(dir.path + "/summary.md");
  EXPECT_NE(markdown.find("divergent"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("state: divergent at ledger 61"), std::string::npos) << markdown;
  const std::string html = testing::ReadFileBytes(dir.path + "/html/index.html");
  EXPECT_NE(html.find("state: divergent at ledger 61"), std::string::npos);
}

TEST(State, EveryDifferingKeyOfATableIsNamedAcrossItsBuckets) {
  Sides s = FilledSides();
  ExecSql(s.right, "UPDATE accounts SET balance = balance + 7");
  const int64_t accounts = QueryInt(s.left, "SELECT count(*) FROM accounts");
  for (const auto& engine : kEngines) {
    auto all = VerifyRange(s.left, s.right, engine, {"--max-rows", "1000"});
    ASSERT_EQ(all.exit_code, 1) << engine << "\n" << all.err << all.out;
    json st = json::parse(all.out)["state"];
    EXPECT_EQ(st["differing_rows"], accounts) << engine;
    ASSERT_EQ(st["differences"].size(), static_cast<size_t>(accounts)) << engine;
    for (const auto& d : st["differences"]) {
      EXPECT_EQ(d["kind"], "changed");
      EXPECT_EQ(std::stoll(d["right"]["balance"].get<std::string>()) - std::stoll(d["left"]["balance"].get<std::string>()), 7);
    }
    // --max-rows bounds what is listed, not what is counted.
    auto few = VerifyRange(s.left, s.right, engine, {"--max-rows", "3"});
    ASSERT_EQ(few.exit_code, 1) << engine;
    json fst = json::parse(few.out)["state"];
    EXPECT_EQ(fst["differing_rows"], accounts);
    EXPECT_EQ(fst["differences"].size(), 3u);
  }
}

TEST(State, RenumberedSurrogateIdsLeaveTheStateIdentical) {
  // The right side re-ingested: every surrogate id of its history renumbered, its trades turned
  // around. Its state, filled from that history, names the same accounts, assets and offers.
  Sides s{LoadDump(), LoadDump()};
  testing::Renumber(s.right);
  FillState(s.left, 61);
  FillState(s.right, 61);
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(s.left, s.right, engine);
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
    json st = json::parse(r.out)["state"];
    EXPECT_EQ(st["compared"], true) << st.dump();
    EXPECT_EQ(st["verdict"], "identical") << st.dump();
  }
  // The ids do show where they are data: an account's sequence number derived from its id.
  ExecSql(s.right, "UPDATE accounts a SET sequence_number = h.id::bigint << 32 FROM history_accounts h WHERE "
                   "h.address = a.account_id");
  auto r = VerifyRange(s.left, s.right, "text");
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_EQ(json::parse(r.out)["state"]["verdict"], "divergent");
}

// Issue 45's fourth planted slip: a re-ingested copy (surrogate ids renumbered) whose trust line
// was written under another asset (the asset id resolved to the wrong row). Found and named by its
// key, under both engines, with the asset columns that differ.
TEST(State, ATrustLineUnderAnotherAssetOnARenumberedCopyIsNamedByKey) {
  Sides s{LoadDump(), LoadDump()};
  testing::Renumber(s.right);
  FillState(s.left, 61);
  FillState(s.right, 61);
  const std::string key = testing::QueryText(s.right, "SELECT min(ledger_key) FROM trust_lines");
  ExecSql(s.right, fmt::format("UPDATE trust_lines t SET asset_code = o.asset_code, asset_issuer = o.asset_issuer "
                               "FROM (SELECT asset_code, asset_issuer FROM history_assets a WHERE asset_type <> 'native' "
                               "AND NOT EXISTS (SELECT 1 FROM trust_lines x WHERE x.ledger_key = '{0}' AND "
                               "x.asset_code = a.asset_code AND x.asset_issuer = a.asset_issuer) ORDER BY id LIMIT 1) o "
                               "WHERE t.ledger_key = '{0}'",
                               key));
  for (const auto& engine : kEngines) {
    const json st = DivergentState(s, engine, 1);
    ASSERT_TRUE(st.is_object()) << engine;
    const json* changed = FindDifference(st, "trust_lines", "changed");
    ASSERT_NE(changed, nullptr) << engine << st.dump();
    EXPECT_EQ((*changed)["key"]["ledger_key"], key);
    EXPECT_NE((*changed)["left"]["asset_code"].dump() + (*changed)["left"]["asset_issuer"].dump(),
              (*changed)["right"]["asset_code"].dump() + (*changed)["right"]["asset_issuer"].dump())
        << (*changed).dump();
    EXPECT_EQ((*changed)["left"]["account_id"], (*changed)["right"]["account_id"]);
  }
}

TEST(State, SidesAtDifferentLedgersAreIncompleteUnlessSkipped) {
  Sides s = FilledSides(61, 60);
  // A state difference at different ledgers is no divergence: nothing was compared.
  ExecSql(s.right, "UPDATE accounts SET balance = balance + 1");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(s.left, s.right, engine);
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "incomplete") << engine;
    EXPECT_EQ(j["state"]["compared"], false);
    EXPECT_EQ(j["state"]["verdict"], "incomplete");
    EXPECT_EQ(j["state"]["ledger_left"], 61);
    EXPECT_EQ(j["state"]["ledger_right"], 60);
    auto skipped = VerifyRange(s.left, s.right, engine, {"--skip-state"});
    ASSERT_EQ(skipped.exit_code, 0) << engine << "\n" << skipped.err << skipped.out;
    EXPECT_EQ(json::parse(skipped.out)["state"]["verdict"], "skipped");
  }
  testing::ScratchDir dir("ledgerdiff-state-apart-");
  auto text = RunCli({"verify-range", "--left", s.left, "--right", s.right, "--range", kRange, "--metrics",
                      dir.path + "/state.prom"});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("state ledgers differ (left 61, right 60)"), std::string::npos) << text.out;
  const auto m = testing::Samples(testing::ReadFileBytes(dir.path + "/state.prom"));
  EXPECT_EQ(m.at("ledgerdiff_state_compared"), "0");
  EXPECT_EQ(m.count("ledgerdiff_state_divergent"), 0u);  // not compared: neither equal nor different
}

TEST(State, ADivergentHistoryTakesPrecedenceOverStateAtDifferentLedgers) {
  Sides s = FilledSides(61, 60);
  ExecSql(s.right, "UPDATE history_ledgers SET transaction_count = transaction_count + 1 WHERE sequence = 7");
  auto r = VerifyRange(s.left, s.right, "text");
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_EQ(json::parse(r.out)["verdict"], "divergent");
}

TEST(State, StateWaitWaitsForASideThatReachesTheLedgerAMomentLater) {
  Sides s = FilledSides(61, 60);
  for (const auto& engine : kEngines) {
    ExecSql(s.right, SetStateLedger(60));
    // The right side ingests ledger 61 while the check's first read of it is under way: the
    // ingester's transaction holds key_value_store until that read (its snapshot already taken,
    // so it sees 60) waits on the lock, then commits. No timing: pg_locks shows the wait.
    auto ingest = testing::Connect(s.right);
    ASSERT_TRUE(ingest->Run("BEGIN; LOCK TABLE key_value_store IN ACCESS EXCLUSIVE MODE; UPDATE key_value_store SET "
                            "value = '61' WHERE key = 'exp_ingest_last_ledger'")
                    .ok());
    std::atomic<bool> saw_the_read{false};
    std::thread ingester([&] {
      auto watch = testing::Connect(s.right);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (std::chrono::steady_clock::now() < deadline) {
        auto waiting = watch->Exec("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                                   "WHERE c.relname = 'key_value_store' AND NOT l.granted");
        if (waiting.ok() && waiting->GetInt(0, 0) > 0) {
          saw_the_read = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      (void)ingest->Run("COMMIT");
    });
    auto r = VerifyRange(s.left, s.right, engine, {"--state-wait", "60"});
    ingester.join();
    EXPECT_TRUE(saw_the_read) << "the check never read the right side's state ledger";
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
    json st = json::parse(r.out)["state"];
    EXPECT_EQ(st["compared"], true) << st.dump();
    EXPECT_EQ(st["ledger_right"], 61);
    EXPECT_GT(st["reads"].get<int>(), 1) << "the first read saw ledger 60: it must have read again";
  }
}

TEST(State, StateWaitTimesOutIncomplete) {
  Sides s = FilledSides(61, 60);
  const Stopwatch start;
  auto r = VerifyRange(s.left, s.right, "text", {"--state-wait", "1"});
  const double seconds = start.Seconds();
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json st = json::parse(r.out)["state"];
  EXPECT_EQ(st["verdict"], "incomplete");
  EXPECT_GT(st["reads"].get<int>(), 1);
  EXPECT_NE(st["note"].get<std::string>().find("still after 1 s of --state-wait"), std::string::npos) << st.dump();
  EXPECT_GE(seconds, 1.0);
}

TEST(State, TheDumpsAsShippedHaveNoStateAndStayIdentical) {
  Sides s{LoadDump(), LoadDump()};
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(s.left, s.right, engine);
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
    json st = json::parse(r.out)["state"];
    EXPECT_EQ(st["verdict"], "not compared");
    EXPECT_EQ(st["compared"], false);
  }
  // Nothing to wait for when neither side records a state ledger: one read, however long the wait.
  auto waited = VerifyRange(s.left, s.right, "text", {"--state-wait", "600"});
  ASSERT_EQ(waited.exit_code, 0) << waited.err << waited.out;
  EXPECT_EQ(json::parse(waited.out)["state"]["reads"], 1);
}

TEST(State, StateRowsWithoutARecordedLedgerAreIncomplete) {
  Sides s = FilledSides();
  for (const auto& side : {s.left, s.right}) ExecSql(side, "DELETE FROM key_value_store");
  auto r = VerifyRange(s.left, s.right, "text");
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_EQ(json::parse(r.out)["state"]["verdict"], "incomplete") << r.out;
}

TEST(State, AStateLedgerThatIsNoNumberIsBadInput) {
  Sides s = FilledSides();
  ExecSql(s.right, "UPDATE key_value_store SET value = 'soon' WHERE key = 'exp_ingest_last_ledger'");
  auto r = RunCli({"verify-range", "--left", s.left, "--right", s.right, "--range", kRange});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("exp_ingest_last_ledger = \"soon\" is not a ledger number"), std::string::npos) << r.err;
}

TEST(State, AUserProfileDeclaresItsOwnStateTablesAndLedger) {
  Sides s = FilledSides();
  ExecSql(s.right, "UPDATE offers SET amount = amount + 1; UPDATE accounts SET balance = balance + 1");
  for (const auto& side : {s.left, s.right})
    ExecSql(side, "CREATE TABLE state_cursor (name text PRIMARY KEY, ledger bigint); "
                  "INSERT INTO state_cursor VALUES ('head', 61)");
  testing::ScratchDir dir("ledgerdiff-state-profile-");
  const std::string profile = dir.path + "/profile.json";
  testing::WriteFileBytes(profile, R"({"name": "mine",
    "tables": [{"table": "history_ledgers", "ledger": {"column": "sequence"}, "key": ["sequence"]}],
    "state": {"ledger": {"table": "state_cursor", "key_column": "name", "value_column": "ledger", "key": "head"},
              "tables": [{"table": "offers", "key": ["offer_id"]}]}})");
  auto r = VerifyRange(s.left, s.right, "text", {"--profile", profile});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json st = json::parse(r.out)["state"];
  ASSERT_EQ(st["tables"].size(), 1u) << st.dump();
  EXPECT_EQ(st["tables"][0]["table"], "offers");
  EXPECT_EQ(st["verdict"], "divergent");
  // A state table without a key is refused before anything is read.
  testing::WriteFileBytes(profile, R"({"tables": [{"table": "history_ledgers", "ledger": {"column": "sequence"}}],
    "state": {"tables": [{"table": "offers"}]}})");
  auto bad = VerifyRange(s.left, s.right, "text", {"--profile", profile});
  EXPECT_EQ(bad.exit_code, 2) << bad.err << bad.out;
  EXPECT_NE(bad.err.find("state table offers: \"key\""), std::string::npos) << bad.err;
}

// A user's state table holding surrogate ids (issue 45: "ids resolved through the lookups where the
// state holds surrogate ids"): its "resolve" rules name the lookups, so a re-ingested copy whose
// ids are renumbered holds the same state, and a row under another asset is two differing keys.
TEST(State, AUserStateTableOfSurrogateIdsIsComparedAsTheRowsTheyName) {
  Sides s{LoadDump(), LoadDump()};
  testing::Renumber(s.right);
  // Per side, from its own ids: what each account traded, by (account id, asset id).
  for (const auto& side : {s.left, s.right})
    ExecSql(side, "CREATE TABLE holdings (holder_id bigint, asset_id bigint, amount bigint, PRIMARY KEY (holder_id, asset_id));"
                  "INSERT INTO holdings SELECT p.account, p.asset, sum(p.amount) FROM history_trades t CROSS JOIN LATERAL "
                  "(VALUES (t.base_account_id, t.base_asset_id, t.base_amount), "
                  "(t.counter_account_id, t.counter_asset_id, t.counter_amount)) p(account, asset, amount) "
                  "GROUP BY 1, 2;"
                  "CREATE TABLE state_cursor (name text PRIMARY KEY, ledger bigint); INSERT INTO state_cursor VALUES ('head', 61)");
  ASSERT_GT(QueryInt(s.left, "SELECT count(*) FROM holdings"), 1);
  ASSERT_NE(QueryInt(s.left, "SELECT min(asset_id) FROM holdings"), QueryInt(s.right, "SELECT min(asset_id) FROM holdings"))
      << "the renumbered copy must hold other ids";
  testing::ScratchDir dir("ledgerdiff-state-resolve-");
  const std::string profile = dir.path + "/profile.json";
  testing::WriteFileBytes(profile, R"({"name": "holdings",
    "tables": [{"table": "history_ledgers", "ledger": {"column": "sequence"}, "key": ["sequence"]}],
    "state": {"ledger": {"table": "state_cursor", "key_column": "name", "value_column": "ledger", "key": "head"},
              "tables": [{"table": "holdings", "key": ["holder_id", "asset_id"],
                          "resolve": [{"column": "holder_id", "lookup": "history_accounts", "natural": ["address"]},
                                      {"column": "asset_id", "lookup": "history_assets",
                                       "natural": ["asset_type", "asset_code", "asset_issuer"]}]}]}})");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(s.left, s.right, engine, {"--profile", profile});
    ASSERT_EQ(r.exit_code, 0) << engine << "\n" << r.err << r.out;
    json st = json::parse(r.out)["state"];
    EXPECT_EQ(st["verdict"], "identical") << engine << st.dump();
    ASSERT_EQ(st["tables"].size(), 1u) << st.dump();
    EXPECT_EQ(st["tables"][0]["left_rows"], QueryInt(s.left, "SELECT count(*) FROM holdings"));
  }
  // One holding moved to another asset on the right (its id resolved to the wrong row).
  ExecSql(s.right, "UPDATE holdings SET asset_id = (SELECT min(id) FROM history_assets a WHERE NOT EXISTS (SELECT 1 "
                   "FROM holdings h WHERE h.asset_id = a.id)) WHERE (holder_id, asset_id) = (SELECT holder_id, asset_id "
                   "FROM holdings ORDER BY amount DESC, holder_id, asset_id LIMIT 1)");
  for (const auto& engine : kEngines) {
    const json st = DivergentState(s, engine, 2, {"--profile", profile});
    ASSERT_TRUE(st.is_object()) << engine;
    const json* gone = FindDifference(st, "holdings", "only left");
    const json* moved = FindDifference(st, "holdings", "only right");
    ASSERT_NE(gone, nullptr) << engine << st.dump();
    ASSERT_NE(moved, nullptr) << engine << st.dump();
    // Named by the natural keys the ids resolve to, not by either side's ids: the same holder's
    // address on both, two different assets.
    for (const json* d : {gone, moved})
      for (const char* column : {"holder.address", "asset.asset_type", "asset.asset_code", "asset.asset_issuer"})
        ASSERT_TRUE((*d)["key"].contains(column)) << column << " " << d->dump();
    EXPECT_EQ((*gone)["key"]["holder.address"], (*moved)["key"]["holder.address"]) << st.dump();
    EXPECT_NE((*gone)["key"]["asset.asset_code"].dump() + (*gone)["key"]["asset.asset_issuer"].dump(),
              (*moved)["key"]["asset.asset_code"].dump() + (*moved)["key"]["asset.asset_issuer"].dump())
        << st.dump();
  }
}

TEST(State, ADeclaredKeyThatIsNotUniqueIsSaidSoAndStillDiverges) {
  Sides s = FilledSides();
  // A second offer of the first offer's seller and asset: the declared key (seller, asset) is held twice.
  ExecSql(s.right, "INSERT INTO offers SELECT seller_id, 99999, selling_asset, buying_asset, amount, pricen, priced, "
                   "price, flags, last_modified_ledger FROM offers ORDER BY offer_id LIMIT 1");
  testing::ScratchDir dir("ledgerdiff-state-profile-");
  const std::string profile = dir.path + "/profile.json";
  testing::WriteFileBytes(profile, R"({"tables": [{"table": "history_ledgers", "ledger": {"column": "sequence"}}],
    "state": {"horizon_tables": false,
              "ledger": {"table": "key_value_store", "key_column": "key", "value_column": "value",
                         "key": "exp_ingest_last_ledger"},
              "tables": [{"table": "offers", "key": ["seller_id", "selling_asset"]}]}})");
  for (const auto& engine : kEngines) {
    auto r = VerifyRange(s.left, s.right, engine, {"--profile", profile});
    ASSERT_EQ(r.exit_code, 1) << engine << "\n" << r.err << r.out;
    json st = json::parse(r.out)["state"];
    EXPECT_EQ(st["verdict"], "divergent") << st.dump();
    ASSERT_EQ(st["notes"].size(), 1u) << st.dump();
    EXPECT_NE(st["notes"][0].get<std::string>().find("held by more than one row on the right"), std::string::npos)
        << st.dump();
    // The second row of the key is named: the right has it, the left does not.
    ASSERT_EQ(st["differences"].size(), 1u) << st.dump();
    EXPECT_EQ(st["differences"][0]["kind"], "only right");
    EXPECT_EQ(st["differences"][0]["right"]["offer_id"], "99999");
  }
}

TEST(State, StateFlagsAreCheckedUpFront) {
  auto r = RunCli({"verify-range", "--left", "host=/nonexistent", "--right", "host=/nonexistent", "--range", kRange,
                   "--state-wait", "-1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--state-wait -1 is not within"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ledgerdiff
