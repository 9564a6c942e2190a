#include "diff/diff.h"

#include <chrono>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/pg.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/manifest.h"

namespace ledgerdiff::diff {

using dump::Chunk;
using dump::DigestSummary;
using dump::ResolvedProfile;
using dump::ResolvedTable;

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A bounded queue of chunks between a digest thread and the comparator.
class ChunkQueue {
 public:
  // Blocks while full. False when the consumer cancelled.
  bool Push(Chunk c) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return cancelled_ || q_.size() < 4; });
    if (cancelled_) return false;
    q_.push_back(std::move(c));
    cv_.notify_all();
    return true;
  }
  void Close(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    status_ = std::move(s);
    cv_.notify_all();
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  // Next chunk; false at the end (status() tells whether it ended in an error).
  bool Pop(Chunk& c) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return false;
    c = std::move(q_.front());
    q_.pop_front();
    cv_.notify_all();
    return true;
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> q_;
  bool closed_ = false, cancelled_ = false;
  Status status_;
};

// One side during a comparison: its profile, its stream of chunks, its summary.
struct Side {
  Source source;
  ResolvedProfile profile;     // as resolved before the digest (schema) or from the header
  LedgerRange present;         // range present in the schema / the manifest's range
  std::unique_ptr<dump::ManifestReader> reader;
  ChunkQueue queue;
  std::thread thread;
  DigestSummary summary;       // schema: filled by the digest thread
  Chunk chunk;                 // current chunk
  bool have = false;
  std::vector<int> map;        // common table index -> this side's table index (-1 absent)

  // Advances to the chunk holding `l`. False at the end of the stream.
  Result<bool> Seek(Ledger l) {
    while (!have || chunk.range.to < l) {
      if (reader) {
        LD_ASSIGN_OR_RETURN(bool more, reader->Next(chunk));
        if (!more) return false;
      } else {
        if (!queue.Pop(chunk)) {
          Status s = queue.status();
          if (!s.ok()) return s;
          return false;
        }
      }
      have = true;
    }
    return chunk.range.contains(l);
  }
  // Reads a manifest to its end (checksum) after the compared range.
  Status Drain() {
    if (!reader) return Status::Ok();
    for (;;) {
      LD_ASSIGN_OR_RETURN(bool more, reader->Next(chunk));
      if (!more) return Status::Ok();
    }
  }
};

Result<std::vector<RowValues>> FetchRows(const std::string& conninfo, const std::string& schema,
                                         const ResolvedTable& table, Ledger ledger) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff diff rows"));
  std::vector<RowValues> rows;
  std::vector<std::string_view> fields;
  Status s = conn->CopyOut(dump::CanonicalCopy(table, schema, {ledger, ledger}), [&](std::string_view line) {
    pg::SplitCopyFields(line, fields);
    RowValues r;
    for (size_t i = 1; i < fields.size(); ++i) r.push_back(dump::UnescapeCopyField(fields[i]));
    rows.push_back(std::move(r));
    return Status::Ok();
  });
  if (!s.ok()) return s.With(fmt::format("rows of {} at ledger {}", table.name, ledger));
  return rows;
}

std::string ShowValue(const std::optional<std::string>& v) {
  if (!v) return "NULL";
  std::string out = "'";
  for (char c : *v) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\'') out += "''";
    else out += c;
  }
  return out + "'";
}

