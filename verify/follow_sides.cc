#include "verify/follow_sides.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/history_tables.h"
#include "core/pg.h"
#include "dump/source_identity.h"

namespace ledgerdiff::verify {

Result<pg::Connection*> SideSession::Get() {
  if (conn_ && conn_->Healthy() && conn_->Run("SELECT 1").ok()) return conn_.get();
  conn_.reset();
  LD_ASSIGN_OR_RETURN(conn_, pg::Connection::Open(conninfo_, "ledgerdiff verify-range --follow", pg::Access::kReadOnly));
  ++opened_;
  return conn_.get();
}

// One side of the comparison as the state records it: its identity and schema; never a conninfo.
Result<nlohmann::json> SideRecord(SideSession& session, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(pg::Connection * conn, session.Get());
  LD_ASSIGN_OR_RETURN(dump::SourceIdentity id, dump::ReadSourceIdentity(*conn, schema));
  return dump::SourceIdentityToJson(id);
}

// The state's side and the one given now: "" when they are the same source, else why not.
std::string SideMismatch(const nlohmann::json& stored, const nlohmann::json& now, const char* side) {
  const auto a = dump::SourceIdentityFromJson(stored, side);
  const auto b = dump::SourceIdentityFromJson(now, side);
  auto d = dump::CompareSourceIdentity(a, b);
  if (!d) return "";
  return fmt::format("the {} side was {} and is now {}", side, d->a, d->b);
}

Result<Heads> ReadHeads(SideSession& session, const std::string& schema, Ledger after, uint64_t window,
                        Ledger kept) {
  LD_ASSIGN_OR_RETURN(pg::Connection * conn, session.Get());
  const std::string table = pg::QuoteIdent(schema) + "." + pg::QuoteIdent(kLedgerTable);
  const std::string column = pg::QuoteIdent(FindHistoryTable(kLedgerTable)->ledger_column);
  const std::string sql = fmt::format(
      "SELECT (SELECT max({c}) FROM {t}), "
      "(SELECT max({c}) FROM (SELECT {c}, {c}::bigint - row_number() OVER (ORDER BY {c}) AS g FROM {t} "
      "WHERE {c} > $1::bigint AND {c} <= $2::bigint) run WHERE g = $1::bigint), "
      "(SELECT min({c}) FROM {t} WHERE {c} >= $3::bigint), "
      "(SELECT count(*) FROM {t} WHERE {c} >= $3::bigint AND {c} <= $1::bigint)",
      fmt::arg("c", column), fmt::arg("t", table));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn->Exec(sql, {std::to_string(after), std::to_string(after + window),
                                                      std::to_string(kept)}));
  Heads h;
  if (!rows.IsNull(0, 0)) h.max = static_cast<Ledger>(rows.GetInt(0, 0));
  h.contiguous = rows.IsNull(0, 1) ? after : static_cast<Ledger>(rows.GetInt(0, 1));
  if (!rows.IsNull(0, 2)) h.lowest = static_cast<Ledger>(rows.GetInt(0, 2));
  h.held = static_cast<uint64_t>(rows.GetInt(0, 3));
  if (h.max && *h.max > h.contiguous) {
    const Ledger end = static_cast<Ledger>(std::min<uint64_t>(*h.max, uint64_t{after} + window));
    LD_ASSIGN_OR_RETURN(pg::Rows gaps, conn->Exec(fmt::format("SELECT count(*) FROM {} WHERE {c} > $1::bigint AND "
                                                              "{c} <= $2::bigint",
                                                              table, fmt::arg("c", column)),
                                                  {std::to_string(h.contiguous), std::to_string(end)}));
    const uint64_t span = end > h.contiguous ? end - h.contiguous : 0;
    h.gap_ledgers = span - std::min<uint64_t>(span, static_cast<uint64_t>(gaps.GetInt(0, 0)));
  }
  if (h.max) {
    auto at = conn->Exec(fmt::format("SELECT extract(epoch FROM closed_at)::float8 FROM {} WHERE {} = $1::bigint",
                                     table, column),
                         {std::to_string(*h.max)});
    if (at.ok() && at->size() == 1 && !at->IsNull(0, 0)) h.closed_at_max = std::stod(std::string(at->Get(0, 0)));
  }
  return h;
}

// The first ledger of from:to that `schema` does not hold (to + 1 when it holds them all).
Result<Ledger> FirstMissing(SideSession& session, const std::string& schema, Ledger from, Ledger to) {
  LD_ASSIGN_OR_RETURN(pg::Connection * conn, session.Get());
  const std::string sql = fmt::format(
      "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM {t} WHERE {c} = $1::bigint) THEN $1::bigint ELSE "
      "coalesce((SELECT min(a.{c}) + 1 FROM {t} a WHERE a.{c} >= $1::bigint AND a.{c} <= $2::bigint AND NOT EXISTS "
      "(SELECT 1 FROM {t} b WHERE b.{c} = a.{c} + 1)), $2::bigint + 1) END",
      fmt::arg("c", pg::QuoteIdent(FindHistoryTable(kLedgerTable)->ledger_column)),
      fmt::arg("t", pg::QuoteIdent(schema) + "." + pg::QuoteIdent(kLedgerTable)));
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn->Exec(sql, {std::to_string(from), std::to_string(to)}));
  return static_cast<Ledger>(std::min<int64_t>(rows.GetInt(0, 0), int64_t{to} + 1));
}

std::optional<double> ClosedAt(SideSession& session, const std::string& schema, Ledger ledger) {
  auto conn = session.Get();
  if (!conn.ok()) return std::nullopt;
  auto at = (*conn)->Exec(fmt::format("SELECT extract(epoch FROM closed_at)::float8 FROM {}.{} WHERE {} = $1::bigint",
                                      pg::QuoteIdent(schema), pg::QuoteIdent(kLedgerTable),
                                      pg::QuoteIdent(FindHistoryTable(kLedgerTable)->ledger_column)),
                          {std::to_string(ledger)});
  if (!at.ok() || at->size() != 1 || at->IsNull(0, 0)) return std::nullopt;
  return std::stod(std::string(at->Get(0, 0)));
}

}  // namespace ledgerdiff::verify
