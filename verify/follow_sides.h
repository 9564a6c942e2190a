#pragma once
// What verify-range --follow (verify/follow.h) reads of each side outside its comparisons: the
// side's identity as the state records it, its heads and gaps, the first ledger it lacks, and a
// ledger's close time. Each call reads through a SideSession, the side's read-only session that
// the follower holds across cycles.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"

namespace ledgerdiff::verify {

// One side's read-only session, held for the follower's life (issue 43: a cycle costs what is
// new, not a connection per statement). Every statement runs in autocommit: each reads a fresh
// snapshot and no transaction stays open across the sleep between cycles (it would hold back
// the side's vacuum). Not thread-safe.
class SideSession {
 public:
  explicit SideSession(const std::string& conninfo) : conninfo_(conninfo) {}
  // The session, after a trivial statement proved it alive; a session found gone (a server
  // restarted, a backend terminated) is opened again. An error is the connection's (runtime:
  // the follower retries the cycle; a conninfo refused as bad input: usage).
  Result<pg::Connection*> Get();
  // Sessions opened so far (the first included): the follower's reconnects.
  uint64_t opened() const { return opened_; }

 private:
  std::string conninfo_;
  std::unique_ptr<pg::Connection> conn_;
  uint64_t opened_ = 0;
};

// One side of the comparison as the state records it: its identity and schema; never a conninfo.
Result<nlohmann::json> SideRecord(SideSession& session, const std::string& schema);

// The state's side and the one given now: "" when they are the same source, else why not.
// Throws what dump::SourceIdentityFromJson throws for a stored record that is not one.
std::string SideMismatch(const nlohmann::json& stored, const nlohmann::json& now, const char* side);

// Each side's heads: the highest ledger it holds, and the last of its gap-free run of ledgers
// after `after` (through after + window; `after` when ledger after + 1 is missing); and, in the
// same statement (one snapshot), what it still holds of the compared ledgers `kept`:`after`.
struct Heads {
  std::optional<Ledger> max;
  Ledger contiguous = 0;
  std::optional<double> closed_at_max;  // Unix time of `max`, when the ledger table has closed_at
  std::optional<Ledger> lowest;         // its lowest ledger at or after `kept`
  uint64_t held = 0;                    // its ledgers in kept:after (an index-only count)
  // Ledgers missing between the end of its gap-free run and its head, within the window after
  // `after` (an index-only count of the window).
  uint64_t gap_ledgers = 0;
};

Result<Heads> ReadHeads(SideSession& session, const std::string& schema, Ledger after, uint64_t window,
                        Ledger kept);

// The first ledger of from:to that `schema` does not hold (to + 1 when it holds them all).
Result<Ledger> FirstMissing(SideSession& session, const std::string& schema, Ledger from, Ledger to);

// closed_at of `ledger` on that side as Unix seconds; nullopt when unknown (no such row or column,
// no connection).
std::optional<double> ClosedAt(SideSession& session, const std::string& schema, Ledger ledger);

}  // namespace ledgerdiff::verify
