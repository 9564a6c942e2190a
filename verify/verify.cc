#include "verify/verify.h"

#include <cmath>
#include <cctype>
#include <filesystem>
#include <thread>

#include "core/atomic_file.h"
#include "core/report.h"
#include "core/stage_timer.h"
#include "core/database.h"
#include "core/process.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "ledgerdiff/version.h"
#include "core/redact.h"
#include "core/text.h"
#include "ingest/distributed.h"
#include "ingest/job_table.h"
#include "ingest/orchestrator.h"
#include "ingest/schema_guard.h"

namespace ledgerdiff::verify {

namespace {

// A baseline of the built-in ingester against a run of it with another density or seed.
Status CheckBaselineWorkload(const std::string& path, const dump::ManifestHeader& h, const ingest::IngestPlan& plan,
                             std::string_view who) {
  if (!h.workload || !plan.ingest_cmd.empty()) return Status::Ok();
  const std::string_view density = fixtures::ToString(plan.density);
  if (h.workload->density != density)
    return Status::Usagef("--baseline {}: it was made with --density {}, but {} uses --density {}; use --density {} "
                          "or save a baseline of this density",
                          path, h.workload->density, who, density, h.workload->density);
  if (h.workload->seed != plan.seed)
    return Status::Usagef("--baseline {}: it was made with --seed {}, but {} uses --seed {}; use --seed {} or save a "
                          "baseline of this seed",
                          path, h.workload->seed, who, plan.seed, h.workload->seed);
  return Status::Ok();
}

}  // namespace

std::string_view ToString(VerifyVerdict verdict) {
  switch (verdict) {
    case VerifyVerdict::kIdentical: return "identical";
    case VerifyVerdict::kDivergent: return "divergent";
    case VerifyVerdict::kIncomplete: return "incomplete";
    case VerifyVerdict::kError: return "error";
  }
  return "error";  // not reached: the switch names every verdict
}

int ExitCodeOf(VerifyVerdict verdict) { return verdict == VerifyVerdict::kIdentical ? 0 : 1; }

VerifyVerdict VerifyReport::verdict() const {
  if (!error.empty()) return VerifyVerdict::kError;
  switch (diff.verdict) {
    case diff::Verdict::kIdentical: return VerifyVerdict::kIdentical;
    case diff::Verdict::kDivergent: return VerifyVerdict::kDivergent;
    case diff::Verdict::kIncomplete: return VerifyVerdict::kIncomplete;
  }
  return VerifyVerdict::kError;  // not reached: the switch names every diff verdict
}

Status CheckBaselineFile(const std::string& path) {
  if (!std::filesystem::exists(path)) return Status::Usagef("--baseline {}: no such file", path);
  return CheckRegularFile(path, "--baseline " + path);
}

Status CheckBaselineFits(const std::string& path, const LedgerRange& range, const dump::ProfileSpec& spec,
                         std::optional<dump::DigestEngine> engine, const ingest::IngestPlan& plan,
                         std::string_view who, std::string_view does) {
  LD_RETURN_IF_ERROR(dump::ReadManifestSummary(path).status().With("--baseline " + path));
  LD_ASSIGN_OR_RETURN(auto reader, dump::ManifestReader::Open(path));
  const auto& h = reader->header();
  if (!(h.range == range))
    return Status::Usagef("--baseline {}: it covers ledgers {}, but {} {} {}", path, h.range.str(), who, does,
                          range.str());
  if (h.profile.name != spec.name)
    return Status::Usagef("--baseline {}: it was made with profile \"{}\", but {} uses \"{}\"", path,
                          h.profile.name, who, spec.name);
  if (h.tool_version != kVersion)
    return Status::Usagef("--baseline {}: it was made by ledgerdiff {}, this is {}; make a new baseline", path,
                          h.tool_version, kVersion);
  if (engine && *engine != h.engine)
    return Status::Usagef("--baseline {}: its digests were made by engine {}, but --engine is {}; digests of different "
                          "engines are never compared",
                          path, dump::ToString(h.engine), dump::ToString(*engine));
  return CheckBaselineWorkload(path, h, plan, who);
}

namespace {

IngestOptions SideOptions(const VerifyOptions& o, const std::string& schema, bool serial) {
  IngestOptions io;
  io.plan = o.plan;
  io.plan.schema = schema;
  io.plan.workers = serial ? 1 : o.plan.workers;
  // The serial side of an external ingester is the same template over the whole range.
  if (serial && !o.plan.ingest_cmd.empty()) io.plan.job_size = ingest::WholeRangeJobSize(o.plan.range);
  if (!serial) io.hooks = o.hooks;
  io.keep_database = o.keep_database;  // a failed side's resume hint names the kept cluster
  return io;
}


// Keeps the evidence: the schemas, and the embedded cluster that holds them. Fills the report's
// schemas_kept, kept_cluster, remove_command or evidence_gone; returns the reconnect flags.
std::string KeepEvidence(const VerifyOptions& o, VerifyReport& r) {
  if (!o.keep_database) {
    r.schemas_kept = true;
    return o.reconnect_flags;
  }
  auto kept = o.keep_database();
  if (!kept.ok() || kept->reconnect_flags.empty()) {
    r.schemas_kept = false;
    r.evidence_gone = "the embedded database is removed on exit, schemas included" +
                      (kept.ok() ? std::string() : " (" + kept.status().message() + ")") +
                      ": rerun with --keep-db DIR to keep them";
    return "";
  }
  r.schemas_kept = true;
  r.kept_cluster = kept->dir;
  r.remove_command = kept->remove_command;
  return kept->reconnect_flags;
}

// An ingestion's "--resume R_s" / "--resume R_p" hint names a side's run; `verify --resume`
// takes the verify run's id R.
std::string ResumeHintOfVerify(std::string error, const std::string& side_run_id, const std::string& verify_run_id) {
  const std::string from = "--resume " + side_run_id, to = "--resume " + verify_run_id;
  for (size_t at = error.find(from); at != std::string::npos; at = error.find(from, at + to.size())) {
    const size_t end = at + from.size();
    if (end < error.size() && (std::isalnum(static_cast<unsigned char>(error[end])) || error[end] == '_')) continue;
    error.replace(at, from.size(), to);
  }
  return error;
}

std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", \"" : "\"") + names[i] + "\"";
  return out;
}

