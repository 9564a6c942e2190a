#pragma once
// The server's statistics of a table's ledger column, read from the catalog: what a digest's
// schedule estimates its work with (rows per chunk, for progress and the ETA). Internal to dump/.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

struct TableCatalogFacts;

// How a table's rows spread over the ledgers, as the server's statistics see it: its row count
// (pg_class.reltuples) and the distribution of its ledger column (pg_stats: most common values,
// then the histogram of the others, equal shares per bucket). Only the schedule's estimate of the
// work (progress, ETA) depends on it, never a digest.
class LedgerStatistics {
 public:
  // The rows whose ledger is in `span`.
  double Rows(const LedgerRange& span) const;
  // The table's bytes on disk per row (pg_class.relpages over reltuples; 0 when it holds none):
  // what reading a row costs, relative to the other tables' rows (a ledgers' effects row of
  // JSON costs six times a participants row of two ids).
  double bytes_per_row() const { return bytes_per_row_; }

 private:
  friend Result<std::vector<TableCatalogFacts>> LoadTableCatalogFacts(pg::Connection&, const std::string&,
                                                                      const ResolvedProfile&);
  // The share of the histogram's values below `x`, linear inside a bucket.
  double HistogramBelow(double x) const;

  LedgerColumnKind kind_ = LedgerColumnKind::kSequence;
  static constexpr double kPageBytes = 8192;  // PostgreSQL's default block size
  double rows_ = 0;       // pg_class.reltuples
  double bytes_per_row_ = 0;
  double null_frac_ = 0;  // rows whose ledger column is NULL (no ledger: never read)
  std::vector<std::pair<double, double>> common_;  // most common values, their shares of the rows
  std::vector<double> bounds_;                     // histogram bounds, ascending
};

// What a digest's schedule reads of one profile table from the catalog.
struct TableCatalogFacts {
  // A valid, non-partial btree index leads with its ledger column (the next ledger holding a
  // row is one index probe away). False when the table is missing.
  bool ledger_indexed = false;
  int64_t pages = 0;  // pg_class.relpages; 0 when the table is missing
  // nullopt when the table holds rows (pages) the statistics do not describe: never analyzed,
  // not by column, or stale (more rows written since the last analyze than 50 + a fifth of the
  // rows it counted: autovacuum analyzes at 50 + a tenth; rows past its histogram would count as
  // none), or when it is missing. The digest then counts ledgers: it never runs ANALYZE, which
  // writes into a schema that need not be the tool's.
  std::optional<LedgerStatistics> statistics;
};

// Per profile table, in the profile's order: one catalog query for all of them (a digest of a
// few ledgers, a follower's cycle, would otherwise spend more round trips on its plan than on
// its rows); nothing scanned.
Result<std::vector<TableCatalogFacts>> LoadTableCatalogFacts(pg::Connection& conn, const std::string& schema,
                                                             const ResolvedProfile& profile);

// Per profile table, its statistics; nullopt when a table has none (TableCatalogFacts::statistics).
Result<std::optional<std::vector<LedgerStatistics>>> LoadLedgerStatistics(pg::Connection& conn,
                                                                           const std::string& schema,
                                                                           const ResolvedProfile& profile);

}  // namespace ledgerdiff::dump
