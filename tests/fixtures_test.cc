// Fixtures: the deterministic generator, the history schema, the reference ingester and its
// deliberate bugs, against the harness's real PostgreSQL.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/stage_timer.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "fixtures/schema.h"
#include "tests/harness.h"

namespace ledgerdiff::fixtures {
namespace {

using testing::Connect;
using testing::UniqueName;

GeneratorConfig Stellar(uint64_t seed = 1) { return GeneratorConfig{seed, Density::kStellar}; }

std::string SerializeRange(const GeneratorConfig& config, Ledger from, Ledger to) {
  std::string s;
  for (Ledger l = from; l <= to; ++l) s += Serialize(GenerateLedger(config, l));
  return s;
}

// ---------------------------------------------------------------------------------------------
// Generator

TEST(Generator, SubRangeEqualsSliceOfFullRangeByteForByte) {
  const auto config = Stellar(7);
  std::vector<std::string> full;
  for (Ledger l = 990; l <= 1400; ++l) full.push_back(Serialize(GenerateLedger(config, l)));
  // Sub-ranges generated alone, in another order, after unrelated ledgers.
  (void)GenerateLedger(config, 15000);
  for (Ledger l = 1400; l >= 1200; --l) EXPECT_EQ(Serialize(GenerateLedger(config, l)), full[l - 990]) << l;
  std::string slice;
  for (Ledger l = 1001; l <= 1100; ++l) slice += full[l - 990];
  EXPECT_EQ(SerializeRange(config, 1001, 1100), slice);
  // A heavy ledger, generated cold and after others.
  const std::string heavy = Serialize(GenerateLedger(config, 13000));
  (void)SerializeRange(config, 12990, 12999);
  EXPECT_EQ(Serialize(GenerateLedger(config, 13000)), heavy);
}

TEST(Generator, SeedsAndDensitiesDiffer) {
  EXPECT_NE(SerializeRange(Stellar(1), 1000, 1050), SerializeRange(Stellar(2), 1000, 1050));
  EXPECT_NE(Serialize(GenerateLedger(Stellar(1), 5000)),
            Serialize(GenerateLedger(GeneratorConfig{1, Density::kFlat}, 5000)));
  EXPECT_NE(AccountAddress(1, 0, 0), AccountAddress(2, 0, 0));
  EXPECT_NE(LedgerHash(1, 9), LedgerHash(2, 9));
}

TEST(Generator, ToidLayoutOfGeneratedIds) {
  for (Ledger l : {1000u, 1234u, 5000u, 12345u}) {
    const LedgerContent c = GenerateLedger(Stellar(), l);
    std::set<int64_t> tx_ids, op_ids;
    for (size_t i = 0; i < c.transactions.size(); ++i) {
      const auto& t = c.transactions[i];
      EXPECT_EQ(t.application_order, static_cast<int>(i + 1));
      EXPECT_EQ(t.id, Toid(l, static_cast<uint32_t>(i + 1)));
      EXPECT_EQ(t.ledger_sequence, l);
      EXPECT_EQ(ToidLedger(t.id), l);
      EXPECT_EQ(t.id & 0xFFF, 0);
      tx_ids.insert(t.id);
    }
    std::map<int64_t, int> ops_per_tx;
    for (const auto& o : c.operations) {
      EXPECT_TRUE(tx_ids.count(o.transaction_id)) << o.id;
      EXPECT_EQ(o.application_order, ++ops_per_tx[o.transaction_id]);  // 1-based, contiguous
      EXPECT_EQ(o.id, o.transaction_id | o.application_order);
      op_ids.insert(o.id);
    }
    for (const auto& t : c.transactions) EXPECT_EQ(ops_per_tx[t.id], t.operation_count);
    std::map<int64_t, int> effect_order;
    for (const auto& e : c.effects) {
      EXPECT_TRUE(op_ids.count(e.history_operation_id));
      EXPECT_EQ(e.order, ++effect_order[e.history_operation_id]);  // 1-based
    }
    std::map<int64_t, int> trade_order;
    for (const auto& t : c.trades) {
      EXPECT_TRUE(op_ids.count(t.history_operation_id));
      EXPECT_EQ(t.order, trade_order[t.history_operation_id]++);  // 0-based, as Horizon
      EXPECT_NE(t.sold_asset, t.bought_asset);
    }
    for (const auto& p : c.operation_participants) EXPECT_TRUE(op_ids.count(p.history_id));
    for (const auto& p : c.transaction_participants) EXPECT_TRUE(tx_ids.count(p.history_id));
  }
}

TEST(Generator, DensityProfiles) {
  const auto stellar = Stellar();
  int early_txs = 0;
  for (Ledger l = 1; l < 1000; ++l) {
    const auto c = GenerateLedger(stellar, l);
    EXPECT_LE(c.transactions.size(), 2u) << l;
    early_txs += static_cast<int>(c.transactions.size());
  }
  EXPECT_GT(early_txs, 500);  // not empty either
  EXPECT_EQ(GenerateLedger(stellar, 1).transactions.size(), 0u);
  auto mean_ops = [](const GeneratorConfig& config, Ledger from, Ledger to) {
    double ops = 0;
    for (Ledger l = from; l <= to; ++l) ops += static_cast<double>(GenerateLedger(config, l).operations.size());
    return ops / (to - from + 1);
  };
  EXPECT_GE(mean_ops(stellar, 12000, 12049), 100.0);
  EXPECT_LE(mean_ops(stellar, 12000, 12049), 160.0);
  EXPECT_GE(mean_ops(stellar, 30000, 30019), 100.0);                        // stays at the cap
  EXPECT_LT(mean_ops(stellar, 3000, 3049), mean_ops(stellar, 8000, 8049));  // grows
  const GeneratorConfig flat{1, Density::kFlat};
  for (Ledger from : {2u, 1000u, 20000u}) {
    const double m = mean_ops(flat, from, from + 49);
    EXPECT_GE(m, 15.0) << from;
    EXPECT_LE(m, 25.0) << from;
  }
  EXPECT_EQ(ParseDensity("flat").value(), Density::kFlat);
  EXPECT_EQ(ParseDensity("stellar").value(), Density::kStellar);
  EXPECT_EQ(ParseDensity("dense").status().kind(), Status::Kind::kUsage);
}

// Issue 22: the ingest's ETA weighs ledgers by the rows the plan estimates for them, without
// generating them; the estimate holds to what the generator writes, where the density is low,
// where it grows and where it is flat, and adds up over adjacent spans.
TEST(Generator, EstimatedRowCountFollowsTheGeneratedRows) {
  auto generated = [](const GeneratorConfig& config, const LedgerRange& r) {
    uint64_t rows = 0;
    for (const auto& [table, n] : GeneratedRowCounts(config, r)) rows += n;
    return static_cast<double>(rows);
  };
  for (const GeneratorConfig& config : {Stellar(), GeneratorConfig{3, Density::kStellar},
                                        GeneratorConfig{1, Density::kFlat}, GeneratorConfig{3, Density::kFlat}})
    for (const LedgerRange r : {LedgerRange{2, 501}, LedgerRange{1000, 1499}, LedgerRange{8000, 8499}}) {
      const double estimated = static_cast<double>(EstimatedRowCount(config, r));
      EXPECT_NEAR(estimated / generated(config, r), 1.0, 0.05)
          << (config.density == Density::kFlat ? "flat" : "stellar") << " seed " << config.seed << " ledgers " << r.str();
    }
  EXPECT_EQ(EstimatedRowCount(Stellar(), {2, 3000}),
            EstimatedRowCount(Stellar(), {2, 1234}) + EstimatedRowCount(Stellar(), {1235, 3000}));
  EXPECT_EQ(EstimatedRowCount(Stellar(), {1, 1}), 1u);  // ledger 1 is empty: its ledger row
  // Stellar grows: a span late in the ramp holds many times the rows of one early in it.
  EXPECT_GT(EstimatedRowCount(Stellar(), {9000, 9999}), 5 * EstimatedRowCount(Stellar(), {1000, 1999}));
}

TEST(Generator, StellarLikeContent) {
  const auto config = Stellar(3);
  std::set<std::string> known;  // accounts that exist before the ledger being checked
  for (uint32_t j = 0; j <= 16; ++j) known.insert(AccountAddress(config.seed, 0, j));
  int failed = 0, created = 0, trades = 0;
  for (Ledger l = 1; l <= 2500; ++l) {
    const auto c = GenerateLedger(config, l);
    EXPECT_EQ(c.ledger.sequence, l);
    EXPECT_EQ(c.ledger.ledger_hash, LedgerHash(config.seed, l));
    EXPECT_EQ(c.ledger.previous_ledger_hash, LedgerHash(config.seed, l - 1));
    EXPECT_EQ(c.ledger.ledger_hash.size(), 64u);
    std::vector<std::string> created_here;
    for (const auto& o : c.operations) {
      if (o.type == 0) created_here.push_back(o.details.substr(o.details.find("\"account\":\"") + 11, 56));
    }
    std::set<std::string> here(created_here.begin(), created_here.end());
    std::vector<std::string> used;
    c.CollectAccounts(used);
    for (const auto& a : used) {
      EXPECT_EQ(a.size(), 56u);
      EXPECT_EQ(a[0], 'G');
      EXPECT_TRUE(known.count(a) || here.count(a)) << "ledger " << l << " uses " << a << " before it exists";
    }
    int ok_tx = 0, ok_ops = 0, all_ops = 0;
    std::set<int64_t> failed_ops;
    for (const auto& t : c.transactions) {
      all_ops += t.operation_count;
      if (t.successful) {
        ++ok_tx;
        ok_ops += t.operation_count;
      } else {
        ++failed;
        for (int k = 1; k <= t.operation_count; ++k) failed_ops.insert(t.id | k);
      }
    }
    for (const auto& e : c.effects) EXPECT_FALSE(failed_ops.count(e.history_operation_id));
    for (const auto& t : c.trades) EXPECT_FALSE(failed_ops.count(t.history_operation_id));
    EXPECT_EQ(c.ledger.transaction_count, ok_tx);
    EXPECT_EQ(c.ledger.successful_transaction_count, ok_tx);
    EXPECT_EQ(c.ledger.failed_transaction_count, static_cast<int>(c.transactions.size()) - ok_tx);
    EXPECT_EQ(c.ledger.operation_count, ok_ops);
    EXPECT_EQ(c.ledger.tx_set_operation_count, all_ops);
    EXPECT_EQ(c.operations.size(), static_cast<size_t>(all_ops));
    created += static_cast<int>(created_here.size());
    trades += static_cast<int>(c.trades.size());
    known.insert(created_here.begin(), created_here.end());
  }
  EXPECT_GT(failed, 10);
  EXPECT_GT(created, 100);
  EXPECT_GT(trades, 100);
  std::vector<Asset> assets;
  for (Ledger l = 2000; l <= 2100; ++l) GenerateLedger(config, l).CollectAssets(assets);
  std::set<Asset> distinct(assets.begin(), assets.end());
  EXPECT_EQ(distinct.size(), TradedAssets(config.seed).size());
  EXPECT_EQ(GenerateLedger(config, 1000).ledger.closed_at, "2015-09-30 18:10:14");
}

// ---------------------------------------------------------------------------------------------
// Schema and ingest helpers

// A fresh schema (its name needs quoting) holding the history tables.
std::string NewHistorySchema(pg::Connection& conn, const std::string& prefix = "Fx Hist") {
  const std::string schema = UniqueName(prefix + " \"q\"");
  EXPECT_TRUE(conn.Run("CREATE SCHEMA " + pg::QuoteIdent(schema)).ok());
  Status s = CreateHistorySchema(conn, schema);
  EXPECT_TRUE(s.ok()) << s.message();
  return schema;
}

int64_t Count(pg::Connection& conn, const std::string& schema, const std::string& table,
              const std::string& where = "true") {
  auto r = conn.Exec(fmt::format("SELECT count(*) FROM {} WHERE {}", pg::Qualified(schema, table), where));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->GetInt(0, 0) : -1;
}

std::map<std::string, int64_t> Counts(pg::Connection& conn, const std::string& schema) {
  std::map<std::string, int64_t> out;
  for (const auto& t : HistoryTables()) out[t] = Count(conn, schema, t);
  return out;
}

std::map<std::string, int64_t> GeneratedCounts(const GeneratorConfig& config, const LedgerRange& range) {
  std::map<std::string, int64_t> out;
  for (const auto& t : HistoryTables()) out[t] = 0;
  for (Ledger l = range.from; l <= range.to; ++l) {
    const auto c = GenerateLedger(config, l);
    out["history_ledgers"] += 1;
    out["history_transactions"] += static_cast<int64_t>(c.transactions.size());
    out["history_operations"] += static_cast<int64_t>(c.operations.size());
    out["history_effects"] += static_cast<int64_t>(c.effects.size());
    out["history_trades"] += static_cast<int64_t>(c.trades.size());
    out["history_operation_participants"] += static_cast<int64_t>(c.operation_participants.size());
    out["history_transaction_participants"] += static_cast<int64_t>(c.transaction_participants.size());
  }
  return out;
}

Status IngestJobs(pg::Connection& conn, const std::string& schema, const std::vector<LedgerRange>& jobs,
                  const IngestJobOptions& options = {}) {
  for (const auto& job : jobs) {
    auto r = IngestJob(conn, schema, job, options);
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

// Per table, per ledger: row count and a digest of the rows with surrogate ids resolved to
// natural keys and trades in seller orientation (independent of id assignment).
using Fingerprints = std::map<std::string, std::map<int64_t, std::string>>;
Fingerprints Fingerprint(pg::Connection& conn, const std::string& schema) {
  auto q = [&](const std::string& t) { return pg::Qualified(schema, t); };
  const std::string asset = "concat_ws('/', {0}.asset_type, {0}.asset_code, {0}.asset_issuer)";
  const std::map<std::string, std::string> sources = {
      {"history_ledgers",
       fmt::format("SELECT sequence::bigint AS l, concat_ws('|', sequence, ledger_hash, previous_ledger_hash, "
                   "transaction_count, operation_count, closed_at, id, total_coins, fee_pool, base_fee, base_reserve, "
                   "max_tx_set_size, protocol_version, ledger_header, successful_transaction_count, "
                   "failed_transaction_count, tx_set_operation_count) AS r FROM {}",
                   q("history_ledgers"))},
      {"history_transactions",
       fmt::format(
           "SELECT ledger_sequence::bigint, concat_ws('|', transaction_hash, ledger_sequence, application_order, "
           "account, account_sequence, max_fee, operation_count, id, tx_envelope, tx_result, tx_meta, "
           "tx_fee_meta, signatures::text, memo_type, coalesce(memo, '<null>'), successful, fee_charged) FROM {}",
           q("history_transactions"))},
      {"history_operations",
       fmt::format("SELECT id >> 32, concat_ws('|', id, transaction_id, application_order, type, details::text, "
                   "source_account, is_payment) FROM {}",
                   q("history_operations"))},
      {"history_effects",
       fmt::format(
           "SELECT e.history_operation_id >> 32, concat_ws('|', a.address, e.history_operation_id, e.\"order\", "
           "e.type, e.details::text) FROM {} e LEFT JOIN {} a ON a.id = e.history_account_id",
           q("history_effects"), q("history_accounts"))},
      {"history_trades",
       fmt::format("SELECT t.history_operation_id >> 32, concat_ws('|', t.history_operation_id, t.\"order\", "
                   "t.ledger_closed_at, CASE WHEN t.base_is_seller THEN concat_ws('|', ba.address, {0}, t.base_amount, "
                   "ca.address, {1}, t.counter_amount, t.price_n, t.price_d, t.base_offer_id, t.counter_offer_id, "
                   "coalesce(t.base_is_exact::text, 'null')) "
                   "ELSE concat_ws('|', ca.address, {1}, t.counter_amount, ba.address, {0}, t.base_amount, t.price_d, "
                   "t.price_n, t.counter_offer_id, t.base_offer_id, coalesce((NOT t.base_is_exact)::text, 'null')) END) FROM {2} t "
                   "LEFT JOIN {3} ba ON ba.id = t.base_account_id LEFT JOIN {3} ca ON ca.id = t.counter_account_id "
                   "LEFT JOIN {4} bs ON bs.id = t.base_asset_id LEFT JOIN {4} cs ON cs.id = t.counter_asset_id",
                   fmt::format(fmt::runtime(asset), "bs"), fmt::format(fmt::runtime(asset), "cs"), q("history_trades"),
                   q("history_accounts"), q("history_assets"))},
      {"history_operation_participants",
       fmt::format("SELECT p.history_operation_id >> 32, concat_ws('|', p.history_operation_id, a.address) FROM {} p "
                   "LEFT JOIN {} a ON a.id = p.history_account_id",
                   q("history_operation_participants"), q("history_accounts"))},
      {"history_transaction_participants",
       fmt::format(
           "SELECT p.history_transaction_id >> 32, concat_ws('|', p.history_transaction_id, a.address) FROM {} p "
           "LEFT JOIN {} a ON a.id = p.history_account_id",
           q("history_transaction_participants"), q("history_accounts"))},
  };
  Fingerprints out;
  for (const auto& [table, sql] : sources) {
    auto rows = conn.Exec("SELECT l, count(*) || ':' || md5(string_agg(r, E'\\n' ORDER BY r)) FROM (" + sql +
                          ") AS x(l, r) GROUP BY l");
    EXPECT_TRUE(rows.ok()) << table << ": " << rows.status().message();
    if (!rows.ok()) continue;
    for (int i = 0; i < rows->size(); ++i) out[table][rows->GetInt(i, 0)] = std::string(rows->Get(i, 1));
  }
  return out;
}

// Ledgers at which two fingerprints differ in any table.
std::set<int64_t> DifferingLedgers(const Fingerprints& a, const Fingerprints& b) {
  std::set<int64_t> out;
  for (const auto& table : HistoryTables()) {
    const auto& x = a.count(table) ? a.at(table) : std::map<int64_t, std::string>{};
    const auto& y = b.count(table) ? b.at(table) : std::map<int64_t, std::string>{};
    for (const auto& [l, v] : x) {
      if (!y.count(l) || y.at(l) != v) out.insert(l);
    }
    for (const auto& [l, v] : y) {
      if (!x.count(l)) out.insert(l);
    }
  }
  return out;
}

std::set<int64_t> Interval(int64_t from, int64_t to) {
  std::set<int64_t> s;
  for (int64_t l = from; l <= to; ++l) s.insert(l);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Schema

TEST(Schema, CreatesNineTablesInASchemaThatNeedsQuoting) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = UniqueName("Fx Schema \"Q\" x");
  ASSERT_TRUE(conn->Run("CREATE SCHEMA " + pg::QuoteIdent(schema)).ok());
  EXPECT_FALSE(HasHistorySchema(*conn, schema).value());
  Status s = CreateHistorySchema(*conn, schema);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(HasHistorySchema(*conn, schema).value());
  EXPECT_EQ(HistoryTables().size() + LookupTables().size(), 9u);
  // A second creation fails and names the schema; the tables stay.
  Status again = CreateHistorySchema(*conn, schema);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find(schema.substr(0, 9)), std::string::npos) << again.message();
  EXPECT_TRUE(HasHistorySchema(*conn, schema).value());

  auto unique = conn->Exec(
      "SELECT c.relname, count(*) FILTER (WHERE i.indisunique) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
      "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 GROUP BY c.relname",
      {schema});
  ASSERT_TRUE(unique.ok()) << unique.status().message();
  std::map<std::string, int64_t> uniques;
  for (int i = 0; i < unique->size(); ++i) uniques[std::string(unique->Get(i, 0))] = unique->GetInt(i, 1);
  EXPECT_EQ(uniques["history_operation_participants"], 0);
  EXPECT_EQ(uniques["history_transaction_participants"], 0);
  EXPECT_GE(uniques["history_ledgers"], 3);
  EXPECT_EQ(uniques["history_effects"], 2);
  EXPECT_EQ(uniques["history_trades"], 1);
  EXPECT_EQ(uniques["history_accounts"], 2);
  EXPECT_EQ(uniques["history_assets"], 2);
  EXPECT_EQ(Count(*conn, schema, "history_operation_participants"), 0);
  auto cols = conn->Exec(
      "SELECT table_name, string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
      "WHERE table_schema = $1 GROUP BY table_name",
      {schema});
  ASSERT_TRUE(cols.ok());
  std::map<std::string, std::string> columns;
  for (int i = 0; i < cols->size(); ++i) columns[std::string(cols->Get(i, 0))] = std::string(cols->Get(i, 1));
  EXPECT_EQ(columns["history_operation_participants"], "history_operation_id,history_account_id");
  EXPECT_EQ(columns["history_transaction_participants"], "history_transaction_id,history_account_id");
  for (const char* c : {"base_offer_id", "counter_offer_id", "base_liquidity_pool_id", "counter_liquidity_pool_id",
                        "liquidity_pool_fee", "trade_type", "rounding_slippage", "base_is_exact"}) {
    EXPECT_NE(columns["history_trades"].find(c), std::string::npos) << c;
  }
  EXPECT_NE(columns["history_operations"].find("is_payment"), std::string::npos);
  // The trade orientation constraint is Horizon's.
  auto check =
      conn->Exec(fmt::format("INSERT INTO {} (history_operation_id, \"order\", ledger_closed_at, "
                             "base_asset_id, base_amount, counter_asset_id, counter_amount) "
                             "VALUES (1, 0, now(), 2, 1, 1, 1)",
                             pg::Qualified(schema, "history_trades")));
  EXPECT_FALSE(check.ok());
}

// ---------------------------------------------------------------------------------------------
// Ingest

TEST(Ingest, SerialRowCountsEqualGeneratedCounts) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = NewHistorySchema(*conn);
  const LedgerRange range{900, 1400};
  std::vector<std::string> stages;
  IngestJobOptions options;
  options.on_stage = [&](const std::string& s) { stages.push_back(s); };
  auto stats = IngestJob(*conn, schema, range, options);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stages, HistoryTables());
  const auto expected = GeneratedCounts(options.generator, range);
  EXPECT_EQ(Counts(*conn, schema), expected);
  int64_t total = 0;
  for (const auto& [t, n] : expected) {
    EXPECT_EQ(static_cast<int64_t>(stats->rows_per_table.at(t)), n) << t;
    total += n;
  }
  EXPECT_EQ(static_cast<int64_t>(stats->rows), total);
  EXPECT_GT(expected.at("history_trades"), 0);
  // Lookups: exactly the distinct accounts and assets the content refers to.
  std::set<std::string> accounts;
  for (Ledger l = range.from; l <= range.to; ++l) {
    std::vector<std::string> v;
    GenerateLedger(options.generator, l).CollectAccounts(v);
    accounts.insert(v.begin(), v.end());
  }
  EXPECT_EQ(Count(*conn, schema, "history_accounts"), static_cast<int64_t>(accounts.size()));
  EXPECT_EQ(Count(*conn, schema, "history_assets"), static_cast<int64_t>(TradedAssets(1).size()));
  // Orientation: base is always the smaller asset id, and the memo escaping survived.
  EXPECT_EQ(Count(*conn, schema, "history_trades", "base_asset_id >= counter_asset_id"), 0);
  EXPECT_GT(Count(*conn, schema, "history_trades", "base_is_seller"), 0);
  EXPECT_GT(Count(*conn, schema, "history_trades", "NOT base_is_seller"), 0);
  // base_is_exact as Horizon fills it: set for path payments (both values), NULL for offers.
  EXPECT_GT(Count(*conn, schema, "history_trades", "base_is_exact"), 0);
  EXPECT_GT(Count(*conn, schema, "history_trades", "NOT base_is_exact"), 0);
  EXPECT_GT(Count(*conn, schema, "history_trades", "base_is_exact IS NULL"), 0);
  // Path payment trades are the ones with one offer id only (the payer has no offer).
  EXPECT_EQ(Count(*conn, schema, "history_trades",
                  "(base_is_exact IS NULL) <> (base_offer_id IS NOT NULL AND counter_offer_id IS NOT NULL)"),
            0);
  EXPECT_GT(Count(*conn, schema, "history_transactions", "memo LIKE E'tab\\there\\\\\\\\ \"q\" \\u00e9 #%'"), 0);
  EXPECT_EQ(Count(*conn, schema, "history_ledgers", "created_at IS NULL OR importer_version IS NULL"), 0);
}

TEST(Ingest, RerunningAJobReplacesItsRange) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = NewHistorySchema(*conn);
  ASSERT_TRUE(IngestJobs(*conn, schema, SplitJobs({1000, 1300}, 100)).ok());
  const auto counts = Counts(*conn, schema);
  const auto fp = Fingerprint(*conn, schema);
  const int64_t accounts = Count(*conn, schema, "history_accounts");
  auto max_id = conn->Exec("SELECT max(id) FROM " + pg::Qualified(schema, "history_accounts"));
  ASSERT_TRUE(max_id.ok());
  // The same job again, an overlapping sub-range, and the whole range as one job.
  for (LedgerRange r : {LedgerRange{1100, 1199}, LedgerRange{1150, 1160}, LedgerRange{1000, 1300}}) {
    auto s = IngestJob(*conn, schema, r, {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(Counts(*conn, schema), counts) << r.str();
  }
  EXPECT_TRUE(DifferingLedgers(fp, Fingerprint(*conn, schema)).empty());
  EXPECT_EQ(Count(*conn, schema, "history_accounts"), accounts);
  auto max_id_after = conn->Exec("SELECT max(id) FROM " + pg::Qualified(schema, "history_accounts"));
  EXPECT_EQ(max_id_after->Get(0, 0), max_id->Get(0, 0));  // no sequence values burnt on re-runs
}

TEST(Ingest, JobOrderChangesSurrogateIdsButNotContent) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string forward = NewHistorySchema(*conn), backward = NewHistorySchema(*conn);
  auto jobs = SplitJobs({1000, 1600}, 150);
  ASSERT_TRUE(IngestJobs(*conn, forward, jobs).ok());
  std::reverse(jobs.begin(), jobs.end());
  ASSERT_TRUE(IngestJobs(*conn, backward, jobs).ok());
  EXPECT_EQ(Counts(*conn, forward), Counts(*conn, backward));
  EXPECT_TRUE(DifferingLedgers(Fingerprint(*conn, forward), Fingerprint(*conn, backward)).empty());
  auto moved =
      conn->Exec(fmt::format("SELECT count(*) FROM {} f JOIN {} b USING (address) WHERE f.id <> b.id",
                             pg::Qualified(forward, "history_accounts"), pg::Qualified(backward, "history_accounts")));
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_GT(moved->GetInt(0, 0), 0);
  // Raw rows with surrogate ids differ, as they would in a naive diff.
  auto raw = [&](const std::string& s) {
    auto r = conn->Exec(
        "SELECT md5(string_agg(history_account_id::text, ',' ORDER BY history_operation_id, \"order\")) "
        "FROM " +
        pg::Qualified(s, "history_effects"));
    return r.ok() ? std::string(r->Get(0, 0)) : std::string();
  };
  EXPECT_NE(raw(forward), raw(backward));
}

TEST(Ingest, FailingBeforeCommitLeavesNothing) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = NewHistorySchema(*conn);
  IngestJobOptions options;
  options.before_commit = [](pg::Connection&, const fixtures::JobStats&) { return Status::Runtime("fenced out"); };
  auto r = IngestJob(*conn, schema, {1000, 1100}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fenced out"), std::string::npos);
  for (const auto& [t, n] : Counts(*conn, schema)) EXPECT_EQ(n, 0) << t;
  // The connection is usable afterwards, and a later clean run works.
  auto ok = IngestJob(*conn, schema, {1000, 1100}, {});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(Counts(*conn, schema), GeneratedCounts({}, {1000, 1100}));
}

TEST(Ingest, OneLedgerAndEmptyLedgers) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = NewHistorySchema(*conn);
  ASSERT_TRUE(IngestJob(*conn, schema, {1, 1}, {}).ok());  // ledger 1 is empty
  ASSERT_TRUE(IngestJob(*conn, schema, {5000, 5000}, {}).ok());
  auto expected = GeneratedCounts({}, {5000, 5000});
  expected["history_ledgers"] += 1;
  EXPECT_EQ(Counts(*conn, schema), expected);
}

