#include "dump/lookup_map.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "dump/canonical.h"

namespace ledgerdiff::dump {

namespace {

constexpr std::string_view kNull = "\\N";

bool ParseId(std::string_view f, int64_t& out) {
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), out);
  return ec == std::errc() && end == f.data() + f.size();
}

// The text a natural key field denotes (COPY escapes undone only when there are any).
std::string_view Unescaped(std::string_view f, std::string& buf) {
  if (f.find('\\') == std::string_view::npos) return f;
  buf = UnescapeCopyField(f).value_or("");
  return buf;
}

int FindColumn(const ResolvedTable& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

std::string RowHashSql(const JoinSpec& join) {
  const std::string id = pg::QuoteIdent(join.lookup_id) + "::bigint";
  // One natural column: its text, NULL hashed as the id's complement (a text hashing to that
  // exact value is a 2^-64 chance); several: their row's text, where NULL and "" differ.
  if (join.natural.size() == 1)
    return fmt::format("coalesce(hashtextextended({0}::text COLLATE \"C\", {1}), ~{1})",
                       pg::QuoteIdent(join.natural[0]), id);
  std::vector<std::string> fields;
  for (const auto& n : join.natural) fields.push_back(pg::QuoteIdent(n) + "::text");
  return fmt::format("hashtextextended(row({0})::text COLLATE \"C\", {1})", fmt::join(fields, ", "), id);
}

Status LookupRows::ReadFrom(pg::Connection& conn, const std::string& schema, const JoinSpec& join,
                            std::optional<int64_t> above, bool hashed) {
  naturals = join.natural.size();
  std::string sql = "COPY (SELECT " + pg::QuoteIdent(join.lookup_id);
  for (const auto& n : join.natural) sql += ", " + pg::QuoteIdent(n) + "::text";
  if (hashed) sql += ", " + RowHashSql(join);
  sql += " FROM " + pg::Qualified(schema, join.lookup_table);
  if (above) sql += fmt::format(" WHERE {} > {}", pg::QuoteIdent(join.lookup_id), *above);
  sql += " ORDER BY 1) TO STDOUT";
  const size_t fields_per_row = naturals + 1 + (hashed ? 1 : 0);
  std::vector<std::string_view> fields;
  return conn.CopyOut(sql, [&](std::string_view line) -> Status {
    pg::SplitCopyFields(line, fields);
    int64_t id = 0, hash = 0;
    if (fields.size() != fields_per_row || !ParseId(fields[0], id)) exact = false;
    if (exact && hashed && !ParseId(fields.back(), hash)) exact = false;
    // A duplicate id would make the canonical LEFT JOIN yield a row twice: not this path's job
    // (the stream is read to its end all the same: the snapshot's transaction stays usable).
    if (!ids.empty() && id <= ids.back()) exact = false;
    if (!exact) return Status::Ok();
    ids.push_back(id);
    if (hashed) {
      hash_high_sum += hash >> 32;  // arithmetic, as the server's >>
      hash_low_sum += hash & 0xffffffff;
    }
    for (size_t k = 1; k < naturals + 1; ++k) {
      offsets.push_back(static_cast<uint32_t>(text.size()));
      text.append(fields[k]);
    }
    offsets.push_back(static_cast<uint32_t>(text.size()));
    if (text.size() > UINT32_MAX / 2) exact = false;  // offsets are 32-bit
    return Status::Ok();
  });
}

Result<LookupMap> LookupMap::Load(pg::Connection& conn, const std::string& schema, const JoinSpec& join) {
  LookupRows rows;
  LD_RETURN_IF_ERROR(rows.ReadFrom(conn, schema, join));
  return FromRows(std::move(rows));
}

LookupMap LookupMap::FromRows(LookupRows rows) {
  LookupMap m;
  m.naturals_ = rows.naturals;
  m.exact_ = rows.exact;
  m.ids_ = std::move(rows.ids);
  m.offsets_ = std::move(rows.offsets);
  m.text_ = std::move(rows.text);
  m.ids_.shrink_to_fit();
  m.offsets_.shrink_to_fit();
  m.text_.shrink_to_fit();
  if (m.exact_) m.BuildDenseIndex();
  if (m.exact_) m.BuildInlineSlots();
  return m;
}

Result<LookupMap> LookupCache::Load(pg::Connection& conn, const std::string& schema, const JoinSpec& join) {
  const std::string key = fmt::format("{}\t{}\t{}\t{}", schema, join.lookup_table, join.lookup_id,
                                      fmt::join(join.natural, "\t"));
  auto it = entries_.find(key);
  if (it != entries_.end() && !it->second.rows.ids.empty()) {
    Entry& e = it->second;
    const int64_t highest = e.rows.ids.back();
    // The rows at or below the highest kept id, hashed in the server now, against the hashes
    // it gave when they were read: one sum (int128 inside the server, cheaper than two), equal
    // to high * 2^32 + low of the kept halves' sums.
    Result<pg::Rows> kept = conn.Exec(
        fmt::format("SELECT count(*), coalesce(sum({0}), 0) = $1::numeric * 4294967296 + $2::numeric FROM {1} WHERE "
                    "{2} <= {3}",
                    RowHashSql(join), pg::Qualified(schema, join.lookup_table), pg::QuoteIdent(join.lookup_id), highest),
        {std::to_string(e.rows.hash_high_sum), std::to_string(e.rows.hash_low_sum)});
    if (!kept.ok()) {
      entries_.erase(it);
      return kept.status();
    }
    if (static_cast<uint64_t>(kept->GetInt(0, 0)) == e.rows.ids.size() && kept->GetBool(0, 1)) {
      const size_t before = e.rows.ids.size();
      Status read = e.rows.ReadFrom(conn, schema, join, highest, /*hashed=*/true);
      if (!read.ok() || !e.rows.exact) {
        entries_.erase(it);
        if (!read.ok()) return read;
        return Load(conn, schema, join);  // read whole: the map says why it is not exact
      }
      ++extensions_;
      rows_read_ += e.rows.ids.size() - before;
      return LookupMap::FromRows(e.rows);
    }
    entries_.erase(it);
  }
  Entry e;
  LD_RETURN_IF_ERROR(e.rows.ReadFrom(conn, schema, join, std::nullopt, /*hashed=*/true));
  ++full_reads_;
  rows_read_ += e.rows.ids.size();
  if (!e.rows.exact) return LookupMap::FromRows(std::move(e.rows));
  LookupMap map = LookupMap::FromRows(e.rows);
  entries_[key] = std::move(e);
  return map;
}

void LookupMap::BuildInlineSlots() {
  if (slot_of_.empty() || naturals_ == 0 || naturals_ > 8) return;
  const size_t header = 4 + naturals_;
  for (size_t row = 0; row < ids_.size(); ++row) {
    const uint32_t* o = &offsets_[row * (naturals_ + 1)];
    if (header + (o[naturals_] - o[0]) > sizeof(InlineSlot)) return;
  }
  const size_t replaced = offsets_.size() * 4 + text_.size() + slot_of_.size() * 4;
  if (slot_of_.size() * sizeof(InlineSlot) > replaced + replaced / 4) return;
  inline_.assign(slot_of_.size(), InlineSlot{});
  for (size_t row = 0; row < ids_.size(); ++row) {
    uint8_t* b = inline_[static_cast<uint64_t>(ids_[row]) - static_cast<uint64_t>(ids_.front())].bytes;
    const uint32_t r = static_cast<uint32_t>(row + 1);
    std::memcpy(b, &r, 4);
    const uint32_t* o = &offsets_[row * (naturals_ + 1)];
    for (size_t k = 0; k < naturals_; ++k) b[4 + k] = static_cast<uint8_t>(o[k + 1] - o[k]);
    std::memcpy(b + header, text_.data() + o[0], o[naturals_] - o[0]);
  }
  std::vector<uint32_t>().swap(offsets_);
  std::string().swap(text_);
  std::vector<uint32_t>().swap(slot_of_);
}

void LookupMap::BuildDenseIndex() {
  if (ids_.empty() || ids_.size() >= UINT32_MAX) return;
  // ids_ is strictly increasing: the span is at least the row count. Unsigned arithmetic: the
  // span of [INT64_MIN, INT64_MAX] does not overflow.
  const uint64_t span = static_cast<uint64_t>(ids_.back()) - static_cast<uint64_t>(ids_.front()) + 1;
  if (span == 0 || span > kDenseSpanPerRow * ids_.size()) return;
  slot_of_.assign(span, 0);
  for (size_t row = 0; row < ids_.size(); ++row)
    slot_of_[static_cast<uint64_t>(ids_[row]) - static_cast<uint64_t>(ids_.front())] = static_cast<uint32_t>(row + 1);
}

ptrdiff_t LookupMap::FindRowAndNaturals(int64_t id, std::string_view* out) const {
  if (!inline_.empty()) {
    const uint64_t at = static_cast<uint64_t>(id) - static_cast<uint64_t>(ids_.front());  // wraps below the first id
    if (at >= inline_.size()) return -1;
    const uint8_t* b = inline_[at].bytes;
    uint32_t r;
    std::memcpy(&r, b, 4);
    if (r == 0) return -1;
    const char* text = reinterpret_cast<const char*>(b + 4 + naturals_);
    for (size_t k = 0; k < naturals_; ++k) {
      out[k] = std::string_view(text, b[4 + k]);
      text += b[4 + k];
    }
    return static_cast<ptrdiff_t>(r) - 1;
  }
  const ptrdiff_t row = FindRow(id);
  if (row >= 0) Naturals(static_cast<size_t>(row), out);
  return row;
}

ptrdiff_t LookupMap::FindRow(int64_t id) const {
  if (!inline_.empty()) {
    const uint64_t at = static_cast<uint64_t>(id) - static_cast<uint64_t>(ids_.front());
    if (at >= inline_.size()) return -1;
    uint32_t r;
    std::memcpy(&r, inline_[at].bytes, 4);
    return static_cast<ptrdiff_t>(r) - 1;
  }
  if (!slot_of_.empty()) {
    const uint64_t at = static_cast<uint64_t>(id) - static_cast<uint64_t>(ids_.front());  // wraps below the first id
    if (at >= slot_of_.size() || slot_of_[at] == 0) return -1;
    return static_cast<ptrdiff_t>(slot_of_[at]) - 1;
  }
  auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  if (it == ids_.end() || *it != id) return -1;
  return it - ids_.begin();
}

void LookupMap::Naturals(size_t row, std::string_view* out) const {
  if (!inline_.empty()) {
    FindRowAndNaturals(ids_[row], out);
    return;
  }
  const uint32_t* o = &offsets_[row * (naturals_ + 1)];
  for (size_t k = 0; k < naturals_; ++k) out[k] = std::string_view(text_).substr(o[k], o[k + 1] - o[k]);
}

bool LookupMap::Find(int64_t id, std::string_view* out) const {
  const ptrdiff_t row = FindRow(id);
  if (row < 0) return false;
  Naturals(static_cast<size_t>(row), out);
  return true;
}

void JoinReferences::Merge(const JoinReferences& other) {
  missing_rows += other.missing_rows;
  if (other.first_missing_ledger && (!first_missing_ledger || *other.first_missing_ledger < *first_missing_ledger))
    first_missing_ledger = other.first_missing_ledger;
  missing_ids.insert(missing_ids.end(), other.missing_ids.begin(), other.missing_ids.end());
  Normalize();
}

void JoinReferences::Normalize() {
  std::sort(missing_ids.begin(), missing_ids.end());
  missing_ids.erase(std::unique(missing_ids.begin(), missing_ids.end()), missing_ids.end());
}

bool ClientResolvedTable::Supported(const ResolvedTable& table) {
  for (const auto& j : table.joins)
    if (!j.integer_ids) return false;
  for (const auto& c : table.columns) {
    if (c.join >= static_cast<int>(table.joins.size())) return false;
    if (c.join < 0 && c.plain_expr.empty()) return false;
  }
  if (!table.lateral.empty() && !table.orientation) return false;
  if (table.orientation) {
    const auto& o = *table.orientation;
    if (o.base < 0 || o.counter < 0 || o.base >= static_cast<int>(table.joins.size()) ||
        o.counter >= static_cast<int>(table.joins.size()) ||
        table.joins[o.base].natural.size() != table.joins[o.counter].natural.size())
      return false;
    // The canonical query swaps a kept column with a dropped one's value: only when both are kept
    // (or both dropped) does a swap on the client give the same fields.
    for (const auto& [x, y] : o.swap)
      if ((FindColumn(table, x) < 0) != (FindColumn(table, y) < 0)) return false;
  }
  return true;
}

ClientResolvedTable::ClientResolvedTable(const ResolvedTable& table, std::vector<const LookupMap*> maps,
                                         std::vector<ReferenceMarks*> marks)
    : table_(table), maps_(std::move(maps)), marks_(std::move(marks)) {
  for (const auto& j : table.joins)
    references_.push_back({.table = table.name,
                           .column = j.column,
                           .on_expr = j.on_expr,
                           .lookup_table = j.lookup_table,
                           .lookup_id = j.lookup_id,
                           .missing_rows = 0,
                           .first_missing_ledger = std::nullopt,
                           .missing_ids = {}});
  distinct_missing_.assign(table.joins.size(), 0);
  // The raw columns wanted, by the SQL that names one, and the field each gets.
  std::vector<std::string> raw_of_field;
  std::vector<std::string> expressions;  // plain columns that are not a bare column reference
  auto bare = [&](const std::string& sql) -> std::optional<std::string> {
    for (const auto& name : table.physical)
      if (sql == "t." + pg::QuoteIdent(name)) return name;
    return std::nullopt;
  };
  std::vector<std::string> wanted{table.ledger.column};
  for (const auto& j : table.joins) wanted.push_back(j.column);
  for (const auto& c : table.columns)
    if (c.join < 0) {
      if (auto name = bare(c.plain_expr)) wanted.push_back(*name);
      else if (std::find(expressions.begin(), expressions.end(), c.plain_expr) == expressions.end())
        expressions.push_back(c.plain_expr);
    }
  for (const auto& name : table.physical)
    if (std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
      fields_.push_back("t." + pg::QuoteIdent(name));
      raw_of_field.push_back(name);
    }
  for (const auto& w : wanted)  // a profile whose physical list lacks a column: selected all the same
    if (std::find(raw_of_field.begin(), raw_of_field.end(), w) == raw_of_field.end()) {
      fields_.push_back("t." + pg::QuoteIdent(w));
      raw_of_field.push_back(w);
    }
  fields_.insert(fields_.end(), expressions.begin(), expressions.end());
  auto field_of = [&](const std::string& sql) -> size_t {
    return static_cast<size_t>(std::find(fields_.begin(), fields_.end(), sql) - fields_.begin());
  };
  ledger_field_ = field_of("t." + pg::QuoteIdent(table.ledger.column));
  for (const auto& j : table.joins) id_field_.push_back(field_of("t." + pg::QuoteIdent(j.column)));
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const CanonicalColumn& c = table.columns[i];
    if (c.join < 0) {
      std::optional<std::string> name = bare(c.plain_expr);
      source_.emplace_back(-1, field_of(name ? "t." + pg::QuoteIdent(*name) : c.plain_expr));
    } else {
      source_.emplace_back(c.join, c.natural);
    }
  }
  if (table.orientation) {
    for (const auto& [x, y] : table.orientation->swap) {
      int a = FindColumn(table, x), b = FindColumn(table, y);
      if (a >= 0 && b >= 0) swap_.emplace_back(a, b);
    }
    for (const auto& n : table.orientation->negate)
      if (int a = FindColumn(table, n); a >= 0) negate_.push_back(static_cast<size_t>(a));
  }
  natural_.resize(table.joins.size());
  for (size_t j = 0; j < table.joins.size(); ++j) natural_[j].resize(table.joins[j].natural.size());
  scratch_.resize(table.joins.size());
}

