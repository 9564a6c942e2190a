#include "verify/sweep.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/atomic_file.h"
#include "core/concurrency.h"
#include "core/database.h"
#include "core/pg.h"
#include "core/process.h"
#include "core/tempdir.h"
#include "diff/diff.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "ledgerdiff/version.h"
#include "ingest/orchestrator.h"
#include "ingest/job_table.h"
#include "verify/verify.h"

namespace ledgerdiff::verify {

using ingest::IngestOptions;
using ingest::IngestReport;
using ingest::RunIngest;
using ingest::DeleteRun;
using ingest::ValidateIngestOptions;

// A cell's verdict as the reports spell it.
std::string_view ToString(CellVerdict verdict) {
  switch (verdict) {
    case CellVerdict::kIdentical: return "identical";
    case CellVerdict::kDivergent: return "divergent";
    case CellVerdict::kFailed: return "failed";
  }
  return "?";
}

namespace {

constexpr uint32_t kMaxRepeat = 20;
constexpr size_t kMaxCells = 100;

// Samples the client sessions of the database every 50 ms while it lives and keeps the peak.
// Neither the sampler's own session nor the sweep's (`exclude_pid`) counts; the orchestrator's does.
class ConnectionSampler {
 public:
  ConnectionSampler(const std::string& conninfo, int exclude_pid) : exclude_pid_(exclude_pid) {
    auto conn = pg::Connection::Open(conninfo, "ledgerdiff sweep sampler");
    if (!conn.ok()) return;  // no sample: peak stays 0
    conn_ = std::move(conn).value();
    sampling_.emplace(std::chrono::milliseconds(50), PeriodicThread::Start::kTickAtOnce, [this] { Sample(); });
  }
  // Stops sampling; the peak seen.
  uint32_t Stop() {
    if (sampling_) sampling_->Stop();
    return peak_;
  }

