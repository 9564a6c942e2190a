#pragma once
// The real Horizon dumps as test data (../shared/horizon-scenarios): which of them load, and a
// renumbering that changes every surrogate id and turns every trade around while leaving the
// history the same (what a re-ingestion legitimately does).

#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"

namespace ledgerdiff::testing {

// The dumps that load on PostgreSQL 15 (offer_ids-horizon.sql does not: a comma is missing).
const std::vector<std::string>& LoadableDumps();
// Whether public.`table` has `column`.
bool HasColumn(pg::Connection& c, const std::string& table, const std::string& column);
// Renumbers the surrogate ids of a loaded dump consistently: accounts +1000, assets reversed
// (1000 - id, which turns every trade around: base/counter swapped to keep Horizon's CHECK),
// claimable balances and liquidity pools +500; history_effects rewritten in reverse order.
void Renumber(const std::string& conninfo);
// Deletes every row of ledger `l` from every history table of the loaded dump (public): a ledger
// that was never ingested there.
void DeleteLedger(const std::string& conninfo, Ledger l);
// The same, keeping the rows aside (in schema ld_held_back of that database) until RestoreLedger
// puts them back: a ledger a backfill has not written yet, then writes.
void HoldBackLedger(const std::string& conninfo, Ledger l);
void RestoreLedger(const std::string& conninfo, Ledger l);

}  // namespace ledgerdiff::testing
