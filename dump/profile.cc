#include "dump/profile.h"

#include <array>

#include "core/atomic_file.h"
#include "dump/state_profile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/enum_names.h"

namespace ledgerdiff::dump {

namespace {

constexpr std::array kColumnClasses = {
    ColumnClass::kInt,      ColumnClass::kNumeric, ColumnClass::kFloat, ColumnClass::kText,
    ColumnClass::kBool,     ColumnClass::kDateTime, ColumnClass::kInterval, ColumnClass::kJson,
    ColumnClass::kJsonb,    ColumnClass::kBytea,   ColumnClass::kArray, ColumnClass::kOther,
};

const std::vector<std::string> kDefaultExclude = {"created_at", "updated_at", "importer_version"};
// A week: wider windows are not aggregation buckets (and keep cutoff arithmetic far from overflow).
constexpr int64_t kMaxWindowMs = int64_t{7} * 24 * 3600 * 1000;

ResolveRule Accounts(const std::string& column) { return {column, "history_accounts", "id", {"address"}}; }
ResolveRule Assets(const std::string& column) {
  return {column, "history_assets", "id", {"asset_type", "asset_code", "asset_issuer"}};
}
ResolveRule Pools(const std::string& column) {
  return {column, "history_liquidity_pools", "id", {"liquidity_pool_id"}};
}
ResolveRule Balances(const std::string& column) {
  return {column, "history_claimable_balances", "id", {"claimable_balance_id"}};
}

// Resolution rules Horizon's surrogate-id columns get wherever they appear.
std::vector<ResolveRule> HorizonResolves() {
  return {Accounts("history_account_id"), Accounts("base_account_id"), Accounts("counter_account_id"),
          Assets("base_asset_id"),        Assets("counter_asset_id"),  Pools("base_liquidity_pool_id"),
          Pools("counter_liquidity_pool_id"), Pools("history_liquidity_pool_id"),
          Balances("history_claimable_balance_id")};
}

// The history tables every Horizon database has, at every migration level the real dumps show
// (the others came with later migrations: claimable balances, liquidity pools, trade
// aggregations, transaction filtering's staging table).
bool IsCoreHistoryTable(std::string_view name) {
  static constexpr std::string_view kCore[] = {"history_ledgers",      "history_transactions",
                                               "history_operations",   "history_effects",
                                               "history_trades",       "history_operation_participants",
                                               "history_transaction_participants"};
  return std::find(std::begin(kCore), std::end(kCore), name) != std::end(kCore);
}

// What the digest knows of a Horizon history table beyond its ledger column.
struct TableKnowledge {
  std::vector<std::string> key;      // natural key
  std::vector<std::string> exclude;  // raw columns left out
  std::optional<OrientationRule> orientation;
  std::optional<TimeWindow> window = std::nullopt;
};

OrientationRule TradeAggregationOrientation() {
  return OrientationRule{"base_asset_id", "counter_asset_id",
                         {{"base_volume", "counter_volume"}, {"high_n", "low_d"}, {"high_d", "low_n"},
                          {"open_n", "open_d"}, {"close_n", "close_d"}},
                         {}};
}

// Keyed by table name; a table of core/history_tables.h without an entry is keyed by its ledger
// column alone (the full tie-break still makes the order total).
const std::map<std::string, TableKnowledge, std::less<>>& HorizonTableKnowledge();

struct LiveColumn {
  std::string name;
  std::string type;
  char category;
};

ColumnClass ClassOf(const LiveColumn& c) {
  const std::string& t = c.type;
  if (t == "int2" || t == "int4" || t == "int8" || t == "oid") return ColumnClass::kInt;
  if (t == "float4" || t == "float8") return ColumnClass::kFloat;
  if (t == "numeric" || t == "money") return ColumnClass::kNumeric;
  if (t == "bool") return ColumnClass::kBool;
  if (t == "json") return ColumnClass::kJson;
  if (t == "jsonb") return ColumnClass::kJsonb;
  if (t == "bytea") return ColumnClass::kBytea;
  if (t == "interval") return ColumnClass::kInterval;
  switch (c.category) {
    case 'S': return ColumnClass::kText;
    case 'D': return ColumnClass::kDateTime;
    case 'A': return ColumnClass::kArray;
    case 'N': return ColumnClass::kNumeric;
    default: return ColumnClass::kOther;
  }
}

std::string Col(const std::string& alias, const std::string& column) { return alias + "." + pg::QuoteIdent(column); }

std::string StripIdSuffix(const std::string& c) {
  if (c.size() > 3 && c.compare(c.size() - 3, 3, "_id") == 0) return c.substr(0, c.size() - 3);
  return c;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

using LiveSchema = std::map<std::string, std::vector<LiveColumn>>;

const LiveColumn* FindColumn(const std::vector<LiveColumn>& cols, const std::string& name) {
  for (const auto& c : cols)
    if (c.name == name) return &c;
  return nullptr;
}

bool IsLookupUsable(const LiveSchema& live, const ResolveRule& r) {
  auto it = live.find(r.lookup_table);
  if (it == live.end() || !FindColumn(it->second, r.lookup_id)) return false;
  for (const auto& n : r.natural)
    if (!FindColumn(it->second, n)) return false;
  return true;
}

// Rewrites the oriented columns of `t` (see OrientationRule). REQUIRES: base and counter are
// resolved through joins to a lookup with natural key columns (asset_type, asset_code, ...).
void Orient(const OrientationRule& rule, std::map<std::string, std::string>& join_alias_of,
            const std::map<std::string, std::vector<size_t>>& outputs_of, ResolvedTable& t) {
  const std::string& ja = join_alias_of[rule.base];
  const std::string& jc = join_alias_of[rule.counter];
  std::vector<std::string> l, r;
  auto ob = outputs_of.find(rule.base), oc = outputs_of.find(rule.counter);
  if (ob == outputs_of.end() || oc == outputs_of.end()) return;
  const size_t prefix = StripIdSuffix(rule.base).size() + 1;
  for (size_t i : ob->second) l.push_back(Col(ja, t.columns[i].name.substr(prefix)) + "::text COLLATE \"C\"");
  for (size_t i : oc->second)
    r.push_back(Col(jc, t.columns[i].name.substr(StripIdSuffix(rule.counter).size() + 1)) + "::text COLLATE \"C\"");
  t.lateral = fmt::format("CROSS JOIN LATERAL (SELECT COALESCE(({}) > ({}), false) AS flip) o", fmt::join(l, ", "),
                          fmt::join(r, ", "));
  t.flip_expr = "o.flip";
  auto original = t.columns;
  ClientOrientation client;
  client.base = t.columns[ob->second.front()].join;
  client.counter = t.columns[oc->second.front()].join;
  std::vector<std::pair<std::string, std::string>> pairs = rule.swap;
  pairs.insert(pairs.begin(), {rule.base, rule.counter});
  for (const auto& [b, c] : pairs) {
    auto ib = outputs_of.find(b), ic = outputs_of.find(c);
    if (ib == outputs_of.end() || ic == outputs_of.end() || ib->second.size() != ic->second.size()) continue;
    for (size_t i = 0; i < ib->second.size(); ++i) {
      size_t x = ib->second[i], y = ic->second[i];
      t.columns[x].expr = fmt::format("CASE WHEN o.flip THEN {} ELSE {} END", original[y].expr, original[x].expr);
      t.columns[y].expr = fmt::format("CASE WHEN o.flip THEN {} ELSE {} END", original[x].expr, original[y].expr);
      client.swap.emplace_back(original[x].name, original[y].name);
    }
  }
  for (const auto& flag : rule.negate) {
    auto it = outputs_of.find(flag);
    if (it == outputs_of.end()) continue;
    for (size_t i : it->second) {
      t.columns[i].expr = fmt::format("CASE WHEN o.flip THEN NOT {0} ELSE {0} END", original[i].expr);
      client.negate.push_back(original[i].name);
    }
  }
  t.orientation = std::move(client);
  t.notes.push_back(t.name + ": " + StripIdSuffix(rule.base) + "/" + StripIdSuffix(rule.counter) +
                    " oriented by natural key COLLATE \"C\"");
}

ResolvedTable BuildTable(const LiveSchema& live, const std::vector<LiveColumn>& cols, const TableRule& rule,
                         const std::vector<std::string>& global_exclude) {
  ResolvedTable t;
  t.name = rule.table;
  t.ledger = rule.ledger;
  std::map<std::string, std::vector<size_t>> outputs_of;  // raw column -> output indexes
  std::map<std::string, std::string> join_alias_of;       // raw column -> join alias
  for (const LiveColumn& c : cols) {
    t.physical.push_back(c.name);
    if (Contains(global_exclude, c.name) || Contains(rule.exclude, c.name)) {
      t.excluded.push_back(c.name);
      continue;
    }
    const ResolveRule* rr = nullptr;
    for (const auto& r : rule.resolve)
      if (r.column == c.name) rr = &r;
    if (rr && IsLookupUsable(live, *rr)) {
      std::string alias = fmt::format("j{}", t.joins.size() + 1);
      const int join = static_cast<int>(t.joins.size());
      const LiveColumn* lookup_id = FindColumn(live.at(rr->lookup_table), rr->lookup_id);
      bool integer_ids = ClassOf(c) == ColumnClass::kInt && ClassOf(*lookup_id) == ColumnClass::kInt;
      t.joins.push_back({alias, rr->lookup_table, rr->lookup_id, Col("t", c.name), c.name, rr->natural, integer_ids});
      join_alias_of[c.name] = alias;
      for (size_t k = 0; k < rr->natural.size(); ++k) {
        const std::string& n = rr->natural[k];
        outputs_of[c.name].push_back(t.columns.size());
        CanonicalColumn out;
        out.name = StripIdSuffix(c.name) + "." + n;
        // A reference to a row whose natural key is wholly NULL is neither a NULL reference nor
        // a missing row: the key's first column says so (kNullNaturalKey), the others stay NULL.
        std::string null_key;
        if (k == 0) {
          std::vector<std::string> nulls;
          for (const std::string& m : rr->natural) nulls.push_back(Col(alias, m) + " IS NULL");
          null_key = fmt::format(" WHEN {} THEN {}", fmt::join(nulls, " AND "), pg::QuoteLiteral(kNullNaturalKey));
        }
        out.expr = fmt::format("CASE WHEN {0} IS NULL THEN NULL WHEN {1} IS NULL THEN '{3}' || "
                               "{0}::text{4} ELSE {2}::text END",
                               Col("t", c.name), Col(alias, rr->lookup_id), Col(alias, n), kUnresolvedPrefix, null_key);
        out.cls = ColumnClass::kText;
        out.type = "text";
        out.join = join;
        out.natural = k;
        t.columns.push_back(std::move(out));
      }
      continue;
    }
    if (rr) t.notes.push_back(fmt::format("{}.{}: lookup table {} absent, surrogate ids compared as they are",
                                          t.name, c.name, rr->lookup_table));
    outputs_of[c.name].push_back(t.columns.size());
    std::string expr = Col("t", c.name);
    if (c.type == "money") expr += "::numeric";  // money's text form depends on lc_monetary
    // timestamptz compares as the UTC timestamp it denotes: equal to a timestamp column holding
    // UTC instants (the session TimeZone is pinned to UTC, so this is exact).
    if (c.type == "timestamptz") expr = "(" + expr + " AT TIME ZONE 'UTC')";
    CanonicalColumn out;
    out.name = c.name;
    out.expr = expr;
    out.cls = ClassOf(c);
    out.type = c.type;
    out.plain_expr = expr;
    t.columns.push_back(std::move(out));
  }
  for (const auto& k : rule.key) {
    auto it = outputs_of.find(k);
    if (it == outputs_of.end()) continue;
    for (size_t i : it->second) t.key.push_back(t.columns[i].name);
  }
  if (rule.orientation && join_alias_of.count(rule.orientation->base) &&
      join_alias_of.count(rule.orientation->counter))
    Orient(*rule.orientation, join_alias_of, outputs_of, t);
  if (rule.window) {
    const LiveColumn* wc = FindColumn(cols, rule.window->column);
    if (wc && ClassOf(*wc) == ColumnClass::kInt) {
      t.window = rule.window;
    } else {
      t.notes.push_back(fmt::format("{}: window column {} absent or not an integer: every row compared at its ledger",
                                    t.name, rule.window->column));
    }
  }
  std::stable_sort(t.columns.begin(), t.columns.end(),
                   [](const CanonicalColumn& a, const CanonicalColumn& b) { return a.name < b.name; });
  return t;
}

std::optional<LedgerMapping> RecognizeLedger(const std::vector<LiveColumn>& cols) {
  for (const char* n : {"ledger_sequence", "ledger_seq", "ledger", "sequence"}) {
    const LiveColumn* c = FindColumn(cols, n);
    if (c && ClassOf(*c) == ColumnClass::kInt) return LedgerMapping{n, LedgerColumnKind::kSequence};
  }
  for (const char* n : {"history_operation_id", "history_transaction_id"}) {
    const LiveColumn* c = FindColumn(cols, n);
    if (c && ClassOf(*c) == ColumnClass::kInt) return LedgerMapping{n, LedgerColumnKind::kToid};
  }
  return std::nullopt;
}

std::vector<InvariantRule> HorizonInvariants() {
  std::vector<InvariantRule> v;
  v.push_back({"horizon_trade_orientation", "history_trades", "t.base_asset_id >= t.counter_asset_id",
               {"base_asset_id", "counter_asset_id"}, {},
               "a trade is stored with base_asset_id < counter_asset_id (its side's own ids); Horizon's /trades "
               "queries rely on it", std::nullopt});
  v.push_back({"transaction_toid_in_its_ledger", "history_transactions", "(t.id >> 32) <> t.ledger_sequence",
               {"id", "ledger_sequence"}, {}, "a transaction's TOID lies in its ledger", std::nullopt});
  v.push_back({"operation_toid_in_its_transaction_ledger", "history_operations",
               "NOT EXISTS (SELECT 1 FROM {schema}.\"history_transactions\" x WHERE x.id = t.transaction_id AND "
               "x.ledger_sequence = (t.id >> 32))",
               {"id", "transaction_id"}, {"history_transactions"},
               "an operation's TOID lies in the ledger of its transaction, which exists", std::nullopt});
  for (const char* table : {"history_operation_participants", "history_transaction_participants"}) {
    const InvariantRule::Reference account{"history_account_id", "history_accounts", "id"};
    v.push_back({std::string(table) + "_account_exists", table, MissingReferenceViolation(account),
                 {account.column}, {account.lookup_table}, "a participant references an existing account id", account});
  }
  // One index probe per bucket (Horizon's htrd_pair_time_lookup: base, counter, ledger_closed_at).
  // A broken aggregation is caught even when both sides share it, which no comparison can.
  v.push_back({"trade_aggregation_matches_its_trades", "history_trades_60000",
               "NOT EXISTS (SELECT 1 FROM {schema}.\"history_trades\" x WHERE x.base_asset_id = t.base_asset_id AND "
               "x.counter_asset_id = t.counter_asset_id AND x.ledger_closed_at >= to_timestamp(t.\"timestamp\" / "
               "1000.0) AT TIME ZONE 'UTC' AND x.ledger_closed_at < to_timestamp((t.\"timestamp\" + 60000) / 1000.0) "
               "AT TIME ZONE 'UTC' HAVING count(*) = t.count AND sum(x.base_amount) = t.base_volume AND "
               "sum(x.counter_amount) = t.counter_volume)",
               {"timestamp", "base_asset_id", "counter_asset_id", "count", "base_volume", "counter_volume"},
               {"history_trades"},
               "a minute bucket holds the count and volumes of its side's own trades of that minute and asset pair, "
               "as Horizon aggregates them",
               std::nullopt});
  return v;
}

}  // namespace

std::string MissingReferenceViolation(const InvariantRule::Reference& r) {
  const std::string column = "t." + pg::QuoteIdent(r.column);
  return fmt::format("{0} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {{schema}}.{1} a WHERE a.{2} = {0})", column,
                     pg::QuoteIdent(r.lookup_table), pg::QuoteIdent(r.lookup_id));
}

ResolveRule HorizonAssetReference(const std::string& column) { return Assets(column); }

OrientationRule HorizonTradeOrientation() {
  // As Horizon's trades processor turns a trade around when base_asset_id > counter_asset_id.
  return {"base_asset_id",
          "counter_asset_id",
          {{"base_account_id", "counter_account_id"},
           {"base_amount", "counter_amount"},
           {"base_offer_id", "counter_offer_id"},
           {"base_liquidity_pool_id", "counter_liquidity_pool_id"},
           {"price_n", "price_d"}},
          {"base_is_seller", "base_is_exact"}};
}

namespace {

const std::map<std::string, TableKnowledge, std::less<>>& HorizonTableKnowledge() {
  static const std::map<std::string, TableKnowledge, std::less<>> knowledge = {
      {"history_ledgers", {{"sequence"}, {}, std::nullopt}},
      {"history_transactions", {{"id", "application_order"}, {}, std::nullopt}},
      {"history_transactions_filtered_tmp", {{"id", "application_order"}, {}, std::nullopt}},
      {"history_operations", {{"id"}, {}, std::nullopt}},
      {"history_effects", {{"history_operation_id", "order"}, {}, std::nullopt}},
      {"history_trades", {{"history_operation_id", "order"}, {}, HorizonTradeOrientation()}},
      // `avg` is counter_volume / base_volume, a quotient that cannot be turned around exactly,
      // so it is left out; the volumes it derives from are compared.
      {"history_trades_60000",
       {{"base_asset_id", "counter_asset_id", "timestamp"},
        {"avg"},
        TradeAggregationOrientation(),
        TimeWindow{"timestamp", 60000}}},
      // Participants' own `id` is a surrogate with no meaning.
      {"history_operation_participants", {{"history_operation_id", "history_account_id"}, {"id"}, std::nullopt}},
      {"history_transaction_participants", {{"history_transaction_id", "history_account_id"}, {"id"}, std::nullopt}},
      {"history_operation_claimable_balances",
       {{"history_operation_id", "history_claimable_balance_id"}, {}, std::nullopt}},
      {"history_transaction_claimable_balances",
       {{"history_transaction_id", "history_claimable_balance_id"}, {}, std::nullopt}},
      {"history_operation_liquidity_pools", {{"history_operation_id", "history_liquidity_pool_id"}, {}, std::nullopt}},
      {"history_transaction_liquidity_pools",
       {{"history_transaction_id", "history_liquidity_pool_id"}, {}, std::nullopt}},
  };
  return knowledge;
}

}  // namespace

std::vector<LookupRule> LookupRules(const ProfileSpec& spec) {
  std::vector<LookupRule> out;
  for (const auto& t : spec.tables)
    for (const auto& r : t.resolve) {
      if (std::any_of(out.begin(), out.end(), [&](const LookupRule& l) { return l.table == r.lookup_table; }))
        continue;
      out.push_back({r.lookup_table, r.lookup_id, r.natural});
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.table < b.table; });
  return out;
}

const char* ToString(ColumnClass c) {
  switch (c) {  // no default: -Wswitch names a class added without its name
    case ColumnClass::kInt: return "int";
    case ColumnClass::kNumeric: return "numeric";
    case ColumnClass::kFloat: return "float";
    case ColumnClass::kText: return "text";
    case ColumnClass::kBool: return "bool";
    case ColumnClass::kDateTime: return "datetime";
    case ColumnClass::kInterval: return "interval";
    case ColumnClass::kJson: return "json";
    case ColumnClass::kJsonb: return "jsonb";
    case ColumnClass::kBytea: return "bytea";
    case ColumnClass::kArray: return "array";
    case ColumnClass::kOther: return "other";
  }
  return "other";
}

const char* ColumnClassName(ColumnClass c) { return ToString(c); }

std::optional<ColumnClass> ParseColumnClass(const std::string& name) { return ParseEnum(kColumnClasses, name); }

ProfileSpec HorizonProfileSpec() {
  ProfileSpec s;
  s.name = "horizon";
  s.exclude = kDefaultExclude;
  s.lookup_tables = {"history_accounts", "history_assets", "history_claimable_balances", "history_liquidity_pools"};
  // Which tables and how a row maps to its ledger: core/history_tables.h. What the digest adds:
  // the natural key, the columns left out, the orientation.
  for (const HistoryTable& h : HorizonHistoryTables()) {
    TableRule r;
    r.table = h.name;
    r.ledger = {h.ledger_column, h.kind};
    r.resolve = HorizonResolves();
    if (auto it = HorizonTableKnowledge().find(h.name); it != HorizonTableKnowledge().end()) {
      r.key = it->second.key;
      r.exclude = it->second.exclude;
      r.orientation = it->second.orientation;
      r.window = it->second.window;
    } else {
      r.key = {h.ledger_column};
    }
    r.required = IsCoreHistoryTable(h.name);
    s.tables.push_back(std::move(r));
  }
  s.invariants = HorizonInvariants();
  s.state_tables = HorizonStateTables();
  s.state_ledger = HorizonStateLedger();
  return s;
}

ProfileSpec AutoProfileSpec() {
  ProfileSpec s = HorizonProfileSpec();
  s.name = "auto";
  s.discover = true;
  return s;
}

Result<std::vector<ResolveRule>> ParseResolveRules(const nlohmann::json& table, const std::string& origin,
                                                   const std::string& table_name, ProfileSpec& spec) {
  std::vector<ResolveRule> out;
  for (const auto& jr : table.value("resolve", nlohmann::json::array())) {
    ResolveRule rr;
    rr.column = jr.at("column").get<std::string>();
    rr.lookup_table = jr.at("lookup").get<std::string>();
    rr.lookup_id = jr.value("id", "id");
    rr.natural = jr.at("natural").get<std::vector<std::string>>();
    if (rr.natural.empty())
      return Status::Usagef("profile {}: table {}: resolve {}: \"natural\" is empty", origin, table_name, rr.column);
    if (!Contains(spec.lookup_tables, rr.lookup_table)) spec.lookup_tables.push_back(rr.lookup_table);
    out.push_back(std::move(rr));
  }
  return out;
}

Result<ProfileSpec> ParseProfileSpecJson(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::Usagef("profile {}: not valid JSON: {}", origin, e.what());
  }
  try {
    ProfileSpec s;
    s.name = j.value("name", origin);
    s.exclude = j.value("exclude", kDefaultExclude);
    s.lookup_tables = j.value("lookup_tables", std::vector<std::string>{});
    s.discover = j.value("discover", false);
    if (!j.contains("tables") || !j["tables"].is_array())
      return Status::Usagef("profile {}: \"tables\" (an array) is missing", origin);
    for (const auto& jt : j["tables"]) {
      TableRule r;
      r.table = jt.at("table").get<std::string>();
      const auto& jl = jt.at("ledger");
      r.ledger.column = jl.at("column").get<std::string>();
      const std::string kind = jl.value("kind", std::string(ToString(LedgerColumnKind::kSequence)));
      const std::optional<LedgerColumnKind> parsed = ParseLedgerColumnKind(kind);
      if (!parsed)
        return Status::Usagef("profile {}: table {}: ledger kind \"{}\" is not sequence|toid", origin, r.table, kind);
      r.ledger.kind = *parsed;
      r.key = jt.value("key", std::vector<std::string>{});
      r.exclude = jt.value("exclude", std::vector<std::string>{});
      if (jt.value("horizon_trade_orientation", false)) r.orientation = HorizonTradeOrientation();
      r.required = jt.value("required", false);
      if (jt.contains("window")) {
        const auto& jw = jt.at("window");
        TimeWindow w{jw.at("column").get<std::string>(), jw.at("width_ms").get<int64_t>()};
        if (w.width_ms <= 0 || w.width_ms > kMaxWindowMs)
          return Status::Usagef("profile {}: table {}: window width_ms {} is not within 1..{}", origin, r.table,
                                w.width_ms, kMaxWindowMs);
        r.window = std::move(w);
      }
      LD_ASSIGN_OR_RETURN(r.resolve, ParseResolveRules(jt, origin, r.table, s));
      s.tables.push_back(std::move(r));
    }
    for (const auto& ji : j.value("invariants", nlohmann::json::array())) {
      InvariantRule v;
      v.name = ji.at("name").get<std::string>();
      v.table = ji.at("table").get<std::string>();
      v.violation = ji.at("violation").get<std::string>();
      v.columns = ji.value("columns", std::vector<std::string>{});
      v.tables = ji.value("tables", std::vector<std::string>{});
      v.description = ji.value("description", "");
      s.invariants.push_back(std::move(v));
    }
    if (j.value("horizon_invariants", false))
      for (auto& v : HorizonInvariants()) s.invariants.push_back(std::move(v));
    LD_RETURN_IF_ERROR(ParseStateSection(j, origin, s));
    return s;
  } catch (const std::exception& e) {
    return Status::Usagef("profile {}: {}", origin, e.what());
  }
}