 private:
  void Sample() {
    auto rows = conn_->Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND pid <> $1",
        {std::to_string(exclude_pid_)});
    if (rows.ok() && rows->size() == 1) peak_ = std::max(peak_, static_cast<uint32_t>(rows->GetInt(0, 0)));
  }
  int exclude_pid_;
  std::unique_ptr<pg::Connection> conn_;
  uint32_t peak_ = 0;                       // written by the sampling thread only; read after Stop
  std::optional<PeriodicThread> sampling_;  // last: stopped before the members above go
};

// The directory of the reference manifest of a serial ingest: an owned temporary directory
// (core/tempdir.h), removed when this goes out of scope or on a signal, and reaped by the next
// run when this process was killed (SIGKILL) before either.
struct TempManifestDir {
  std::string dir;
  int cleanup = -1;
  Result<std::string> Make(const std::string& run_id) {
    LD_ASSIGN_OR_RETURN(dir, MakeOwnedTempDir("ledgerdiff-sweep-"));
    cleanup = RegisterCleanup([d = dir] { (void)RemoveTree(d); });
    return dir + "/" + SafeFileName(run_id) + ".ldm";
  }
  ~TempManifestDir() {
    if (!dir.empty()) (void)RemoveTree(dir);
    if (cleanup >= 0) UnregisterCleanup(cleanup);
  }
};

IngestOptions CellIngestOptions(const SweepOptions& o, uint32_t workers, uint32_t job_size) {
  IngestOptions io;
  io.plan = o.plan;
  io.plan.range = o.range;
  io.plan.workers = workers;
  io.plan.job_size = job_size;
  if (workers > 1) io.hooks = o.hooks;
  return io;
}

// The schemas sweep ingests into: the serial reference's run k (0 the warm-up; 1 the one kept
// and digested) and a cell's repeat k.
std::string ReferenceSchema(const std::string& run_id, uint32_t k) {
  const std::string kept = "ld_" + run_id + "_reference";
  return k == 1 ? kept : fmt::format("{}_r{}", kept, k);
}
std::string CellSchema(const std::string& run_id, uint32_t workers, uint32_t job_size, uint32_t k) {
  return fmt::format("ld_{}_w{}_j{}_r{}", run_id, workers, job_size, k);
}

// Sweep's phases as RunSweep takes them, each under the progress names it reports and costed
// like verify's (kDigestCostPerRow, kFinishCostPerRow): the serial reference's runs and its
// digest (none with a baseline), then per cell and repeat its ingestion, its digest (the right
// side of the diff against the reference) and the diff and drop after it (reporting nothing).
CommandPlan SweepPlan(const SweepOptions& o, const std::string& run_id) {
  const double rows = PlannedRows(o.plan, o.range);
  const auto ingest = [](const std::string& schema) { return std::vector<std::string>{fmt::format("ingest \"{}\"", schema)}; };
  const double digest = rows * kDigestCostPerRow / OnCores(o.digest_jobs);
  CommandPlan plan;
  if (o.baseline.empty()) {
    for (uint32_t k = 0; k <= o.repeat; ++k)
      plan.push_back({k == 0 ? "reference warm-up" : fmt::format("reference {}/{}", k, o.repeat),
                      ingest(ReferenceSchema(run_id, k)), rows});
    plan.push_back({"reference digest", {"reference digest"}, digest});
  }
  const size_t total = o.workers.size() * o.job_sizes.size();
  size_t index = 0;
  for (uint32_t w : o.workers)
    for (uint32_t j : o.job_sizes) {
      ++index;
      for (uint32_t k = 1; k <= o.repeat; ++k) {
        const std::string cell = fmt::format("cell {}/{} repeat {}/{}", index, total, k, o.repeat);
        plan.push_back({cell + ": ingest", ingest(CellSchema(run_id, w, j, k)), rows / OnCores(w)});
        plan.push_back({cell + ": digest", {"digest right"}, digest});
        plan.push_back({cell + ": diff and drop", {}, rows * kFinishCostPerRow});
      }
    }
  return plan;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Result<std::vector<uint32_t>> ParseUintList(const std::string& text, const std::string& flag) {
  std::vector<uint32_t> out;
  if (text.empty()) return Status::Usagef("{} is empty: give a comma-separated list such as 1,2,4", flag);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) return Status::Usagef("{} \"{}\": an empty item", flag, text);
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || end != item.data() + item.size() || value > UINT32_MAX)
      return Status::Usagef("{} \"{}\": \"{}\" is not a positive integer", flag, text, item);
    out.push_back(static_cast<uint32_t>(value));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

Result<dump::ProfileSpec> ValidateSweepOptions(const SweepOptions& o) {
  auto check_list = [](const std::vector<uint32_t>& list, const char* flag, uint64_t max) -> Status {
    if (list.empty()) return Status::Usagef("{} is empty", flag);
    std::set<uint32_t> seen;
    for (uint32_t v : list) {
      if (v == 0) return Status::Usagef("{}: 0 is not allowed", flag);
      if (v > max) return Status::Usagef("{}: {} is too large (at most {})", flag, v, max);
      if (!seen.insert(v).second) return Status::Usagef("{}: {} is listed twice", flag, v);
    }
    return Status::Ok();
  };
  LD_RETURN_IF_ERROR(check_list(o.workers, "--workers", ingest::kMaxWorkers));
  LD_RETURN_IF_ERROR(check_list(o.job_sizes, "--job-size", UINT32_MAX));
  if (o.repeat == 0 || o.repeat > kMaxRepeat) return Status::Usagef("--repeat must be 1..{}", kMaxRepeat);
  if (o.workers.size() * o.job_sizes.size() > kMaxCells)
    return Status::Usagef("the grid has {} cells; at most {}", o.workers.size() * o.job_sizes.size(), kMaxCells);
  for (uint32_t j : o.job_sizes)
    if (j > o.range.size())
      return Status::Usagef("--job-size {} is larger than the range {} ({} ledgers)", j, o.range.str(),
                            o.range.size());
  for (uint32_t w : o.workers) {
    for (uint32_t j : o.job_sizes) {
      uint64_t jobs = (o.range.size() + j - 1) / j;
      if (w > jobs)
        return Status::Usagef("cell {} workers x jobs of {}: the range {} has only {} for {}", w, j,
                              o.range.str(), FormatCountOf(jobs, "job"), FormatCountOf(w, "worker"));
      IngestOptions probe = CellIngestOptions(o, w, j);
      probe.plan.schema = "probe";
      LD_RETURN_IF_ERROR(ValidateIngestOptions(probe));
    }
  }
  if (!o.hooks.bug.empty() && std::none_of(o.workers.begin(), o.workers.end(), [](uint32_t w) { return w > 1; }))
    return Status::Usage("--inject-bug acts on parallel cells only, and --workers lists none above 1");
  if (o.digest_jobs < 1) return Status::Usage("--jobs must be at least 1");
  LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, o.profile_spec ? Result<dump::ProfileSpec>(*o.profile_spec)
                                                             : dump::LoadProfileSpec(o.table_profile));
  if (o.baseline.empty()) return spec;
  LD_RETURN_IF_ERROR(CheckBaselineFile(o.baseline));
  LD_RETURN_IF_ERROR(CheckBaselineFits(o.baseline, o.range, spec, o.engine, o.plan, "this sweep", "ingests"));
  return spec;
}