bool RunExists(const std::string& conninfo, const std::string& run_id) {
  auto conn = pg::Connection::Open(conninfo, "ledgerdiff verify");
  return conn.ok() && ingest::LoadRun(**conn, run_id).ok();
}

}  // namespace

std::optional<WritingJob> FindWritingJob(const IngestReport& run, Ledger ledger) {
  std::optional<WritingJob> found;
  for (const auto& a : run.timeline) {
    if (a.outcome != ingest::AttemptOutcome::kDone || ledger < a.range.from || ledger > a.range.to) continue;
    if (found && found->attempt > a.attempt) continue;
    found = WritingJob{a.job_id, a.attempt, a.worker, a.range,
                       ledger == a.range.from ? "first" : ledger == a.range.to ? "last" : "inner"};
  }
  return found;
}

Result<dump::ProfileSpec> ValidateVerifyOptions(const VerifyOptions& o) {
  // Both sides as RunVerify derives them: a side's plan is never first checked mid-run.
  for (const bool serial : {false, true})
    LD_RETURN_IF_ERROR(ingest::ValidateIngestOptions(SideOptions(o, "probe", serial)));
  if (!o.baseline.empty() && !o.save_baseline.empty())
    return Status::Usage("--baseline and --save-baseline cannot be combined");
  if (!o.baseline.empty()) LD_RETURN_IF_ERROR(CheckBaselineFile(o.baseline));
  if (o.diff.jobs < 1) return Status::Usage("--jobs must be at least 1");
  if (!std::isfinite(o.workers_timeout_s) || o.workers_timeout_s < 0)
    return Status::Usagef("--workers-timeout {}: must be a number of seconds from 0 (0: no limit)",
                          o.workers_timeout_s);
  if (o.profile_spec) return *o.profile_spec;
  return dump::LoadProfileSpec(o.table_profile);
}

