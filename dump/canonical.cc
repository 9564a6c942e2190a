#include "dump/canonical.h"

#include <new>

#include <fmt/format.h>

#include "core/enum_names.h"
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
  std::string p = LedgerRangePredicate(table.ledger.column, table.ledger.kind, range, "t");
  if (std::string settled = SettledPredicate(table); !settled.empty()) p += " AND " + settled;
  return p;
}

std::string FromClause(const ResolvedTable& table, const std::string& schema) {
  std::string sql = " FROM " + pg::Qualified(schema, table.name) + " t";
  for (const auto& j : table.joins)
    sql += fmt::format(" LEFT JOIN {} {} ON {}.{} = {}", pg::Qualified(schema, j.lookup_table), j.alias, j.alias,
                       pg::QuoteIdent(j.lookup_id), j.on_expr);
  if (!table.lateral.empty()) sql += " " + table.lateral;
  return sql;
}

namespace {

// " FROM t LEFT JOIN <lookups> [lateral] WHERE <range>": the rows every canonical and digest
// statement reads, with the aliases the column expressions refer to.
std::string FromWhere(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  return FromClause(table, schema) + " WHERE " + RangePredicate(table, range);
}

// `with_flip`: one more output column after the canonical ones (see CanonicalCopyWithFlip).
std::string UnorderedSelect(const ResolvedTable& table, const std::string& schema, const LedgerRange& range,
                            bool with_flip = false) {
  std::string ledger = LedgerExpr(table);
  std::string sql = "SELECT " + ledger;
  for (const auto& c : table.columns) sql += ", " + c.expr;
  if (with_flip) sql += ", " + (table.flip_expr.empty() ? std::string("false") : table.flip_expr);
  return sql + FromWhere(table, schema, range);
}

}  // namespace

std::string DigestCopy(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  return "COPY (" + UnorderedSelect(table, schema, range) + ") TO STDOUT";
}

const char* ToString(DigestEngine engine) {
  switch (engine) {
    case DigestEngine::kText: return "text";
    case DigestEngine::kServerHash: return "server-hash";
  }
  return "?";
}

std::optional<DigestEngine> ParseDigestEngine(std::string_view name) {
  return ParseEnum(std::array{DigestEngine::kText, DigestEngine::kServerHash}, name);
}

// Built-in hashes that would not decide as the text encoding does, and what is hashed instead:
//   int      hashint8extended folds the high half into the low one (0 and 2^32+1 collide under
//            every seed): int8send's 8 bytes are hashed instead (int2/int4 widened to int8
//            first, so the widenings stay equal);
//   numeric  its hash ignores scale (1.0 = 1.00): its text is hashed;
//   float    its hash equates -0 and 0: its text (extra_float_digits pinned) is hashed;
//   datetime timestamp's hash is hashint8's (folded): the 8 bytes of timestamp_send are hashed
//            instead (timestamptz arrives as its UTC timestamp, canonical/profile.cc), date's 4
//            of date_send, time's 8 of time_send: these are the exact values whose text the
//            text engine hashes (DateStyle and TimeZone do not reach them); other datetime types
//            (timetz, abstime) by their text;
//   jsonb    its hash ignores numeric scale and folds structure by 1-bit rotations: its
//            canonical text is hashed;
//   text     hashed under COLLATE "C" (a nondeterministic collation would hash equal strings
//            that differ); char(n) keeps its padding as its COPY text does;
//   interval its hash equates 1 day and 24 hours: interval_send's 16 bytes (microseconds, days,
//            months: the fields its text prints, IntervalStyle aside) are hashed;
//   json, arrays, others: their text (array hashes ignore dimensions and bounds).
// bool and bytea hash their exact values.
std::string ServerHashValue(const CanonicalColumn& c) {
  const std::string e = "(" + c.expr + ")";
  switch (c.cls) {
    case ColumnClass::kInt: return "int8send(" + e + "::int8)";
    case ColumnClass::kBool:
    case ColumnClass::kBytea: return e;
    case ColumnClass::kText:
      if (c.type == "bpchar") return "textin(bpcharout(" + e + ")) COLLATE \"C\"";
      return e + "::text COLLATE \"C\"";
    case ColumnClass::kDateTime:
      if (c.type == "timestamp" || c.type == "timestamptz") return "timestamp_send(" + e + ")";
      if (c.type == "date") return "date_send(" + e + ")";
      if (c.type == "time") return "time_send(" + e + ")";
      return e + "::text COLLATE \"C\"";
    case ColumnClass::kInterval: return "interval_send(" + e + ")";
    case ColumnClass::kNumeric:
    case ColumnClass::kFloat:
    case ColumnClass::kJson:
    case ColumnClass::kJsonb:
    case ColumnClass::kArray:
    case ColumnClass::kOther: return e + "::text COLLATE \"C\"";
  }
  return e + "::text COLLATE \"C\"";
}

namespace {

// Seeds of the two row hashes (inner: hash_record_extended, outer: hashint8extended). The outer
// hash is what makes a row's hash non-linear in its columns' hashes: hash_record_extended is a
// linear combination (31 * acc + h(v_i)), and a sum of linear row hashes would not see values
// swapped between two rows of one ledger.
constexpr const char* kInnerSeed[2] = {"7142135623730950488", "1732050807568877293"};
constexpr const char* kOuterSeed[2] = {"2236067977499789696", "2645751311064590590"};

}  // namespace

std::string ServerHashRow(const ResolvedTable& table) {
  std::string row = "ROW(";
  for (size_t i = 0; i < table.columns.size(); ++i) row += (i ? ", " : "") + ServerHashValue(table.columns[i]);
  return row + ")";
}

std::string ServerHashSums(const std::string& row) {
  std::string sums;
  for (int k = 0; k < 2; ++k)
    sums += fmt::format(", sum(hashint8extended(hash_record_extended({}, {}), {}))", row, kInnerSeed[k], kOuterSeed[k]);
  return sums;
}

std::string ServerHashQuery(const ResolvedTable& table, const std::string& schema, const LedgerRange& range) {
  // The row is built once per table row (OFFSET 0 keeps the planner from pulling the subquery up
  // and evaluating ROW(...) once per seed); both hashes read the built row.
  return "SELECT l, count(*)" + ServerHashSums("r") + " FROM (SELECT " + LedgerExpr(table) + " AS l, " +
         ServerHashRow(table) + " AS r" + FromWhere(table, schema, range) + " OFFSET 0) s GROUP BY l";
}

bool ReduceDecimalMod64(std::string_view text, uint64_t& out) {
  bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  if (text.empty()) return false;
  uint64_t v = 0;  // arithmetic mod 2^64 is exact for the low 64 bits
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  out = negative ? uint64_t{0} - v : v;
  return true;
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