Result<ProfileSpec> LoadProfileSpec(const std::string& name_or_path) {
  if (name_or_path.empty() || name_or_path == "horizon") return HorizonProfileSpec();
  if (name_or_path == "auto") return AutoProfileSpec();
  // Only a regular file, opened without blocking (core/atomic_file.h OpenRegularFile).
  int open_errno = 0;
  auto opened = OpenRegularFile(name_or_path, fmt::format("profile \"{}\"", name_or_path), O_RDONLY, &open_errno);
  if (!opened.ok()) {
    if (open_errno) return Status::Usagef("profile \"{}\": not horizon, auto, or a readable JSON file", name_or_path);
    return Status::Usagef("{}; give horizon, auto or a JSON file", opened.status().message());
  }
  const int fd = *opened;
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  // Bounded: a profile is a small JSON file; a huge file is refused, not read. Read in blocks,
  // so that memory follows the file's size (a 4 MiB buffer per profile made the profile fuzzer
  // run at 170 inputs/s).
  constexpr size_t kMaxProfileBytes = 4 << 20;
  std::string text;
  char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Usagef("profile \"{}\": cannot read it: {}", name_or_path, std::strerror(errno));
    if (n == 0) break;
    text.append(block, static_cast<size_t>(n));
    if (text.size() > kMaxProfileBytes)
      return Status::Usagef("profile \"{}\": larger than {} MiB, not a profile", name_or_path, kMaxProfileBytes >> 20);
  }
  return ParseProfileSpecJson(text, name_or_path);
}

