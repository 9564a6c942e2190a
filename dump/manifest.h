#pragma once
// Manifest files (.ldm): a digest stored for later comparison.
//
// Layout (integers little-endian):
//   magic "LDGRDIFF" (8 bytes) | u32 format version (kManifestVersion) | u32 header length | header JSON
//   entries, one per ledger of the range that holds a row in some table, in order, each preceded
//   by the LEB128 count of the empty ledgers before it (since range.from or the previous entry):
//     compact: combined digest (16 bytes), then per table: LEB128 row count, and when the count
//              is not 0 a 4-byte tag (the first bytes of the table's 128-bit digest, big-endian)
//     full:    per table: LEB128 row count, and when the count is not 0 the 16-byte digest
//   then, unless the last entry is range.to's, the LEB128 count of the empty ledgers that end
//   the range. An entry whose counts are all 0 is corrupt: one content has one encoding.
//   u32 trailer length | trailer JSON (table roots, overall root, rows per table)
//   SHA-256 of every byte before it (32 bytes)
// The header JSON holds: format, tool version, source (text for people), source_identity (see
// below), detail, range, the resolved profile (per table: ledger mapping, canonical columns with
// classes, key, excluded columns), excluded_columns, lookup and uncompared tables, the profile
// fingerprint, on a partial manifest "shard" (ShardInfo), on a comparison's manifest,
// "comparison": "verify-range", and on a baseline of the built-in ingester "workload"
// (ManifestWorkload). Every key but "shard", "comparison" and "workload" is mandatory. Roots are in
// the trailer because the writer streams; so is a comparison's outcome (trailer key "comparison",
// ComparisonOutcome).
// "source_identity" names where the entries come from without any secret (dump/source_identity.h:
// system identifier or null, database, schema, schema OID): {"system_identifier", "database",
// "schema", "schema_oid"} on a digest's manifest; {"left": {...}, "right": {...}} on a
// comparison's (its entries are the left side's). `manifest merge` refuses parts whose identities
// differ (dump/shard.h).
// Detection strength of a compact manifest stays 128-bit per ledger (combined digest) and 256-bit
// per table over the range (roots); the 32-bit tags only localise which table differs.
//
// A truncated, corrupted or foreign-version file is a Usage error naming the file and the problem.
//
// Bounds. A reader checks every length and count it reads against the bounds below and the file's
// size before it allocates anything for it (ManifestHeaderFromJson and ManifestReader, the one
// reader of manifest show, merge, diff and baselines); a file beyond them is a Usage error naming
// the file and the bound:
//   - header length <= kMaxManifestHeaderBytes, trailer length <= kMaxManifestTrailerBytes, and
//     16 + header length + 1 (the least bytes of the entries) + 4 + 2 + 32 <= the file's size;
//   - a run of empty ledgers ends within the range;
//   - header and trailer JSON nest at most 16 levels, and their documents estimate at most 20
//     times their length in memory (dump/bounded_json.h);
//   - range and a shard's full range: 0 <= from <= to <= kMaxManifestLedger;
//   - the profile: 1 to kMaxManifestTables compared tables, each with at most kMaxManifestColumns
//     columns;
//   - a shard: 1 <= count <= the full range's ledgers, index < count, range = ShardSlice(...);
//   - a row count: a LEB128 value of at most 10 bytes, within 64 bits, not overlong;
//   - the trailer's length is exactly what the file holds between the entries and the checksum,
//     its tables those of the profile, in order.
// Memory to read a manifest whole is then a small multiple of its size: the header's document
// (<= 20x the header), the resolved profile twice, and one chunk of at most
// kMaxManifestChunkEntries (ledger, table) entries at a time.

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/atomic_file.h"
#include "dump/digest.h"
#include "dump/shard_slice.h"
#include "dump/source_identity.h"