// ---------------------------------------------------------------------------------------------
// Bug injection

TEST(Bugs, ParseNamesAndErrors) {
  for (BugKind k : AllBugKinds()) {
    auto b = ParseBugInjection(std::string(BugKindName(k)) + "@120");
    ASSERT_TRUE(b.ok()) << BugKindName(k);
    EXPECT_EQ(b->kind, k);
    EXPECT_EQ(b->ledger, 120u);
  }
  EXPECT_EQ(AllBugKinds().size(), 10u);
  const std::vector<std::string> names = {"skip-ledger",    "duplicate-row", "drop-row",       "mutate-row",
                                          "swap-order",     "stale-surrogate", "boundary-gap", "partial-commit",
                                          "split-lookup",   "row-past-end"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(BugKindName(AllBugKinds()[i]), names[i]);
  for (const char* bad : {"mutate-rows@120", "mutate-row", "mutate-row@", "mutate-row@0", "mutate-row@-1",
                          "mutate-row@x", "mutate-row@12x", "mutate-row@99999999999", "@5", ""}) {
    auto b = ParseBugInjection(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().kind(), Status::Kind::kUsage);
    EXPECT_NE(b.status().message().find("skip-ledger, duplicate-row"), std::string::npos) << b.status().message();
    EXPECT_EQ(b.status().message().find('\n'), std::string::npos);
  }
}

// A ledger in [from, to] with at least two transactions, effects and participants.
Ledger RichLedger(Ledger from, Ledger to) {
  for (Ledger l = from; l <= to; ++l) {
    const auto c = GenerateLedger({}, l);
    if (c.transactions.size() >= 2 && !c.effects.empty() && !c.operation_participants.empty()) return l;
  }
  return 0;
}

TEST(Bugs, EachKindAltersTheDataExactlyAtItsLedger) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const auto jobs = SplitJobs({1001, 1300}, 100);
  const std::string clean = NewHistorySchema(*conn);
  ASSERT_TRUE(IngestJobs(*conn, clean, jobs).ok());
  const Fingerprints expected = Fingerprint(*conn, clean);
  const Ledger target = RichLedger(1140, 1190);
  ASSERT_NE(target, 0u);
  for (BugKind kind : AllBugKinds()) {
    if (kind == BugKind::kRowPastEnd) continue;  // acts on a job start: RowPastEnd* below
    SCOPED_TRACE(BugKindName(kind));
    const std::string schema = NewHistorySchema(*conn, "Fx Bug");
    IngestJobOptions options;
    options.bug = {kind, target};
    Status s = IngestJobs(*conn, schema, jobs, options);
    ASSERT_TRUE(s.ok()) << s.message();
    const auto differs = DifferingLedgers(expected, Fingerprint(*conn, schema));
    if (kind == BugKind::kBoundaryGap || kind == BugKind::kPartialCommit) {
      EXPECT_EQ(differs, Interval(target, 1200));  // the rest of the job holding the ledger
    } else if (kind == BugKind::kSplitLookup) {
      EXPECT_TRUE(differs.empty());  // natural keys hide it: only the lookup table shows it
      auto address = SplitLookupAccount({}, target);
      ASSERT_TRUE(address.ok()) << address.status().message();
      auto ids = conn->Exec(fmt::format("SELECT id FROM {} WHERE address = $1 ORDER BY id",
                                        pg::Qualified(schema, "history_accounts")),
                            {*address});
      ASSERT_TRUE(ids.ok()) << ids.status().message();
      ASSERT_EQ(ids->size(), 2);
      // Both ids carry part of the ledger's participations, and only that ledger's.
      for (int i = 0; i < 2; ++i) {
        const std::string id(ids->Get(i, 0));
        const std::string in_ledger = fmt::format("history_account_id = {} AND history_operation_id >> 32 = {}", id, target);
        const std::string tx_in_ledger =
            fmt::format("history_account_id = {} AND history_transaction_id >> 32 = {}", id, target);
        EXPECT_GT(Count(*conn, schema, "history_operation_participants", in_ledger) +
                      Count(*conn, schema, "history_transaction_participants", tx_in_ledger),
                  0)
            << "id " << id;
      }
      const std::string second = fmt::format("history_account_id = {}", ids->Get(1, 0));
      EXPECT_EQ(Count(*conn, schema, "history_operation_participants", second) +
                    Count(*conn, schema, "history_transaction_participants", second),
                Count(*conn, schema, "history_operation_participants",
                      second + fmt::format(" AND history_operation_id >> 32 = {}", target)) +
                    Count(*conn, schema, "history_transaction_participants",
                          second + fmt::format(" AND history_transaction_id >> 32 = {}", target)));
    } else {
      EXPECT_EQ(differs, std::set<int64_t>{target});
    }
  }
}

