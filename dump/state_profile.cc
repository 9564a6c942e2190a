#include "dump/state_profile.h"

#include <exception>

namespace ledgerdiff::dump {

std::vector<StateTableRule> HorizonStateTables() {
  auto keyed = [](std::string table, std::vector<std::string> key) {
    StateTableRule r;
    r.table = std::move(table);
    r.key = std::move(key);
    return r;
  };
  StateTableRule asset_stats = keyed("asset_stats", {"id"});
  asset_stats.resolve = {HorizonAssetReference("id")};
  return {
      keyed("accounts", {"account_id"}),
      keyed("accounts_data", {"ledger_key"}),
      keyed("accounts_signers", {"signer", "account_id"}),
      asset_stats,
      keyed("claimable_balances", {"id"}),
      keyed("exp_asset_stats", {"asset_code", "asset_issuer", "asset_type"}),
      keyed("liquidity_pools", {"id"}),
      keyed("offers", {"offer_id"}),
      keyed("trust_lines", {"ledger_key"}),
  };
}

StateLedgerSource HorizonStateLedger() {
  StateLedgerSource s;
  s.table = "key_value_store";
  s.key_column = "key";
  s.value_column = "value";
  s.key = "exp_ingest_last_ledger";
  return s;
}

Status ParseStateSection(const nlohmann::json& profile, const std::string& origin, ProfileSpec& spec) {
  if (!profile.contains("state")) return Status::Ok();
  const nlohmann::json& js = profile.at("state");
  if (!js.is_object()) return Status::Usagef("profile {}: \"state\" is not an object", origin);
  try {
    if (js.value("horizon_tables", false)) {
      spec.state_tables = HorizonStateTables();
      spec.state_ledger = HorizonStateLedger();
    }
    if (js.contains("ledger")) {
      const auto& jl = js.at("ledger");
      StateLedgerSource src;
      src.table = jl.value("table", "");
      src.key_column = jl.value("key_column", "");
      src.value_column = jl.value("value_column", "");
      src.key = jl.value("key", "");
      if (src.table.empty() || src.key_column.empty() || src.value_column.empty() || src.key.empty())
        return Status::Usagef("profile {}: state ledger needs \"table\", \"key_column\", \"value_column\" and \"key\"",
                              origin);
      spec.state_ledger = std::move(src);
    }
    for (const auto& jt : js.value("tables", nlohmann::json::array())) {
      StateTableRule r;
      r.table = jt.at("table").get<std::string>();
      r.key = jt.value("key", std::vector<std::string>{});
      r.exclude = jt.value("exclude", std::vector<std::string>{});
      LD_ASSIGN_OR_RETURN(r.resolve, ParseResolveRules(jt, origin, r.table, spec));
      if (r.key.empty()) return Status::Usagef("profile {}: state table {}: \"key\" (its primary key columns) is empty", origin, r.table);
      spec.state_tables.push_back(std::move(r));
    }
  } catch (const std::exception& e) {
    return Status::Usagef("profile {}: state: {}", origin, e.what());
  }
  return Status::Ok();
}

}  // namespace ledgerdiff::dump