nlohmann::json ValueJson(const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

Source Source::Schema(std::string conninfo, std::string schema) {
  Source s;
  s.kind = Kind::kSchema;
  s.conninfo = std::move(conninfo);
  s.schema = std::move(schema);
  return s;
}

Source Source::Manifest(std::string path) {
  Source s;
  s.kind = Kind::kManifest;
  s.manifest_path = std::move(path);
  return s;
}

std::string Source::Describe() const {
  if (kind == Kind::kManifest) return "manifest " + manifest_path;
  return fmt::format("schema \"{}\" ({})", schema, pg::RedactConninfo(conninfo));
}

bool SourceNeedsDefaultDatabase(const std::string& t) {
  if (t.rfind("file:", 0) == 0 || EndsWith(t, ".ldm")) return false;
  if ((t.rfind("postgresql://", 0) == 0 || t.rfind("postgres://", 0) == 0) && t.find('#') != std::string::npos)
    return false;
  return t.find("::") == std::string::npos;
}

Result<Source> ParseSource(const std::string& t, const std::string& default_conninfo) {
  if (t.empty()) return Status::Usage("empty side: give a schema, file:PATH or CONNINFO::SCHEMA");
  if (t.rfind("file:", 0) == 0) return Source::Manifest(t.substr(5));
  if (EndsWith(t, ".ldm")) return Source::Manifest(t);
  if (t.rfind("postgresql://", 0) == 0 || t.rfind("postgres://", 0) == 0) {
    size_t hash = t.rfind('#');
    if (hash != std::string::npos) {
      if (hash + 1 == t.size()) return Status::Usagef("side \"{}\": no schema after '#'", pg::RedactConninfo(t));
      return Source::Schema(t.substr(0, hash), t.substr(hash + 1));
    }
  }
  size_t sep = t.rfind("::");
  if (sep != std::string::npos) {
    if (sep + 2 == t.size()) return Status::Usagef("side \"{}\": no schema after '::'", pg::RedactConninfo(t));
    return Source::Schema(t.substr(0, sep), t.substr(sep + 2));
  }
  if (default_conninfo.empty()) return Status::Usagef("side \"{}\": a schema needs a database (--db)", t);
  return Source::Schema(default_conninfo, t);
}

void DiffRows(const std::vector<RowValues>& left, const std::vector<RowValues>& right, const std::vector<size_t>& key,
              const std::vector<std::string>& columns, uint32_t max_rows, TableRowDiff& out) {
  auto key_of = [&](const RowValues& r) {
    RowValues k;
    for (size_t i : key) k.push_back(r[i]);
    return k;
  };
  // Group by key (multisets of rows per key); exact matches cancel one for one.
  std::map<RowValues, std::pair<std::vector<RowValues>, std::vector<RowValues>>> groups;
  for (const auto& r : left) groups[key_of(r)].first.push_back(r);
  for (const auto& r : right) groups[key_of(r)].second.push_back(r);
  for (auto& [k, g] : groups) {
    auto& [l, r] = g;
    std::sort(l.begin(), l.end());
    std::sort(r.begin(), r.end());
    std::vector<RowValues> lo, ro;
    std::set_difference(l.begin(), l.end(), r.begin(), r.end(), std::back_inserter(lo));
    std::set_difference(r.begin(), r.end(), l.begin(), l.end(), std::back_inserter(ro));
    size_t pairs = key.empty() ? 0 : std::min(lo.size(), ro.size());
    for (size_t i = 0; i < pairs; ++i) {
      ++out.changed_total;
      if (out.changed.size() >= max_rows) continue;
      ChangedRow c;
      c.key = k;
      for (size_t col = 0; col < columns.size(); ++col)
        if (lo[i][col] != ro[i][col]) c.changes.push_back({columns[col], lo[i][col], ro[i][col]});
      out.changed.push_back(std::move(c));
    }
    for (size_t i = pairs; i < lo.size(); ++i) {
      ++out.only_left_total;
      if (out.only_left.size() < max_rows) out.only_left.push_back(lo[i]);
    }
    for (size_t i = pairs; i < ro.size(); ++i) {
      ++out.only_right_total;
      if (out.only_right.size() < max_rows) out.only_right.push_back(ro[i]);
    }
  }
}

Result<DiffReport> DiffSources(const Source& left_src, const Source& right_src, const dump::ProfileSpec& spec,
                               const DiffOptions& options, Reporter& reporter) {
  const auto started = std::chrono::steady_clock::now();
  Side sides[2];
  sides[0].source = left_src;
  sides[1].source = right_src;
  const char* names[2] = {"left", "right"};

  // 1. Profiles and ranges of both sides.
  for (Side& s : sides) {
    if (s.source.kind == Source::Kind::kManifest) {
      LD_ASSIGN_OR_RETURN(s.reader, dump::ManifestReader::Open(s.source.manifest_path));
      s.profile = s.reader->header().profile;
      s.present = s.reader->header().range;
    } else {
      LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(s.source.conninfo, "ledgerdiff diff"));
      auto p = dump::ResolveProfile(*conn, s.source.schema, spec);
      if (!p.ok()) return p.status().With(s.source.Describe());
      s.profile = std::move(p).value();
      if (!options.range) {
        auto r = dump::DetectRange(*conn, s.source.schema, s.profile);
        if (!r.ok()) return r.status();
        s.present = *r;
      }
    }
  }
  LedgerRange range;
  bool m0 = sides[0].reader != nullptr, m1 = sides[1].reader != nullptr;
  if (options.range) {
    range = *options.range;
    for (Side& s : sides)
      if (s.reader && !s.present.contains(range))
        return Status::Usagef("range {} is outside {} (which covers {})", range.str(), s.source.Describe(),
                              s.present.str());
  } else if (m0 && m1) {
    if (!(sides[0].present == sides[1].present))
      return Status::Usagef("the manifests cover different ranges ({} and {}): give --range within both",
                            sides[0].present.str(), sides[1].present.str());
    range = sides[0].present;
  } else if (m0 || m1) {
    range = m0 ? sides[0].present : sides[1].present;
  } else {
    range = {std::min(sides[0].present.from, sides[1].present.from), std::max(sides[0].present.to, sides[1].present.to)};
  }

  // 2. Common tables and columns.
  DiffReport report;
  report.left = left_src.Describe();
  report.right = right_src.Describe();
  report.range = range;
  report.profile = sides[0].profile.name;
  report.all = options.all;
  ResolvedProfile common;
  common.name = sides[0].profile.name;
  common.lookup_tables = sides[0].profile.lookup_tables;
  common.uncompared_tables = sides[0].profile.uncompared_tables;
  for (const auto& lt : sides[0].profile.tables) {
    const ResolvedTable* rt = sides[1].profile.Find(lt.name);
    if (!rt) {
      report.schema_differences.push_back(fmt::format("table {} only on the left", lt.name));
      continue;
    }
    ResolvedTable t = lt;
    t.columns.clear();
    for (const auto& c : lt.columns) {
      auto it = std::find_if(rt->columns.begin(), rt->columns.end(), [&](const auto& o) { return o.name == c.name; });
      if (it == rt->columns.end()) {
        report.schema_differences.push_back(fmt::format("column {}.{} only on the left", lt.name, c.name));
        continue;
      }
      if (it->cls != c.cls)
        report.schema_differences.push_back(fmt::format("column {}.{} is {} on the left, {} on the right", lt.name,
                                                        c.name, dump::ColumnClassName(c.cls),
                                                        dump::ColumnClassName(it->cls)));
      t.columns.push_back(c);
    }
    for (const auto& c : rt->columns)
      if (std::none_of(lt.columns.begin(), lt.columns.end(), [&](const auto& o) { return o.name == c.name; }))
        report.schema_differences.push_back(fmt::format("column {}.{} only on the right", lt.name, c.name));
    common.tables.push_back(std::move(t));
  }
  for (const auto& rt : sides[1].profile.tables)
    if (!sides[0].profile.Find(rt.name))
      report.schema_differences.push_back(fmt::format("table {} only on the right", rt.name));
  if (common.tables.empty()) return Status::Usage("the two sides have no table in common");
  for (const auto& t : common.tables)
    for (const auto& c : t.excluded) report.excluded_columns.push_back(t.name + "." + c);
  std::sort(report.excluded_columns.begin(), report.excluded_columns.end());
  report.lookup_tables = common.lookup_tables;
  report.uncompared_tables = common.uncompared_tables;
  const size_t T = common.tables.size();

  // 3. Start the digests of schema sides (concurrently); map common tables to each side's.
  auto stop_all = [&] {
    for (Side& s : sides) {
      s.queue.Cancel();
      if (s.thread.joinable()) s.thread.join();
    }
  };
  for (int i = 0; i < 2; ++i) {
    Side& s = sides[i];
    if (s.reader) {
      for (const auto& t : common.tables) {
        int idx = -1;
        for (size_t k = 0; k < s.profile.tables.size(); ++k)
          if (s.profile.tables[k].name == t.name) idx = static_cast<int>(k);
        s.map.push_back(idx);
      }
      continue;
    }
    for (size_t k = 0; k < T; ++k) s.map.push_back(static_cast<int>(k));  // restricted to common
    dump::DigestOptions dopts;
    dopts.range = range;
    dopts.jobs = options.jobs;
    dopts.restrict_to = common;
    dopts.phase = fmt::format("digest {}", names[i]);
    s.thread = std::thread([&s, &spec, &reporter, dopts] {
      auto r = dump::DigestSchema(
          s.source.conninfo, s.source.schema, spec, dopts,
          [&s](const Chunk& c) { return s.queue.Push(c) ? Status::Ok() : Status::Runtime("cancelled"); }, reporter);
      if (r.ok()) {
        s.summary = std::move(r).value();
        s.queue.Close(Status::Ok());
      } else {
        s.queue.Close(r.status().With(s.source.Describe()));
      }
    });
  }

  // 4. Compare ledger by ledger.
  report.tables.resize(T);
  for (size_t t = 0; t < T; ++t) report.tables[t].table = common.tables[t].name;
  const bool combined_comparable =
      report.schema_differences.empty() &&
      std::all_of(std::begin(sides), std::end(sides), [&](const Side& s) { return s.profile.tables.size() == T; });
  bool unlocalised_noted = false;
  for (Ledger l = range.from;; ++l) {
    for (Side& s : sides) {
      auto ok = s.Seek(l);
      if (!ok.ok()) {
        stop_all();
        return ok.status();
      }
      if (!*ok) {
        stop_all();
        return Status::Runtimef("{} ended before ledger {}", s.source.Describe(), l);
      }
    }
    const Chunk& a = sides[0].chunk;
    const Chunk& b = sides[1].chunk;
    bool any = false;
    std::vector<size_t> differing;
    for (size_t t = 0; t < T; ++t) {
      int ia = sides[0].map[t], ib = sides[1].map[t];
      uint64_t ca = a.counts[a.Index(l, ia)], cb = b.counts[b.Index(l, ib)];
      report.tables[t].left_rows += ca;
      report.tables[t].right_rows += cb;
      bool diff;
      if (a.full && b.full) diff = ca != cb || !(a.digests[a.Index(l, ia)] == b.digests[b.Index(l, ib)]);
      else diff = ca != cb || a.Tag(l, ia) != b.Tag(l, ib);
      if (diff) differing.push_back(t);
    }
    if (differing.empty() && combined_comparable && !(a.combined[l - a.range.from] == b.combined[l - b.range.from])) {
      // The 32-bit tags collided; the 128-bit combined digest still tells the ledger differs.
      for (size_t t = 0; t < T; ++t) differing.push_back(t);
      if (!unlocalised_noted)
        report.notes.push_back(fmt::format("ledger {}: combined digest differs but no table tag does: every table "
                                           "is listed",
                                           l));
      unlocalised_noted = true;
    }
    for (size_t t : differing) {
      any = true;
      auto& tc = report.tables[t];
      ++tc.divergent_ledgers;
      if (options.all) {
        if (!tc.divergent.empty() && tc.divergent.back().to + 1 == l) tc.divergent.back().to = l;
        else tc.divergent.push_back({l, l});
      }
      if (!report.first_divergent_ledger || *report.first_divergent_ledger == l) {
        report.divergent_tables.push_back(
            {common.tables[t].name, a.counts[a.Index(l, sides[0].map[t])], b.counts[b.Index(l, sides[1].map[t])]});
      }
    }
    if (any) {
      ++report.divergent_ledgers;
      if (!report.first_divergent_ledger) report.first_divergent_ledger = l;
    }
    ++report.ledgers_compared;
    if (l == range.to) break;
  }
  for (Side& s : sides) {
    Status d = s.Drain();
    if (!d.ok()) {
      stop_all();
      return d;
    }
  }
  // Schema sides: wait for their digests to finish (roots).
  for (Side& s : sides) {
    if (s.thread.joinable()) {
      Chunk rest;
      while (s.queue.Pop(rest)) {
      }
      s.thread.join();
      Status st = s.queue.status();
      if (!st.ok()) return st;
    }
  }
  for (const auto& t : report.tables) {
    report.rows_compared_left += t.left_rows;
    report.rows_compared_right += t.right_rows;
  }

  // 5. Roots.
  for (int i = 0; i < 2; ++i) {
    Side& s = sides[i];
    DigestSummary sum = s.reader ? s.reader->summary() : s.summary;
    bool usable = !s.reader || (s.present == range && s.profile.tables.size() == T);
    std::string root = usable ? sum.root : "";
    (i == 0 ? report.left_root : report.right_root) = root;
    for (size_t t = 0; t < T; ++t) {
      std::string tr;
      if (usable)
        for (const auto& ts : sum.tables)
          if (ts.table == common.tables[t].name) tr = ts.root;
      (i == 0 ? report.tables[t].left_root : report.tables[t].right_root) = tr;
    }
  }
  if (report.left_root.empty() || report.right_root.empty())
    report.notes.push_back("roots of a manifest are only known for its whole range and tables");
  report.identical = !report.first_divergent_ledger && report.schema_differences.empty();

  // 6. Row diff of the first divergent ledger.
  report.digest_seconds = SecondsSince(started);
  const auto row_diff_started = std::chrono::steady_clock::now();
  if (report.first_divergent_ledger) {
    Ledger l = *report.first_divergent_ledger;
    for (const auto& dt : report.divergent_tables) {
      TableRowDiff rd;
      rd.table = dt.table;
      const ResolvedTable* ct = common.Find(dt.table);
      for (const auto& c : ct->columns) rd.columns.push_back(c.name);
      rd.key = ct->key;
      std::vector<RowValues> rows[2];
      for (int i = 0; i < 2; ++i) {
        Side& s = sides[i];
        if (s.reader) {
          (i == 0 ? rd.left_available : rd.right_available) = false;
          continue;
        }
        const ResolvedTable* st = s.summary.profile.Find(dt.table);
        if (!st) continue;
        LD_ASSIGN_OR_RETURN(rows[i], FetchRows(s.source.conninfo, s.source.schema, *st, l));
      }
      std::vector<size_t> key;
      for (const auto& k : rd.key)
        for (size_t c = 0; c < rd.columns.size(); ++c)
          if (rd.columns[c] == k) key.push_back(c);
      DiffRows(rows[0], rows[1], key, rd.columns, options.max_rows, rd);
      report.rows.push_back(std::move(rd));
    }
  }
  report.row_diff_seconds = SecondsSince(row_diff_started);
  return report;
}

