#pragma once
// Per-table, per-ledger digests of a schema, streamed in chunks of consecutive ledgers.
//
// For every compared table and every ledger of the range: the row count and the multiset digest
// of the ledger's canonical rows (dump/canonical.h RowMultiset: independent of row order, so the
// digest reads each table with one unordered COPY per chunk). A ledger with no rows in a table
// has count 0 and EmptyDigest(). Per ledger, a combined digest: XXH3-128 over (ledger u32 LE,
// then per table in profile order: count u64 LE, digest 16 bytes).
// Only the ledgers holding a row in some table are listed (Chunk::ledgers): a ledger absent from
// every table costs nothing anywhere (digest, roots, manifests, checkpoints, diff), so the cost
// follows the rows and the ledgers that hold them, not the width of the range.
// Roots: per table SHA-256 over its ordered entries of non-zero count (ledger u32 LE, count u64
// LE, digest); the overall root SHA-256 over ("ledgerdiff-root-v2", range, profile name, then per
// table: name, column names and classes, table root). v1 hashed every ledger's entry, empty ones
// too: its roots cost O(width) to compute and differ from v2's for the same content.
//
// Consistency: one coordinator transaction (REPEATABLE READ READ ONLY) exports a snapshot; the
// N worker connections import it, so the digest is of one instant even while the schema is being
// written. Strictly read-only: no temp tables, no writes (works on a hot standby).
// Work: the range is cut into chunks (the whole range, at most 50000 ledgers); a unit of work is
// one table of one chunk, so `jobs` workers share a chunk by its tables, largest first. When every
// compared table has a valid btree index led by its ledger column, each chunk starts at the next
// ledger that holds a row (one index probe per table and chunk, in the snapshot) and the empty
// span before it is read by no statement: a range of 2^31 ledgers with rows at 61 of them is
// two chunks. Without such indexes the chunks are cut by width alone (still listing only the
// ledgers with rows).
// Memory: rows are never kept; at most ceil(jobs / tables) + 1 chunks are alive at once, each
// with one accumulator per (ledger, table) (24 bytes) while computed, then its entries.
// Determinism: the entries do not depend on jobs or chunk size.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/status.h"
#include "core/target.h"
#include "dump/canonical.h"
#include "dump/chunk.h"
#include "dump/lookup_map.h"
#include "dump/profile.h"
#include "dump/range_facts.h"

