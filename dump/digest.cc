#include "dump/digest.h"

#include "dump/ledger_statistics.h"
#include "dump/lookup_map.h"
#include "dump/summary_builder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "core/history_tables.h"
#include "core/pg.h"

namespace ledgerdiff::dump {

namespace {

constexpr const char* kBeginSnapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

// Chooses the chunk size (ledgers per chunk): the whole range up to kMaxChunkLedgers (which
// bounds the entries a chunk holds in memory, see dump/README.md), whatever --jobs is. The
// workers share a chunk by its tables (one unit of work per table and chunk), so a chunk need not
// be small to keep them busy; and a large chunk lets the server read a table as the raw COPY
// floor does (a sequential scan with its small buffer ring) where a small one forces an index
// scan that churns shared buffers (measured in dump/README.md).
constexpr uint32_t kMaxChunkLedgers = 50000;
uint32_t ChunkSize(const LedgerRange& range, const DigestOptions& options) {
  if (options.chunk_ledgers > 0) return options.chunk_ledgers;
  return static_cast<uint32_t>(std::min<uint64_t>(range.size(), kMaxChunkLedgers));
}

// One chunk of the digest: the span it reports (`range`, consecutive chunks tile the digest's
// range) and the ledgers its statements read (`data`, the tail of `range` from its first ledger
// that holds a row; none when the span holds no row at all).
struct PlannedChunk {
  LedgerRange range;
  std::optional<LedgerRange> data;
};

struct Prepared {
  std::shared_ptr<pg::Connection> coordinator;  // DigestOptions::session, else its own
  std::string snapshot;
  std::optional<SourceSnapshot> source_snapshot;  // with `snapshot`
  ResolvedProfile profile;
  LedgerRange range;
  uint32_t chunk = 1;
};

// Whether every compared table has a valid, non-partial btree index whose first column is its
// ledger column: then the next ledger holding a row is one index probe away (NextOccupied).
bool LedgerColumnsIndexed(const std::vector<TableCatalogFacts>& facts) {
  return std::all_of(facts.begin(), facts.end(), [](const TableCatalogFacts& f) { return f.ledger_indexed; });
}

// The first ledger of `r` that holds a row of some compared table (one index probe per table:
// min() over an index led by the column), or nullopt when `r` holds none.
Result<std::optional<Ledger>> NextOccupied(pg::Connection& conn, const std::string& schema,
                                           const ResolvedProfile& profile, const LedgerRange& r) {
  std::vector<std::string> firsts;
  for (const auto& t : profile.tables) {
    std::string first = fmt::format("(SELECT min({}) FROM {} WHERE {})", pg::QuoteIdent(t.ledger.column),
                                    pg::Qualified(schema, t.name),
                                    LedgerRangePredicate(t.ledger.column, t.ledger.kind, r));
    firsts.push_back(t.ledger.kind == LedgerColumnKind::kToid ? "(" + first + " >> 32)" : first + "::bigint");
  }
  if (firsts.empty()) return std::optional<Ledger>();
  LD_ASSIGN_OR_RETURN(pg::Rows rows, conn.Exec(fmt::format("SELECT least({})", fmt::join(firsts, ", "))));
  if (rows.IsNull(0, 0)) return std::optional<Ledger>();
  const int64_t l = rows.GetInt(0, 0);
  if (l < r.from || l > r.to) return Status::Runtimef("schema \"{}\": a probe for ledgers {} found ledger {}", schema, r.str(), l);
  return std::optional<Ledger>(static_cast<Ledger>(l));
}

// Cuts `range` into chunks of at most `width` ledgers of data. With `probe` (LedgerColumnsIndexed),
// each chunk's data starts at the next ledger holding a row and the empty span before it joins
// the chunk without being read; the last chunk reaches range.to. Without, chunks are cut by width.
Result<std::vector<PlannedChunk>> PlanChunks(pg::Connection& conn, const std::string& schema,
                                             const ResolvedProfile& profile, const LedgerRange& range, uint32_t width,
                                             bool probe) {
  std::vector<PlannedChunk> plan;
  if (!probe || profile.tables.empty()) {
    for (const auto& r : SplitJobs(range, width)) plan.push_back({r, r});
    return plan;
  }
  uint64_t cursor = range.from;  // the first ledger no chunk covers yet
  while (cursor <= range.to) {
    const LedgerRange rest{static_cast<Ledger>(cursor), range.to};
    LD_ASSIGN_OR_RETURN(std::optional<Ledger> next, NextOccupied(conn, schema, profile, rest));
    if (!next) {
      if (plan.empty()) plan.push_back({rest, std::nullopt});
      else plan.back().range.to = range.to;  // an empty tail joins the last chunk, unread
      break;
    }
    const Ledger end = static_cast<Ledger>(std::min<uint64_t>(range.to, uint64_t{*next} + width - 1));
    plan.push_back({{static_cast<Ledger>(cursor), end}, LedgerRange{*next, end}});
    cursor = uint64_t{end} + 1;
  }
  return plan;
}

Result<Prepared> Prepare(const std::string& conninfo, const std::string& schema, const ProfileSpec& spec,
                         const DigestOptions& options, bool snapshot) {
  if (options.jobs < 1) return Status::Usage("--jobs must be at least 1");
  Prepared p;
  if (options.session) {
    p.coordinator = options.session;
  } else {
    LD_ASSIGN_OR_RETURN(p.coordinator, pg::Connection::Open(conninfo, "ledgerdiff digest", pg::Access::kReadOnly));
  }
  if (snapshot) {
    LD_RETURN_IF_ERROR(p.coordinator->Run(kBeginSnapshot));
    LD_ASSIGN_OR_RETURN(pg::Rows snap,
                        p.coordinator->Exec("SELECT pg_export_snapshot(), (CASE WHEN pg_is_in_recovery() THEN "
                                            "pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text, "
                                            "to_char(clock_timestamp() AT TIME ZONE 'UTC', "
                                            "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"));
    p.snapshot = std::string(snap.Get(0, 0));
    p.source_snapshot = SourceSnapshot{std::string(snap.Get(0, 1)), std::string(snap.Get(0, 2))};
  }
  if (options.engine == DigestEngine::kServerHash) {
    LD_ASSIGN_OR_RETURN(pg::Rows v, p.coordinator->Exec("SELECT current_setting('server_version_num')::int"));
    if (v.GetInt(0, 0) < kServerHashMinVersion)
      return Status::Usagef("--engine server-hash needs PostgreSQL 14 or later (hash_record_extended); this "
                            "server is version {}: use --engine text",
                            v.GetInt(0, 0));
  }
  LD_ASSIGN_OR_RETURN(p.profile, ResolveProfile(*p.coordinator, schema, spec));
  if (options.restrict_to) p.profile = RestrictProfile(p.profile, *options.restrict_to);
  if (options.settled_before_ms) ApplySettledCutoff(p.profile, *options.settled_before_ms);
  if (options.range) {
    p.range = *options.range;
  } else {
    LD_ASSIGN_OR_RETURN(p.range, DetectRange(*p.coordinator, schema, p.profile));
  }
  p.chunk = ChunkSize(p.range, options);
  return p;
}

// Lookup maps for client-side resolution (dump/lookup_map.h), one per distinct lookup; per
// table the maps of its joins, or nothing when the table is read with the canonical joins.
struct ClientPlan {
  std::vector<std::unique_ptr<LookupMap>> owned;
  std::vector<std::unique_ptr<ReferenceMarks>> marks;  // parallel to owned
  std::vector<const JoinSpec*> loaded_by;              // parallel to owned: the join it was read for
  std::vector<std::vector<const LookupMap*>> maps;     // per profile table
  std::vector<std::vector<ReferenceMarks*>> marks_of;  // per profile table, parallel to maps
  // Per profile table: read with ClientResolvedTable's join-free statement (a table without
  // joins too: its statement selects in physical order), else with the canonical DigestCopy.
  std::vector<bool> client_read;
};

// Whether a table may be read with ClientResolvedTable's statement (its lookups, if any, then
// still need exact maps).
bool ClientReadable(const ResolvedTable& table, bool enabled) {
  return enabled && ClientResolvedTable::Supported(table);
}

// Loads the maps in the coordinator's snapshot. A lookup that can't be mapped exactly (a
// duplicate id) sends every table back to the canonical joins: same digests, slower.
Result<ClientPlan> PlanClientResolution(pg::Connection& conn, const std::string& schema,
                                        const ResolvedProfile& profile, bool enabled, LookupCache* cache) {
  ClientPlan plan;
  plan.maps.resize(profile.tables.size());
  plan.marks_of.resize(profile.tables.size());
  plan.client_read.assign(profile.tables.size(), false);
  if (!enabled) return plan;
  for (size_t t = 0; t < profile.tables.size(); ++t)
    plan.client_read[t] = profile.tables[t].joins.empty() && ClientReadable(profile.tables[t], enabled);
  std::map<std::string, size_t> by_key;
  for (size_t t = 0; t < profile.tables.size(); ++t) {
    const ResolvedTable& table = profile.tables[t];
    if (table.joins.empty() || !ClientReadable(table, enabled)) continue;
    for (const auto& j : table.joins) {
      std::string key = j.lookup_table + "\t" + j.lookup_id + "\t" + fmt::format("{}", fmt::join(j.natural, "\t"));
      if (!by_key.count(key)) {
        LD_ASSIGN_OR_RETURN(LookupMap map, cache ? cache->Load(conn, schema, j) : LookupMap::Load(conn, schema, j));
        if (!map.exact()) {
          plan.maps.assign(profile.tables.size(), {});
          plan.marks_of.assign(profile.tables.size(), {});
          for (size_t u = 0; u < profile.tables.size(); ++u)
            if (!profile.tables[u].joins.empty()) plan.client_read[u] = false;
          return plan;
        }
        plan.marks.push_back(std::make_unique<ReferenceMarks>(map.rows()));
        plan.loaded_by.push_back(&j);
        plan.owned.push_back(std::make_unique<LookupMap>(std::move(map)));
        by_key[key] = plan.owned.size() - 1;
      }
      plan.maps[t].push_back(plan.owned[by_key[key]].get());
      plan.marks_of[t].push_back(plan.marks[by_key[key]].get());
    }
    plan.client_read[t] = true;
  }
  return plan;
}

// A chunk being computed. Its tables are units of work any worker may take; each writes only
// its own table's accumulators (disjoint entries of `acc`), and the worker that completes the
// last table seals the chunk.
struct ChunkWork {
  Chunk chunk;
  std::optional<LedgerRange> data;  // the ledgers read (PlannedChunk::data)
  std::vector<RowMultiset> acc;     // per (ledger of data, table): AccIndex
  size_t tables_left = 0;
  ChunkWork(const PlannedChunk& planned, size_t tables)
      : data(planned.data), acc(planned.data ? planned.data->size() * tables : 0), tables_left(tables) {
    chunk.range = planned.range;
    chunk.tables = tables;
    chunk.full = true;
  }
  size_t AccIndex(Ledger l, size_t t) const { return size_t(l - data->from) * chunk.tables + t; }
};

// Streams table `t` of `work`'s ledgers on a worker connection (one unordered COPY); each row is
// hashed and added to its (ledger, table) multiset accumulator, and counted in `rows_read` (the
// pool's progress inside a unit). Read on the client: the references it saw are marked in
// `client` and its missing ones returned in `missing` (per join).
Status ComputeTable(pg::Connection& conn, const std::string& schema, const ResolvedProfile& profile,
                    const std::vector<std::vector<ColumnClass>>& classes, const ClientPlan& client, size_t t,
                    const std::atomic<bool>& stop, std::atomic<uint64_t>& rows_read, ChunkWork& work,
                    std::vector<JoinReferences>& missing) {
  const LedgerRange range = *work.data;
  const ResolvedTable& table = profile.tables[t];
  const size_t ncols = table.columns.size();
  const ColumnClass* cls = classes[t].data();
  std::optional<ClientResolvedTable> resolver;
  if (client.client_read[t]) resolver.emplace(table, client.maps[t], client.marks_of[t]);
  const size_t nfields = resolver ? resolver->statement_fields() : ncols + 1;
  std::string sql = resolver ? resolver->Copy(schema, range) : DigestCopy(table, schema, range);
  std::vector<std::string_view> fields, canonical;
  RowHasher hasher;
  uint64_t rows = 0;
  Status s = conn.CopyOut(sql, [&](std::string_view line) -> Status {
    if (stop.load(std::memory_order_relaxed)) return Status::Runtime("cancelled");
    rows_read.store(++rows, std::memory_order_relaxed);
    pg::SplitCopyFields(line, fields);
    Ledger l = 0;
    if (fields.size() != nfields || !(resolver ? resolver->LedgerOf(fields, l) : ParseLedgerField(fields[0], l)) ||
        !range.contains(l))
      return Status::Runtimef("table {}: digest query returned an unexpected row ({} fields, a row of no ledger "
                              "in {})",
                              table.name, fields.size(), range.str());
    if (resolver) {
      LD_RETURN_IF_ERROR(resolver->Resolve(fields, l, canonical));
      work.acc[work.AccIndex(l, t)].Add(hasher.Hash(canonical.data(), cls, ncols));
    } else {
      work.acc[work.AccIndex(l, t)].Add(hasher.Hash(fields.data() + 1, cls, ncols));
    }
    return Status::Ok();
  });
  if (!s.ok()) return s.With("table " + table.name);
  if (resolver) missing = resolver->references();
  return s;
}

// The server-hash engine's ComputeTable: one row per ledger holding a row (ServerHashQuery), its
// count and the two sums reduced mod 2^64 are that (ledger, table)'s accumulator.
Status ComputeTableInServer(pg::Connection& conn, const std::string& schema, const ResolvedTable& table, size_t t,
                            const std::atomic<bool>& stop, ChunkWork& work) {
  const LedgerRange range = *work.data;
  std::vector<std::string_view> fields;
  Status s = conn.CopyOut("COPY (" + ServerHashQuery(table, schema, range) + ") TO STDOUT",
                          [&](std::string_view line) -> Status {
                            if (stop.load(std::memory_order_relaxed)) return Status::Runtime("cancelled");
                            pg::SplitCopyFields(line, fields);
                            Ledger l = 0;
                            RowMultiset m;
                            if (fields.size() != 4 || !ParseLedgerField(fields[0], l) || !range.contains(l) ||
                                !ReduceDecimalMod64(fields[1], m.count) || m.count == 0 ||
                                !ReduceDecimalMod64(fields[2], m.lo) || !ReduceDecimalMod64(fields[3], m.hi))
                              return Status::Runtimef("table {}: server-hash query returned an unexpected row "
                                                      "({} fields, not a ledger of {} with its sums)",
                                                      table.name, fields.size(), range.str());
                            work.acc[work.AccIndex(l, t)] = m;
                            return Status::Ok();
                          });
  return s.ok() ? s : s.With("table " + table.name);
}

// Turns the accumulators of a chunk whose tables are all done into the entries of its ledgers
// that hold a row, with their combined digests. REQUIRES: tables_left == 0.
Chunk Seal(ChunkWork& work) {
  Chunk out = std::move(work.chunk);
  const size_t T = out.tables;
  if (work.data) {
    std::vector<uint64_t> counts(T);
    std::vector<Digest128> digests(T);
    for (Ledger l = work.data->from;; ++l) {
      const size_t base = work.AccIndex(l, 0);
      bool any = false;
      for (size_t t = 0; t < T; ++t) any = any || work.acc[base + t].count != 0;
      if (any) {
        for (size_t t = 0; t < T; ++t) {
          RowMultiset& a = work.acc[base + t];
          counts[t] = a.count;
          digests[t] = a.count ? a.Finish() : EmptyDigest();
        }
        out.Append(l, counts.data(), digests.data());
      }
      if (l == work.data->to) break;
    }
  }
  work.acc = {};
  return out;
}

// The order in which a chunk's tables are handed out: largest first (by the server's page
// count; ties in the profile's order), so that the last unit of a chunk is a short one. Only the
// schedule depends on it.
std::vector<size_t> LargestTablesFirst(const std::vector<TableCatalogFacts>& facts) {
  std::vector<std::pair<int64_t, size_t>> by_size;
  for (size_t t = 0; t < facts.size(); ++t) by_size.emplace_back(-facts[t].pages, t);
  std::sort(by_size.begin(), by_size.end());
  std::vector<size_t> order;
  for (const auto& [pages, t] : by_size) order.push_back(t);
  return order;
}

// ---- DigestSchema's stages: plan the work, open the workers, run the pool, emit in order.

// A unit of work: one table of one chunk; kNoTable: a chunk with nothing to read (only sealed).
// `estimated_rows`: the rows it reads as the statistics estimate them (0 when they are missing);
// `bytes_per_row`: its table's (LedgerStatistics::bytes_per_row). Its work, what the progress
// weighs it by, is the bytes it reads: rows of different tables cost what their widths do.
// `ledgers`: the progress, in ledgers, it stands for: its chunk's ledgers shared among the
// chunk's units by their work (equally without statistics).
constexpr size_t kNoTable = static_cast<size_t>(-1);
struct Unit {
  size_t chunk, table;
  uint64_t estimated_rows = 0;
  double bytes_per_row = 0;
  double ledgers = 0;
  // The work of `rows` of it (at most its estimate: the work of the whole unit).
  uint64_t Work(uint64_t rows) const {
    return static_cast<uint64_t>(std::llround(static_cast<double>(std::min(rows, estimated_rows)) * bytes_per_row));
  }
  uint64_t work() const { return Work(estimated_rows); }
};

// The chunks and their units in the order they are handed out (chunk by chunk, each chunk's
// tables largest first), and the work of all the units (Progress::work_total, bytes; 0: no
// statistics, the ETA counts ledgers).
struct WorkPlan {
  std::vector<PlannedChunk> chunks;
  std::vector<Unit> units;
  size_t units_per_chunk = 1;  // of a chunk with data
  uint64_t work = 0;           // the sum of the units'
};

Result<WorkPlan> PlanWork(pg::Connection& conn, const std::string& schema, const ResolvedProfile& profile,
                          const LedgerRange& range, uint32_t width) {
  WorkPlan plan;
  LD_ASSIGN_OR_RETURN(const std::vector<TableCatalogFacts> facts, LoadTableCatalogFacts(conn, schema, profile));
  LD_ASSIGN_OR_RETURN(plan.chunks, PlanChunks(conn, schema, profile, range, width, LedgerColumnsIndexed(facts)));
  std::vector<size_t> table_order = LargestTablesFirst(facts);
  const bool statistics = std::all_of(facts.begin(), facts.end(), [](const TableCatalogFacts& f) { return f.statistics.has_value(); });
  if (table_order.empty()) table_order.push_back(kNoTable);  // a profile without tables
  plan.units_per_chunk = table_order.size();
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const size_t before = plan.units.size();
    const std::optional<LedgerRange>& data = plan.chunks[c].data;
    if (data)
      for (size_t t : table_order) {
        Unit unit{c, t};
        if (statistics && t != kNoTable) {
          unit.estimated_rows = static_cast<uint64_t>(std::llround(facts[t].statistics->Rows(*data)));
          unit.bytes_per_row = facts[t].statistics->bytes_per_row();
        }
        plan.units.push_back(unit);
      }
    else
      plan.units.push_back({c, kNoTable});
    const auto units = std::span(plan.units).subspan(before);
    uint64_t chunk_work = 0;
    for (const Unit& u : units) chunk_work += u.work();
    const double chunk_ledgers = static_cast<double>(plan.chunks[c].range.size());
    for (Unit& u : units)
      u.ledgers = chunk_work ? chunk_ledgers * static_cast<double>(u.work()) / static_cast<double>(chunk_work)
                             : chunk_ledgers / static_cast<double>(units.size());
    plan.work += chunk_work;
  }
  return plan;
}

std::vector<std::vector<ColumnClass>> ColumnClasses(const ResolvedProfile& profile) {
  std::vector<std::vector<ColumnClass>> classes;
  for (const auto& t : profile.tables) {
    classes.emplace_back();
    for (const auto& c : t.columns) classes.back().push_back(c.cls);
  }
  return classes;
}

// Opens `jobs` worker connections inside the exported snapshot (importable while the
// coordinator's transaction lives, which it does until the digest ends).
Result<std::vector<std::unique_ptr<pg::Connection>>> OpenWorkers(const std::string& conninfo,
                                                                 const std::string& snapshot, int jobs) {
  std::vector<std::unique_ptr<pg::Connection>> conns;
  for (int w = 0; w < jobs; ++w) {
    LD_ASSIGN_OR_RETURN(auto c, pg::Connection::Open(conninfo, fmt::format("ledgerdiff digest w{}", w + 1), pg::Access::kReadOnly));
    LD_RETURN_IF_ERROR(c->Run(kBeginSnapshot));
    LD_RETURN_IF_ERROR(c->Run("SET TRANSACTION SNAPSHOT " + pg::QuoteLiteral(snapshot)));
    LD_RETURN_IF_ERROR(c->Run("SET LOCAL work_mem = '32MB'"));
    conns.push_back(std::move(c));
  }
  return conns;
}

// What a worker reads a table of a chunk with (ComputeTable).
struct ReadContext {
  const std::string& schema;
  const ResolvedProfile& profile;
  std::vector<std::vector<ColumnClass>> classes;
  const ClientPlan& client;
  DigestEngine engine;
};

// The workers, one thread per connection, and the chunks between them and the emitter. Units are
// handed out in plan order, but only within `lookahead` chunks of the next chunk to emit, so at
// most that many chunks are alive (computed or sealed, not yet emitted). The worker that
// finishes a chunk's last table seals it (no other worker touches it then).
// INVARIANT: every member below the mutex is guarded by it; `stop_` may be read without it.
class DigestPool {
 public:
  enum class Event { kChunk, kProgress, kEnd };

