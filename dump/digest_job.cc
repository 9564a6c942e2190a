#include "dump/digest_job.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/pg.h"
#include "dump/range_facts.h"
#include "ledgerdiff/version.h"

namespace ledgerdiff::dump {

nlohmann::json DigestJobJson(const DigestJobSpec& spec) {
  const bool digest = spec.kind == DigestJobKind::kDigest;
  nlohmann::json job = {{"command", digest ? "digest" : "verify-range"},
                        {"tool_version", kVersion},
                        {"range", {{"from", spec.range.from}, {"to", spec.range.to}}},
                        {"profile", spec.profile},
                        {"engine", ToString(spec.engine)},
                        {"shard", spec.shard ? nlohmann::json{{"index", spec.shard->index}, {"count", spec.shard->count}}
                                             : nlohmann::json()}};
  if (digest) {
    job["profile_fingerprint"] = spec.sides.at(0).fingerprint;
    job["detail"] = ManifestDetailName(spec.detail);
    job["source"] = SourceIdentityToJson(spec.sides.at(0).identity);
  } else {
    for (size_t i = 0; i < 2; ++i) {
      nlohmann::json side = SourceIdentityToJson(spec.sides.at(i).identity);
      side["profile_fingerprint"] = spec.sides.at(i).fingerprint;
      job[i == 0 ? "left" : "right"] = std::move(side);
    }
  }
  return job;
}

Result<std::unique_ptr<DigestJob>> DigestJob::Open(DigestJobSpec spec, const ResolvedProfile* profile,
                                                   Reporter& reporter) {
  std::unique_ptr<DigestJob> job(new DigestJob(std::move(spec)));
  const DigestJobSpec& s = job->spec_;
  const int sides = s.kind == DigestJobKind::kDigest ? 1 : 2;
  if (s.checkpoint || s.resume) {
    job->checkpoint_path_ = CheckpointPath(s.out);
    const nlohmann::json description = DigestJobJson(s);
    if (s.resume) {
      LD_ASSIGN_OR_RETURN(job->checkpoint_,
                          Checkpoint::Resume(job->checkpoint_path_, description, s.range, sides, s.max_resumed));
    } else {
      LD_ASSIGN_OR_RETURN(job->checkpoint_, Checkpoint::Create(job->checkpoint_path_, description, s.range, sides));
    }
  }
  if (profile) LD_RETURN_IF_ERROR(job->StartManifest(*profile));
  if (s.resume) {
    const Checkpoint& c = *job->checkpoint_;
    const auto rest = c.remainder();
    if (s.kind == DigestJobKind::kDigest) {
      reporter.Note(fmt::format("resuming from checkpoint {}: {} of {} ledgers done{}{}", c.path(),
                                FormatCount(c.resumed_ledgers()), FormatCount(s.range.size()),
                                rest ? ", digesting " : "", rest ? rest->str() : std::string()));
    } else {
      reporter.Note(fmt::format("resuming from checkpoint {}: {} of {} ledgers compared before, comparing {}",
                                c.path(), FormatCount(c.resumed_ledgers()), FormatCount(s.range.size()),
                                rest->str()));
    }
    if (c.dropped_torn_record()) reporter.Note("checkpoint: a torn last record was dropped");
  }
  return job;
}

DigestJob::~DigestJob() = default;

uint64_t DigestJob::resumed_ledgers() const { return checkpoint_ ? checkpoint_->resumed_ledgers() : 0; }

Status DigestJob::StartManifest(const ResolvedProfile& profile) {
  ManifestHeader header = NewManifestHeader(spec_.source, spec_.detail, spec_.range, profile, spec_.shard, spec_.engine);
  header.identity = spec_.sides.at(0).identity;
  if (spec_.kind == DigestJobKind::kComparison) {
    header.comparison = true;
    header.right_identity = spec_.sides.at(1).identity;
  } else {
    header.workload = spec_.workload;
  }
  return StartManifest(header);
}

Status DigestJob::StartManifest(const ManifestHeader& header) {
  LD_ASSIGN_OR_RETURN(writer_, ManifestWriter::Create(spec_.out, header));
  builder_.emplace(header.profile, header.range, header.source);
  header_ = header;
  return Status::Ok();
}

Status DigestJob::AddToManifest(const ResolvedProfile& profile, const Chunk& chunk) {
  if (!writer_) LD_RETURN_IF_ERROR(StartManifest(profile));
  builder_->Add(chunk);
  return writer_->Add(chunk);
}

Status DigestJob::Keep(const Chunk& chunk) {
  LD_RETURN_IF_ERROR(AddToManifest(header_->profile, chunk));
  kept_ = uint64_t{chunk.range.to} + 1 - spec_.range.from;
  return Status::Ok();
}

Result<DigestSummary> DigestJob::RunSide(int side, const ResolvedProfile& profile, const std::string& conninfo,
                                         const std::string& schema, const ProfileSpec& spec, DigestOptions options,
                                         const ChunkSink& sink, Reporter& reporter) {
  const bool digest = spec_.kind == DigestJobKind::kDigest;
  const auto changed = [&] {
    return Status::Runtimef("schema \"{}\" changed its tables during the digest", schema);
  };
  const auto forward = [&](const Chunk& c) -> Status {
    if (side == 0) LD_RETURN_IF_ERROR(AddToManifest(profile, c));
    return sink ? sink(c) : Status::Ok();
  };
  if (checkpoint_) LD_RETURN_IF_ERROR(checkpoint_->Replay(side, digest ? profile.tables.size() : 0, forward));
  const uint64_t done = std::max(resumed_ledgers(), kept_);
  if (done >= spec_.range.size()) return DigestSummary{};
  options.range = LedgerRange{static_cast<Ledger>(spec_.range.from + done), spec_.range.to};
  LD_ASSIGN_OR_RETURN(DigestSummary digested,
                      DigestSchema(conninfo, schema, spec, options,
                                   [&](const Chunk& c) -> Status {
                                     if (digest && c.tables != profile.tables.size()) return changed();
                                     if (checkpoint_) LD_RETURN_IF_ERROR(checkpoint_->Append(side, c));
                                     return forward(c);
                                   },
                                   reporter));
  if (digest && digested.profile.tables.size() != profile.tables.size()) return changed();
  if (side == 0) tables_resolved_on_client_ = digested.tables_resolved_on_client;
  return digested;
}

Result<DigestSummary> DigestJob::Finish(const std::optional<ComparisonOutcome>& outcome) {
  if (!writer_) return Status::Runtimef("manifest {}: the diff read no ledger", spec_.out);
  const bool digest = spec_.kind == DigestJobKind::kDigest;
  DigestSummary summary = builder_->Finish();
  summary.engine = spec_.engine;
  if (digest) {
    summary.tables_resolved_on_client = tables_resolved_on_client_;
    summary.appended = header_->appended;
  }
  LD_ASSIGN_OR_RETURN(summary.manifest_bytes, writer_->Finish(summary, outcome));
  if (checkpoint_) LD_RETURN_IF_ERROR(checkpoint_->Remove());
  summary.manifest_path = spec_.out;
  summary.manifest_detail = ManifestDetailName(header_->detail);
  if (digest) {
    summary.checkpoint = checkpoint_path_;
    summary.ledgers_resumed = resumed_ledgers();
  }
  return summary;
}

Status DigestJob::Explain(const Status& failure) const {
  return checkpoint_ ? checkpoint_->Explain(failure) : failure;
}

Status DigestJob::Remove() { return checkpoint_ ? checkpoint_->Remove() : Status::Ok(); }

Result<DigestSummary> DigestToManifest(const std::string& conninfo, const std::string& schema,
                                       const ProfileSpec& spec, const DigestOptions& options,
                                       const std::string& path, ManifestDetail detail, Reporter& reporter,
                                       const std::optional<ShardInfo>& shard,
                                       const std::optional<ManifestWorkload>& workload) {
  const Stopwatch started;
  // Resolve profile and range first (a quick separate read), then digest with them fixed.
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff digest", pg::Access::kReadOnly));
  LD_ASSIGN_OR_RETURN(ResolvedProfile profile, ResolveProfile(*conn, schema, spec));
  DigestOptions opts = options;
  if (!opts.range) {
    LD_ASSIGN_OR_RETURN(LedgerRange r, DetectRange(*conn, schema, profile));
    opts.range = r;
  }
  // Where the entries come from: the manifest's header records it (merge compares it), and a
  // resume must find the same source again.
  LD_ASSIGN_OR_RETURN(SourceIdentity identity, ReadSourceIdentity(*conn, schema));
  conn.reset();
  DigestJobSpec job;
  job.out = path;
  job.checkpoint = options.checkpoint;
  job.resume = options.resume;
  job.range = *opts.range;
  job.profile = profile.name;
  job.engine = options.engine;
  job.shard = shard;
  job.detail = detail;
  job.source = fmt::format("schema \"{}\"", schema);
  job.sides = {{identity, ProfileFingerprint(profile)}};
  job.workload = workload;
  LD_ASSIGN_OR_RETURN(auto run, DigestJob::Open(std::move(job), &profile, reporter));
  opts.restrict_to = profile;  // the digest's in-snapshot resolution must match the header
  auto digested = run->RunSide(0, profile, conninfo, schema, spec, opts, nullptr, reporter);
  if (!digested.ok()) return run->Explain(digested.status());
  LD_ASSIGN_OR_RETURN(DigestSummary summary, run->Finish());
  summary.seconds = started.Seconds();
  return summary;
}

namespace {

// --append's usage errors before anything is read: FILE's kind and `range`'s start.
Status CheckAppendable(const ManifestHeader& old, const std::string& path, const std::optional<LedgerRange>& range) {
  if (old.detail != ManifestDetail::kFull)
    return Status::Usagef(
        "--append {}: a compact manifest keeps 32-bit table tags, not the per-table digests its roots are made of; "
        "write it with --manifest-detail full to extend it later",
        path);
  if (old.shard) return Status::Usagef("--append {}: a partial manifest (shard {} of {}); merge the parts first", path,
                                       old.shard->index, old.shard->count);
  if (old.comparison) return Status::Usagef("--append {}: a verify-range manifest, not a digest's", path);
  if (range && range->from != old.range.from)
    return Status::Usagef("--append {}: the manifest starts at ledger {}; --range must start there too (not {})", path,
                          old.range.from, range->from);
  return Status::Ok();
}

}  // namespace

Result<AppendedManifest> AppendToManifest(const std::string& conninfo, const std::string& schema,
                                          const ProfileSpec& spec, const DigestOptions& options,
                                          const std::string& path, const std::optional<LedgerRange>& range,
                                          Reporter& reporter) {
  const Stopwatch started;
  LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
  const ManifestHeader old = reader->header();
  LD_RETURN_IF_ERROR(CheckAppendable(old, path, range));
  std::optional<Ledger> to;
  if (range) to = range->to;
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff digest", pg::Access::kReadOnly));
  LD_ASSIGN_OR_RETURN(ResolvedProfile profile, ResolveProfile(*conn, schema, spec));
  if (profile.name != old.profile.name || ProfileFingerprint(profile) != old.fingerprint)
    return Status::Usagef(
        "--append {}: schema \"{}\" resolves profile \"{}\" (fingerprint {}), the manifest was written with \"{}\" "
        "({}): the tables or columns differ",
        path, schema, profile.name, ProfileFingerprint(profile).substr(0, 12), old.profile.name,
        old.fingerprint.substr(0, 12));
  LD_ASSIGN_OR_RETURN(SourceIdentity identity, ReadSourceIdentity(*conn, schema));
  if (auto d = CompareSourceIdentity(identity, old.identity))
    return Status::Usagef("--append {}: the manifest was digested from {}, this is {}", path, d->b, d->a);
  if (!to) {
    LD_ASSIGN_OR_RETURN(LedgerRange held, DetectRange(*conn, schema, profile));
    to = std::max(held.to, old.range.to);
  }
  conn.reset();
  if (*to < old.range.to)
    return Status::Usagef("--append {}: the manifest already covers ledgers {}; --range must end at {} or later", path,
                          old.range.str(), old.range.to);

  AppendedManifest result;
  result.kept = old.range;
  ManifestHeader header = old;
  header.tool_version.clear();  // the writer's own, as a digest of the whole range writes
  header.range = {old.range.from, *to};
  header.identity = JoinSourceIdentity(identity, old.identity);
  if (*to > old.range.to) header.appended.push_back({LedgerRange{old.range.to + 1, *to}, IsoTimeNow()});
  DigestJobSpec job;  // no checkpoint: interrupted, FILE is left as it was
  job.out = path;
  job.range = header.range;
  job.profile = old.profile.name;
  job.engine = old.engine;  // the new entries are computed as the old ones were
  job.detail = header.detail;
  job.source = header.source;
  job.sides = {{header.identity, old.fingerprint}};
  LD_ASSIGN_OR_RETURN(auto run, DigestJob::Open(std::move(job), nullptr, reporter));
  LD_RETURN_IF_ERROR(run->StartManifest(header));
  // The old entries, checksum verified before anything is renamed over FILE.
  for (Chunk chunk;;) {
    LD_ASSIGN_OR_RETURN(bool more, reader->Next(chunk));
    if (!more) break;
    LD_RETURN_IF_ERROR(run->Keep(chunk));
  }
  reader.reset();
  if (*to > old.range.to) {
    result.appended = LedgerRange{old.range.to + 1, *to};
    reporter.Note(fmt::format("appending ledgers {} to {} (ledgers {} taken from it)", result.appended->str(), path,
                              old.range.str()));
    DigestOptions opts = options;
    opts.engine = old.engine;
    opts.restrict_to = old.profile;  // the new entries hash exactly the manifest's columns
    LD_RETURN_IF_ERROR(run->RunSide(0, old.profile, conninfo, schema, spec, opts, nullptr, reporter).status());
  }
  LD_ASSIGN_OR_RETURN(result.summary, run->Finish());
  result.summary.seconds = started.Seconds();
  return result;
}

}  // namespace ledgerdiff::dump