std::string SweepCell::Name() const { return fmt::format("{}x{}", workers, job_size); }

std::string SweepCell::Describe() const {
  if (!HasNoiseEstimate()) return fmt::format("{} {:.2f} s (one repeat)", Name(), median_s);
  return fmt::format("{} {:.2f} s ({:.2f}-{:.2f})", Name(), median_s, min_s, max_s);
}

int SweepReport::exit_code() const {
  if (!recommendation.found || recommendation.every_parallel_divergent) return 1;
  for (const auto& c : cells)
    if (c.verdict != CellVerdict::kIdentical) return 1;
  return 0;
}

void SummarizeCell(SweepCell& cell, const LedgerRange& range, double reference_s) {
  std::vector<double> walls;
  std::vector<uint64_t> rows;
  bool divergent = false, failed = false;
  cell.attempts = cell.retries = cell.peak_connections = 0;
  cell.first_divergent_ledger.reset();
  for (const auto& r : cell.repeats) {
    cell.attempts += r.attempts;
    cell.retries += r.retried_jobs;
    cell.peak_connections = std::max(cell.peak_connections, r.peak_connections);
    if (!r.ok) {
      failed = true;
      if (cell.error.empty()) cell.error = r.error;
      continue;
    }
    walls.push_back(r.wall_s);
    rows.push_back(r.rows);
    if (!r.identical) {
      divergent = true;
      if (r.first_divergent_ledger &&
          (!cell.first_divergent_ledger || *r.first_divergent_ledger < *cell.first_divergent_ledger))
        cell.first_divergent_ledger = r.first_divergent_ledger;
    }
  }
  cell.verdict = divergent ? CellVerdict::kDivergent : failed ? CellVerdict::kFailed : CellVerdict::kIdentical;
  cell.samples = static_cast<uint32_t>(walls.size());
  if (walls.empty()) return;
  cell.median_s = Median(walls);
  auto [lo, hi] = std::minmax_element(walls.begin(), walls.end());
  cell.min_s = *lo;
  cell.max_s = *hi;
  cell.spread_s = *hi - *lo;
  uint64_t row_count = *std::max_element(rows.begin(), rows.end());
  const double ledgers = static_cast<double>(range.size());
  if (cell.median_s > 0) {
    cell.ledgers_per_s = ledgers / cell.median_s;
    cell.rows_per_s = static_cast<double>(row_count) / cell.median_s;
    cell.speedup = reference_s > 0 ? reference_s / cell.median_s : 0;
  }
  if (cell.max_s > 0) cell.ledgers_per_s_min = ledgers / cell.max_s;
  if (cell.min_s > 0) cell.ledgers_per_s_max = ledgers / cell.min_s;
}