namespace {

// Fills a resumed verify's options from its runs in the job table.
Result<VerifyOptions> ResumeOptions(const std::string& conninfo, const VerifyOptions& given) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff verify"));
  LD_RETURN_IF_ERROR(ingest::EnsureControlSchema(*conn));
  auto serial = ingest::LoadRun(*conn, given.resume_run + "_s");
  auto parallel = ingest::LoadRun(*conn, given.resume_run + "_p");
  if (!serial.ok() && !parallel.ok())
    return Status::Usagef("--resume {}: no verify run with that id in this database", given.resume_run);
  const ingest::RunSpec& any = serial.ok() ? *serial : *parallel;
  VerifyOptions o = given;
  o.run_id = given.resume_run;
  o.plan.range = any.plan.range;
  o.plan.seed = any.plan.seed;
  o.plan.density = any.plan.density;
  o.plan.ingest_cmd = any.plan.ingest_cmd;
  if (parallel.ok()) {
    o.plan.workers = parallel->plan.workers;
    o.plan.job_size = parallel->plan.job_size;
    o.hooks.bug = parallel->hooks.bug;
  } else if (any.plan.ingest_cmd.empty()) {
    // Interrupted in the serial ingest: it ran with the run's job size (SideOptions).
    o.plan.job_size = serial->plan.job_size;
  }
  return o;
}

// ld_<run>_serial / ld_<run>_parallel.
std::string SideSchema(const std::string& run_id, bool serial) {
  return "ld_" + run_id + (serial ? "_serial" : "_parallel");
}

}  // namespace

std::string DropSchemasCommand(const std::string& reconnect_flags, const std::vector<std::string>& schemas) {
  std::string cmd = "ledgerdiff drop --cancel";
  if (!reconnect_flags.empty()) cmd += " " + reconnect_flags;
  for (const std::string& s : schemas) cmd += " --schema " + ShellQuote(s, ShellQuoting::kWhenNeeded);
  return cmd;
}

std::vector<std::string> VerifySchemas(const VerifyOptions& o) {
  const std::string& run_id = o.resume_run.empty() ? o.run_id : o.resume_run;
  std::vector<std::string> schemas;
  if (o.baseline.empty())
    schemas.push_back(o.reuse_serial_schema.empty() ? SideSchema(run_id, true) : o.reuse_serial_schema);
  schemas.push_back(SideSchema(run_id, false));
  return schemas;
}

std::vector<std::string> VerifyReport::schemas() const {
  std::vector<std::string> out;
  for (const std::string* s : {&serial_schema, &parallel_schema})
    if (!s->empty()) out.push_back(*s);
  return out;
}

