#pragma once
// Manifest files (.ldm): a digest stored for later comparison.
//
// Layout (integers little-endian):
//   magic "LDGRDIFF" (8 bytes) | u32 format version (kManifestVersion) | u32 header length | header JSON
//   entries, one per ledger of the range, in order:
//     compact: combined digest (16 bytes), then per table: LEB128 row count, and when the count
//              is not 0 a 4-byte tag (the first bytes of the table's 128-bit digest, big-endian)
//     full:    per table: LEB128 row count, and when the count is not 0 the 16-byte digest
//   u32 trailer length | trailer JSON (table roots, overall root, rows per table)
//   SHA-256 of every byte before it (32 bytes)
// The header JSON holds: format, tool version, source, detail, range, the resolved profile (per
// table: ledger mapping, canonical columns with classes, key, excluded columns), lookup and
// uncompared tables, the profile fingerprint, on a partial manifest "shard" (ShardInfo) and, on a
// comparison's manifest, "comparison": "verify-range". Roots are in the trailer because the writer
// streams; so is a comparison's outcome (trailer key "comparison", ComparisonOutcome).
// Detection strength of a compact manifest stays 128-bit per ledger (combined digest) and 256-bit
// per table over the range (roots); the 32-bit tags only localise which table differs.
//
// A truncated, corrupted or foreign-version file is a Usage error naming the file and the problem.

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/atomic_file.h"
#include "dump/digest.h"

namespace ledgerdiff::dump {

enum class ManifestDetail { kCompact, kFull };
const char* ManifestDetailName(ManifestDetail d);

// Version 2: columns hashed in name order, timestamptz compared at UTC as timestamp, ledger 0
// comparable, every history table (history_trades_60000 by its open ledger).
// Version 3: per-(table, ledger) digests are multiset digests (dump/canonical.h RowMultiset).
constexpr uint32_t kManifestVersion = 3;

// A partial manifest (a shard of a sharded digest, dump/shard.h): its own range is the slice
// `index` of `count` of `full_range`. Absent on a manifest of a whole range.
struct ShardInfo {
  uint32_t index = 0;
  uint32_t count = 0;
  LedgerRange full_range;
};

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
};

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
};

// Streaming reader; verifies the checksum when the last entry has been read.
class ManifestReader {
 public:
  static Result<std::unique_ptr<ManifestReader>> Open(const std::string& path);
  ~ManifestReader();
  const ManifestHeader& header() const { return header_; }
  // Reads up to `max_ledgers` next entries into `out` (compact: !full). Returns false after the
  // last entry, once the trailer and the checksum are verified.
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
  std::string path_;
  FILE* f_ = nullptr;
  void* sha_ = nullptr;
  std::string buf_;
  size_t pos_ = 0;
  ManifestHeader header_;
  DigestSummary summary_;
  std::optional<ComparisonOutcome> comparison_;
  Ledger next_ = 0;
  bool entries_done_ = false;  // every entry read (next_ may not pass range.to at 2^32 - 1)
  bool done_ = false;
};

// Digests a schema into a manifest file (`path`). The summary carries the manifest's size.
Result<DigestSummary> DigestToManifest(const std::string& conninfo, const std::string& schema,
                                       const ProfileSpec& spec, const DigestOptions& options,
                                       const std::string& path, ManifestDetail detail, Reporter& reporter,
                                       const std::optional<ShardInfo>& shard = std::nullopt);

// Rows, ledgers with rows and roots per table and the overall root of a manifest's entries, from
// its chunks in ledger order, as DigestSchema computes them (the merge and verify-range use it).
class SummaryBuilder {
 public:
  SummaryBuilder(const ResolvedProfile& profile, const LedgerRange& range, std::string source);
  // REQUIRES: chunk.full, chunks consecutive from range.from, with the profile's tables.
  void Add(const Chunk& chunk);
  // Call once, after the chunk holding range.to.
  DigestSummary Finish();

 private:
  DigestSummary summary_;
  std::unique_ptr<RootBuilder> roots_;  // refers to summary_.profile
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
// "identical over N ledgers (R rows left, R rows right)" / "divergent: first divergent ledger L, ...".
std::string RenderComparisonOutcome(const ComparisonOutcome& outcome);

}  // namespace ledgerdiff::dump
