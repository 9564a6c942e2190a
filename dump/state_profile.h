#pragma once
// The state tables of a profile (issue 45): Horizon's, declared once here, and the "state"
// section of a user profile (format in dump/README.md, "State tables").

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// Every state table of the Horizon schemas in the real dumps (../shared/horizon-scenarios) with
// its primary key, plus claimable_balances (a later migration, key id). asset_stats (the legacy
// asset statistics) is keyed by a history_assets id, compared as the asset it names.
std::vector<StateTableRule> HorizonStateTables();
// Horizon records the ledger its state is at in key_value_store, key exp_ingest_last_ledger.
StateLedgerSource HorizonStateLedger();

// Reads the optional "state" object of a profile's JSON into `spec`:
//   "state": {"ledger": {"table", "key_column", "value_column", "key"},
//             "tables": [{"table", "key": [columns], "exclude": [columns], "resolve": [...]}],
//             "horizon_tables": bool}
// Errors (Usage) name the profile and the problem: a table without a key, a ledger source
// missing one of its four names.
Status ParseStateSection(const nlohmann::json& profile, const std::string& origin, ProfileSpec& spec);

// A table's "resolve" array (history and state tables alike): each surrogate-id column with the
// lookup that maps it to its natural key; the lookups join spec.lookup_tables. Throws what
// nlohmann::json throws on a missing or mistyped field (the caller turns it into a Usage error).
Result<std::vector<ResolveRule>> ParseResolveRules(const nlohmann::json& table, const std::string& origin,
                                                   const std::string& table_name, ProfileSpec& spec);

}  // namespace ledgerdiff::dump