  DigestPool(const WorkPlan& plan, const ReadContext& read, std::vector<std::unique_ptr<pg::Connection>>& conns)
      : plan_(plan),
        read_(read),
        lookahead_((conns.size() + plan.units_per_chunk - 1) / plan.units_per_chunk + 1),
        missing_(read.profile.tables.size()) {
    for (size_t w = 0; w < conns.size(); ++w) in_flight_.push_back(std::make_unique<InFlight>());
    for (size_t w = 0; w < conns.size(); ++w) threads_.emplace_back([this, &conns, w] { Work(*conns[w], *in_flight_[w]); });
  }
  ~DigestPool() { (void)Stop(); }
  DigestPool(const DigestPool&) = delete;
  DigestPool& operator=(const DigestPool&) = delete;

  // What the units done so far stand for: ledgers, and rows as the plan estimates them.
  struct UnitsDone {
    double ledgers = 0;
    uint64_t work = 0;  // Unit::work
  };
  // Blocks until the next chunk in ledger order is sealed (kChunk: moved into `out`), a unit
  // ended or `tick` passed (kProgress), or the work ended or failed (kEnd). On kChunk and
  // kProgress, `done` is what the units done so far stand for (on the last chunk: every unit),
  // with the rows the units in flight have read so far (each at most its estimate, so `done`
  // never goes back when the unit ends): a large unit reports as it reads.
  Event Wait(Chunk& out, UnitsDone& done, std::chrono::milliseconds tick) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool woke = cv_.wait_for(lock, tick, [&] {
      return stop_ || next_emit_ >= plan_.chunks.size() || ready_.count(next_emit_) || units_done_ != units_reported_;
    });
    if (!woke) {
      done = WithUnitsInFlight(units_done_so_far_);
      return Event::kProgress;
    }
    if (stop_ || next_emit_ >= plan_.chunks.size()) return Event::kEnd;
    done = WithUnitsInFlight(units_done_so_far_);
    if (!ready_.count(next_emit_)) {
      units_reported_ = units_done_;
      return Event::kProgress;
    }
    out = std::move(ready_[next_emit_]);
    ready_.erase(next_emit_);
    ++next_emit_;
    cv_.notify_all();
    return Event::kChunk;
  }
  // Stops the work with `s` (the first failure wins).
  void Fail(const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.ok()) first_error_ = s;
    stop_ = true;
    cv_.notify_all();
  }
  // Stops and joins the workers; the first failure, if any.
  Status Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    return first_error_;
  }
  // After a successful Stop: per table, per join, the references its client resolution missed.
  std::vector<std::vector<JoinReferences>>& missing() { return missing_; }

 private:
  // A worker's unit in progress and the rows it has read of it (written by the worker alone).
  struct InFlight {
    std::optional<Unit> unit;  // guarded by mu_
    std::atomic<uint64_t> rows_read{0};
  };
  // `done` plus the share of the units in flight: the rows read of each (text engine: the server
  // engine's rows are per-ledger sums, not rows read), capped at its estimate. REQUIRES: mu_ held.
  UnitsDone WithUnitsInFlight(UnitsDone done) const {
    if (read_.engine != DigestEngine::kText) return done;
    for (const auto& f : in_flight_) {
      if (!f->unit || f->unit->work() == 0) continue;
      const uint64_t work = f->unit->Work(f->rows_read.load(std::memory_order_relaxed));
      done.work += work;
      done.ledgers += f->unit->ledgers * static_cast<double>(work) / static_cast<double>(f->unit->work());
    }
    return done;
  }
  void Work(pg::Connection& conn, InFlight& in_flight) {
    for (;;) {
      Unit unit;
      ChunkWork* work;
      if (!Take(unit, work, in_flight)) return;
      if (unit.table != kNoTable) {
        std::vector<JoinReferences> missing;
        Status s = read_.engine == DigestEngine::kServerHash
                       ? ComputeTableInServer(conn, read_.schema, read_.profile.tables[unit.table], unit.table,
                                              stop_, *work)
                       : ComputeTable(conn, read_.schema, read_.profile, read_.classes, read_.client, unit.table,
                                      stop_, in_flight.rows_read, *work, missing);
        if (!s.ok()) {
          Fail(s.With(fmt::format("digest of schema \"{}\" ledgers {}", read_.schema,
                                  plan_.chunks[unit.chunk].data->str())));
          return;
        }
        if (!missing.empty()) MergeMissing(unit.table, missing);
      }
      if (!UnitDone(unit, *work, in_flight)) continue;
      Chunk sealed = Seal(*work);
      std::lock_guard<std::mutex> lock(mu_);
      in_progress_.erase(unit.chunk);
      ready_.emplace(unit.chunk, std::move(sealed));
      cv_.notify_all();
    }
  }
  // The next unit and its chunk's work (created by the first of its units), recorded as the
  // worker's unit in flight; false when stopped or none is left.
  bool Take(Unit& unit, ChunkWork*& work, InFlight& in_flight) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      return stop_ || next_unit_ >= plan_.units.size() || plan_.units[next_unit_].chunk < next_emit_ + lookahead_;
    });
    if (stop_ || next_unit_ >= plan_.units.size()) return false;
    unit = plan_.units[next_unit_++];
    in_flight.rows_read.store(0, std::memory_order_relaxed);
    in_flight.unit = unit;
    auto& slot = in_progress_[unit.chunk];
    if (!slot) slot = std::make_unique<ChunkWork>(plan_.chunks[unit.chunk], read_.profile.tables.size());
    work = slot.get();
    return true;
  }
  // Counts the unit; true when it was its chunk's last (the caller seals the chunk).
  bool UnitDone(const Unit& unit, ChunkWork& work, InFlight& in_flight) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight.unit.reset();
    ++units_done_;
    units_done_so_far_.ledgers += unit.ledgers;
    units_done_so_far_.work += unit.work();
    cv_.notify_all();
    return --work.tables_left == 0 || unit.table == kNoTable;
  }
  void MergeMissing(size_t table, std::vector<JoinReferences>& missing) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& into = missing_[table];
    if (into.empty()) into.resize(missing.size());
    for (size_t j = 0; j < missing.size(); ++j) {
      if (into[j].table.empty()) {
        into[j] = std::move(missing[j]);
        into[j].Normalize();
      } else {
        into[j].Merge(missing[j]);
      }
    }
  }

  const WorkPlan& plan_;
  const ReadContext& read_;
  const size_t lookahead_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, std::unique_ptr<ChunkWork>> in_progress_;
  std::map<size_t, Chunk> ready_;
  size_t next_unit_ = 0, next_emit_ = 0;
  uint64_t units_done_ = 0, units_reported_ = 0;
  UnitsDone units_done_so_far_;
  Status first_error_;
  std::vector<std::vector<JoinReferences>> missing_;  // per table, per join
  std::vector<std::unique_ptr<InFlight>> in_flight_;  // per worker
  std::vector<std::thread> threads_;                  // last: joined before the members above go
};