namespace {

// One verify run's state, shared by its stages. Each stage returns an error (the run ends with it)
// or fills `report`; a stage that ends the run early with a report sets `done`.
struct VerifyRunState {
  const std::string& conninfo;
  VerifyOptions o;
  Reporter& reporter;
  dump::ProfileSpec spec;
  VerifyReport report;
  std::vector<std::string> schemas;  // this run's own schemas (a reused serial schema is not)
  std::unique_ptr<pg::Connection> conn;
  bool done = false;
};

// Everything that can be checked before work is, so that nothing is ingested for a run that
// cannot finish: the connection budget of the larger side (the sides run one after the other;
// this session counts in it as it will then), and this run's schema names, claimed by taking
// their run locks on this session (schema_guard.h): a `plan` or another run into them is refused
// meanwhile. Each side's ingestion takes its schema's lock over (ReleaseSchemaClaim).
Status ClaimBeforeWork(VerifyRunState& s) {
  const VerifyOptions& o = s.o;
  if (!o.workers_external)
    LD_RETURN_IF_ERROR(ingest::CheckConnectionBudget(*s.conn, o.plan.workers, !o.plan.ingest_cmd.empty(),
                                                     /*wait_s=*/o.resume_run.empty() ? 0 : 5));
  // A resumed run's killed predecessor may hold the locks for a moment after its death.
  const double wait_s = o.resume_run.empty() ? 0 : std::max(10.0, o.plan.job_timeout_s);
  for (const std::string& schema : s.schemas) LD_RETURN_IF_ERROR(ingest::LockSchemaForRun(*s.conn, schema, wait_s));
  return Status::Ok();
}

// Hands `schema` over to the ingestion that is about to take its run lock on its own session.
Status ReleaseSchemaClaim(VerifyRunState& s, const std::string& schema) {
  if (std::find(s.schemas.begin(), s.schemas.end(), schema) == s.schemas.end()) return Status::Ok();
  return ingest::UnlockSchema(*s.conn, schema);
}

// Resume, validation, the profile and the baseline's compatibility: nothing is ingested before
// every input is known good.
Status PrepareVerifyRun(VerifyRunState& s, const VerifyOptions& given) {
  if (!given.resume_run.empty()) {
    LD_ASSIGN_OR_RETURN(s.o, ResumeOptions(s.conninfo, given));
  }
  const VerifyOptions& o = s.o;
  LD_ASSIGN_OR_RETURN(s.spec, ValidateVerifyOptions(o));
  if (!o.baseline.empty())
    LD_RETURN_IF_ERROR(
        CheckBaselineFits(o.baseline, o.plan.range, s.spec, o.diff.engine, o.plan, "this run", "verifies"));

  VerifyReport& r = s.report;
  r.run_id = o.run_id.empty() ? NewRunId() : o.run_id;
  r.range = o.plan.range;
  r.workers = o.plan.workers;
  r.job_size = o.plan.job_size;
  r.bug = o.hooks.bug;
  r.baseline = o.baseline;
  r.parallel_schema = SideSchema(r.run_id, false);
  LD_ASSIGN_OR_RETURN(s.conn, pg::Connection::Open(s.conninfo, "ledgerdiff verify"));
  if (o.baseline.empty() && o.reuse_serial_schema.empty()) s.schemas.push_back(SideSchema(r.run_id, true));
  s.schemas.push_back(r.parallel_schema);
  return ClaimBeforeWork(s);
}

// Ctrl-C: in a database that outlives the process the run and its schemas stay; the message says
// so and how to go on or drop them (in the embedded default they go with the cluster, which says so).
std::function<std::string()> VerifyInterruptedMessage(const VerifyRunState& s) {
  if (s.o.database_removed_on_exit) return nullptr;
  return [run_id = s.report.run_id, schemas = s.schemas, flags = s.o.reconnect_flags] {
    return fmt::format(
        "verify run {} stays in the database with its schemas {} (those created so far): "
        "continue it with `ledgerdiff verify --resume {}{}{}`, or drop them with `{}`",
        run_id, QuotedList(schemas), run_id, flags.empty() ? "" : " ", flags, DropSchemasCommand(flags, schemas));
  };
}

// The serial side (unless a baseline stands in for it, or a reused schema is it). A failed
// ingestion ends the run with a report that says how to resume it.
Status IngestSerialSide(VerifyRunState& s) {
  const VerifyOptions& o = s.o;
  VerifyReport& r = s.report;
  if (!o.baseline.empty()) return Status::Ok();
  if (!o.reuse_serial_schema.empty()) {
    r.serial_schema = o.reuse_serial_schema;
    return Status::Ok();
  }
  r.serial_schema = SideSchema(r.run_id, true);
  s.reporter.Note(fmt::format("serial ingest of {} into \"{}\"", o.plan.range.str(), r.serial_schema));
  IngestOptions so = SideOptions(o, r.serial_schema, /*serial=*/true);
  LD_RETURN_IF_ERROR(ReleaseSchemaClaim(s, r.serial_schema));
  so.run_id = r.run_id + "_s";
  if (!o.resume_run.empty() && RunExists(s.conninfo, so.run_id)) so.resume_run = so.run_id;
  LD_ASSIGN_OR_RETURN(IngestReport serial, ingest::RunIngest(s.conninfo, so, s.reporter));
  AddStageSeconds(r.phases, "serial ingest", serial.wall_s);
  r.serial = serial;
  if (serial.ok) return Status::Ok();
  r.error = "serial ingest failed: " + ResumeHintOfVerify(serial.error, so.run_id, r.run_id);
  // A resume hint kept the embedded cluster (ingest::ResumeHint): the report says where.
  if (o.keep_database && serial.error.find("--resume ") != std::string::npos) {
    if (auto kept = o.keep_database(); kept.ok()) {
      r.kept_cluster = kept->dir;
      r.remove_command = kept->remove_command;
    }
  }
  s.done = true;
  return Status::Ok();
}

// The parallel side, by the orchestrator's workers or by external ones (`ledgerdiff worker`).
Status IngestParallelSide(VerifyRunState& s) {
  const VerifyOptions& o = s.o;
  VerifyReport& r = s.report;
  s.reporter.Note(fmt::format("parallel ingest of {} into \"{}\" with {}, jobs of {}", o.plan.range.str(),
                              r.parallel_schema, FormatCountOf(o.plan.workers, "worker"),
                              FormatCountOf(o.plan.job_size, "ledger")));
  IngestOptions po = SideOptions(o, r.parallel_schema, /*serial=*/false);
  po.run_id = r.run_id + "_p";
  if (!o.resume_run.empty() && RunExists(s.conninfo, po.run_id)) po.resume_run = po.run_id;
  LD_RETURN_IF_ERROR(ReleaseSchemaClaim(s, r.parallel_schema));
  if (o.workers_external) {
    auto external = ingest::RunWithExternalWorkers(s.conninfo, po, o.workers_timeout_s, o.reconnect_flags, s.reporter);
    if (!external.ok()) {
      if (external.status().kind() != Status::Kind::kRuntime) return external.status();
      // Given up on (a timeout): say what stays and how to remove it.
      if (o.database_removed_on_exit)
        return external.status().With(
            fmt::format("verify {} (its schemas go with the embedded cluster, removed on exit)", r.run_id));
      return Status::Runtimef("verify {}: {}; its schemas {} remain in the database: drop them with `{}`", r.run_id,
                              external.status().message(), QuotedList(s.schemas),
                              DropSchemasCommand(o.reconnect_flags, s.schemas));
    }
    r.parallel = std::move(external).value();
  } else {
    LD_ASSIGN_OR_RETURN(r.parallel, ingest::RunIngest(s.conninfo, po, s.reporter));
  }
  // What the parallel side really ran with (a resumed run takes its plan from the job table).
  r.workers = r.parallel.workers ? r.parallel.workers : r.workers;
  r.job_size = r.parallel.job_size ? r.parallel.job_size : r.job_size;
  AddStageSeconds(r.phases, "parallel ingest", r.parallel.wall_s);
  if (r.serial && r.parallel.wall_s > 0) r.speedup = r.serial->wall_s / r.parallel.wall_s;
  if (!r.parallel.ok) {
    r.error = "parallel ingest failed: " + ResumeHintOfVerify(r.parallel.error, po.run_id, r.run_id);
    (void)KeepEvidence(o, r);
    s.done = true;
  }
  return Status::Ok();
}

// --save-baseline: the serial side's manifest.
Status SaveSerialBaseline(VerifyRunState& s) {
  const VerifyOptions& o = s.o;
  VerifyReport& r = s.report;
  if (o.save_baseline.empty()) return Status::Ok();
  const Stopwatch saving;
  dump::DigestOptions dopt;
  dopt.range = o.plan.range;
  dopt.jobs = o.diff.jobs;
  dopt.phase = "baseline digest";
  dopt.engine = o.diff.engine.value_or(dump::kDefaultEngine);
  std::optional<dump::ManifestWorkload> workload;  // what the built-in ingester generated
  if (o.plan.ingest_cmd.empty()) workload = dump::ManifestWorkload{std::string(fixtures::ToString(o.plan.density)), o.plan.seed};
  LD_ASSIGN_OR_RETURN(auto summary, dump::DigestToManifest(s.conninfo, r.serial_schema, s.spec, dopt, o.save_baseline,
                                                           dump::ManifestDetail::kCompact, s.reporter, std::nullopt,
                                                           workload));
  r.saved_baseline = o.save_baseline;
  AddStageSeconds(r.phases, "save baseline", saving.Seconds());
  s.reporter.Note(fmt::format("baseline written to {} ({} bytes)", o.save_baseline, FormatCount(summary.manifest_bytes)));
  return Status::Ok();
}

// Both sides' digests and the diff. A failed diff keeps the evidence and says where it is, so
// nothing is left behind unannounced.
Status DiffVerifySides(VerifyRunState& s) {
  const VerifyOptions& o = s.o;
  VerifyReport& r = s.report;
  diff::Source left = o.baseline.empty() ? diff::Source{diff::SchemaSource{s.conninfo, r.serial_schema}}
                                         : diff::Source{diff::ManifestSource{o.baseline}};
  diff::Source right = diff::SchemaSource{s.conninfo, r.parallel_schema};
  diff::DiffOptions dopt = o.diff;
  dopt.range = o.plan.range;
  dopt.all = true;
  auto diffed = diff::DiffSources(left, right, s.spec, dopt, s.reporter);
  if (!diffed.ok()) {
    std::string flags = KeepEvidence(o, r);
    if (!r.schemas_kept) return diffed.status().With("diff (" + r.evidence_gone + ")");
    return diffed.status().With(fmt::format("diff (schemas kept: {}{}{})",
                                            r.serial_schema.empty() ? "" : "\"" + r.serial_schema + "\", ",
                                            "\"" + r.parallel_schema + "\"",
                                            r.kept_cluster.empty() ? "" : " in " + flags));
  }
  r.diff = std::move(diffed).value();
  AddStageSeconds(r.phases, "digests", r.diff.digest_seconds);
  AddStageSeconds(r.phases, "diff", r.diff.row_diff_seconds);
  r.identical = r.diff.identical;
  if (r.diff.first_divergent_ledger)
    r.first_divergent_job = FindWritingJob(r.parallel, *r.diff.first_divergent_ledger);
  return Status::Ok();
}

// After a pass the run's schemas and job-table runs go (unless --keep); after a divergence the
// evidence stays and the report says how to look again.
Status CleanUpOrKeepEvidence(VerifyRunState& s) {
  const VerifyOptions& o = s.o;
  VerifyReport& r = s.report;
  if (r.identical && !o.keep) {
    if (o.reuse_serial_schema.empty() && !r.serial_schema.empty())
      LD_RETURN_IF_ERROR(DropOwnedSchema(*s.conn, r.serial_schema));
    LD_RETURN_IF_ERROR(DropOwnedSchema(*s.conn, r.parallel_schema));
    (void)ingest::DeleteRun(*s.conn, r.run_id + "_s");
    (void)ingest::DeleteRun(*s.conn, r.run_id + "_p");
    return Status::Ok();
  }
  const std::string reconnect_flags = KeepEvidence(o, r);
  if (!r.schemas_kept) return Status::Ok();
  std::string left_arg = o.baseline.empty() ? r.serial_schema : "file:" + o.baseline;
  r.look_again = fmt::format("ledgerdiff diff {}{}{} {} --range {}", reconnect_flags, reconnect_flags.empty() ? "" : " ",
                             ShellQuote(left_arg, ShellQuoting::kWhenNeeded),
                             ShellQuote(r.parallel_schema, ShellQuoting::kWhenNeeded), o.plan.range.str());
  return Status::Ok();
}

}  // namespace