namespace ledgerdiff::dump {

enum class ManifestDetail { kCompact, kFull };
const char* ManifestDetailName(ManifestDetail d);

// Version 2: columns hashed in name order, timestamptz compared at UTC as timestamp, ledger 0
// comparable, every history table (history_trades_60000 by its open ledger).
// Version 3: per-(table, ledger) digests are multiset digests (dump/canonical.h RowMultiset).
// Version 4: the header's "source_identity" (mandatory, like every other header key now). A
// version-3 reader would merge version-4 parts without comparing their sources, and a version-3
// file has no identity to compare: both must notice, so the version changes (a version-3 file is
// the usual exit-2 "re-save it" error).
// Version 5: the header's "engine" (dump/canonical.h DigestEngine: "text" or "server-hash"),
// mandatory: the engines' digests of the same rows differ, so a reader must know which made them
// (a diff or merge of manifests of different engines is refused, naming both).
constexpr uint32_t kManifestVersion = 5;

// Bounds of a manifest (see "Bounds" above).
constexpr uint32_t kMaxManifestHeaderBytes = 8u << 20;
constexpr uint32_t kMaxManifestTrailerBytes = 4u << 20;
constexpr size_t kMaxManifestTables = 4096;
constexpr size_t kMaxManifestColumns = 1600;  // PostgreSQL's own limit of columns per table
constexpr Ledger kMaxManifestLedger = 2147483647;  // core/ledger_range.h: to < 2^31
constexpr size_t kMaxAppendedStretches = 100000;   // header key "appended": one per append
constexpr size_t kMaxManifestChunkEntries = size_t{1} << 16;  // per chunk a reader hands out

// Hex SHA-256 of the resolved profile's JSON form (tables, columns, classes, keys, exclusions):
// two digests with equal fingerprints hashed the same columns the same way.
std::string ProfileFingerprint(const ResolvedProfile& profile);

// The outcome of a comparison, stored with the manifest of its left side (verify-range --out, its
// shards and their merge; verify/verify.h): the entries are the left side's, restricted to the
// tables and columns both sides have; the outcome covers the manifest's range.
struct ComparisonOutcome {
  bool identical = true;
  std::optional<Ledger> first_divergent_ledger;
  uint64_t divergent_ledgers = 0, ledgers_compared = 0;
  uint64_t rows_left = 0, rows_right = 0;
  bool allow_empty = false;  // zero rows on both sides counts as identical (verify-range --allow-empty)
  // Coverage (diff::Coverage): ledgers of the range each side lacks. `identical` already holds
  // only when they are none or `allow_gaps`; a trailer written before coverage existed has no
  // "coverage" key (then coverage_checked is false).
  bool coverage_checked = false;
  uint64_t missing_left = 0, missing_right = 0;
  bool allow_gaps = false;
  // Not identical with no divergent ledger because ledgers are missing (and not allowed).
  bool incomplete() const {
    return !identical && coverage_checked && !allow_gaps && (missing_left || missing_right) && !first_divergent_ledger;
  }
  // A shard's part (verify-range --shards): when each side's digest took its snapshot. Trailer
  // key "snapshots" {left, right: {lsn, at}}, written for parts only; `manifest merge` says when
  // its parts were read at different snapshots of a side.
  std::optional<SourceSnapshot> left_snapshot, right_snapshot;
};

// What the built-in ingester generated the digested schema from, when the manifest records it
// (header key "workload", optional: a `verify --save-baseline` of the built-in ingester writes
// it): {"density": "stellar" | "flat", "seed": N}. A baseline of another workload would make
// every ledger divergent, so verify and sweep refuse it instead.
struct ManifestWorkload {
  std::string density;
  uint64_t seed = 0;
  bool operator==(const ManifestWorkload&) const = default;
};

struct ManifestHeader {
  std::string tool_version;
  std::string source;
  ManifestDetail detail = ManifestDetail::kCompact;
  LedgerRange range;
  ResolvedProfile profile;
  std::optional<ShardInfo> shard;  // header key "shard": {"index","count","full_range"}
  std::string fingerprint;         // header key "fingerprint"; the writer computes it
  bool comparison = false;         // header key "comparison": the trailer holds a ComparisonOutcome
  // Header key "source_identity": the digested source; a comparison's left side, whose entries
  // these are, with `right_identity` its right side. REQUIRES: right_identity.has_value() ==
  // comparison.
  SourceIdentity identity;
  std::optional<SourceIdentity> right_identity;
  std::optional<ManifestWorkload> workload;  // header key "workload" (optional)
  DigestEngine engine = DigestEngine::kText;  // header key "engine"
  std::vector<AppendedStretch> appended;     // header key "appended" (optional; digest.h)
};

// A header's core: what was digested (source, range, profile, shard), how (detail, engine).
// The writer fills tool_version and fingerprint; a caller adds identity, workload, comparison.
ManifestHeader NewManifestHeader(std::string source, ManifestDetail detail, const LedgerRange& range,
                                 const ResolvedProfile& profile, const std::optional<ShardInfo>& shard,
                                 DigestEngine engine);

// The one validation of a manifest header's JSON (`path` names the file in errors): every key
// and bound of the format above, the fingerprint recomputed. ManifestReader::Open applies it.
Result<ManifestHeader> ManifestHeaderFromJson(const nlohmann::json& j, const std::string& path);
// The header's "source_identity" value.
nlohmann::json ManifestIdentityToJson(const ManifestHeader& header);

// Streaming writer through a core/atomic_file.h AtomicFile: PATH appears, complete and synced,
// only when Finish succeeds; a symlink at PATH is refused (exit 2); the temporary file is removed
// when the writer goes away unfinished and on SIGINT/SIGTERM/SIGHUP.
class ManifestWriter {
 public:
  static Result<std::unique_ptr<ManifestWriter>> Create(const std::string& path, const ManifestHeader& header);
  ~ManifestWriter();
  // REQUIRES: chunks consecutive from header.range.from, full, with the header's tables.
  Status Add(const Chunk& chunk);
  // Writes the trailer (roots from `summary`, `outcome`) and the checksum; returns the file size.
  // REQUIRES: outcome.has_value() == header.comparison.
  Result<uint64_t> Finish(const DigestSummary& summary, const std::optional<ComparisonOutcome>& outcome = {});