SweepRecommendation Recommend(const std::vector<SweepCell>& cells) {
  SweepRecommendation rec;
  std::vector<const SweepCell*> identical;  // candidates, fastest first (stable: grid order on ties)
  size_t parallel = 0, parallel_bad = 0, parallel_divergent = 0;
  for (const auto& c : cells) {
    if (c.verdict == CellVerdict::kDivergent)
      rec.divergent.push_back(c.first_divergent_ledger
                                  ? fmt::format("{} at ledger {}", c.Name(), *c.first_divergent_ledger)
                                  : c.Name());
    if (c.workers > 1) {
      ++parallel;
      if (c.verdict != CellVerdict::kIdentical) ++parallel_bad;
      if (c.verdict == CellVerdict::kDivergent) ++parallel_divergent;
    }
    if (c.verdict == CellVerdict::kIdentical && c.median_s > 0) identical.push_back(&c);
  }
  std::stable_sort(identical.begin(), identical.end(),
                   [](const SweepCell* a, const SweepCell* b) { return a->median_s < b->median_s; });
  rec.every_parallel_divergent = parallel > 0 && parallel_bad == parallel && parallel_divergent > 0;
  if (identical.empty()) {
    rec.reason = rec.every_parallel_divergent
                     ? fmt::format("every parallel cell diverged ({}) and no serial cell was measured: nothing to "
                                   "recommend",
                                   fmt::join(rec.divergent, ", "))
                     : "no cell was identical in every repeat: nothing to recommend";
    return rec;
  }
  const SweepCell* fastest = identical.front();
  const SweepCell* next = identical.size() > 1 ? identical[1] : nullptr;
  rec.noise_estimate = std::all_of(identical.begin(), identical.end(),
                                   [](const SweepCell* c) { return c->HasNoiseEstimate(); });
  // Within noise of the fastest: the intervals overlap (the fastest's max reaches the other's min).
  // Without a noise estimate nothing is within noise: the fastest is taken, with a caveat.
  std::vector<const SweepCell*> close;
  if (rec.noise_estimate)
    for (const SweepCell* c : identical)
      if (c->min_s <= fastest->max_s) close.push_back(c);
  const SweepCell* chosen = fastest;
  for (const SweepCell* c : close)
    if (c->workers < chosen->workers) chosen = c;  // ties in workers keep the lower median (sorted)

  rec.found = true;
  rec.workers = chosen->workers;
  rec.job_size = chosen->job_size;
  rec.median_s = chosen->median_s;
  rec.ledgers_per_s = chosen->ledgers_per_s;
  rec.speedup = chosen->speedup;
  if (close.size() > 1) {
    std::vector<std::string> described;
    for (const SweepCell* c : close) {
      rec.within_noise.push_back(c->Name());
      described.push_back(c->Describe());
    }
    rec.noise = fmt::format("the difference is within noise: {} overlap{}", fmt::join(described, ", "),
                            chosen == fastest ? fmt::format("; {} is the fastest and has the fewest workers of them",
                                                            chosen->Name())
                                              : fmt::format("; {} has the fewest workers of them", chosen->Name()));
  } else if (!rec.noise_estimate) {
    rec.noise = fmt::format("no noise estimate: {} measured once (--repeat 1), so the difference between cells may be "
                            "noise; rerun with --repeat 3 or more before relying on it",
                            identical.size() > 1 ? "cells were" : "the cell was");
  } else if (next) {
    rec.noise = fmt::format("a clear winner: {} is faster than the next-best identical cell, {}, beyond the noise "
                            "(the intervals do not overlap)",
                            fastest->Describe(), next->Describe());
  } else {
    rec.noise = fmt::format("the only identical cell: {}", fastest->Describe());
  }

  if (rec.every_parallel_divergent) {
    rec.reason = fmt::format("every parallel cell diverged ({}): stay serial", fmt::join(rec.divergent, ", "));
  } else if (close.size() > 1 && chosen != fastest) {
    rec.reason = fmt::format("within noise of the fastest ({}, {:.2f} s) with fewer workers", fastest->Name(),
                             fastest->median_s);
  } else if (close.size() > 1) {
    rec.reason = "the fastest cell whose every repeat is identical, with the fewest workers of those within noise";
  } else if (!rec.noise_estimate) {
    rec.reason = "the fastest cell whose every repeat is identical; no noise estimate (one repeat per cell)";
  } else if (next) {
    rec.reason = fmt::format("the fastest cell whose every repeat is identical, faster than the next-best ({}) "
                             "beyond the noise",
                             next->Name());
  } else {
    rec.reason = "the only cell whose every repeat is identical";
  }
  return rec;
}