nlohmann::json DiffReportToJson(const DiffReport& r) {
  nlohmann::ordered_json j;
  j["identical"] = r.identical;
  j["first_divergent_ledger"] = r.first_divergent_ledger ? nlohmann::json(*r.first_divergent_ledger) : nlohmann::json(nullptr);
  j["divergent_tables"] = nlohmann::json::array();
  for (const auto& t : r.divergent_tables) j["divergent_tables"].push_back(t.table);
  j["divergent_table_counts"] = nlohmann::json::array();
  for (const auto& t : r.divergent_tables)
    j["divergent_table_counts"].push_back({{"table", t.table}, {"left_rows", t.left_rows}, {"right_rows", t.right_rows}});
  j["rows"] = nlohmann::json::array();
  for (const auto& rd : r.rows) {
    auto row_obj = [&](const RowValues& v) {
      nlohmann::ordered_json o;
      for (size_t i = 0; i < v.size() && i < rd.columns.size(); ++i) o[rd.columns[i]] = ValueJson(v[i]);
      return o;
    };
    nlohmann::ordered_json t;
    t["table"] = rd.table;
    t["key"] = rd.key;
    t["left_available"] = rd.left_available;
    t["right_available"] = rd.right_available;
    t["only_left"] = nlohmann::json::array();
    for (const auto& v : rd.only_left) t["only_left"].push_back(row_obj(v));
    t["only_right"] = nlohmann::json::array();
    for (const auto& v : rd.only_right) t["only_right"].push_back(row_obj(v));
    t["changed"] = nlohmann::json::array();
    for (const auto& c : rd.changed) {
      nlohmann::ordered_json cj;
      nlohmann::ordered_json key;
      for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i) key[rd.key[i]] = ValueJson(c.key[i]);
      cj["key"] = key;
      cj["changes"] = nlohmann::json::array();
      for (const auto& ch : c.changes)
        cj["changes"].push_back({{"column", ch.column}, {"left", ValueJson(ch.left)}, {"right", ValueJson(ch.right)}});
      t["changed"].push_back(cj);
    }
    t["only_left_total"] = rd.only_left_total;
    t["only_right_total"] = rd.only_right_total;
    t["changed_total"] = rd.changed_total;
    j["rows"].push_back(t);
  }
  j["ledgers_compared"] = r.ledgers_compared;
  j["range"] = {{"from", r.range.from}, {"to", r.range.to}};
  j["rows_compared"] = {{"left", r.rows_compared_left}, {"right", r.rows_compared_right}};
  j["divergent_ledgers"] = r.divergent_ledgers;
  j["excluded_columns"] = r.excluded_columns;
  j["lookup_tables"] = r.lookup_tables;
  j["uncompared_tables"] = r.uncompared_tables;
  j["schema_differences"] = r.schema_differences;
  j["left"] = {{"source", r.left}, {"root", r.left_root}};
  j["right"] = {{"source", r.right}, {"root", r.right_root}};
  j["profile"] = r.profile;
  j["tables"] = nlohmann::json::array();
  for (const auto& t : r.tables)
    j["tables"].push_back({{"table", t.table},
                           {"left_rows", t.left_rows},
                           {"right_rows", t.right_rows},
                           {"divergent_ledgers", t.divergent_ledgers},
                           {"left_root", t.left_root},
                           {"right_root", t.right_root}});
  if (r.all) {
    nlohmann::ordered_json all;
    for (const auto& t : r.tables) {
      if (t.divergent.empty()) continue;
      nlohmann::json iv = nlohmann::json::array();
      for (const auto& x : t.divergent) iv.push_back({x.from, x.to});
      all[t.table] = iv;
    }
    j["all_divergent"] = all;
  }
  j["notes"] = r.notes;
  return j;
}

