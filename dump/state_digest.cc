#include "dump/state_digest.h"

#include <charconv>
#include <map>

#include <fmt/format.h>
#include <xxhash.h>

namespace ledgerdiff::dump {

namespace {

void AppendU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads the state ledger of `src` in the open snapshot: nullopt when the table or the row is absent.
Result<std::optional<Ledger>> ReadStateLedger(pg::Connection& conn, const std::string& schema,
                                              const StateLedgerSource& src) {
  LD_ASSIGN_OR_RETURN(pg::Rows exists, conn.Exec("SELECT to_regclass($1) IS NOT NULL",
                                                 {pg::Qualified(schema, src.table)}));
  if (!pg::TextIsTrue(exists.Get(0, 0))) return std::optional<Ledger>();
  LD_ASSIGN_OR_RETURN(pg::Rows rows,
                      conn.Exec(fmt::format("SELECT {}::text FROM {} WHERE {}::text = $1", pg::QuoteIdent(src.value_column),
                                            pg::Qualified(schema, src.table), pg::QuoteIdent(src.key_column)),
                                {src.key}));
  if (rows.size() == 0 || rows.IsNull(0, 0)) return std::optional<Ledger>();
  const std::string_view text = rows.Get(0, 0);
  Ledger l = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), l);
  if (ec != std::errc() || end != text.data() + text.size())
    return Status::Usagef("{}.{} {} = \"{}\" is not a ledger number (the state ledger)", schema, src.table, src.key,
                          std::string(text).substr(0, 64));
  return std::optional<Ledger>(l);
}

}  // namespace