TEST(Bugs, BoundaryGapKeepsStaleRowsPartialCommitClearsThem) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string clean = NewHistorySchema(*conn);
  ASSERT_TRUE(IngestJob(*conn, clean, {1101, 1200}, {}).ok());
  const auto expected = Fingerprint(*conn, clean);
  for (BugKind kind : {BugKind::kBoundaryGap, BugKind::kPartialCommit}) {
    SCOPED_TRACE(BugKindName(kind));
    const std::string schema = NewHistorySchema(*conn, "Fx Bug");
    ASSERT_TRUE(IngestJob(*conn, schema, {1101, 1200}, {}).ok());
    IngestJobOptions options;
    options.bug = {kind, 1150};
    ASSERT_TRUE(IngestJob(*conn, schema, {1101, 1200}, options).ok());  // a retry over earlier data
    const auto differs = DifferingLedgers(expected, Fingerprint(*conn, schema));
    if (kind == BugKind::kBoundaryGap) {
      EXPECT_TRUE(differs.empty());  // the old rows of 1150.. were never cleared
    } else {
      EXPECT_EQ(differs, Interval(1150, 1200));
    }
    // The bug does not act on a job that does not hold its ledger.
    auto other = IngestJob(*conn, schema, {1001, 1100}, options);
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(other->rows_per_table.at("history_ledgers"), 100u);
  }
}