UslFit FitCells(const std::vector<SweepCell>& cells, uint32_t job_size) {
  std::vector<UslPoint> points;
  for (const auto& c : cells)
    if (c.job_size == job_size && c.verdict == CellVerdict::kIdentical && c.ledgers_per_s > 0)
      points.push_back({static_cast<double>(c.workers), c.ledgers_per_s});
  return FitUsl(points);
}

namespace {

// One ingest + diff of a cell into `schema`; never fails the sweep (errors land in the repeat).
SweepRepeat RunRepeat(const std::string& conninfo, const SweepOptions& o, const dump::ProfileSpec& spec,
                      const std::string& reference_manifest, dump::DigestEngine engine, IngestOptions io,
                      pg::Connection& conn, Reporter& reporter) {
  SweepRepeat r;
  r.schema = io.plan.schema;
  ConnectionSampler sampler(conninfo, conn.BackendPid());
  auto ingested = RunIngest(conninfo, io, reporter);
  r.peak_connections = sampler.Stop();
  if (!ingested.ok()) {
    r.error = ingested.status().message();
  } else {
    r.wall_s = ingested->wall_s;
    r.rows = ingested->rows;
    r.attempts = ingested->attempts;
    r.retried_jobs = ingested->retried_jobs;
    if (!ingested->ok) r.error = ingested->error.empty() ? "ingestion failed" : ingested->error;
  }
  if (r.error.empty()) {
    diff::DiffOptions dopt;
    dopt.range = o.range;
    dopt.jobs = o.digest_jobs;
    dopt.max_rows = 5;
    dopt.engine = engine;
    auto diffed = diff::DiffSources(diff::ManifestSource{reference_manifest}, diff::SchemaSource{conninfo, io.plan.schema},
                                    spec, dopt, reporter);
    if (!diffed.ok()) {
      r.error = "diff: " + diffed.status().message();
    } else {
      r.ok = true;
      r.identical = diffed->identical;
      r.first_divergent_ledger = diffed->first_divergent_ledger;
    }
  }
  // A divergent schema is the evidence: kept. Everything else goes unless --keep.
  if (o.keep || (r.ok && !r.identical)) {
    r.kept = true;
  } else {
    (void)DropOwnedSchema(conn, io.plan.schema);
    (void)DeleteRun(conn, io.run_id);
  }
  return r;
}

}  // namespace