std::string StateTableDigest::Hex() const {
  std::string bytes;
  bytes.reserve(buckets.size() * 24);
  for (const auto& b : buckets) {
    AppendU64(bytes, b.rows);
    AppendU64(bytes, b.lo);
    AppendU64(bytes, b.hi);
  }
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string StateBucketPath(uint32_t b) { return fmt::format("{:02x}", b); }

StateSnapshot::~StateSnapshot() = default;

Result<std::unique_ptr<StateSnapshot>> StateSnapshot::Open(const std::string& conninfo, const std::string& schema,
                                                           const ProfileSpec& spec) {
  std::unique_ptr<StateSnapshot> s(new StateSnapshot());
  s->schema_ = schema;
  LD_ASSIGN_OR_RETURN(s->conn_, pg::Connection::Open(conninfo, "ledgerdiff state", pg::Access::kReadOnly));
  LD_ASSIGN_OR_RETURN(pg::Transaction tx,
                      pg::Transaction::Begin(*s->conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  s->tx_.emplace(std::move(tx));
  // The first statement takes the snapshot: the ledger, then the rows, of one instant.
  if (spec.state_ledger) {
    LD_ASSIGN_OR_RETURN(s->ledger_, ReadStateLedger(*s->conn_, schema, *spec.state_ledger));
  }
  LD_ASSIGN_OR_RETURN(pg::Rows version, s->conn_->Exec("SELECT current_setting('server_version_num')::int"));
  s->server_hashes_ = version.GetInt(0, 0) >= kServerHashMinVersion;
  if (!spec.state_tables.empty()) {
    LD_ASSIGN_OR_RETURN(ResolvedProfile p, ResolveProfile(*s->conn_, schema, spec));
    s->tables_ = std::move(p.state_tables);
  }
  return s;
}

std::string StateSnapshot::KeyHashExpr(const ResolvedTable& table) const {
  std::string key;
  for (const auto& k : table.key)
    for (const auto& c : table.columns)
      if (c.name == k) key += (key.empty() ? "" : ", ") + ("(" + c.expr + ")::text");
  return fmt::format("md5(ROW({})::text)", key);
}

std::string StateSnapshot::BucketExpr(const ResolvedTable& table) const {
  return fmt::format("(('x' || substr({}, 1, 7))::bit(28)::int % {})", KeyHashExpr(table), kStateBuckets);
}

namespace {

// "substr(h, 6, L) IN ('p', ...) OR ..." over `paths` grouped by length: the rows in those buckets.
Result<std::string> PathFilter(const std::string& hash, const std::vector<std::string>& paths) {
  std::map<size_t, std::vector<std::string>> by_length;
  for (const auto& p : paths) {
    if (p.size() < 2 || p.size() > 2 + 2 * kStateMaxPathDepth || p.size() % 2 != 0 ||
        p.find_first_not_of("0123456789abcdef") != std::string::npos)
      return Status::Runtimef("\"{}\" is not a state bucket path", p);
    by_length[p.size()].push_back(pg::QuoteLiteral(p));
  }
  std::string filter;
  for (const auto& [length, quoted] : by_length)
    filter += fmt::format("{}substr({}, 6, {}) IN ({})", filter.empty() ? "" : " OR ", hash, length, fmt::join(quoted, ", "));
  return "(" + filter + ")";
}

}  // namespace

Result<StateTableDigest> StateSnapshot::Digest(const ResolvedTable& table, DigestEngine engine) {
  StateTableDigest d;
  d.table = table.name;
  d.buckets.resize(kStateBuckets);
  const std::string from = FromClause(table, schema_);
  ++traffic_.digest_queries;
  if (engine == DigestEngine::kServerHash) {
    LD_ASSIGN_OR_RETURN(pg::Rows rows,
                        conn_->Exec("SELECT b, count(*)" + ServerHashSums("r") + " FROM (SELECT " + BucketExpr(table) +
                                    " AS b, " + ServerHashRow(table) + " AS r" + from + " OFFSET 0) s GROUP BY b"));
    for (int i = 0; i < rows.size(); ++i) {
      const int64_t b = rows.GetInt(i, 0);
      StateBucket& bucket = d.buckets.at(static_cast<size_t>(b));
      if (!ReduceDecimalMod64(rows.Get(i, 1), bucket.rows) || !ReduceDecimalMod64(rows.Get(i, 2), bucket.lo) ||
          !ReduceDecimalMod64(rows.Get(i, 3), bucket.hi))
        return Status::Runtimef("{}: the server's state digest of bucket {} is not a number", table.name, b);
      d.rows += bucket.rows;
    }
    return d;
  }
  std::string select = "SELECT " + BucketExpr(table);
  std::vector<ColumnClass> classes;
  for (const auto& c : table.columns) {
    select += ", " + c.expr;
    classes.push_back(c.cls);
  }
  std::vector<RowMultiset> sums(kStateBuckets);
  RowHasher hasher;
  std::vector<std::string_view> fields;
  LD_RETURN_IF_ERROR(conn_->CopyOut("COPY (" + select + from + ") TO STDOUT", [&](std::string_view line) -> Status {
    pg::SplitCopyFields(line, fields);
    uint32_t b = 0;
    if (fields.size() != classes.size() + 1 ||
        std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), b).ec != std::errc() || b >= kStateBuckets)
      return Status::Runtimef("{}: a state row of unexpected shape", table.name);
    sums[b].Add(hasher.Hash(fields.data() + 1, classes.data(), classes.size()));
    return Status::Ok();
  }));
  for (uint32_t b = 0; b < kStateBuckets; ++b) {
    d.buckets[b] = {sums[b].count, sums[b].lo, sums[b].hi};
    d.rows += sums[b].count;
  }
  return d;
}

Result<bool> StateSnapshot::HasRows(const ResolvedTable& table) {
  LD_ASSIGN_OR_RETURN(pg::Rows r, conn_->Exec("SELECT EXISTS (SELECT 1 FROM " + pg::Qualified(schema_, table.name) + ")"));
  return pg::TextIsTrue(r.Get(0, 0));
}

Result<std::vector<std::pair<std::string, StateBucket>>> StateSnapshot::SubBucketDigests(
    const ResolvedTable& table, const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, StateBucket>> out;
  if (paths.empty()) return out;
  if (!server_hashes_) return Status::Runtimef("{}: the server cannot hash rows (PostgreSQL 14 or later)", table.name);
  const size_t length = paths.front().size() + 2;
  for (const auto& p : paths)
    if (p.size() + 2 != length || length > 2 + 2 * kStateMaxPathDepth)
      return Status::Runtimef("{}: sub-buckets of paths of different or too great depths", table.name);
  const std::string hash = KeyHashExpr(table);
  LD_ASSIGN_OR_RETURN(std::string filter, PathFilter(hash, paths));
  // The filter is on the table's rows (md5 of the key for every row, as Digest does); only the rows
  // of `paths` are hashed whole and summed.
  ++traffic_.digest_queries;
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn_->Exec(fmt::format("SELECT p, count(*){} FROM (SELECT substr({}, 6, {}) AS p, "
                                                             "{} AS r{} WHERE {} OFFSET 0) s GROUP BY p ORDER BY p",
                                                             ServerHashSums("r"), hash, length, ServerHashRow(table),
                                                             FromClause(table, schema_), filter)));
  for (int i = 0; i < rows.size(); ++i) {
    StateBucket b;
    if (!ReduceDecimalMod64(rows.Get(i, 1), b.rows) || !ReduceDecimalMod64(rows.Get(i, 2), b.lo) ||
        !ReduceDecimalMod64(rows.Get(i, 3), b.hi))
      return Status::Runtimef("{}: the server's digest of sub-bucket {} is not a number", table.name, rows.Get(i, 0));
    out.emplace_back(std::string(rows.Get(i, 0)), b);
  }
  return out;
}

Result<std::vector<StateRow>> StateSnapshot::RowsIn(const ResolvedTable& table, const std::vector<std::string>& paths) {
  std::vector<StateRow> out;
  if (paths.empty()) return out;
  std::string select = "SELECT ";
  for (size_t i = 0; i < table.columns.size(); ++i) select += (i ? ", " : "") + table.columns[i].expr;
  LD_ASSIGN_OR_RETURN(std::string filter, PathFilter(KeyHashExpr(table), paths));
  const std::string sql = fmt::format("COPY ({}{} WHERE {}) TO STDOUT", select, FromClause(table, schema_), filter);
  std::vector<std::string_view> fields;
  LD_RETURN_IF_ERROR(conn_->CopyOut(sql, [&](std::string_view line) -> Status {
    pg::SplitCopyFields(line, fields);
    if (fields.size() != table.columns.size()) return Status::Runtimef("{}: a state row of unexpected shape", table.name);
    ++traffic_.rows;
    traffic_.bytes += line.size() + 1;  // the line and its newline
    out.emplace_back(fields.begin(), fields.end());
    return Status::Ok();
  }));
  return out;
}

}  // namespace ledgerdiff::dump