// Takes the pool's chunks in ledger order: roots, row counts, the caller's sink, progress.
class Emitter {
 public:
  // `work`: the digest's (WorkPlan::work; 0: unknown).
  Emitter(const std::string& schema, const ResolvedProfile& profile, const ClientPlan& client,
          const LedgerRange& range, uint64_t work, std::string phase,
          const Stopwatch& start, Reporter& reporter)
      : range_(range),
        work_(work),
        phase_(std::move(phase)),
        start_(start),
        reporter_(reporter),
        summary_(profile, range, fmt::format("schema \"{}\"", schema)) {
    for (const auto& m : client.maps) tables_resolved_on_client_ += m.empty() ? 0 : 1;
  }

  // Until the last chunk, or the first failure (the pool's or the sink's); then stops the pool.
  Status Run(DigestPool& pool, const ChunkSink& sink, std::chrono::milliseconds tick) {
    Chunk chunk;
    DigestPool::UnitsDone units;
    Report(0, 0);  // the phase begins now, before its first unit ends
    for (;;) {
      const DigestPool::Event e = pool.Wait(chunk, units, tick);
      if (e == DigestPool::Event::kEnd) break;
      if (e == DigestPool::Event::kProgress) {
        Report(std::min(static_cast<double>(range_.size()), units.ledgers), units.work);
        continue;
      }
      Add(chunk);
      if (sink) {
        Status s = sink(chunk);
        if (!s.ok()) {
          pool.Fail(s);
          break;
        }
      }
      ledgers_emitted_ += chunk.range.size();
      Report(static_cast<double>(ledgers_emitted_), units.work);
    }
    return pool.Stop();
  }
  // The summary with its roots. Call once, after Run succeeded.
  DigestSummary Finish() {
    DigestSummary s = summary_.Finish();
    s.tables_resolved_on_client = tables_resolved_on_client_;
    return s;
  }