 private:
  ManifestWriter() = default;
  Status Write(const void* data, size_t n);
  std::string path_;
  ManifestHeader header_;
  std::unique_ptr<AtomicFile> file_;
  void* sha_ = nullptr;  // EVP_MD_CTX*
  std::string buf_;
  Ledger next_ = 0;
  uint64_t described_ = 0;  // the first ledger no entry or run of empty ledgers has described
};

struct ManifestInfo;

// Streaming reader; verifies the checksum when the last entry has been read.
class ManifestReader {
 public:
  static Result<std::unique_ptr<ManifestReader>> Open(const std::string& path);
  ~ManifestReader();
  const ManifestHeader& header() const { return header_; }
  // Reads up to `max_ledgers` next entries into `out` (compact: !full); fewer when that many
  // ledgers would exceed kMaxManifestChunkEntries entries. Returns false after the last entry,
  // once the trailer and the checksum are verified.
  Result<bool> Next(Chunk& out, uint32_t max_ledgers = 4096);
  // After Next returned false: the stored summary (rows per table, roots) and outcome.
  const DigestSummary& summary() const { return summary_; }
  const std::optional<ComparisonOutcome>& comparison() const { return comparison_; }

 private:
  ManifestReader() = default;
  Status Fill(size_t need);
  Result<uint64_t> ReadVarint();
  Status ReadBytes(void* out, size_t n);
  Status Finish();
  friend Result<ManifestInfo> ReadManifestInfo(const std::string& path);
  std::string path_;
  FILE* f_ = nullptr;
  std::optional<uint64_t> size_;  // the file's size (a regular file)
  uint64_t offset_ = 0;           // bytes consumed
  void* sha_ = nullptr;
  std::string buf_;
  size_t pos_ = 0;
  ManifestHeader header_;
  DigestSummary summary_;
  std::optional<ComparisonOutcome> comparison_;
  Ledger next_ = 0;           // the first ledger of the next chunk
  uint64_t described_ = 0;    // the first ledger no entry or run of empty ledgers has described
  bool entries_done_ = false;  // every entry read
  bool done_ = false;
};

// A manifest read whole and verified (entries, trailer, checksum).
struct ManifestInfo {
  ManifestHeader header;
  DigestSummary summary;  // manifest_bytes: the file's size
  std::optional<ComparisonOutcome> comparison;
};
// The one reader of a whole manifest.
Result<ManifestInfo> ReadManifestInfo(const std::string& path);
inline Result<DigestSummary> ReadManifestSummary(const std::string& path) {
  LD_ASSIGN_OR_RETURN(ManifestInfo info, ReadManifestInfo(path));
  return std::move(info.summary);
}

nlohmann::json ComparisonOutcomeToJson(const ComparisonOutcome& outcome);

}  // namespace ledgerdiff::dump
