#include "dump/range_facts.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/history_tables.h"
#include "dump/canonical.h"

namespace ledgerdiff::dump {

Result<LedgerRange> DetectRange(pg::Connection& conn, const std::string& schema, const ResolvedProfile& profile) {
  bool any = false;
  int64_t lo = 0, hi = 0;
  for (const auto& t : profile.tables) {
    std::string ledger = LedgerExpression(t.ledger.column, t.ledger.kind);
    LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec(fmt::format("SELECT min({0})::bigint, max({0})::bigint FROM {1}", ledger,
                                                          pg::Qualified(schema, t.name))));
    if (r.IsNull(0, 0)) continue;
    int64_t a = r.GetInt(0, 0), b = r.GetInt(0, 1);
    if (a < 0 || b > 0x7fffffff)
      return Status::Usagef("schema \"{}\": table {} holds ledger numbers out of range ({}..{})", schema, t.name, a, b);
    lo = any ? std::min(lo, a) : a;
    hi = any ? std::max(hi, b) : b;
    any = true;
  }
  if (!any) return Status::Usagef("schema \"{}\" holds no ledgers: give --range", schema);
  return LedgerRange{static_cast<Ledger>(lo), static_cast<Ledger>(hi)};
}

Result<std::vector<OutsideRange>> CountRowsOutsideRange(pg::Connection& conn, const std::string& schema,
                                                        const ResolvedProfile& profile, const LedgerRange& range,
                                                        bool without_ledger_only) {
  std::vector<OutsideRange> out;
  for (const auto& t : profile.tables) {
    std::string col = "t." + pg::QuoteIdent(t.ledger.column);
    std::string ledger = LedgerExpression(t.ledger.column, t.ledger.kind, "t");
    if (without_ledger_only) {
      LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec(fmt::format("SELECT count(*) FROM {} t WHERE {} IS NULL",
                                                            pg::Qualified(schema, t.name), col)));
      OutsideRange o{t.name, 0, 0, static_cast<uint64_t>(r.GetInt(0, 0))};
      if (o.total()) out.push_back(o);
      continue;
    }
    LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec(fmt::format(
                                        "SELECT count(*) FILTER (WHERE {1} < {3}), count(*) FILTER (WHERE {1} > {4}), "
                                        "count(*) FILTER (WHERE {0} IS NULL) FROM {2} t WHERE {0} IS NULL OR NOT ({5})",
                                        col, ledger, pg::Qualified(schema, t.name), range.from, range.to,
                                        LedgerRangePredicate(t.ledger.column, t.ledger.kind, range, "t"))));
    OutsideRange o{t.name, static_cast<uint64_t>(r.GetInt(0, 0)), static_cast<uint64_t>(r.GetInt(0, 1)),
                   static_cast<uint64_t>(r.GetInt(0, 2))};
    if (o.total()) out.push_back(o);
  }
  return out;
}

Result<std::optional<int64_t>> LastLedgerCloseMs(pg::Connection& conn, const std::string& schema, Ledger at) {
  const HistoryTable ledgers = *FindHistoryTable(kLedgerTable);
  LD_ASSIGN_OR_RETURN(pg::Rows present,
                      conn.Exec("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'closed_at' "
                                "AND NOT attisdropped",
                                {pg::Qualified(schema, ledgers.name)}));
  if (present.size() == 0) return std::optional<int64_t>();
  LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec(fmt::format("SELECT (extract(epoch FROM closed_at) * 1000)::bigint FROM {} "
                                                        "WHERE {} <= $1 ORDER BY {} DESC LIMIT 1",
                                                        pg::Qualified(schema, ledgers.name),
                                                        pg::QuoteIdent(ledgers.ledger_column),
                                                        pg::QuoteIdent(ledgers.ledger_column)),
                                            {std::to_string(at)}));
  if (r.size() == 0 || r.IsNull(0, 0)) return std::optional<int64_t>();
  return std::optional<int64_t>(r.GetInt(0, 0));
}

Result<std::optional<Ledger>> FirstUnsettledLedger(pg::Connection& conn, const std::string& schema,
                                                   const ProfileSpec& spec, const LedgerRange& range,
                                                   int64_t settled_before_ms) {
  std::optional<Ledger> first;
  for (const TableRule& rule : spec.tables) {
    if (!rule.window) continue;
    LD_ASSIGN_OR_RETURN(pg::Rows present, conn.Exec("SELECT 1 WHERE to_regclass($1) IS NOT NULL",
                                                     {pg::Qualified(schema, rule.table)}));
    if (present.size() == 0) continue;
    LD_ASSIGN_OR_RETURN(
        pg::Rows r,
        conn.Exec(fmt::format("SELECT min({}) FROM {} t WHERE {} AND t.{} > {}",
                              LedgerExpression(rule.ledger.column, rule.ledger.kind, "t"), pg::Qualified(schema, rule.table),
                              LedgerRangePredicate(rule.ledger.column, rule.ledger.kind, range, "t"),
                              pg::QuoteIdent(rule.window->column), settled_before_ms - rule.window->width_ms)));
    if (r.IsNull(0, 0)) continue;
    const Ledger l = static_cast<Ledger>(r.GetInt(0, 0));
    first = first ? std::min(*first, l) : l;
  }
  return first;
}

Result<std::vector<UnsettledRows>> CountUnsettled(pg::Connection& conn, const std::string& schema,
                                                  const ResolvedProfile& profile, const LedgerRange& range) {
  std::vector<UnsettledRows> out;
  for (const ResolvedTable& t : profile.tables) {
    const std::string settled = SettledPredicate(t);
    if (settled.empty()) continue;
    LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec(fmt::format(
                                        "SELECT count(*) FROM {} t WHERE {} AND NOT ({})", pg::Qualified(schema, t.name),
                                        LedgerRangePredicate(t.ledger.column, t.ledger.kind, range, "t"), settled)));
    out.push_back({t.name, static_cast<uint64_t>(r.GetInt(0, 0))});
  }
  return out;
}

}  // namespace ledgerdiff::dump