 private:
  void Add(const Chunk& chunk) { summary_.Add(chunk); }
  // Progress in ledgers, weighed by the estimated bytes of the units done (Progress::work_*);
  // never goes back (a unit estimate may run ahead of an emitted chunk).
  void Report(double ledgers, uint64_t work) {
    if (ledgers < ledgers_reported_) return;
    ledgers_reported_ = ledgers;
    Progress p;
    p.phase = phase_;
    p.done = static_cast<uint64_t>(ledgers);
    p.total = range_.size();
    const double el = start_.Seconds();
    p.rate_per_s = el > 0 ? ledgers / el : 0;
    p.work_done = work;
    p.work_total = work_;
    reporter_.Update(p);
  }

  const LedgerRange range_;
  const uint64_t work_;
  const std::string phase_;
  const Stopwatch& start_;
  Reporter& reporter_;
  SummaryBuilder summary_;  // roots and row counts, as a manifest reader builds them
  size_t tables_resolved_on_client_ = 0;
  uint64_t ledgers_emitted_ = 0;
  double ledgers_reported_ = 0;
};

// What the client resolution saw over the whole range (every unit ran, no error).
SeenReferences CollectSeen(const LedgerRange& range, const ClientPlan& client,
                           std::vector<std::vector<JoinReferences>>& missing) {
  SeenReferences seen;
  seen.range = range;
  for (auto& joins : missing)
    for (auto& j : joins) seen.joins.push_back(std::move(j));
  for (size_t m = 0; m < client.owned.size(); ++m) {
    SeenReferences::Lookup l{client.loaded_by[m]->lookup_table, client.loaded_by[m]->lookup_id,
                             client.loaded_by[m]->natural, {}, client.owned[m].get()};
    for (size_t row = 0; row < client.marks[m]->rows(); ++row)
      if (client.marks[m]->marked(row)) l.referenced.push_back(client.owned[m]->id(row));
    seen.lookups.push_back(std::move(l));
  }
  return seen;
}

}  // namespace