namespace {

// The reference every cell is diffed against: a serial ingest digested once into a manifest
// (kept in `temp_manifest` for the run), or the given baseline. The serial ingest runs like a
// cell: a warm-up, then `repeat` timed runs whose median is the speed-up's denominator; the first
// timed run's schema is digested, the others are dropped at once. Fills the report's reference
// fields and engine; returns the manifest's path.
Result<std::string> MakeSweepReference(const std::string& conninfo, const SweepOptions& o,
                                       const dump::ProfileSpec& spec, pg::Connection& conn,
                                       TempManifestDir& temp_manifest, SweepReport& rep, Reporter& reporter) {
  rep.engine = o.engine.value_or(dump::kDefaultEngine);
  if (!o.baseline.empty()) {
    if (!o.engine) {
      LD_ASSIGN_OR_RETURN(auto reader, dump::ManifestReader::Open(o.baseline));
      rep.engine = reader->header().engine;
    }
    rep.reference = "manifest " + o.baseline;
    return o.baseline;
  }
  uint32_t job_size = o.plan.ingest_cmd.empty() ? *std::max_element(o.job_sizes.begin(), o.job_sizes.end())
                                                : ingest::WholeRangeJobSize(o.range);
  rep.reference = fmt::format("serial ingest (1 worker, jobs of {})", job_size);
  const std::string kept_schema = ReferenceSchema(rep.run_id, 1);
  // Run 0 is the warm-up; runs 1..repeat are timed; run 1 is the reference that gets digested.
  for (uint32_t k = 0; k <= o.repeat; ++k) {
    if (TerminationInProgress()) return Status::Runtime("interrupted");
    IngestOptions io = CellIngestOptions(o, 1, job_size);
    const bool kept = k == 1;
    io.plan.schema = ReferenceSchema(rep.run_id, k);
    io.run_id = kept ? rep.run_id + "_ref" : fmt::format("{}_ref{}", rep.run_id, k);
    reporter.Note(k == 0 ? fmt::format("sweep: serial reference of {}, warm-up (not timed)", o.range.str())
                         : fmt::format("sweep: serial reference of {} into \"{}\", repeat {}/{}", o.range.str(),
                                       io.plan.schema, k, o.repeat));
    LD_ASSIGN_OR_RETURN(IngestReport serial, RunIngest(conninfo, io, reporter));
    if (!serial.ok) return Status::Runtimef("the serial reference ingest failed: {}", serial.error);
    if (k == 0)
      rep.reference_warmup_s = serial.wall_s;
    else
      rep.reference_runs_s.push_back(serial.wall_s);
    if (kept) {
      rep.reference_schema = io.plan.schema;
    } else {
      LD_RETURN_IF_ERROR(DropOwnedSchema(conn, io.plan.schema));
      (void)DeleteRun(conn, io.run_id);
    }
  }
  rep.reference_s = Median(rep.reference_runs_s);
  LD_ASSIGN_OR_RETURN(const std::string manifest_path, temp_manifest.Make(rep.run_id));
  dump::DigestOptions dopt;
  dopt.range = o.range;
  dopt.jobs = o.digest_jobs;
  dopt.phase = "reference digest";
  dopt.engine = rep.engine;
  LD_RETURN_IF_ERROR(
      dump::DigestToManifest(conninfo, kept_schema, spec, dopt, manifest_path, dump::ManifestDetail::kCompact, reporter)
          .status());
  return manifest_path;
}

// The grid, workers-major, each cell --repeat times against the reference.
Status RunSweepGrid(const std::string& conninfo, const SweepOptions& o, const dump::ProfileSpec& spec,
                    const std::string& reference_manifest, pg::Connection& conn, SweepReport& rep,
                    Reporter& reporter) {
  size_t total = o.workers.size() * o.job_sizes.size(), index = 0;
  for (uint32_t w : o.workers) {
    for (uint32_t j : o.job_sizes) {
      SweepCell cell;
      cell.workers = w;
      cell.job_size = j;
      cell.jobs = static_cast<uint32_t>((o.range.size() + j - 1) / j);
      cell.bug_injected = w > 1 && !o.hooks.bug.empty();
      ++index;
      for (uint32_t k = 1; k <= o.repeat; ++k) {
        if (TerminationInProgress()) return Status::Runtime("interrupted");
        IngestOptions io = CellIngestOptions(o, w, j);
        io.plan.schema = CellSchema(rep.run_id, w, j, k);
        io.run_id = fmt::format("{}_w{}_j{}_r{}", rep.run_id, w, j, k);
        reporter.Note(fmt::format("sweep: cell {}/{} (workers {}, job size {}), repeat {}/{}", index, total, w, j, k,
                                  o.repeat));
        SweepRepeat r = RunRepeat(conninfo, o, spec, reference_manifest, rep.engine, io, conn, reporter);
        reporter.Note(r.ok ? fmt::format("sweep: {} in {:.2f} s: {}", cell.Name(), r.wall_s,
                                         r.identical ? "identical"
                                                     : fmt::format("divergent at ledger {}",
                                                                   r.first_divergent_ledger.value_or(0)))
                           : fmt::format("sweep: {} failed: {}", cell.Name(), r.error));
        cell.repeats.push_back(std::move(r));
      }
      rep.cells.push_back(std::move(cell));
    }
  }
  return Status::Ok();
}

// Aggregates, the recommendation, and the USL fit at the recommended job size (or the job size
// with the highest throughput). Without a serial ingest, the 1-worker cell of the same job size
// is the serial time the speed-up is measured against.
void SummarizeSweep(const SweepOptions& o, SweepReport& rep) {
  for (auto& c : rep.cells) SummarizeCell(c, o.range, rep.reference_s);
  if (rep.reference_s == 0) {
    for (auto& c : rep.cells) {
      for (const auto& s : rep.cells)
        if (s.workers == 1 && s.job_size == c.job_size && s.verdict == CellVerdict::kIdentical)
          SummarizeCell(c, o.range, s.median_s);
    }
  }
  rep.recommendation = Recommend(rep.cells);
  rep.usl_job_size = rep.recommendation.found ? rep.recommendation.job_size : 0;
  if (!rep.recommendation.found) {
    double best = 0;
    for (const auto& c : rep.cells)
      if (c.ledgers_per_s > best) best = c.ledgers_per_s, rep.usl_job_size = c.job_size;
  }
  if (rep.usl_job_size) rep.usl = FitCells(rep.cells, rep.usl_job_size);
}

// The reference schema stays with the evidence (or with --keep).
Status DropSweepReference(const SweepOptions& o, pg::Connection& conn, SweepReport& rep) {
  bool any_divergent = std::any_of(rep.cells.begin(), rep.cells.end(),
                                   [](const SweepCell& c) { return c.verdict == CellVerdict::kDivergent; });
  if (rep.reference_schema.empty() || o.keep || any_divergent) return Status::Ok();
  LD_RETURN_IF_ERROR(DropOwnedSchema(conn, rep.reference_schema));
  (void)DeleteRun(conn, rep.run_id + "_ref");
  rep.reference_schema.clear();
  return Status::Ok();
}

}  // namespace

Result<SweepReport> RunSweep(const std::string& conninfo, const SweepOptions& o, Reporter& reporter) {
  LD_ASSIGN_OR_RETURN(const dump::ProfileSpec spec, ValidateSweepOptions(o));
  SweepReport rep;
  rep.options = o;
  rep.run_id = o.run_id.empty() ? NewRunId() : o.run_id;
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff sweep"));
  reporter.Plan("sweep", SweepPlan(o, rep.run_id));
  TempManifestDir temp_manifest;
  LD_ASSIGN_OR_RETURN(const std::string reference_manifest,
                      MakeSweepReference(conninfo, o, spec, *conn, temp_manifest, rep, reporter));
  LD_RETURN_IF_ERROR(RunSweepGrid(conninfo, o, spec, reference_manifest, *conn, rep, reporter));
  SummarizeSweep(o, rep);
  LD_RETURN_IF_ERROR(DropSweepReference(o, *conn, rep));
  return rep;
}

}  // namespace ledgerdiff::verify