std::vector<std::string> ResolvedProfile::ExcludedColumns() const {
  std::vector<std::string> out;
  for (const auto& t : tables)
    for (const auto& c : t.excluded) out.push_back(t.name + "." + c);
  std::sort(out.begin(), out.end());
  return out;
}

const ResolvedTable* ResolvedProfile::Find(const std::string& table) const {
  for (const auto& t : tables)
    if (t.name == table) return &t;
  return nullptr;
}

namespace {

// Sets ResolvedTable::unique_key from the live schema's unique, non-partial, plain-column
// indexes.
Status MarkUniqueKeys(pg::Connection& conn, const std::string& schema, ResolvedProfile& p) {
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      // Only an index that really makes the key total: valid (not a failed CREATE
                      // UNIQUE INDEX CONCURRENTLY), not partial, on plain columns, and every column NOT
                      // NULL (NULLs are never equal, so a nullable unique key still ties).
                      conn.Exec("SELECT c.relname, a.attname, i.indexrelid FROM pg_index i "
                                "JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                                "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey) "
                                "WHERE n.nspname = $1 AND i.indisunique AND i.indisvalid AND i.indpred IS NULL "
                                "AND i.indexprs IS NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute k "
                                "WHERE k.attrelid = c.oid AND k.attnum = ANY (i.indkey) AND NOT k.attnotnull) "
                                "ORDER BY c.relname, i.indexrelid",
                                {schema}));
  // table -> index -> columns
  std::map<std::string, std::map<std::string, std::set<std::string>>> unique;
  for (int i = 0; i < rows.size(); ++i)
    unique[std::string(rows.Get(i, 0))][std::string(rows.Get(i, 2))].insert(std::string(rows.Get(i, 1)));
  for (auto& t : p.tables) {
    std::set<std::string> plain_key;
    for (const auto& k : t.key)
      for (const auto& c : t.columns)
        if (c.name == k && c.expr == "t." + pg::QuoteIdent(k)) plain_key.insert(k);
    for (const auto& [index, cols] : unique[t.name]) {
      bool covered = std::all_of(cols.begin(), cols.end(), [&](const std::string& c) { return plain_key.count(c); });
      if (covered) t.unique_key = true;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ResolvedProfile> ResolveProfile(pg::Connection& conn, const std::string& schema, const ProfileSpec& spec) {
  LD_ASSIGN_OR_RETURN(pg::Rows ns, conn.Exec("SELECT 1 FROM pg_namespace WHERE nspname = $1", {schema}));
  if (ns.size() == 0) return Status::Usagef("schema \"{}\" does not exist", schema);
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec("SELECT c.relname, a.attname, ty.typname, ty.typcategory FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                "JOIN pg_type ty ON ty.oid = a.atttypid "
                "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition "
                "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum",
                {schema}));
  LiveSchema live;
  for (int i = 0; i < rows.size(); ++i) {
    std::string_view cat = rows.Get(i, 3);
    live[std::string(rows.Get(i, 0))].push_back(
        {std::string(rows.Get(i, 1)), std::string(rows.Get(i, 2)), cat.empty() ? 'X' : cat[0]});
  }
  ResolvedProfile p;
  p.name = spec.name;
  for (const auto& [name, cols] : live) p.present_tables.push_back(name);
  for (const auto& v : spec.invariants) {
    auto it = live.find(v.table);
    if (it == live.end()) continue;
    bool ok = std::all_of(v.columns.begin(), v.columns.end(), [&](const auto& c) { return FindColumn(it->second, c); }) &&
              std::all_of(v.tables.begin(), v.tables.end(), [&](const auto& t) { return live.count(t) > 0; });
    if (ok) p.invariants.push_back(v);
  }
  std::set<std::string> used;
  for (const auto& rule : spec.tables) {
    auto it = live.find(rule.table);
    if (it == live.end() || !FindColumn(it->second, rule.ledger.column)) continue;
    p.tables.push_back(BuildTable(live, it->second, rule, spec.exclude));
    used.insert(rule.table);
  }
  for (const auto& rule : spec.state_tables) {
    auto it = live.find(rule.table);
    if (it == live.end() || used.count(rule.table)) continue;
    TableRule as_table;
    as_table.table = rule.table;
    as_table.key = rule.key;
    as_table.exclude = rule.exclude;
    as_table.resolve = rule.resolve;
    ResolvedTable t = BuildTable(live, it->second, as_table, spec.exclude);
    // A key column the live table lacks: no row can be named, so the table is not compared.
    if (t.key.empty() || std::any_of(rule.key.begin(), rule.key.end(), [&](const std::string& k) {
          return !FindColumn(it->second, k) || Contains(t.excluded, k);
        }))
      continue;
    p.state_tables.push_back(std::move(t));
  }
  std::sort(p.state_tables.begin(), p.state_tables.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& [name, cols] : live) {
    if (used.count(name)) continue;
    // A state table has no ledger mapping: the per-ledger digest never compares it (only
    // verify-range's state comparison does, which takes it off that command's list).
    const std::string& table = name;  // a structured binding is not capturable before C++20 (clang 14)
    const bool is_state = std::any_of(p.state_tables.begin(), p.state_tables.end(),
                                      [&table](const ResolvedTable& t) { return t.name == table; });
    if (Contains(spec.lookup_tables, name)) {
      p.lookup_tables.push_back(name);
      continue;
    }
    std::optional<LedgerMapping> m;
    if (spec.discover && !is_state) m = RecognizeLedger(cols);
    if (!m) {
      p.uncompared_tables.push_back(name);
      continue;
    }
    TableRule r;
    r.table = name;
    r.ledger = *m;
    r.resolve = HorizonResolves();
    p.tables.push_back(BuildTable(live, cols, r, spec.exclude));
  }
  std::sort(p.tables.begin(), p.tables.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  LD_RETURN_IF_ERROR(MarkUniqueKeys(conn, schema, p));
  if (p.tables.empty())
    return Status::Usagef("schema \"{}\" has none of the tables of profile {} (with their ledger column)", schema,
                          spec.name);
  return p;
}

bool HasWindowedTable(const ProfileSpec& spec) {
  return std::any_of(spec.tables.begin(), spec.tables.end(), [](const TableRule& t) { return t.window.has_value(); });
}

void ApplySettledCutoff(ResolvedProfile& profile, int64_t settled_before_ms) {
  for (ResolvedTable& t : profile.tables)
    if (t.window) t.settled_before_ms = settled_before_ms;
}

std::string SettledPredicate(const ResolvedTable& table) {
  if (!table.window || !table.settled_before_ms) return "";
  // Subtracting on the cutoff's side cannot overflow the column (width and cutoff are bounded).
  return fmt::format("t.{} <= {}", pg::QuoteIdent(table.window->column),
                     *table.settled_before_ms - table.window->width_ms);
}

ResolvedTable RestrictColumns(const ResolvedTable& table, const std::vector<std::string>& names) {
  ResolvedTable t = table;
  t.columns.clear();
  for (const auto& c : table.columns)
    if (Contains(names, c.name)) t.columns.push_back(c);
  t.key.clear();
  for (const auto& k : table.key)
    if (Contains(names, k)) t.key.push_back(k);
  t.unique_key = table.unique_key && t.key.size() == table.key.size();
  return t;
}

ResolvedProfile RestrictProfile(const ResolvedProfile& profile, const ResolvedProfile& to) {
  ResolvedProfile out = profile;
  out.tables.clear();
  for (const auto& t : profile.tables) {
    const ResolvedTable* other = to.Find(t.name);
    if (!other) continue;
    std::vector<std::string> names;
    for (const auto& c : other->columns) names.push_back(c.name);
    out.tables.push_back(RestrictColumns(t, names));
  }
  return out;
}

nlohmann::json ResolvedProfileToJson(const ResolvedProfile& profile) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : profile.tables) {
    nlohmann::json columns = nlohmann::json::array();
    for (const auto& c : t.columns) columns.push_back({{"name", c.name}, {"class", ColumnClassName(c.cls)}, {"type", c.type}});
    nlohmann::json ledger = {{"column", t.ledger.column},
                             {"kind", ToString(t.ledger.kind)}};
    tables.push_back({{"table", t.name}, {"ledger", ledger}, {"columns", columns}, {"key", t.key}, {"excluded", t.excluded}});
  }
  return {{"name", profile.name}, {"lookup_tables", profile.lookup_tables}, {"uncompared_tables", profile.uncompared_tables},
          {"present_tables", profile.present_tables}, {"tables", tables}};
}