std::string ClientResolvedTable::Copy(const std::string& schema, const LedgerRange& range) const {
  return fmt::format("COPY (SELECT {} FROM {} t WHERE {}) TO STDOUT", fmt::join(fields_, ", "),
                     pg::Qualified(schema, table_.name), RangePredicate(table_, range));
}

bool ClientResolvedTable::LedgerOf(const std::vector<std::string_view>& row, Ledger& out) const {
  const std::string_view f = row[ledger_field_];
  if (table_.ledger.kind == LedgerColumnKind::kSequence) return ParseLedgerField(f, out);
  int64_t toid = 0;
  if (!ParseId(f, toid) || toid < 0) return false;
  out = static_cast<Ledger>(static_cast<uint64_t>(toid) >> 32);
  return true;
}

Status ClientResolvedTable::Resolve(const std::vector<std::string_view>& row, Ledger ledger,
                                    std::vector<std::string_view>& out) {
  enum State : uint8_t { kNullId, kMissing, kFound, kFoundNullKey };
  const size_t J = table_.joins.size();
  State state[64];
  if (J > 64) return Status::Runtimef("table {}: more than 64 lookups", table_.name);
  for (size_t j = 0; j < J; ++j) {
    std::string_view f = row[id_field_[j]];
    int64_t id = 0;
    if (f == kNull) {
      state[j] = kNullId;
    } else if (!ParseId(f, id)) {
      return Status::Runtimef("table {}: surrogate id \"{}\" is not an integer", table_.name, f);
    } else if (const ptrdiff_t r = maps_[j]->FindRowAndNaturals(id, natural_[j].data()); r >= 0) {
      marks_[j]->Mark(static_cast<size_t>(r));
      state[j] = std::all_of(natural_[j].begin(), natural_[j].end(), [](std::string_view v) { return v == kNull; })
                     ? kFoundNullKey
                     : kFound;
    } else {
      scratch_[j] = kUnresolvedPrefix;
      scratch_[j].append(f);
      state[j] = kMissing;
      JoinReferences& m = references_[j];
      ++m.missing_rows;
      if (!m.first_missing_ledger || ledger < *m.first_missing_ledger) m.first_missing_ledger = ledger;
      m.missing_ids.push_back(id);
      // At most twice the distinct missing ids (+4096), not one per row that references them.
      if (m.missing_ids.size() >= 2 * distinct_missing_[j] + 4096) {
        m.Normalize();
        distinct_missing_[j] = m.missing_ids.size();
      }
    }
  }
  out.resize(source_.size());
  for (size_t i = 0; i < source_.size(); ++i) {
    auto [join, k] = source_[i];
    if (join < 0) {
      out[i] = row[k];
    } else {
      size_t j = static_cast<size_t>(join);
      switch (state[j]) {
        case kNullId: out[i] = kNull; break;
        case kMissing: out[i] = scratch_[j]; break;
        case kFoundNullKey: out[i] = k == 0 ? kNullNaturalKey : kNull; break;
        case kFound: out[i] = natural_[j][k]; break;
      }
    }
  }
  if (table_.orientation) {
    // COALESCE((base key) > (counter key), false) over text COLLATE "C": compared left to right,
    // a NULL pair (or a missing lookup row) makes it false.
    size_t b = static_cast<size_t>(table_.orientation->base), c = static_cast<size_t>(table_.orientation->counter);
    bool flip = false;
    if (state[b] == kFound && state[c] == kFound) {
      std::string lb, rb;
      for (size_t k = 0; k < natural_[b].size(); ++k) {
        if (natural_[b][k] == kNull || natural_[c][k] == kNull) break;
        std::string_view l = Unescaped(natural_[b][k], lb), r = Unescaped(natural_[c][k], rb);
        if (l == r) continue;
        flip = l > r;  // char_traits<char>::compare: unsigned bytes, as COLLATE "C"
        break;
      }
    }
    if (flip) {
      for (auto [x, y] : swap_) std::swap(out[x], out[y]);
      for (size_t i : negate_) out[i] = out[i] == "t" ? "f" : out[i] == "f" ? "t" : out[i];
    }
  }
  return Status::Ok();
}

}  // namespace ledgerdiff::dump
