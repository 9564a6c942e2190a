#include "dump/canonical.h"

#include <new>

#include <fmt/format.h>

#include "core/history_tables.h"

namespace ledgerdiff::dump {

namespace {

uint8_t TagOf(ColumnClass cls) { return static_cast<uint8_t>(cls) + 1; }  // never 0 (NULL)

std::vector<std::string> SortKeys(const CanonicalColumn& c) {
  std::string e = "(" + c.expr + ")";
  switch (c.cls) {
    case ColumnClass::kInt:
    case ColumnClass::kBool:
    case ColumnClass::kDateTime:
    case ColumnClass::kBytea:
      return {e};
    case ColumnClass::kFloat:
    case ColumnClass::kNumeric:
      return {e, e + "::text COLLATE \"C\""};
    case ColumnClass::kText:
      return {e + "::text COLLATE \"C\""};
    default:
      return {e + "::text COLLATE \"C\""};
  }
}

}  // namespace

std::string Digest128::Hex() const {
  std::string s;
  s.reserve(32);
  for (uint8_t b : bytes) s += fmt::format("{:02x}", b);
  return s;
}

uint32_t Digest128::Tag() const {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) | bytes[3];
}

const Digest128& EmptyDigest() {
  static const Digest128 empty = RowMultiset{}.Finish();
  return empty;
}

Digest128 RowMultiset::Finish() const {
  unsigned char buf[24];
  for (int i = 0; i < 8; ++i) {
    buf[i] = static_cast<unsigned char>((count >> (8 * i)) & 0xff);
    buf[8 + i] = static_cast<unsigned char>((lo >> (8 * i)) & 0xff);
    buf[16 + i] = static_cast<unsigned char>((hi >> (8 * i)) & 0xff);
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(buf, sizeof buf));
  Digest128 d;
  std::copy(std::begin(c.digest), std::end(c.digest), d.bytes.begin());
  return d;
}

namespace {

// A non-NULL field's encoding before its bytes: the class tag, then the length.
void AppendValueHeader(std::string& out, size_t size, ColumnClass cls) {
  out.push_back(static_cast<char>(TagOf(cls)));
  AppendLeb128(out, size);
}

}  // namespace

RowHasher::RowHasher() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  buf_.reserve(4096);
}

RowHasher::~RowHasher() { XXH3_freeState(state_); }

XXH128_hash_t RowHasher::Hash(const std::string_view* fields, const ColumnClass* classes, size_t n) {
  // Below this a field is copied into the buffer: a streaming update costs more than the copy.
  constexpr size_t kStreamFrom = 1024;
  buf_.clear();
  bool streaming = false;
  for (size_t i = 0; i < n; ++i) {
    std::string_view v = fields[i];
    if (v.size() < kStreamFrom) {  // NULL ("\\N") included
      AppendEncodedField(buf_, v, classes[i]);
      continue;
    }
    AppendValueHeader(buf_, v.size(), classes[i]);
    if (!streaming) XXH3_128bits_reset(state_);
    streaming = true;
    XXH3_128bits_update(state_, buf_.data(), buf_.size());
    XXH3_128bits_update(state_, v.data(), v.size());  // the long field's bytes, where they lie
    buf_.clear();
  }
  if (!streaming) return XXH3_128bits(buf_.data(), buf_.size());
  XXH3_128bits_update(state_, buf_.data(), buf_.size());
  return XXH3_128bits_digest(state_);
}

std::string LedgerExpr(const ResolvedTable& table) {
  return LedgerExpression(table.ledger.column, table.ledger.kind, "t");
}

std::string RangePredicate(const ResolvedTable& table, const LedgerRange& range) {
  return LedgerRangePredicate(table.ledger.column, table.ledger.kind, range, "t");
}

namespace {

// `with_flip`: one more output column after the canonical ones (see CanonicalCopyWithFlip).
std::string UnorderedSelect(const ResolvedTable& table, const std::string& schema, const LedgerRange& range,
                            bool with_flip = false) {
  std::string ledger = LedgerExpr(table);
  std::string sql = "SELECT " + ledger;
  for (const auto& c : table.columns) sql += ", " + c.expr;
  if (with_flip) sql += ", " + (table.flip_expr.empty() ? std::string("false") : table.flip_expr);
  sql += " FROM " + pg::Qualified(schema, table.name) + " t";
  for (const auto& j : table.joins)
    sql += fmt::format(" LEFT JOIN {} {} ON {}.{} = {}", pg::Qualified(schema, j.lookup_table), j.alias, j.alias,
                       pg::QuoteIdent(j.lookup_id), j.on_expr);
  if (!table.lateral.empty()) sql += " " + table.lateral;
  sql += " WHERE " + RangePredicate(table, range);
  return sql;
}

}  // namespace

