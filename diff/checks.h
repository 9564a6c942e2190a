#pragma once
// Per-side checks that per-ledger digests cannot make: lookup tables (compared as sets of natural
// keys, plus each side's identity rules) and the profile's side invariants.
//
// Each function reads one side on a connection the caller provides (the row diff's connection,
// inside the digest's snapshot) and returns facts; comparing two sides' facts is pure. Where the
// side's digest already saw what a check needs (dump::SeenReferences: the referenced lookup
// rows, the referenced ids without a row), the check takes it from there instead of scanning
// the history tables again; the facts are the same either way (tests/soundness_test.cc, Checks).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/side.h"
#include "core/status.h"
#include "dump/digest.h"
#include "dump/profile.h"

namespace ledgerdiff::diff {

// One lookup table of one side: every row's natural key and id, and which rows compared rows
// reference. Compact (it is read whole: Horizon's history_accounts has a row per account ever
// seen): per row 16 bytes plus the key's and the id's COPY text, about 80 bytes for an account;
// no per-row allocation.
struct LookupFacts {
  struct Row {
    uint64_t at = 0;       // offset of the row's text in `text`: the key, then the id
    uint32_t key_len = 0;  // the natural key: its fields' COPY text (NULL "\N"), tab-separated
    uint32_t id_len : 31 = 0;
    uint32_t referenced : 1 = 0;  // some compared row references this id
  };
  std::string table;
  // Sorted by (key, id) bytewise: rows of one key are adjacent. The key's COPY text is an
  // injective encoding of the natural key (distinct keys never compare equal).
  std::vector<Row> rows;
  std::string text;
  // Ids referenced by compared rows that have no row here; sorted (as text) and unique.
  std::vector<std::string> missing;

  std::string_view key(const Row& r) const { return std::string_view(text).substr(r.at, r.key_len); }
  std::string_view id(const Row& r) const { return std::string_view(text).substr(r.at + r.key_len, r.id_len); }
  // Every referenced id, with or without a row (as text).
  std::set<std::string> ReferencedIds() const;
};

// A natural key as shown in reports: a JSON array of its fields' text, null for NULL.
std::string KeyJson(std::string_view key);

// What one side's digest saw of its references, and over which rows: `seen` covers the rows of
// `range` (seen->range must be it); `outside` counts each table's rows outside it.
struct KnownReferences {
  const dump::SeenReferences* seen = nullptr;  // nullptr: nothing known, every check scans
  LedgerRange range;
  std::vector<dump::OutsideRange> outside;
};

// Reads the lookup tables of `profile` (present ones) and the ids its compared tables reference.
// `range`: only rows in it are counted as references (std::nullopt: every row). The references
// of a lookup table come from `known` when it saw every join of `profile` to that table over
// exactly those rows, else from a scan.
Result<std::vector<LookupFacts>> ReadLookupFacts(pg::Connection& conn, const std::string& schema,
                                                 const dump::ProfileSpec& spec, const dump::ResolvedProfile& profile,
                                                 const std::optional<LedgerRange>& range,
                                                 const KnownReferences& known = {});

// A violated identity rule of one side's lookup table.
struct LookupIssue {
  Side side = Side::kLeft;
  std::string kind;    // "key_under_several_ids" | "referenced_id_missing"
  std::string detail;  // the key and its ids, or the missing ids
};

// The comparison of one lookup table.
// INVARIANT: divergent() iff the key sets differ or an identity rule is broken on a side.
struct LookupComparison {
  std::string table;
  uint64_t left_keys = 0, right_keys = 0;          // natural keys compared per side
  std::vector<std::string> only_left, only_right;  // at most max_rows each
  uint64_t only_left_total = 0, only_right_total = 0;
  std::vector<LookupIssue> issues;                 // at most max_rows per side and kind
  uint64_t issues_total = 0;
  // Warnings, not divergence (Horizon keeps accounts no history row references).
  uint64_t unreferenced_left = 0, unreferenced_right = 0;
  bool divergent() const { return only_left_total || only_right_total || issues_total; }
};

// Compares the facts of both sides. `scoped`: only keys whose ids are referenced are compared,
// and unreferenced ids are not counted (an explicit --range sees part of the history only).
// A lookup table present on one side only is compared against an empty set.
std::vector<LookupComparison> CompareLookups(const std::vector<LookupFacts>& left,
                                             const std::vector<LookupFacts>& right, bool scoped, uint32_t max_rows);

// One invariant on one side.
struct InvariantResult {
  std::string name, table;
  Side side = Side::kLeft;
  std::string description;
  uint64_t violations = 0;
  std::optional<Ledger> first_ledger;  // of a violating row with a ledger
};

// Checks `profile.invariants` on `schema` over `range` (rows of the table whose ledger is in it).
// A Reference rule (dump::InvariantRule::reference) is answered from `seen` when it resolved
// that join over exactly `range`, else by its SQL.
Result<std::vector<InvariantResult>> CheckInvariants(pg::Connection& conn, const std::string& schema,
                                                     const dump::ResolvedProfile& profile, const LedgerRange& range,
                                                     Side side, const dump::SeenReferences* seen = nullptr);

}  // namespace ledgerdiff::diff
