#pragma once
// The resumable digest job: the one place that runs digests into a manifest file with a
// checkpoint. `digest --out` (DigestToManifest), `digest --append` (AppendToManifest), a shard's
// part (shard.h DigestShardToManifest) and `verify-range --out` (its two sides, through
// diff::DiffOptions::job) all run through a DigestJob, which owns:
//   - the job description (DigestJobSpec) and the JSON a resume must match (checkpoint "job");
//   - the checkpoint OUT.partial (dump/checkpoint.h): created or resumed by Open, replayed and
//     appended to by RunSide, explained (Explain) on a runtime failure, removed by Finish;
//   - the manifest writer (dump/manifest.h, the file format) and its roots (SummaryBuilder).
// Contract and checkpoint format: dump/README.md ("Resumable runs").

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/status.h"
#include "dump/checkpoint.h"
#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/shard_slice.h"
#include "dump/source_identity.h"
#include "dump/summary_builder.h"

namespace ledgerdiff::dump {

// kDigest: one side (`digest --out`, --append, a shard), its manifest a digest's. kComparison: two
// sides (`verify-range --out`), the manifest holds the left side's entries restricted to the
// tables both sides have, and the comparison's outcome.
enum class DigestJobKind { kDigest, kComparison };

// One side as a resume must find it again: where its rows come from, and the fingerprint of its
// resolved profile (ProfileFingerprint).
struct DigestJobSide {
  SourceIdentity identity;
  std::string fingerprint;
};

// What a job is. Every field a manifest's bytes depend on is in the checkpoint's job JSON
// (DigestJobJson), so a resume of a different job is refused naming the first difference.
struct DigestJobSpec {
  DigestJobKind kind = DigestJobKind::kDigest;
  std::string out;           // the manifest's path
  bool checkpoint = false;   // keep CheckpointPath(out) while the manifest is written
  bool resume = false;       // continue the checkpoint there (implies checkpoint)
  uint64_t max_resumed = UINT64_MAX;  // Checkpoint::Resume's bound (verify-range: range size - 1)
  LedgerRange range;         // the ledgers of the manifest (a shard's slice)
  std::string profile;       // the profile's name
  DigestEngine engine = DigestEngine::kText;
  std::optional<ShardInfo> shard;
  ManifestDetail detail = ManifestDetail::kFull;  // kComparison: always full
  std::string source;        // the manifest header's "source" text
  std::vector<DigestJobSide> sides;  // kDigest: 1; kComparison: left, right
  std::optional<ManifestWorkload> workload;  // kDigest: the header's "workload"
};

// The checkpoint's job description of `spec` (checkpoint.h): command, tool version, range,
// profile, engine, shard, and per kind: digest "detail", "profile_fingerprint", "source";
// comparison "left" and "right" (each a source identity with its "profile_fingerprint").
nlohmann::json DigestJobJson(const DigestJobSpec& spec);

class DigestJob {
 public:
  // Starts the job: with spec.checkpoint or spec.resume, creates or resumes its checkpoint
  // (errors as Checkpoint::Create / Resume); with `profile`, creates the manifest
  // (StartManifest), else side 0's first chunk will; then, on a resume, notes how far it got.
  static Result<std::unique_ptr<DigestJob>> Open(DigestJobSpec spec, const ResolvedProfile* profile,
                                                 Reporter& reporter);
  ~DigestJob();
  DigestJob(const DigestJob&) = delete;
  DigestJob& operator=(const DigestJob&) = delete;

  const DigestJobSpec& spec() const { return spec_; }
  // CheckpointPath(out) when checkpointed, else "".
  const std::string& checkpoint_path() const { return checkpoint_path_; }
  // Ledgers range.from .. range.from + resumed_ledgers() - 1 are taken from the checkpoint.
  uint64_t resumed_ledgers() const;

  // Creates the manifest (ManifestWriter::Create: PATH.tmp until Finish) with the header of the
  // spec and `profile`, the tables its entries have.
  Status StartManifest(const ResolvedProfile& profile);
  // Creates the manifest with `header` as it is (--append: the old manifest's, extended).
  Status StartManifest(const ManifestHeader& header);
  // Adds chunks that are already in the manifest being extended (--append), consecutive from
  // range.from: RunSide then digests only the ledgers after them. REQUIRES: StartManifest, no
  // checkpoint.
  Status Keep(const Chunk& chunk);