std::string DigestCopy(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  return "COPY (" + UnorderedSelect(table, schema, range) + ") TO STDOUT";
}

namespace {

std::string OrderedSelect(const ResolvedTable& table, const std::string& schema, const LedgerRange& range,
                          bool with_flip) {
  std::string sql = UnorderedSelect(table, schema, range, with_flip);
  std::string ledger = LedgerExpr(table);
  // The canonical order: ledger, key, then every other column (a total order even for duplicate
  // keys). Shortcuts that give the same order: when the key starts with the ledger column itself
  // (sequence, or a TOID whose high bits are the ledger) the ledger sort is implied; when a
  // unique index covers the key, the other columns never decide. Then PostgreSQL can often read
  // the rows in index order instead of sorting them.
  std::vector<std::string> order;
  const std::string ledger_column = "t." + pg::QuoteIdent(table.ledger.column);
  bool key_implies_ledger = false;
  if (!table.key.empty())
    for (const auto& c : table.columns)
      if (c.name == table.key.front() && c.expr == ledger_column) key_implies_ledger = true;
  if (!key_implies_ledger) order.push_back(ledger);
  auto add = [&](const CanonicalColumn& c) {
    for (auto& k : SortKeys(c)) order.push_back(std::move(k));
  };
  for (const auto& k : table.key)
    for (const auto& c : table.columns)
      if (c.name == k) add(c);
  if (!table.unique_key) {
    for (const auto& c : table.columns) {
      bool is_key = false;
      for (const auto& k : table.key) is_key = is_key || k == c.name;
      if (!is_key) add(c);
    }
  }
  sql += fmt::format(" ORDER BY {}", fmt::join(order, ", "));
  return sql;
}

}  // namespace

std::string CanonicalSelect(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  return OrderedSelect(table, schema, range, false);
}

std::string CanonicalCopy(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  return "COPY (" + CanonicalSelect(table, schema, range) + ") TO STDOUT";
}

std::string CanonicalCopyWithFlip(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  return "COPY (" + OrderedSelect(table, schema, range, true) + ") TO STDOUT";
}

void AppendEncodedField(std::string& out, std::string_view v, ColumnClass cls) {
  if (v == "\\N") {
    out.push_back('\0');
    return;
  }
  AppendValueHeader(out, v.size(), cls);
  out.append(v);
}

void AppendLeb128(std::string& out, uint64_t n) {
  do {
    uint8_t b = n & 0x7f;
    n >>= 7;
    if (n) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (n);
}

size_t DecodeLeb128(const unsigned char* p, size_t n, uint64_t& value) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 10; ++i) {
    const unsigned char b = p[i];
    if (i == 9 && b > 1) return 0;    // bits beyond 64
    if (i > 0 && b == 0) return 0;    // overlong: a trailing zero byte adds nothing
    v |= uint64_t{b & 0x7fu} << (7 * i);
    if (!(b & 0x80)) {
      value = v;
      return i + 1;
    }
  }
  return 0;
}

std::optional<std::string> UnescapeCopyField(std::string_view f) {
  if (f == "\\N") return std::nullopt;
  std::string out;
  out.reserve(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c != '\\' || i + 1 == f.size()) {
      out.push_back(c);
      continue;
    }
    char n = f[++i];
    switch (n) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'v': out.push_back('\v'); break;
      default:
        if (n >= '0' && n <= '7') {  // octal \ooo
          int v = 0, k = 0;
          while (k < 3 && i < f.size() && f[i] >= '0' && f[i] <= '7') v = v * 8 + (f[i++] - '0'), ++k;
          --i;
          out.push_back(static_cast<char>(v));
        } else {
          out.push_back(n);
        }
    }
  }
  return out;
}


bool ParseLedgerField(std::string_view f, Ledger& out) {
  if (f.empty() || f.size() > 10) return false;
  uint64_t v = 0;
  for (char c : f) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffu) return false;
  out = static_cast<Ledger>(v);
  return true;
}

}  // namespace ledgerdiff::dump