const JoinReferences* SeenReferences::Find(const std::string& table, const std::string& on_expr,
                                          const std::string& lookup_table) const {
  for (const auto& j : joins)
    if (j.table == table && j.on_expr == on_expr && j.lookup_table == lookup_table) return &j;
  return nullptr;
}

Result<DigestSummary> DigestSchema(const std::string& conninfo, const std::string& schema, const ProfileSpec& spec,
                                   const DigestOptions& options, const ChunkSink& sink, Reporter& reporter) {
  const Stopwatch start;
  LD_ASSIGN_OR_RETURN(Prepared prep, Prepare(conninfo, schema, spec, options, /*snapshot=*/true));
  LD_ASSIGN_OR_RETURN(std::vector<UnsettledRows> unsettled,
                      CountUnsettled(*prep.coordinator, schema, prep.profile, prep.range));
  LD_ASSIGN_OR_RETURN(const WorkPlan plan, PlanWork(*prep.coordinator, schema, prep.profile, prep.range, prep.chunk));
  LD_ASSIGN_OR_RETURN(const ClientPlan client,
                      PlanClientResolution(*prep.coordinator, schema, prep.profile,
                                           options.resolve_on_client && options.engine == DigestEngine::kText,
                                           options.lookup_cache));
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(plan.units.size())));
  LD_ASSIGN_OR_RETURN(auto conns, OpenWorkers(conninfo, prep.snapshot, jobs));
  const ReadContext read{schema, prep.profile, ColumnClasses(prep.profile), client, options.engine};
  DigestPool pool(plan, read, conns);
  Emitter emitter(schema, prep.profile, client, prep.range, plan.work, options.phase, start, reporter);
  LD_RETURN_IF_ERROR(emitter.Run(pool, sink, options.progress_tick));
  for (auto& c : conns) (void)c->Run("COMMIT");
  // The coordinator's transaction keeps the exported snapshot importable while the hook runs.
  if (options.before_commit) {
    const SeenReferences seen = CollectSeen(prep.range, client, pool.missing());
    LD_RETURN_IF_ERROR(options.before_commit(prep.snapshot, seen, *prep.coordinator));
  }
  (void)prep.coordinator->Run("COMMIT");
  DigestSummary summary = emitter.Finish();
  summary.engine = options.engine;
  summary.unsettled = std::move(unsettled);
  summary.snapshot = prep.source_snapshot;
  summary.seconds = start.Seconds();
  return summary;
}