  // One side's chunks over the job's range, in ledger order: the checkpoint's (replayed), then the
  // ledgers after them and after any kept ones (DigestSchema with `options`, whose range is set
  // here; each digested chunk is appended to the checkpoint first). Side 0's chunks go to the
  // manifest (started on the first chunk with `profile`, when not yet), then every chunk to
  // `sink` (may be empty). Returns the digest's summary of the ledgers it read (empty when none).
  // kDigest: a chunk or a digest whose tables are not `profile`'s is "schema \"S\" changed its
  // tables during the digest". Thread-safe for different sides.
  Result<DigestSummary> RunSide(int side, const ResolvedProfile& profile, const std::string& conninfo,
                                const std::string& schema, const ProfileSpec& spec, DigestOptions options,
                                const ChunkSink& sink, Reporter& reporter);

  // After every side ran: writes the manifest's trailer (roots, and for kComparison `outcome`),
  // then removes the checkpoint. The summary is the manifest's (path, size, detail, engine; kDigest
  // also appended stretches, the checkpoint's path and the ledgers resumed).
  // REQUIRES: outcome.has_value() == (kind == kComparison).
  Result<DigestSummary> Finish(const std::optional<ComparisonOutcome>& outcome = std::nullopt);

  // Checkpoint::Explain of a runtime failure (the failure as it is without a checkpoint).
  Status Explain(const Status& failure) const;
  // Deletes the checkpoint now (a usage error after the digests: nothing to resume).
  Status Remove();

 private:
  explicit DigestJob(DigestJobSpec spec) : spec_(std::move(spec)) {}
  Status AddToManifest(const ResolvedProfile& profile, const Chunk& chunk);

  DigestJobSpec spec_;
  std::string checkpoint_path_;
  std::unique_ptr<Checkpoint> checkpoint_;
  uint64_t kept_ = 0;  // ledgers from range.from taken from the manifest being extended
  std::optional<ManifestHeader> header_;
  std::unique_ptr<ManifestWriter> writer_;
  std::optional<SummaryBuilder> builder_;
  size_t tables_resolved_on_client_ = 0;  // side 0's digest
};

// Digests a schema into a manifest file (`path`) through a DigestJob (options.checkpoint /
// options.resume: its checkpoint). The summary carries the manifest's size.
Result<DigestSummary> DigestToManifest(const std::string& conninfo, const std::string& schema,
                                       const ProfileSpec& spec, const DigestOptions& options,
                                       const std::string& path, ManifestDetail detail, Reporter& reporter,
                                       const std::optional<ShardInfo>& shard = std::nullopt,
                                       const std::optional<ManifestWorkload>& workload = std::nullopt);

// `digest --out FILE --append`: extends the full-detail manifest FILE of `schema` (a whole-range
// digest, or one extended before) with the ledgers after its last one, through range->to (nullopt:
// the last ledger the schema holds; range->from must be FILE's first), reading only those. The
// result is byte-identical to one DigestToManifest of the whole range with the same profile and
// detail (tested): the old entries are kept through the roots (DigestJob::Keep), the new ones
// digested in one snapshot. FILE is replaced atomically; interrupted, it is left as it was. Usage
// errors (exit 2, FILE untouched): FILE is not a manifest, is compact (its 32-bit table tags are
// not the per-table digests the roots are made of: write it with --manifest-detail full), a shard
// or a comparison; the schema's resolved profile differs from FILE's (fingerprint or name); FILE
// was digested from another source (dump/source_identity.h, naming what differs); `range` not
// starting at FILE's first ledger or ending before its last.
struct AppendedManifest {
  DigestSummary summary;                // of the whole manifest now in FILE
  LedgerRange kept;                     // the ledgers taken from FILE as it was
  std::optional<LedgerRange> appended;  // the ledgers digested now (nullopt: nothing after FILE's last)
};
Result<AppendedManifest> AppendToManifest(const std::string& conninfo, const std::string& schema,
                                          const ProfileSpec& spec, const DigestOptions& options,
                                          const std::string& path, const std::optional<LedgerRange>& range,
                                          Reporter& reporter);

}  // namespace ledgerdiff::dump
