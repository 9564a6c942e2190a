#pragma once
// Table profiles: which tables are compared, how a row maps to a ledger, the canonical columns
// (surrogate ids resolved to natural keys, volatile columns excluded) and a total row order.
//
// A ProfileSpec is the rule book (built-in `horizon`, `auto`, or a user JSON file). Resolving a
// spec against a live schema (ResolveProfile) introspects the columns that are really there and
// yields a ResolvedProfile: the exact column lists that the digest hashes. The resolved profile
// is schema-name independent, so it can be stored in a manifest and compared across sides.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/history_tables.h"
#include "core/pg.h"
#include "core/status.h"

namespace ledgerdiff::dump {

// How the text form of a column's values is tagged in the row encoding. Two columns of the same
// class hash alike (int4 vs int8, varchar vs text): a widened column is not a data change.
enum class ColumnClass { kInt, kNumeric, kFloat, kText, kBool, kDateTime, kInterval, kJson, kJsonb, kBytea, kArray, kOther };
const char* ToString(ColumnClass c);         // "int", "numeric", ... (how profiles spell it)
const char* ColumnClassName(ColumnClass c);  // ToString
std::optional<ColumnClass> ParseColumnClass(const std::string& name);

// How a row maps to its ledger (the kinds of core/history_tables.h, whose Horizon tables the
// `horizon` profile is built from).
struct LedgerMapping {
  std::string column;
  LedgerColumnKind kind = LedgerColumnKind::kSequence;
};

// A surrogate id column replaced by the natural key of the row it points to.
struct ResolveRule {
  std::string column;                // e.g. "history_account_id"
  std::string lookup_table;          // e.g. "history_accounts"
  std::string lookup_id = "id";      // the surrogate id column of the lookup table
  std::vector<std::string> natural;  // e.g. {"address"}; output columns are "<prefix>.<natural>"
};

// Turning a row around to a canonical orientation (Horizon's trades): when the natural key of
// the `base` lookup column is greater (COLLATE "C") than the `counter` one's, every `swap` pair
// is exchanged and every `negate` flag negated (NULL stays NULL).
struct OrientationRule {
  std::string base, counter;                              // raw surrogate id columns (resolved)
  std::vector<std::pair<std::string, std::string>> swap;  // raw column pairs
  std::vector<std::string> negate;                        // boolean raw columns
};
OrientationRule HorizonTradeOrientation();
// Horizon's reference to an asset: `column` holds a history_assets id, resolved to the asset's
// natural key (asset_type, asset_code, asset_issuer).
ResolveRule HorizonAssetReference(const std::string& column);

// A side invariant: a property each side must hold on its own (on its own surrogate ids), checked
// per side over the compared range; a violating row is a divergence. `violation` is an SQL
// predicate over alias t (the table) true for a violating row; "{schema}" expands to the side's
// quoted schema. Checked only when `table`, `columns` (of table) and `tables` are present.
struct InvariantRule {
  std::string name;
  std::string table;
  std::string violation;
  std::vector<std::string> columns;
  std::vector<std::string> tables;
  std::string description;
  // Set when the rule is "every non-NULL t.column has a row in lookup_table" (and `violation`
  // says so: MissingReferenceViolation): a digest that resolved those ids on the client
  // already knows the violating rows (diff/checks.h).
  struct Reference {
    std::string column, lookup_table, lookup_id;
  };
  std::optional<Reference> reference;
};

// The `violation` of a Reference rule.
std::string MissingReferenceViolation(const InvariantRule::Reference& r);

// A table derived from history by a time window (Horizon's history_trades_60000: one row per
// minute and asset pair, filed under the ledger that opened the bucket and rewritten while later
// ledgers of the same minute add trades). `column` holds the window's start in epoch
// milliseconds (an integer column); a row is settled, and so comparable, once its window has
// closed: column + width_ms <= the close time of the last ledger both sides hold. A live side
// rewrites an unsettled row; it is listed as not compared (unsettled), never called divergent.
struct TimeWindow {
  std::string column;
  int64_t width_ms = 0;
  bool operator==(const TimeWindow&) const = default;
};

// Per-table rules of a spec.
struct TableRule {
  std::string table;
  LedgerMapping ledger;
  std::vector<std::string> key;      // natural key (raw column names; resolved ones expand)
  std::vector<std::string> exclude;  // raw columns dropped for this table
  std::vector<ResolveRule> resolve;
  std::optional<OrientationRule> orientation;
  std::optional<TimeWindow> window;
  // Every database of this kind has the table: a comparison of two databases (verify-range)
  // where neither side has it is incomplete, not identical (diff::DiffOptions::
  // require_profile_tables). Horizon: the seven tables every migration level has.
  bool required = false;
};

// A state table (issue 45): what the database serves now (Horizon's accounts, offers, trust
// lines, ...). It has no ledger column, so no per-ledger digest reaches it: it is compared whole,
// row by row under its natural key, when both sides' state stands at the same ledger
// (StateLedgerSource). `key` is the table's primary key; a key column resolved through a lookup
// (`resolve`) expands to the lookup's natural key, as in TableRule.
struct StateTableRule {
  std::string table;
  std::vector<std::string> key;
  std::vector<std::string> exclude;  // raw columns dropped for this table
  std::vector<ResolveRule> resolve;
};

// Where a database records the ledger its state tables are at: `value_column` (an integer as
// text) of the row of `table` whose `key_column` equals `key`. Horizon: key_value_store, key
// exp_ingest_last_ledger. No such row: the side records no state ledger.
struct StateLedgerSource {
  std::string table, key_column, value_column, key;
};

struct ProfileSpec {
  std::string name;
  std::vector<std::string> exclude;  // columns dropped in every table
  std::vector<TableRule> tables;
  std::vector<std::string> lookup_tables;  // not digested; compared as sets of natural keys
  std::vector<InvariantRule> invariants;
  // `auto`: every other table with a recognizable ledger column is compared too.
  bool discover = false;
  // State tables and where their ledger is read (dump/state_profile.h; empty: no state compared).
  std::vector<StateTableRule> state_tables;
  std::optional<StateLedgerSource> state_ledger;
};

// A lookup table as the profile resolves it: (id, natural key) pairs, gathered from the resolve
// rules of every table of the spec. One entry per lookup table.
struct LookupRule {
  std::string table;
  std::string id = "id";
  std::vector<std::string> natural;
};
std::vector<LookupRule> LookupRules(const ProfileSpec& spec);

// True when some table of `spec` has a TimeWindow.
bool HasWindowedTable(const ProfileSpec& spec);

// Built-in specs.
ProfileSpec HorizonProfileSpec();
ProfileSpec AutoProfileSpec();
// "horizon" | "auto" | a path to a JSON profile (format in dump/README.md).
// Errors (Usage) name the file and the problem.
Result<ProfileSpec> LoadProfileSpec(const std::string& name_or_path);
Result<ProfileSpec> ParseProfileSpecJson(const std::string& text, const std::string& origin);

// The canonical text of a resolved id, three distinct values for three different facts (both
// engines, the row diff and `dump` alike):
//   a NULL id                          -> NULL
//   an id without a lookup row         -> kUnresolvedPrefix + the id ("!unresolved:17")
//   an id whose row's natural key is wholly NULL -> kNullNaturalKey in the key's first column
//   an id with a row                   -> the natural key's columns as text
inline constexpr std::string_view kUnresolvedPrefix = "!unresolved:";
inline constexpr std::string_view kNullNaturalKey = "!null-key";

// One canonical output column.
struct CanonicalColumn {
  std::string name;   // output name ("history_account.address" for a resolved id)
  std::string expr;   // SQL over alias t (the table) and the join aliases
  ColumnClass cls = ColumnClass::kOther;
  std::string type;   // live type name ("timestamptz"); "" when unknown (manifest of version 1)
  // How the digest computes it on the client (dump/lookup_map.h), from a live schema only:
  // a resolved column is natural column `natural` of join `join`'s lookup row; any other column
  // is `plain_expr` (its SQL before orientation) read as it is.
  int join = -1;
  size_t natural = 0;
  std::string plain_expr;
  bool operator==(const CanonicalColumn& o) const { return name == o.name && cls == o.cls; }
};

struct JoinSpec {
  std::string alias;         // "j1"
  std::string lookup_table;  // "history_accounts"
  std::string lookup_id;     // "id"
  std::string on_expr;       // "t.\"history_account_id\""
  std::string column;                // the raw surrogate id column ("history_account_id")
  std::vector<std::string> natural;  // the lookup's natural key columns
  bool integer_ids = false;          // both id columns are integers (client resolution possible)
};

// The orientation (OrientationRule) as the digest applies it on the client: when the natural
// key of join `base` is greater (bytewise, NULLs never) than join `counter`'s, the `swap`
// output columns are exchanged and the `negate` ones negated.
struct ClientOrientation {
  int base = -1, counter = -1;
  std::vector<std::pair<std::string, std::string>> swap;
  std::vector<std::string> negate;
};

// A table as the digest reads it. INVARIANT: key names are names of `columns`; `columns` are
// sorted by name (the physical column order of a table is not data).
struct ResolvedTable {
  std::string name;
  LedgerMapping ledger;
  std::vector<CanonicalColumn> columns;
  std::vector<std::string> key;       // output column names, order of the natural key
  std::vector<JoinSpec> joins;
  std::string lateral;                // optional "CROSS JOIN LATERAL (...) o" (trade orientation)
  // SQL over the same aliases, true when the orientation turned the row around (the row is
  // stored flipped relative to its canonical orientation); "" when the table has no orientation.
  // The row diff reports it; it is no part of the row (digests and dumps never see it).
  std::string flip_expr;
  std::optional<ClientOrientation> orientation;  // the same, for the client (live schemas only)
  std::vector<std::string> excluded;  // raw column names left out
  // Every raw column of the live table in its physical (attnum) order, excluded ones too; empty
  // for a profile read from a manifest. The client-resolved statement selects in this order, so
  // that a table read whole needs no projection in the server (dump/lookup_map.h).
  std::vector<std::string> physical;
  std::vector<std::string> notes;     // e.g. "history_trades: base/counter oriented by asset key"
  // True when a valid, non-partial unique index of the live table, whose columns are all NOT
  // NULL, covers a subset of the key's plain columns: the key alone is then a total order, and
  // sorting by the other columns is wasted work. Not part of the profile's identity (the
  // canonical order is the same either way when keys are unique).
  bool unique_key = false;
  // From the rule (live schemas only: a manifest's profile has none), and the comparison's
  // cutoff when one applies (ApplySettledCutoff): then RangePredicate reads settled rows only.
  // Neither is part of the profile's identity.
  std::optional<TimeWindow> window;
  std::optional<int64_t> settled_before_ms;
};

struct ResolvedProfile {
  std::string name;
  std::vector<ResolvedTable> tables;          // compared, sorted by name
  std::vector<std::string> lookup_tables;     // present lookup tables (not digested)
  // Other tables present without a ledger mapping, state tables included (verify-range, which
  // compares them, takes them off its report's list: verify/state_compare.h).
  std::vector<std::string> uncompared_tables;
  // The spec's state tables present with their key columns (ResolvedTable::ledger is empty),
  // sorted by name. Live schemas only: never stored in a manifest (ResolvedProfileToJson).
  std::vector<ResolvedTable> state_tables;
  std::vector<std::string> present_tables;    // every table of the schema, sorted
  std::vector<InvariantRule> invariants;      // the spec's invariants that apply to this schema
  // "table.column" for every excluded column, sorted.
  std::vector<std::string> ExcludedColumns() const;
  const ResolvedTable* Find(const std::string& table) const;
};

// Restricts every windowed table of `profile` to the rows whose window closed at or before
// `settled_before_ms` (epoch milliseconds): what a comparison of two live sides reads.
void ApplySettledCutoff(ResolvedProfile& profile, int64_t settled_before_ms);
// The SQL predicate over alias t that is true for a settled row of `table`, "" when the table
// has no window or no cutoff was applied.
std::string SettledPredicate(const ResolvedTable& table);


// Introspects `schema` (pg_attribute) and applies `spec`. Absent tables and columns are skipped.
// Errors: the schema does not exist (Usage), no table of the profile is present (Usage).
Result<ResolvedProfile> ResolveProfile(pg::Connection& conn, const std::string& schema, const ProfileSpec& spec);

// Keeps only the columns named in `names` (the other side's list); the key shrinks likewise.
ResolvedTable RestrictColumns(const ResolvedTable& table, const std::vector<std::string>& names);

// `profile` restricted to the tables and columns of `to` (another side's), in `profile`'s order:
// what a digest with DigestOptions::restrict_to computes over.
ResolvedProfile RestrictProfile(const ResolvedProfile& profile, const ResolvedProfile& to);

// JSON form stored in manifests (names, classes, ledger mapping, key, exclusions; no SQL).
nlohmann::json ResolvedProfileToJson(const ResolvedProfile& profile);
Result<ResolvedProfile> ResolvedProfileFromJson(const nlohmann::json& j);

}  // namespace ledgerdiff::dump