// The stray row of row-past-end survives only when the job holding its ledger cleared that
// ledger before the stray was committed: the injection waits for it, so the gate sees it at
// exactly that ledger; committed first, the next job's clear-and-rewrite removes it.
TEST(Bugs, RowPastEndSurvivesTheNextJobOnlyWhenCommittedAfterIt) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string clean = NewHistorySchema(*conn);
  ASSERT_TRUE(IngestJobs(*conn, clean, SplitJobs({1001, 1200}, 100)).ok());
  const auto expected = Fingerprint(*conn, clean);
  IngestJobOptions bug;
  bug.bug = {BugKind::kRowPastEnd, 1101};
  bug.past_end_wait_s = 0.3;
  const std::string stray = fmt::format("history_operation_id = {} AND \"order\" = 0", Toid(1101, 1, 1));

  // The job holding 1101 first, then the buggy job ending at 1100: the stray row stays.
  const std::string after = NewHistorySchema(*conn, "Fx Bug");
  ASSERT_TRUE(IngestJob(*conn, after, {1101, 1200}, bug).ok());  // holds 1101: no stray from it
  EXPECT_EQ(Count(*conn, after, "history_effects", stray), 0);
  auto s = IngestJob(*conn, after, {1001, 1100}, bug);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->rows_per_table.at("history_effects"),
            static_cast<uint64_t>(GeneratedCounts({}, {1001, 1100}).at("history_effects")) + 1);
  EXPECT_EQ(Count(*conn, after, "history_effects", stray), 1);
  EXPECT_EQ(DifferingLedgers(expected, Fingerprint(*conn, after)), std::set<int64_t>{1101});

  // The buggy job first (its wait runs out): the next job's clear removes the stray row.
  const std::string before = NewHistorySchema(*conn, "Fx Bug");
  const Stopwatch started;
  ASSERT_TRUE(IngestJob(*conn, before, {1001, 1100}, bug).ok());
  EXPECT_GE(started.Seconds(), 0.3);
  EXPECT_EQ(Count(*conn, before, "history_effects", stray), 1);
  ASSERT_TRUE(IngestJob(*conn, before, {1101, 1200}, bug).ok());
  EXPECT_EQ(Count(*conn, before, "history_effects", stray), 0);
  EXPECT_TRUE(DifferingLedgers(expected, Fingerprint(*conn, before)).empty());
}

