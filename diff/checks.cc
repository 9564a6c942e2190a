#include "diff/checks.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/history_tables.h"
#include "dump/canonical.h"

namespace ledgerdiff::diff {

namespace {

const dump::LookupRule* FindRule(const std::vector<dump::LookupRule>& rules, const std::string& table) {
  for (const auto& r : rules)
    if (r.table == table) return &r;
  return nullptr;
}

// The ids referenced through every join of `profile` to `table`, as `known` saw them: the ids
// of rows it resolved (`present`) and the ids it found no row for (`missing`), both sorted and
// unique. std::nullopt when it did not see all of the rows a scan would read: a join it did not
// resolve, another range, or (every row counting) rows of the table outside its range.
struct SeenIds {
  std::vector<int64_t> present, missing;
};
std::optional<SeenIds> KnownReferencesTo(const std::string& table, const dump::ResolvedProfile& profile,
                                         const std::optional<LedgerRange>& range, const KnownReferences& known) {
  if (!known.seen || known.seen->range != known.range || (range && *range != known.range)) return std::nullopt;
  SeenIds ids;
  bool any = false;
  for (const auto& t : profile.tables)
    for (const auto& j : t.joins) {
      if (j.lookup_table != table) continue;
      const dump::JoinReferences* seen = known.seen->Find(t.name, j.on_expr, table);
      if (!seen) return std::nullopt;
      if (!range && std::any_of(known.outside.begin(), known.outside.end(),
                                [&](const dump::OutsideRange& o) { return o.table == t.name && o.total() > 0; }))
        return std::nullopt;
      ids.missing.insert(ids.missing.end(), seen->missing_ids.begin(), seen->missing_ids.end());
      any = true;
    }
  if (!any) return std::nullopt;
  for (const auto& l : known.seen->lookups)
    if (l.lookup_table == table) ids.present.insert(ids.present.end(), l.referenced.begin(), l.referenced.end());
  for (auto* v : {&ids.present, &ids.missing}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return ids;
}

// The map the digest read of `table` under `rule`'s id and natural columns, or nullptr.
const dump::LookupMap* DigestedLookup(const dump::SeenReferences& seen, const std::string& table,
                                      const dump::LookupRule& rule) {
  for (const auto& l : seen.lookups)
    if (l.map && l.map->exact() && l.lookup_table == table && l.lookup_id == rule.id && l.natural == rule.natural)
      return l.map;
  return nullptr;
}

// Appends one lookup row (COPY fields: id, then the natural columns) to `f`.
Status AddRow(LookupFacts& f, const std::vector<std::string_view>& id_and_key, bool referenced) {
  LookupFacts::Row r;
  r.at = f.text.size();
  for (size_t c = 1; c < id_and_key.size(); ++c) {
    if (c > 1) f.text.push_back('\t');
    f.text.append(id_and_key[c]);
  }
  const std::string_view id = id_and_key[0];
  if (f.text.size() - r.at > UINT32_MAX || id.size() >= (1u << 31))
    return Status::Runtimef("lookup table {}: a natural key or id of over 4 GB", f.table);
  r.key_len = static_cast<uint32_t>(f.text.size() - r.at);
  f.text.append(id);
  r.id_len = static_cast<uint32_t>(id.size());
  r.referenced = referenced;
  f.rows.push_back(r);
  return Status::Ok();
}

// k1, k2, ...: the natural columns' names inside the scan's full join.
std::string NaturalAliases(size_t n, std::string_view prefix) {
  std::string out;
  for (size_t i = 1; i <= n; ++i) out += fmt::format("{}{}k{}", i > 1 ? ", " : "", prefix, i);
  return out;
}

std::string MissingId(std::string_view field) { return dump::UnescapeCopyField(field).value_or("NULL"); }

}  // namespace

std::set<std::string> LookupFacts::ReferencedIds() const {
  std::set<std::string> out(missing.begin(), missing.end());
  for (const auto& r : rows)
    if (r.referenced) out.insert(dump::UnescapeCopyField(id(r)).value_or("NULL"));
  return out;
}

std::string KeyJson(std::string_view key) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t at = 0;;) {
    size_t tab = key.find('\t', at);
    std::optional<std::string> v = dump::UnescapeCopyField(key.substr(at, tab == std::string_view::npos ? tab : tab - at));
    out.push_back(v ? nlohmann::json(std::move(*v)) : nlohmann::json(nullptr));
    if (tab == std::string_view::npos) break;
    at = tab + 1;
  }
  // Shown, never compared: bytes that are not UTF-8 are shown as U+FFFD.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::vector<LookupFacts>> ReadLookupFacts(pg::Connection& conn, const std::string& schema,
                                                 const dump::ProfileSpec& spec, const dump::ResolvedProfile& profile,
                                                 const std::optional<LedgerRange>& range,
                                                 const KnownReferences& known) {
  std::vector<LookupFacts> out;
  const auto rules = dump::LookupRules(spec);
  std::vector<std::string_view> fields;
  for (const auto& table : profile.lookup_tables) {
    const dump::LookupRule* rule = FindRule(rules, table);
    if (!rule) continue;  // a lookup table no resolve rule reads: nothing to compare it by
    LookupFacts f;
    f.table = table;
    std::vector<std::string> naturals;
    for (const auto& n : rule->natural) naturals.push_back("l." + pg::QuoteIdent(n) + "::text");
    const std::string lookup_id = "l." + pg::QuoteIdent(rule->id);
    const std::string lookup = pg::Qualified(schema, table);
    const dump::LookupMap* map = known.seen ? DigestedLookup(*known.seen, table, *rule) : nullptr;
    std::optional<SeenIds> seen = KnownReferencesTo(table, profile, range, known);
    if (seen && map) {
      // The references and the table's rows as the digest saw them, in this snapshot: no read.
      std::string id_text;
      std::vector<std::string_view> row(1 + rule->natural.size());
      for (size_t r = 0; r < map->rows(); ++r) {
        const int64_t id = map->id(r);
        id_text = std::to_string(id);  // an integer's COPY text
        row[0] = id_text;
        map->Naturals(r, row.data() + 1);
        LD_RETURN_IF_ERROR(AddRow(f, row, std::binary_search(seen->present.begin(), seen->present.end(), id)));
      }
      for (int64_t id : seen->missing) f.missing.push_back(std::to_string(id));
    } else if (seen) {
      // The references as the digest saw them: a row is referenced when its id is one it resolved.
      Status read = conn.CopyOut(
          fmt::format("COPY (SELECT {}::text, {} FROM {} l) TO STDOUT", lookup_id, fmt::join(naturals, ", "), lookup),
          [&](std::string_view line) {
            pg::SplitCopyFields(line, fields);
            int64_t id = 0;
            auto [end, ec] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), id);
            bool referenced = ec == std::errc() && end == fields[0].data() + fields[0].size() &&
                              std::binary_search(seen->present.begin(), seen->present.end(), id);
            return AddRow(f, fields, referenced);
          });
      if (!read.ok()) return read.With("lookup table " + table);
      for (int64_t id : seen->missing) f.missing.push_back(std::to_string(id));
    } else {
      // A scan: the distinct ids that compared rows reference, in their own (integer) type
      // (hashing tens of millions of ids as text cost four times as much), full-joined to the
      // lookup's rows: a row with no reference is unreferenced, a reference with no row missing.
      std::vector<std::string> parts;
      for (const auto& t : profile.tables)
        for (const auto& j : t.joins) {
          if (j.lookup_table != table) continue;
          std::string where = j.on_expr + " IS NOT NULL";
          if (range) where += " AND " + LedgerRangePredicate(t.ledger.column, t.ledger.kind, *range, "t");
          parts.push_back(
              fmt::format("SELECT {} AS id FROM {} t WHERE {}", j.on_expr, pg::Qualified(schema, t.name), where));
        }
      const std::string sql =
          parts.empty()
              ? fmt::format("COPY (SELECT true, NULL::text, {}::text, {} FROM {} l) TO STDOUT", lookup_id,
                            fmt::join(naturals, ", "), lookup)
              : fmt::format("COPY (SELECT l.present IS NOT NULL, r.id::text, l.id, {} FROM (SELECT {}, {}::text, {}, "
                            "true FROM {} l) l(raw_id, id, {}, present) FULL JOIN (SELECT DISTINCT id FROM ({}) refs) r "
                            "ON l.raw_id = r.id) TO STDOUT",
                            NaturalAliases(naturals.size(), "l."), lookup_id, lookup_id, fmt::join(naturals, ", "),
                            lookup, NaturalAliases(naturals.size(), ""), fmt::join(parts, " UNION ALL "));
      Status read = conn.CopyOut(sql, [&](std::string_view line) {
        pg::SplitCopyFields(line, fields);
        if (!pg::TextIsTrue(fields[0])) {
          f.missing.push_back(MissingId(fields[1]));
          return Status::Ok();
        }
        const bool referenced = fields[1] != "\\N";
        fields.erase(fields.begin(), fields.begin() + 2);
        return AddRow(f, fields, referenced);
      });
      if (!read.ok()) return read.With("lookup table " + table + " and the references to it");
      std::sort(f.missing.begin(), f.missing.end());
      f.missing.erase(std::unique(f.missing.begin(), f.missing.end()), f.missing.end());
    }
    std::sort(f.rows.begin(), f.rows.end(), [&f](const LookupFacts::Row& a, const LookupFacts::Row& b) {
      int c = f.key(a).compare(f.key(b));
      return c != 0 ? c < 0 : f.id(a) < f.id(b);
    });
    std::sort(f.missing.begin(), f.missing.end());
    f.rows.shrink_to_fit();
    f.text.shrink_to_fit();
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// The rows of one key: [begin, end) of LookupFacts::rows.
struct KeyGroup {
  size_t begin = 0, end = 0;
  bool referenced = false;
};