namespace ledgerdiff::dump {

// The surrogate ids the digest's rows referenced, as its client resolution saw them over the
// whole `range` (dump/lookup_map.h). Only tables resolved on the client are in it: a consumer
// must check that the joins it needs are listed before it takes them instead of a scan.
struct SeenReferences {
  LedgerRange range;
  std::vector<JoinReferences> joins;  // per table resolved on the client, per join; normalized
  // Per lookup map: the ids of its rows that some row of `joins` referenced, sorted.
  struct Lookup {
    std::string lookup_table, lookup_id;
    std::vector<std::string> natural;  // JoinSpec::natural
    std::vector<int64_t> referenced;
    // Every row of the lookup table as the digest read it in its snapshot (the checks take the
    // table from here instead of reading it again); valid while `before_commit` runs.
    const LookupMap* map = nullptr;
  };
  std::vector<Lookup> lookups;
  // The joins of `table` to `lookup_table` over `on_expr`, or nullptr.
  const JoinReferences* Find(const std::string& table, const std::string& on_expr,
                             const std::string& lookup_table) const;
};

struct DigestOptions {
  std::optional<LedgerRange> range;  // default: the range present in the schema
  int jobs = 1;                      // worker connections, >= 1
  // An open read-only session to the digested database, idle outside a transaction, that the
  // digest takes as its coordinator (its snapshot is begun and exported there) instead of opening
  // one: a diff resolves each side's profile on the session its digest then runs on. nullptr:
  // the digest opens its own. The caller must not use it until the digest returned.
  std::shared_ptr<pg::Connection> session;
  uint32_t chunk_ledgers = 0;        // 0: the whole range, at most 50000 ledgers
  // Diff: compare only these tables and columns (another side's list). Tables absent here are
  // skipped; columns absent here are dropped.
  std::optional<ResolvedProfile> restrict_to;
  std::string phase = "digest";      // progress label
  // How often the progress is reported while no unit of work ends (issue 46: never silent for
  // long, whatever the units' sizes; the reporter throttles what it shows).
  std::chrono::milliseconds progress_tick{500};
  // Text (the reference) or server-hash (dump/canonical.h DigestEngine). The summary records it;
  // digests of different engines differ and are never compared.
  DigestEngine engine = kDefaultEngine;
  // Comparing two live sides (verify-range): read only the settled rows of windowed tables,
  // those whose window closed at or before this instant (epoch ms; profile.h TimeWindow), and
  // count the others in the summary (DigestSummary::unsettled). nullopt: every row.
  std::optional<int64_t> settled_before_ms;
  // Resolve surrogate ids on the client from lookup maps read once (dump/lookup_map.h) instead
  // of joining in every statement. Same digests either way; false is the canonical joins.
  bool resolve_on_client = true;
  // Where the lookup maps come from when resolve_on_client: nullptr reads each table whole;
  // a cache (kept by the caller across digests of this source) reads only the rows it lacks.
  LookupCache* lookup_cache = nullptr;
  // Called once after the last chunk, with the id of the exported snapshot, while the snapshot
  // is still importable (SET TRANSACTION SNAPSHOT), and the digest's own session, idle inside a
  // read-only transaction of that snapshot: the checks and the row diff read the divergent
  // ledger in the same instant as the digest, on it or on a session that imports the id. `seen`
  // and `in_snapshot` are valid during the call (the session may be used from another thread
  // while the call blocks; an error there leaves the digest's result as it is). May block; its
  // error becomes DigestSchema's.
  std::function<Status(const std::string& snapshot, const SeenReferences& seen, pg::Connection& in_snapshot)>
      before_commit;
  // DigestToManifest only (DigestSchema ignores them): keep a checkpoint PATH.partial
  // (dump/checkpoint.h) while the manifest is written, so that an interrupted run can be
  // resumed (`digest --out` does); `resume`: continue the interrupted run whose checkpoint it is
  // instead of starting over (implies `checkpoint`).
  bool checkpoint = false;
  bool resume = false;
};

struct TableSummary {
  std::string table;
  uint64_t rows = 0;
  uint64_t ledgers_with_rows = 0;
  std::string root;  // hex SHA-256
};

// When a digest read its source: the server's WAL position when the digest's snapshot was taken
// (pg_current_wal_insert_lsn(), or pg_last_wal_replay_lsn() on a standby) and the server's time
// then (UTC, ISO 8601). Two reads of one source at the same LSN saw the same committed data. The
// insert position, not pg_current_wal_lsn() (the write position): with synchronous_commit off a
// commit's record may sit in WAL buffers, and the write position would not have moved past it.
struct SourceSnapshot {
  std::string lsn, at;
  bool operator==(const SourceSnapshot&) const = default;
};

// Ledgers that `digest --append` read into a manifest it extended, and when (UTC, ISO 8601):
// the rest of the manifest's range was taken from the file, read when it was written. Header key
// "appended" ([{"from","to","at"}], in range order; absent for a manifest read in one digest).
struct AppendedStretch {
  LedgerRange range;
  std::string at;
  bool operator==(const AppendedStretch&) const = default;
};

struct DigestSummary {
  std::string source;  // "schema \"s\"" or "manifest PATH"
  LedgerRange range;
  ResolvedProfile profile;
  std::vector<TableSummary> tables;  // profile order
  std::string root;                  // hex SHA-256
  uint64_t rows = 0;
  double seconds = 0;
  size_t tables_resolved_on_client = 0;  // read with lookup maps instead of joins (lookup_map.h)
  DigestEngine engine = DigestEngine::kText;  // what computed the entries (a manifest's header key "engine")
  // With DigestOptions::settled_before_ms: per windowed table, its unsettled rows in the range,
  // counted in the digest's snapshot (tables with none are listed too).
  std::vector<UnsettledRows> unsettled;
  // DigestSchema: when its snapshot was taken (nullopt for a manifest's summary).
  std::optional<SourceSnapshot> snapshot;
  // A manifest extended by `digest --append`: the stretches each append read (manifest.h); the
  // rest of the range was read by the digest that first wrote it.
  std::vector<AppendedStretch> appended;
  // Manifest written (DigestToManifest): its size.
  std::string manifest_path;
  uint64_t manifest_bytes = 0;
  std::string manifest_detail;
  // Its checkpoint (dump/checkpoint.h; deleted once the manifest is complete) and how many
  // ledgers of the range were taken from it instead of being digested (--resume).
  std::string checkpoint;
  uint64_t ledgers_resumed = 0;
  // The database and schema digested, set by the `digest` command (text "target: ...", JSON
  // "target"); unset otherwise (a manifest merge, a verify's baseline).
  std::optional<Target> target;
};

// Digests `schema` of the database at `conninfo`, calling `sink` (may be empty) with every chunk
// in ledger order. Errors: unreachable database, missing schema, no profile table (Usage).
Result<DigestSummary> DigestSchema(const std::string& conninfo, const std::string& schema, const ProfileSpec& spec,
                                   const DigestOptions& options, const ChunkSink& sink, Reporter& reporter);

// What reading a side costs, in bytes on disk, as the server's catalog estimates it without
// scanning anything: what a command's plan weighs its phases by (core/report.h CommandPlan).
struct ReadCostEstimate {
  // The profile's history tables' rows in the range times their bytes per row (the work a digest
  // weighs its progress by); without statistics (LedgerStatistics), the tables' whole sizes.
  double history_bytes = 0;
  double state_bytes = 0;  // the profile's state tables present, whole (a state comparison reads them)
};
Result<ReadCostEstimate> EstimateReadCost(pg::Connection& conn, const std::string& schema,
                                          const ResolvedProfile& profile, const LedgerRange& range);

// The (unordered) COPY statements DigestSchema would run (one line per chunk and table), for benchmarks.
Result<std::vector<std::string>> CanonicalStatements(const std::string& conninfo, const std::string& schema,
                                                     const ProfileSpec& spec, const DigestOptions& options);


}  // namespace ledgerdiff::dump