std::string RenderDiffText(const DiffReport& r) {
  std::string out;
  if (r.identical) {
    return fmt::format("identical: {} ledgers ({}), {} rows compared, root {}\n", FormatCount(r.ledgers_compared),
                       r.range.str(), FormatCount(r.rows_compared_left),
                       r.left_root.empty() ? r.right_root : r.left_root);
  }
  for (const auto& d : r.schema_differences) out += "schema difference: " + d + "\n";
  if (!r.first_divergent_ledger) {
    out += fmt::format("divergent: schemas differ; the data of the {} common ledgers ({}) is identical\n",
                       FormatCount(r.ledgers_compared), r.range.str());
    return out;
  }
  out += fmt::format("divergent: first divergent ledger {} ({} of {} ledgers compared differ; left {}, right {})\n",
                     *r.first_divergent_ledger, FormatCount(r.divergent_ledgers), FormatCount(r.ledgers_compared),
                     r.left, r.right);
  for (const auto& t : r.divergent_tables)
    out += fmt::format("  {}: left {} rows, right {} rows at ledger {}\n", t.table, t.left_rows, t.right_rows,
                       *r.first_divergent_ledger);
  auto row_text = [](const TableRowDiff& rd, const RowValues& v) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < v.size() && i < rd.columns.size(); ++i) parts.push_back(rd.columns[i] + "=" + ShowValue(v[i]));
    return fmt::format("{}", fmt::join(parts, ", "));
  };
  for (const auto& rd : r.rows) {
    out += fmt::format("{} at ledger {}:\n", rd.table, *r.first_divergent_ledger);
    if (!rd.left_available || !rd.right_available)
      out += fmt::format("  (rows of the {} side are not available: it is a manifest)\n",
                         !rd.left_available ? "left" : "right");
    for (const auto& v : rd.only_left) out += "  - only left:  " + row_text(rd, v) + "\n";
    if (rd.only_left_total > rd.only_left.size())
      out += fmt::format("  ... {} more rows only on the left\n", rd.only_left_total - rd.only_left.size());
    for (const auto& v : rd.only_right) out += "  + only right: " + row_text(rd, v) + "\n";
    if (rd.only_right_total > rd.only_right.size())
      out += fmt::format("  ... {} more rows only on the right\n", rd.only_right_total - rd.only_right.size());
    for (const auto& c : rd.changed) {
      std::vector<std::string> key;
      for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i) key.push_back(rd.key[i] + "=" + ShowValue(c.key[i]));
      out += fmt::format("  ~ changed ({}):\n", fmt::join(key, ", "));
      for (const auto& ch : c.changes)
        out += fmt::format("      {}: {} -> {}\n", ch.column, ShowValue(ch.left), ShowValue(ch.right));
    }
    if (rd.changed_total > rd.changed.size())
      out += fmt::format("  ... {} more changed rows\n", rd.changed_total - rd.changed.size());
  }
  if (r.all) {
    out += "all divergent ledgers:\n";
    for (const auto& t : r.tables) {
      if (t.divergent.empty()) continue;
      std::vector<std::string> iv;
      for (const auto& x : t.divergent) iv.push_back(x.from == x.to ? fmt::format("{}", x.from) : fmt::format("{}-{}", x.from, x.to));
      out += fmt::format("  {}: {}\n", t.table, fmt::join(iv, ", "));
    }
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace ledgerdiff::diff