TEST(Bugs, ImpossibleTargetsAreUsageErrorsAndWriteNothing) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = NewHistorySchema(*conn, "Fx Bug");
  Ledger empty = 0, single = 0;
  for (Ledger l = 2; l < 1000 && (!empty || !single); ++l) {
    const auto n = GenerateLedger({}, l).transactions.size();
    if (n == 0 && !empty) empty = l;
    if (n == 1 && !single) single = l;
  }
  ASSERT_TRUE(empty && single);
  const LedgerRange job{2, 999};
  for (BugKind kind : {BugKind::kDuplicateRow, BugKind::kDropRow, BugKind::kMutateRow, BugKind::kSwapOrder,
                       BugKind::kStaleSurrogate}) {
    SCOPED_TRACE(BugKindName(kind));
    IngestJobOptions options;
    options.bug = {kind, empty};
    auto r = IngestJob(*conn, schema, job, options);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().kind(), Status::Kind::kUsage);
    EXPECT_NE(r.status().message().find(std::to_string(empty)), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(BugKindName(kind)), std::string::npos) << r.status().message();
  }
  IngestJobOptions swap;
  swap.bug = {BugKind::kSwapOrder, single};
  auto r = IngestJob(*conn, schema, job, swap);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ledger " + std::to_string(single) + " has 1 transaction"), std::string::npos)
      << r.status().message();
  for (const auto& [t, n] : Counts(*conn, schema)) EXPECT_EQ(n, 0) << t;
  // Skipping an empty ledger is possible: its ledger row goes missing.
  IngestJobOptions skip;
  skip.bug = {BugKind::kSkipLedger, empty};
  auto s = IngestJob(*conn, schema, job, skip);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->rows_per_table.at("history_ledgers"), job.size() - 1);
}