// Groups `f`'s rows by key; `scoped`: only keys with a referenced id.
std::vector<KeyGroup> GroupByKey(const LookupFacts& f, bool scoped) {
  std::vector<KeyGroup> out;
  for (size_t i = 0; i < f.rows.size();) {
    KeyGroup g{i, i, false};
    while (g.end < f.rows.size() && f.key(f.rows[g.end]) == f.key(f.rows[i])) g.referenced |= f.rows[g.end++].referenced;
    if (!scoped || g.referenced) out.push_back(g);
    i = g.end;
  }
  return out;
}

std::string IdText(const LookupFacts& f, const LookupFacts::Row& r) {
  return dump::UnescapeCopyField(f.id(r)).value_or("NULL");
}

}  // namespace

std::vector<LookupComparison> CompareLookups(const std::vector<LookupFacts>& left,
                                             const std::vector<LookupFacts>& right, bool scoped, uint32_t max_rows) {
  std::set<std::string> tables;
  for (const auto& f : left) tables.insert(f.table);
  for (const auto& f : right) tables.insert(f.table);
  static const LookupFacts kNone;
  auto find = [](const std::vector<LookupFacts>& v, const std::string& t) -> const LookupFacts& {
    for (const auto& f : v)
      if (f.table == t) return f;
    return kNone;
  };
  std::vector<LookupComparison> out;
  for (const auto& table : tables) {
    const LookupFacts* sides[2] = {&find(left, table), &find(right, table)};
    LookupComparison c;
    c.table = table;
    std::vector<KeyGroup> keys[2];
    for (int i = 0; i < 2; ++i) {
      const LookupFacts& f = *sides[i];
      const Side side = SideAt(i);
      uint64_t shown_dup = 0;
      for (const KeyGroup& g : GroupByKey(f, false)) {
        if (g.end - g.begin > 1) {
          ++c.issues_total;
          if (shown_dup++ < max_rows) {
            std::vector<std::string> ids;
            for (size_t r = g.begin; r < g.end; ++r) ids.push_back(IdText(f, f.rows[r]));
            c.issues.push_back({side, "key_under_several_ids",
                                fmt::format("{} under ids {}", KeyJson(f.key(f.rows[g.begin])), fmt::join(ids, ", "))});
          }
        }
      }
      keys[i] = GroupByKey(f, scoped);
      if (!f.missing.empty()) {
        c.issues_total += f.missing.size();
        std::vector<std::string> shown(f.missing.begin(), f.missing.begin() + std::min<size_t>(f.missing.size(), max_rows));
        c.issues.push_back({side, "referenced_id_missing", fmt::format("ids {}", fmt::join(shown, ", "))});
      }
      uint64_t unreferenced = 0;
      if (!scoped) {
        // Distinct ids: a duplicated id (a broken lookup) is one id, as a reference sees it.
        std::vector<std::string_view> ids;
        for (const auto& r : f.rows)
          if (!r.referenced) ids.push_back(f.id(r));
        std::sort(ids.begin(), ids.end());
        unreferenced = std::unique(ids.begin(), ids.end()) - ids.begin();
      }
      (i == 0 ? c.unreferenced_left : c.unreferenced_right) = unreferenced;
    }
    c.left_keys = keys[0].size();
    c.right_keys = keys[1].size();
    // Both key lists are sorted: one merge finds the keys on one side only.
    const LookupFacts &l = *sides[0], &r = *sides[1];
    for (size_t a = 0, b = 0; a < keys[0].size() || b < keys[1].size();) {
      int cmp = a == keys[0].size()   ? 1
                : b == keys[1].size() ? -1
                                      : l.key(l.rows[keys[0][a].begin]).compare(r.key(r.rows[keys[1][b].begin]));
      if (cmp < 0) {
        if (c.only_left_total++ < max_rows) c.only_left.push_back(KeyJson(l.key(l.rows[keys[0][a].begin])));
        ++a;
      } else if (cmp > 0) {
        if (c.only_right_total++ < max_rows) c.only_right.push_back(KeyJson(r.key(r.rows[keys[1][b].begin])));
        ++b;
      } else {
        ++a, ++b;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<InvariantResult>> CheckInvariants(pg::Connection& conn, const std::string& schema,
                                                     const dump::ResolvedProfile& profile, const LedgerRange& range,
                                                     Side side, const dump::SeenReferences* seen) {
  std::vector<InvariantResult> out;
  const std::string quoted_schema = pg::QuoteIdent(schema);
  for (const auto& v : profile.invariants) {
    const dump::ResolvedTable* t = profile.Find(v.table);
    if (v.reference && t && seen && seen->range == range) {
      const dump::JoinReferences* j = nullptr;
      for (const auto& c : seen->joins)
        if (c.table == v.table && c.column == v.reference->column && c.lookup_table == v.reference->lookup_table &&
            c.lookup_id == v.reference->lookup_id)
          j = &c;
      if (j) {
        out.push_back({v.name, v.table, side, v.description, j->missing_rows, j->first_missing_ledger});
        continue;
      }
    }
    std::string where = "(" + v.violation + ")";
    for (size_t p = where.find("{schema}"); p != std::string::npos; p = where.find("{schema}", p + quoted_schema.size()))
      where.replace(p, 8, quoted_schema);
    std::string ledger = "NULL::bigint";
    if (t) {
      ledger = LedgerExpression(t->ledger.column, t->ledger.kind, "t");
      where += " AND " + LedgerRangePredicate(t->ledger.column, t->ledger.kind, range, "t");
    }
    auto r = conn.Exec(fmt::format("SELECT count(*), min({})::bigint FROM {} t WHERE {}", ledger,
                                   pg::Qualified(schema, v.table), where));
    if (!r.ok()) return r.status().With(fmt::format("invariant {} on {} side", v.name, ToString(side)));
    InvariantResult res{v.name, v.table, side, v.description, static_cast<uint64_t>(r->GetInt(0, 0)), std::nullopt};
    if (!r->IsNull(0, 1)) res.first_ledger = static_cast<Ledger>(r->GetInt(0, 1));
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace ledgerdiff::diff
