#include "dump/ledger_statistics.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

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

Result<std::optional<LedgerStatistics>> LedgerStatistics::Load(pg::Connection& conn, const std::string& schema,
                                                                const ResolvedTable& table) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows r,
      conn.Exec("SELECT c.reltuples::float8::text, c.relpages, s.null_frac::float8::text, s.most_common_vals::text, "
                "s.most_common_freqs::text, s.histogram_bounds::text, coalesce((SELECT n_mod_since_analyze FROM "
                "pg_stat_all_tables WHERE relid = c.oid), 0) FROM pg_class c LEFT JOIN LATERAL (SELECT * FROM "
                "pg_stats s WHERE s.schemaname = $1 AND s.tablename = $2 AND s.attname = $3 ORDER BY s.inherited "
                "LIMIT 1) s ON true WHERE c.oid = to_regclass($4)",
                {schema, table.name, table.ledger.column, pg::Qualified(schema, table.name)}));
  if (r.size() != 1) return std::optional<LedgerStatistics>();
  LedgerStatistics st;
  st.kind_ = table.ledger.kind;
  st.rows_ = std::strtod(std::string(r.Get(0, 0)).c_str(), nullptr);
  const bool holds_rows = st.rows_ > 0 || r.GetInt(0, 1) > 0;
  if (st.rows_ > 0) st.bytes_per_row_ = static_cast<double>(r.GetInt(0, 1)) * kPageBytes / st.rows_;
  if (st.rows_ < 0) return std::optional<LedgerStatistics>();  // never vacuumed nor analyzed
  if (static_cast<double>(r.GetInt(0, 6)) > 50 + st.rows_ / 5) return std::optional<LedgerStatistics>();
  if (r.IsNull(0, 2)) {
    if (holds_rows) return std::optional<LedgerStatistics>();
    return std::optional<LedgerStatistics>(st);  // analyzed empty: no rows anywhere
  }
  st.null_frac_ = std::strtod(std::string(r.Get(0, 2)).c_str(), nullptr);
  std::vector<double> values, freqs;
  if (!r.IsNull(0, 3) && !(ParseNumberArray(r.Get(0, 3), values) && !r.IsNull(0, 4) &&
                           ParseNumberArray(r.Get(0, 4), freqs) && values.size() == freqs.size()))
    return std::optional<LedgerStatistics>();
  for (size_t i = 0; i < values.size(); ++i) st.common_.emplace_back(values[i], freqs[i]);
  if (!r.IsNull(0, 5) && (!ParseNumberArray(r.Get(0, 5), st.bounds_) || st.bounds_.size() < 2))
    return std::optional<LedgerStatistics>();
  return std::optional<LedgerStatistics>(st);
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

// Per profile table, its statistics; nullopt when a table has none (LedgerStatistics::Load).
Result<std::optional<std::vector<LedgerStatistics>>> LoadLedgerStatistics(pg::Connection& conn,
                                                                           const std::string& schema,
                                                                           const ResolvedProfile& profile) {
  std::vector<LedgerStatistics> all;
  for (const auto& t : profile.tables) {
    LD_ASSIGN_OR_RETURN(std::optional<LedgerStatistics> st, LedgerStatistics::Load(conn, schema, t));
    if (!st) return std::optional<std::vector<LedgerStatistics>>();
    all.push_back(std::move(*st));
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
