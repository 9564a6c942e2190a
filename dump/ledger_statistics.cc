#include "dump/ledger_statistics.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "dump/digest.h"

namespace ledgerdiff::dump {

namespace {

// The numbers of a PostgreSQL array's text form ("{1,2.5,3}"); false when it holds anything
// else (the statistics of a ledger column that is not a number).
bool ParseNumberArray(std::string_view text, std::vector<double>& out) {
  out.clear();
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return false;
  const std::string inner(text.substr(1, text.size() - 2));
  for (const char* p = inner.c_str(); *p;) {
    char* end = nullptr;
    out.push_back(std::strtod(p, &end));
    if (end == p || (*end != ',' && *end != '\0')) return false;
    p = *end ? end + 1 : end;
  }
  return true;
}

}  // namespace

Result<std::vector<TableCatalogFacts>> LoadTableCatalogFacts(pg::Connection& conn, const std::string& schema,
                                                             const ResolvedProfile& profile) {
  std::vector<TableCatalogFacts> facts(profile.tables.size());
  if (profile.tables.empty()) return facts;
  // The tables as a VALUES list of parameters: (i, qualified name, name, ledger column).
  std::vector<std::optional<std::string>> params = {schema};
  std::string values;
  for (size_t i = 0; i < profile.tables.size(); ++i) {
    const ResolvedTable& t = profile.tables[i];
    const size_t p = params.size() + 1;
    values += fmt::format("{}({}, ${}::text, ${}::text, ${}::text)", i ? ", " : "", i, p, p + 1, p + 2);
    params.insert(params.end(), {pg::Qualified(schema, t.name), t.name, t.ledger.column});
  }
  LD_ASSIGN_OR_RETURN(
      pg::Rows r,
      conn.Exec(fmt::format(
                    "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am a ON "
                    "a.oid = ic.relam JOIN pg_attribute att ON att.attrelid = i.indrelid AND att.attnum = i.indkey[0] "
                    "WHERE i.indrelid = c.oid AND a.amname = 'btree' AND i.indisvalid AND i.indpred IS NULL AND "
                    "att.attname = t.ledger_column), coalesce(c.relpages, 0), c.oid IS NOT NULL, "
                    "c.reltuples::float8::text, s.null_frac::float8::text, s.most_common_vals::text, "
                    "s.most_common_freqs::text, s.histogram_bounds::text, coalesce((SELECT n_mod_since_analyze FROM "
                    "pg_stat_all_tables WHERE relid = c.oid), 0) FROM (VALUES {}) AS t(i, qualified, name, "
                    "ledger_column) LEFT JOIN pg_class c ON c.oid = to_regclass(t.qualified) LEFT JOIN LATERAL "
                    "(SELECT * FROM pg_stats s WHERE s.schemaname = $1 AND s.tablename = t.name AND s.attname = "
                    "t.ledger_column ORDER BY s.inherited LIMIT 1) s ON true ORDER BY t.i",
                    values),
                params));
  if (static_cast<size_t>(r.size()) != facts.size())
    return Status::Runtimef("the catalog gave {} rows for {} tables", r.size(), facts.size());
  for (int row = 0; row < r.size(); ++row) {
    TableCatalogFacts& f = facts[static_cast<size_t>(row)];
    f.ledger_indexed = r.GetBool(row, 0);
    f.pages = r.GetInt(row, 1);
    if (!r.GetBool(row, 2)) continue;  // no such table: no statistics
    LedgerStatistics st;
    st.kind_ = profile.tables[static_cast<size_t>(row)].ledger.kind;
    st.rows_ = std::strtod(std::string(r.Get(row, 3)).c_str(), nullptr);
    const bool holds_rows = st.rows_ > 0 || f.pages > 0;
    if (st.rows_ > 0) st.bytes_per_row_ = static_cast<double>(f.pages) * LedgerStatistics::kPageBytes / st.rows_;
    if (st.rows_ < 0) continue;  // never vacuumed nor analyzed
    if (static_cast<double>(r.GetInt(row, 8)) > 50 + st.rows_ / 5) continue;
    if (r.IsNull(row, 4)) {
      if (!holds_rows) f.statistics = st;  // analyzed empty: no rows anywhere
      continue;
    }
    st.null_frac_ = std::strtod(std::string(r.Get(row, 4)).c_str(), nullptr);
    std::vector<double> values_of, freqs;
    if (!r.IsNull(row, 5) && !(ParseNumberArray(r.Get(row, 5), values_of) && !r.IsNull(row, 6) &&
                               ParseNumberArray(r.Get(row, 6), freqs) && values_of.size() == freqs.size()))
      continue;
    for (size_t i = 0; i < values_of.size(); ++i) st.common_.emplace_back(values_of[i], freqs[i]);
    if (!r.IsNull(row, 7) && (!ParseNumberArray(r.Get(row, 7), st.bounds_) || st.bounds_.size() < 2)) continue;
    f.statistics = std::move(st);
  }
  return facts;
}

double LedgerStatistics::Rows(const LedgerRange& span) const {
  // The span as values of the column: [lo, hi), a TOID's ledger in its top 32 bits.
  const double scale = kind_ == LedgerColumnKind::kToid ? 4294967296.0 : 1.0;
  const double lo = scale * span.from, hi = scale * (static_cast<double>(span.to) + 1);
  double share = 0, common = 0;
  for (const auto& [value, freq] : common_) {
    common += freq;
    if (value >= lo && value < hi) share += freq;
  }
  share += std::max(0.0, 1 - null_frac_ - common) * (HistogramBelow(hi) - HistogramBelow(lo));
  return rows_ * share;
}

double LedgerStatistics::HistogramBelow(double x) const {
  if (bounds_.empty() || x <= bounds_.front()) return 0;
  if (x > bounds_.back()) return 1;
  const size_t buckets = bounds_.size() - 1;
  const size_t i = std::min<size_t>(std::upper_bound(bounds_.begin(), bounds_.end(), x) - bounds_.begin() - 1,
                                    buckets - 1);
  const double width = bounds_[i + 1] - bounds_[i];
  const double inside = width > 0 ? std::min(1.0, (x - bounds_[i]) / width) : 1;
  return (static_cast<double>(i) + inside) / static_cast<double>(buckets);
}

Result<std::optional<std::vector<LedgerStatistics>>> LoadLedgerStatistics(pg::Connection& conn,
                                                                           const std::string& schema,
                                                                           const ResolvedProfile& profile) {
  LD_ASSIGN_OR_RETURN(std::vector<TableCatalogFacts> facts, LoadTableCatalogFacts(conn, schema, profile));
  std::vector<LedgerStatistics> all;
  for (TableCatalogFacts& f : facts) {
    if (!f.statistics) return std::optional<std::vector<LedgerStatistics>>();
    all.push_back(std::move(*f.statistics));
  }
  return std::optional<std::vector<LedgerStatistics>>(std::move(all));
}

Result<ReadCostEstimate> EstimateReadCost(pg::Connection& conn, const std::string& schema,
                                          const ResolvedProfile& profile, const LedgerRange& range) {
  const auto whole_bytes = [&](const ResolvedTable& t) -> Result<double> {
    LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec("SELECT coalesce(pg_relation_size(to_regclass($1)), 0)",
                                              {pg::Qualified(schema, t.name)}));
    return static_cast<double>(r.GetInt(0, 0));
  };
  ReadCostEstimate cost;
  LD_ASSIGN_OR_RETURN(const std::optional<std::vector<LedgerStatistics>> statistics,
                      LoadLedgerStatistics(conn, schema, profile));
  for (size_t t = 0; t < profile.tables.size(); ++t) {
    if (statistics) {
      cost.history_bytes += (*statistics)[t].Rows(range) * (*statistics)[t].bytes_per_row();
    } else {
      LD_ASSIGN_OR_RETURN(const double bytes, whole_bytes(profile.tables[t]));
      cost.history_bytes += bytes;
    }
  }
  for (const auto& t : profile.state_tables) {
    LD_ASSIGN_OR_RETURN(const double bytes, whole_bytes(t));
    cost.state_bytes += bytes;
  }
  return cost;
}

}  // namespace ledgerdiff::dump