double PlannedRows(const ingest::IngestPlan& plan, const LedgerRange& range) {
  return static_cast<double>(plan.ingest_cmd.empty()
                                 ? fixtures::EstimatedRowCount(fixtures::GeneratorConfig{plan.seed, plan.density}, range)
                                 : range.size());
}

double OnCores(double threads) {
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1.0, std::min(threads, cores / kCoresPerStream));
}

CommandPlan VerifyPhases(const VerifyOptions& o) {
  const std::vector<std::string> schemas = VerifySchemas(o);
  const double rows = PlannedRows(o.plan, o.plan.range);
  CommandPlan plan;
  const bool serial_ingest = o.baseline.empty() && o.reuse_serial_schema.empty();
  if (serial_ingest) plan.push_back({"serial ingest", {fmt::format("ingest \"{}\"", schemas.front())}, rows});
  plan.push_back({"parallel ingest", {fmt::format("ingest \"{}\"", schemas.back())},
                  rows / OnCores(o.plan.workers)});
  if (!o.save_baseline.empty())
    plan.push_back({"baseline digest", {"baseline digest"}, rows * kDigestCostPerRow / OnCores(o.diff.jobs)});
  const double sides = o.baseline.empty() ? 2 : 1;
  plan.push_back({"digests",
                  o.baseline.empty() ? std::vector<std::string>{"digest left", "digest right"}
                                     : std::vector<std::string>{"digest right"},
                  rows * sides * kDigestCostPerRow / OnCores(sides * o.diff.jobs)});
  plan.push_back({"diff and clean-up", {}, rows * kFinishCostPerRow});
  return plan;
}

Result<VerifyReport> RunVerify(const std::string& conninfo, const VerifyOptions& options, Reporter& reporter) {
  VerifyRunState s{conninfo, options, reporter, {}, {}, {}, nullptr};
  LD_RETURN_IF_ERROR(PrepareVerifyRun(s, options));
  VerifyOptions planned = s.o;
  planned.run_id = s.report.run_id;
  planned.resume_run.clear();
  reporter.Plan("verify", VerifyPhases(planned));
  ScopedCleanup interrupted(VerifyInterruptedMessage(s));
  for (Status (*stage)(VerifyRunState&) :
       {IngestSerialSide, IngestParallelSide, SaveSerialBaseline, DiffVerifySides, CleanUpOrKeepEvidence}) {
    LD_RETURN_IF_ERROR(stage(s));
    if (s.done) break;
  }
  return std::move(s.report);
}

}  // namespace ledgerdiff::verify