Result<ResolvedProfile> ResolvedProfileFromJson(const nlohmann::json& j) {
  try {
    ResolvedProfile p;
    p.name = j.at("name").get<std::string>();
    p.lookup_tables = j.at("lookup_tables").get<std::vector<std::string>>();
    p.uncompared_tables = j.at("uncompared_tables").get<std::vector<std::string>>();
    p.present_tables = j.value("present_tables", std::vector<std::string>{});
    for (const auto& jt : j.at("tables")) {
      ResolvedTable t;
      t.name = jt.at("table").get<std::string>();
      t.ledger.column = jt.at("ledger").at("column").get<std::string>();
      const std::optional<LedgerColumnKind> kind = ParseLedgerColumnKind(jt.at("ledger").at("kind").get<std::string>());
      if (!kind) return Status::Usage("unknown ledger column kind in manifest header");
      t.ledger.kind = *kind;
      for (const auto& jc : jt.at("columns")) {
        auto cls = ParseColumnClass(jc.at("class").get<std::string>());
        if (!cls) return Status::Usage("unknown column class in manifest header");
        CanonicalColumn col;
        col.name = jc.at("name").get<std::string>();
        col.cls = *cls;
        col.type = jc.value("type", "");
        t.columns.push_back(std::move(col));
      }
      t.key = jt.at("key").get<std::vector<std::string>>();
      t.excluded = jt.at("excluded").get<std::vector<std::string>>();
      p.tables.push_back(std::move(t));
    }
    return p;
  } catch (const std::exception& e) {
    return Status::Usagef("manifest header: {}", e.what());
  }
}

}  // namespace ledgerdiff::dump