Result<std::vector<std::string>> CanonicalStatements(const std::string& conninfo, const std::string& schema,
                                                     const ProfileSpec& spec, const DigestOptions& options) {
  LD_ASSIGN_OR_RETURN(Prepared prep, Prepare(conninfo, schema, spec, options, /*snapshot=*/false));
  std::vector<std::string> out;
  LD_ASSIGN_OR_RETURN(const std::vector<TableCatalogFacts> facts,
                      LoadTableCatalogFacts(*prep.coordinator, schema, prep.profile));
  LD_ASSIGN_OR_RETURN(const std::vector<PlannedChunk> chunks,
                      PlanChunks(*prep.coordinator, schema, prep.profile, prep.range, prep.chunk,
                                 LedgerColumnsIndexed(facts)));
  for (const auto& planned : chunks)
    for (const auto& t : prep.profile.tables) {
      if (!planned.data) continue;
      const LedgerRange r = *planned.data;
      if (options.engine == DigestEngine::kServerHash) {
        out.push_back("COPY (" + ServerHashQuery(t, schema, r) + ") TO STDOUT");
        continue;
      }
      bool client = ClientReadable(t, options.resolve_on_client);
      const size_t J = t.joins.size();
      out.push_back(client ? ClientResolvedTable(t, std::vector<const LookupMap*>(J), std::vector<ReferenceMarks*>(J))
                                 .Copy(schema, r)
                           : DigestCopy(t, schema, r));
    }
  return out;
}

}  // namespace ledgerdiff::dump
