#pragma once
// What the tests of the state tables (issue 45) share: kahuna's empty state tables filled from its
// own history with the ledger its state is at (ledgerdiff::testing: state_test,
// state_bucket_test, follow_state_compare_test), and for the one-shot state tests both engines,
// the verify-range call and two filled sides (ledgerdiff::state_support). Header-only, named
// namespaces (unity builds: never two anonymous copies). Included by test sources only.

#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/follow_harness.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"

namespace ledgerdiff::testing {

// SQL that records the state at `ledger` (key_value_store exp_ingest_last_ledger).
inline std::string SetStateLedger(int ledger) {
  return fmt::format("DELETE FROM key_value_store WHERE key = 'exp_ingest_last_ledger'; "
                     "INSERT INTO key_value_store VALUES ('exp_ingest_last_ledger', '{}');",
                     ledger);
}

// Fills kahuna's (empty) state tables from its own history, and records the state at `ledger`:
// an account per address (with its master key as its one signer), a trust line per account and
// non-native asset it traded, an offer per offer id of the trades (either side of a trade). Every
// value is derived from natural keys, never from a surrogate id or a trade's orientation, so a
// re-ingested copy (testing::Renumber) gets the same state.
inline void FillState(const std::string& db, int ledger) {
  ExecSql(db,
          "INSERT INTO accounts SELECT address, 1000000000 + abs(hashtext(address)) % 1000, 0, 0, "
          "(abs(hashtext(address)) % 100000)::bigint << 32, 0, '', 0, '', 1, 0, 0, 0, 61 FROM history_accounts;"
          "INSERT INTO accounts_signers (account_id, signer, weight) SELECT address, address, 1 FROM history_accounts;"
          "INSERT INTO trust_lines SELECT DISTINCT ON (a.address, s.asset_code, s.asset_issuer) a.address || ':' || "
          "s.asset_code || ':' || s.asset_issuer, a.address, 1, s.asset_issuer, s.asset_code, "
          "abs(hashtext(a.address || s.asset_code || s.asset_issuer)) % 100000, 1000000000, 0, 0, 1, 61 "
          "FROM history_trades t CROSS JOIN LATERAL (VALUES (t.base_account_id, t.base_asset_id), "
          "(t.counter_account_id, t.counter_asset_id)) p(account, asset) JOIN history_accounts a ON a.id = p.account "
          "JOIN history_assets s ON s.id = p.asset WHERE s.asset_type <> 'native';"
          // An offer id at or above 2^62 is Horizon's synthetic id of a trade against no offer.
          "INSERT INTO offers SELECT DISTINCT ON (o.offer) a.address, o.offer, sell.asset_code, buy.asset_code, o.amount, "
          "1, 1, 1.0, 0, 61 FROM history_trades t CROSS JOIN LATERAL (VALUES "
          "(t.base_offer_id, t.base_account_id, t.base_asset_id, t.counter_asset_id, t.base_amount), "
          "(t.counter_offer_id, t.counter_account_id, t.counter_asset_id, t.base_asset_id, t.counter_amount)) "
          "o(offer, account, selling, buying, amount) JOIN history_accounts a ON a.id = o.account "
          "JOIN history_assets sell ON sell.id = o.selling JOIN history_assets buy ON buy.id = o.buying "
          "WHERE o.offer < 4611686018427387904 ORDER BY o.offer, t.history_operation_id, t.\"order\";" +
              SetStateLedger(ledger));
}

}  // namespace ledgerdiff::testing

namespace ledgerdiff::state_support {

inline const std::vector<std::string> kEngines = {"text", "server-hash"};
inline constexpr const char* kRange = "1:61";

inline testing::CliResult VerifyRange(const std::string& left, const std::string& right, const std::string& engine,
                               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"verify-range", "--left", left, "--right",  right,
                                   "--range",      kRange, "--engine", engine, "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::RunCli(args);
}

using testing::FillState;
using testing::SetStateLedger;

struct Sides {
  std::string left, right;
};

inline Sides FilledSides(int left_ledger = 61, int right_ledger = 61) {
  Sides s{testing::LoadDump(), testing::LoadDump()};
  FillState(s.left, left_ledger);
  FillState(s.right, right_ledger);
  return s;
}

}  // namespace ledgerdiff::state_support