// ---------------------------------------------------------------------------------------------
// Unsafe mode (chaos negative control)

TEST(Unsafe, CommitsPrefixesAndDuplicatesOnRerunWithoutClearing) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string schema = NewHistorySchema(*conn, "Fx Unsafe");
  const LedgerRange job{1001, 1300};
  IngestJobOptions unsafe;
  unsafe.unsafe_commit_every = 100;
  int commits = 0;
  std::vector<std::string> stages;
  unsafe.on_stage = [&](const std::string& stage) {
    if (stage == "committed") stages.push_back(stage);
  };
  unsafe.before_commit = [&](pg::Connection&, const fixtures::JobStats&) {
    ++commits;
    return Status::Runtime("worker lost the job");
  };
  // Commits at multiples of 100: [1001,1099], [1100,1199], [1200,1299] are committed before the
  // failure at the job's last commit ([1300]): the job is not one transaction.
  auto r = IngestJob(*conn, schema, job, unsafe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(commits, 1);  // before_commit guards the job's last commit only
  EXPECT_EQ(stages.size(), 3u);
  EXPECT_EQ(Count(*conn, schema, "history_ledgers"), 299);
  EXPECT_EQ(Counts(*conn, schema), GeneratedCounts({}, {1001, 1299}));

  // Re-running without clearing "succeeds": unique indexes swallow the repeated rows
  // (ON CONFLICT DO NOTHING) and tables without one get the committed prefix twice.
  unsafe.before_commit = nullptr;
  unsafe.on_stage = nullptr;
  ASSERT_TRUE(IngestJob(*conn, schema, job, unsafe).ok());
  const auto full = GeneratedCounts({}, job), prefix = GeneratedCounts({}, {1001, 1299});
  EXPECT_EQ(Count(*conn, schema, "history_ledgers"), 300);
  EXPECT_EQ(Count(*conn, schema, "history_operations"), static_cast<int64_t>(full.at("history_operations")));
  EXPECT_EQ(Count(*conn, schema, "history_operation_participants"),
            static_cast<int64_t>(full.at("history_operation_participants") + prefix.at("history_operation_participants")));
  EXPECT_EQ(Count(*conn, schema, "history_transaction_participants"),
            static_cast<int64_t>(full.at("history_transaction_participants") +
                                 prefix.at("history_transaction_participants")));
  // The safe protocol repairs it.
  ASSERT_TRUE(IngestJob(*conn, schema, job, {}).ok());
  EXPECT_EQ(Counts(*conn, schema), full);
}


}  // namespace
}  // namespace ledgerdiff::fixtures
