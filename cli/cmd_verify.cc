// verify (the CI gate), verify-range (the cut-over check) and selftest (the gate's self-test).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "cli/command.h"
#include "core/atomic_file.h"
#include "core/ledger_range.h"
#include "core/process.h"
#include "core/text.h"
#include "dump/profile.h"
#include "verify/follow.h"
#include "verify/selftest.h"
#include "verify/verify.h"
#include "report/gate.h"
#include "report/metrics.h"
#include "report/selftest_text_json.h"
#include "report/verify_text_json.h"
#include "report/diff_text_json.h"

namespace ledgerdiff::cli {

namespace {

// Evidence in the embedded default cluster would die with this process: keep the cluster.
void WireEvidenceKeeping(Database& db, verify::VerifyOptions& o) {
  o.reconnect_flags = ReconnectFlags(db);
  o.keep_database = db.Keeper();
  o.database_removed_on_exit = db.ephemeral();
}

}  // namespace

void AddReportFlags(CLI::App* sub, ReportFiles& files) {
  sub->add_option("--junit", files.junit, "Also write a JUnit XML report to FILE (one test case per check)")
      ->check(WritableFile());
  sub->add_option("--markdown", files.markdown, "Also write a Markdown summary to FILE")->check(WritableFile());
  sub->add_option("--metrics", files.metrics,
                  "Also write the outcome as Prometheus text to FILE, replaced atomically (node_exporter's textfile "
                  "collector)")
      ->check(WritableFile());
  sub->add_option("--report", files.report_dir, "Also write a self-contained HTML report into DIR")
      ->check(WritableDirectory({"index.html"}));
}

Status EmitReports(const GateReports& reports, const ReportFiles& files) {
  return EmitGateReports(reports, files, CiEnvironment::FromEnvironment());
}

Action SetupVerify(CLI::App* sub) {
  struct Flags {
    std::string range;
    verify::VerifyOptions options;
    ReportFiles reports;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--resume", o.resume_run, "Continue an interrupted verify run (its run id) from the job table");
  AddPlanFlags(sub, o.plan);
  AddDigestProfileFlag(sub, o.table_profile);
  auto engine = AddDigestEngineFlag(sub);
  sub->add_option("--jobs", o.diff.jobs, "Digest connections per side")->capture_default_str();
  sub->add_option("--max-rows", o.diff.max_rows, "Rows shown per table in the row diff")->capture_default_str();
  sub->add_flag("--keep", o.keep, "Keep both schemas after a pass too");
  sub->add_option("--ingest-cmd", o.plan.ingest_cmd,
                  "External ingester per job (and over the whole range for the serial side); placeholders {from} {to} "
                  "{schema} {db} {worker} {job}");
  sub->add_option("--inject-bug", o.hooks.bug,
                  "Self-test: the parallel side misbehaves at one ledger, KIND@LEDGER (" + InjectBugKinds() + ")");
  sub->add_flag("--workers-external", o.workers_external,
                "Start no parallel workers: register the run and wait for `ledgerdiff worker --run ID` from elsewhere");
  sub->add_option("--workers-timeout", o.workers_timeout_s,
                  "With --workers-external: give up after S seconds (the run is cancelled; exit 3); default: wait forever");
  sub->add_option("--save-baseline", o.save_baseline, "Write the serial side's manifest to FILE")->check(WritableFile());
  sub->add_option("--baseline", o.baseline, "Compare the parallel run against this manifest (no serial ingest)");
  AddReportFlags(sub, f->reports);
  Action a;
  a.check = [f, engine]() -> Status {
    auto& o = f->options;
    o.diff.engine = engine();  // nullopt: the baseline's, else the default
    if (o.resume_run.empty() || !f->range.empty()) {
      if (f->range.empty()) return Status::Usage("--range FROM:TO is required");
      LD_ASSIGN_OR_RETURN(o.plan.range, ParseLedgerRange(f->range));
    }
    // A resumed verify takes its plan from the job table; it is checked then.
    if (!o.resume_run.empty()) return Status::Ok();
    LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, verify::ValidateVerifyOptions(o));
    o.profile_spec = std::make_shared<const dump::ProfileSpec>(std::move(spec));  // the run's, not read again
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    // Both sides' digests run next to the workers: size the embedded server for all of them.
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database(EmbeddedWorkersFor(f->options.plan, f->options.plan.workers) +
                                                    2 * std::min(f->options.diff.jobs, 1000)));
    if (f->options.workers_external && db->ephemeral())
      return Status::Usage(
          "--workers-external: workers started elsewhere cannot reach the embedded throwaway server, and its run "
          "dies with this process; pass --db CONNINFO (or LEDGERDIFF_DB), or --keep-db DIR for workers on this "
          "machine");
    // The run id is chosen here so that the target line can name the schemas before the run.
    if (f->options.run_id.empty() && f->options.resume_run.empty()) f->options.run_id = NewRunId();
    Target announced = db->target(verify::VerifySchemas(f->options));
    announced.kept_if = "the run diverges or fails, or --keep";  // WireEvidenceKeeping
    ctx.Announce(announced);
    WireEvidenceKeeping(*db, f->options);
    LD_ASSIGN_OR_RETURN(auto report, verify::RunVerify(db->conninfo(), f->options, ctx.reporter()));
    report.target = db->target(report.schemas());  // kept or not, as it stands now
    const Status written = EmitReports(report::VerifyReports(report), f->reports);
    Outcome out;
    out.json = report::VerifyReportToJson(report);
    out.text = report::RenderVerifyText(report);
    out.error = report.error;
    out.exit_code = verify::ExitCodeOf(report.verdict());
    AddWriteFailure(out, written);
    return out;
  };
  return a;
}

namespace {

// verify-range --follow: a line per cycle on stderr (with the progress), the metrics file after
// every cycle; stdout gets the outcome at the end. The other reports (--junit, --markdown,
// --report): a divergence's are those of a verify-range over it; a run that stops without one
// (--until reached, --cycles ran, SIGINT/SIGTERM/SIGHUP) writes those of its cycles
// (report::FollowReports), from the termination handler's thread on a signal. Either is written
// once.
Result<Outcome> RunFollowCommand(const verify::ValidFollowOptions& valid, const std::optional<TargetPair>& targets,
                                 const ReportFiles& files, Context& ctx) {
  const verify::FollowOptions& o = valid.get();
  Reporter& reporter = ctx.reporter();
  Status metrics_written;
  report::FollowTotals totals;
  ReportFiles rest = files;
  rest.metrics.clear();  // written per cycle
  // The cycles so far, shared with the cleanup that writes the reports on a signal.
  struct SoFar {
    std::mutex mu;
    verify::FollowReport run;
    bool written = false;  // the reports were written (or are being written): not again
    bool found = false;    // a cycle of this run found a divergence
    bool printed = false;  // the outcome is printed (by main) or the signal's summary is: not again
  };
  auto so_far = std::make_shared<SoFar>();
  auto on_cycle = [&](const verify::FollowCycle& c) {
    reporter.Note(report::RenderFollowCycle(c));
    totals.Add(c);
    {
      std::lock_guard<std::mutex> lock(so_far->mu);
      so_far->run.cycles.push_back(c);
      so_far->run.first = c.first;
      so_far->run.frontier = c.frontier;
      so_far->found = so_far->found || c.finding.has_value();
      so_far->run.diverged = so_far->found || !c.open.empty();  // as verify::FollowReport::diverged
      so_far->run.cycles_total = c.number;
      so_far->run.open_divergences = c.open.size();
    }
    if (!files.metrics.empty()) {
      ReportFiles only;
      only.metrics = files.metrics;
      const Status st = EmitReports(report::FollowCycleReports(c, totals), only);
      if (!st.ok() && metrics_written.ok()) metrics_written = st;
    }
  };
  const bool any_report = !rest.junit.empty() || !rest.markdown.empty() || !rest.report_dir.empty();
  ScopedCleanup on_signal(any_report ? std::function<std::string()>([so_far, o, rest]() -> std::string {
    verify::FollowReport run;
    {
      std::lock_guard<std::mutex> lock(so_far->mu);
      if (so_far->written || so_far->run.cycles.empty()) return "";
      so_far->written = true;
      run = so_far->run;
    }
    const Status st = EmitReports(report::FollowReports(run, o, "a termination signal"), rest);
    return st.ok() ? fmt::format("wrote the reports of the {} finished", FormatCountOf(run.cycles.size(), "cycle"))
                   : "could not write the reports: " + st.message();
  })
                                                 : std::function<std::string()>());
  // A signal: where the follower stopped on stdout, in the output asked for (and --json FILE).
  ScopedCleanup summary([so_far, o, format = ctx.format(), json_file = ctx.json_file()]() -> std::string {
    verify::FollowReport run;
    {
      std::lock_guard<std::mutex> lock(so_far->mu);
      if (so_far->printed) return "";
      so_far->printed = true;
      run = so_far->run;
    }
    if (run.cycles.empty()) {  // none finished in this run: the state on disk says where it is
      auto state = verify::LoadFollowState(o.state_dir);
      if (state.ok()) {
        run.first = state->from;
        run.frontier = state->VerifiedThrough();
        run.cycles_total = state->cycles;
        run.open_divergences = state->open_divergences.size();
        run.diverged = !state->open_divergences.empty();
      } else {  // no state yet (or unreadable): nothing verified
        run.first = std::max<Ledger>(o.from, 1);
        run.frontier = run.first - 1;
      }
    }
    const std::string why = "a termination signal";
    const std::string doc = report::FollowToJson(run, o, nullptr, why).dump(2) + "\n";
    const std::string out = format == OutputFormat::kJson ? doc : report::RenderFollowStopped(run, why);
    (void)!::write(STDOUT_FILENO, out.data(), out.size());
    if (!json_file.empty()) (void)WriteFileAtomic(json_file, doc);
    return "";
  });
  LD_ASSIGN_OR_RETURN(verify::FollowReport r, verify::RunFollow(valid, reporter, on_cycle));
  {
    std::lock_guard<std::mutex> lock(so_far->mu);
    so_far->printed = true;  // main prints the outcome
  }
  const verify::FollowCycle* stopped = nullptr;
  for (const auto& c : r.cycles)
    if (c.finding) stopped = &c;
  // The last finding in full: the same report (and files) a verify-range over it gives.
  std::optional<verify::VerifyRangeReport> finding;
  if (stopped) {
    finding = stopped->finding->report;
    finding->diff.targets = targets;  // unset when a server did not answer at start
  }
  Outcome out{r.diverged ? 1 : 0, report::RenderFollowText(r, o, stopped, finding ? &*finding : nullptr),
              report::FollowToJson(r, o, finding ? &*finding : nullptr), ""};
  bool write = true;
  {
    std::lock_guard<std::mutex> lock(so_far->mu);
    write = !so_far->written;
    so_far->written = true;
  }
  if (write && finding) {
    const verify::VerifyRangeReport& vr = *finding;
    AddWriteFailure(out, EmitReports(report::VerifyRangeReports(vr), rest));
  } else if (write) {
    const std::string stopped_by = r.reached_until ? fmt::format("--until {} reached", o.until.value_or(0))
                                                   : fmt::format("--cycles {} ran", o.max_cycles);
    AddWriteFailure(out, EmitReports(report::FollowReports(r, o, stopped_by), rest));
  }
  AddWriteFailure(out, metrics_written);
  return out;
}

struct VerifyRangeFlags {
  std::string range;
  int64_t shard = -1;
  verify::VerifyRangeOptions options;
  ReportFiles reports;
  bool follow = false;
  verify::FollowOptions follow_options;
  // What the check validated, which the run takes: `valid` for a one-shot run, else `valid_follow`.
  std::optional<verify::ValidVerifyRangeOptions> valid;
  std::optional<verify::ValidFollowOptions> valid_follow;
  Ledger until = 0;
  bool skip_state = false;
  std::string recheck;  // --recheck A:B
};

void AddVerifyRangeSideFlags(CLI::App* sub, VerifyRangeFlags& f) {
  auto& o = f.options;
  sub->add_option("--range", f.range, "Ledgers FROM:TO (inclusive); with --follow also FROM: (open-ended)");
  sub->add_option("--left", o.left, "The database that served so far (conninfo)")->required();
  sub->add_option("--right", o.right, "The re-ingested database (conninfo)")->required();
  sub->add_option("--left-schema", o.left_schema, "Schema on the left")->capture_default_str();
  sub->add_option("--right-schema", o.right_schema, "Schema on the right")->capture_default_str();
  AddDigestProfileFlag(sub, o.table_profile);
}

void AddVerifyRangeCompareFlags(CLI::App* sub, VerifyRangeFlags& f) {
  auto& o = f.options;
  sub->add_option("--jobs", o.diff.jobs, "Digest connections per side")->capture_default_str();
  sub->add_option("--max-rows", o.diff.max_rows, "Rows shown per table in the row diff")->capture_default_str();
  sub->add_flag("--all", o.diff.all, "List every divergent ledger per table as intervals");
  sub->add_flag("--allow-empty", o.diff.allow_empty, "Accept zero rows on both sides as identical (else exit 2)");
  sub->add_flag("--allow-gaps", o.diff.allow_gaps,
                "Accept ledgers of --range that a side does not hold (else the verdict is incomplete, exit 1); they "
                "are still listed");
  sub->add_option("--allow-missing-table", o.diff.allow_missing_tables,
                  "A table the profile requires that neither side has is accepted (listed as not compared) instead "
                  "of making the verdict incomplete (exit 1); repeat for several");
  sub->add_option("--shards", o.shards,
                  "Compare one shard of N (deterministic contiguous slices of --range) and write its part (--out); "
                  "join the parts with `manifest merge`");
  sub->add_option("--shard", f.shard,
                  "Which shard, 0..N-1 (default: $JOB_COMPLETION_INDEX, else $AWS_BATCH_JOB_ARRAY_INDEX, else $SLURM_ARRAY_TASK_ID)");
  sub->add_option("--out", o.out,
                  "Write the left side's manifest with the outcome (.ldm; a partial one with --shards)")
      ->check(WritableFile());
  sub->add_flag("--resume", o.resume,
                "Continue an interrupted verify-range --out FILE from its checkpoint FILE.partial (same range, "
                "shard, profile, schemas and databases; the ledgers in it are not digested again)");
  sub->add_flag("--skip-state", f.skip_state,
                "Accept state tables (accounts, offers, ...) at different ledgers on the two sides: reported, not "
                "compared, verdict unchanged (else incomplete, exit 1); with --follow: never compare state");
  sub->add_option("--state-wait", o.state.wait_s,
                  "Seconds to read both sides' state again until their state ledgers (key_value_store "
                  "exp_ingest_last_ledger) are equal, then compare the state tables (0: read once)")
      ->capture_default_str();
  sub->add_option("--state-split-rows", o.state.split_rows,
                  "A differing bucket of state rows holding more rows than this is split into sub-buckets (their "
                  "digests compared on the server) instead of being read whole")
      ->capture_default_str()
      ->check(CLI::Range(uint32_t{1}, std::numeric_limits<uint32_t>::max()));
}

void AddVerifyRangeFollowFlags(CLI::App* sub, VerifyRangeFlags& f) {
  auto& fo = f.follow_options;
  sub->add_flag("--follow", f.follow,
                "Verify continuously: every --interval, compare the ledgers both sides gained since, and scrub the "
                "verified ones (needs --state and --from). Each cycle's lag is how many ledgers the verified frontier "
                "trails the higher head: a side behind + ledgers held back by an open divergence + ledgers not "
                "compared yet (of which a side's gaps)");
  sub->add_option("--state", fo.state_dir,
                  "With --follow: the directory that keeps what was verified (a restart continues from it); a new or "
                  "empty directory or a follow state's own: any other is refused");
  sub->add_option("--from", fo.from, "With --follow: the first ledger to verify");
  sub->add_option("--until", f.until, "With --follow: stop once verified through this ledger (default: never)");
  sub->add_option("--interval", fo.interval_s, "With --follow: seconds between the starts of two cycles")
      ->capture_default_str();
  sub->add_option("--settle", fo.settle, "With --follow: ignore each side's newest N ledgers")->capture_default_str();
  sub->add_flag("--keep-going", fo.keep_going,
                "With --follow: report a divergence and go on (exit 1 at the end) instead of stopping");
  sub->add_option("--give-up-after", fo.give_up_after_s,
                  "With --follow: a failure (a lost server) is retried with backoff; exit 3 when it lasts this long")
      ->capture_default_str();
  sub->add_option("--scrub-period", fo.scrub_period_s,
                  "With --follow: re-verify every verified ledger at least once in this many seconds")
      ->capture_default_str();
  sub->add_option("--state-interval", fo.state_interval_s,
                  "With --follow: compare the state tables (accounts, offers, ...) at most once in this many seconds, "
                  "in the first cycle after it that finds both sides' state ledgers equal (0: every cycle; "
                  "--skip-state: never). A difference is a divergence (exit 1) until a later comparison agrees")
      ->capture_default_str();
  sub->add_option("--recheck", f.recheck,
                  "With --follow: the run's first cycle compares ledgers A:B (already compared, at or below the "
                  "state's frontier) on both sides afresh, e.g. after both were re-ingested: equal, the state keeps "
                  "their new rows (the scrub compares against them) and their open divergences close; different, a "
                  "divergence opens (exit 1). The frontier does not move");
  sub->add_option("--cycles", fo.max_cycles, "With --follow: stop after N cycles (tests)")->group("");
}

Status CheckFollowFlags(VerifyRangeFlags& f) {
  auto& fo = f.follow_options;
  if (!f.range.empty()) {
    if (fo.from != 0 || f.until != 0) return Status::Usage("give --range or --from/--until, not both");
    const bool open = f.range.back() == ':';
    LD_ASSIGN_OR_RETURN(LedgerRange r, ParseLedgerRange(open ? f.range.substr(0, f.range.size() - 1) : f.range));
    fo.from = r.from;
    if (!open) fo.until = r.to;
  }
  if (f.until != 0) fo.until = f.until;
  if (!f.recheck.empty()) {
    auto r = ParseLedgerRange(f.recheck);
    if (!r.ok()) return Status::Usagef("--recheck {}: {}", f.recheck, r.status().message());
    fo.recheck = *r;
  }
  fo.sides = f.options;
  if (f.shard != -1) return Status::Usage("--follow keeps its own manifests in --state: --shard does not apply");
  LD_ASSIGN_OR_RETURN(f.valid_follow, verify::ValidateFollowOptions(fo));
  return Status::Ok();
}

Status CheckVerifyRangeFlags(VerifyRangeFlags& f) {
  if (f.skip_state) f.options.state.mode = verify::StateMode::kSkip;
  if (f.follow && f.options.state.wait_s != 0)
    return Status::Usage("--state-wait applies to a one-shot verify-range: --follow compares state whenever a cycle "
                         "finds both sides at the same ledger (--state-interval)");
  if (f.follow) return CheckFollowFlags(f);
  if (!f.follow_options.state_dir.empty() || f.follow_options.from != 0 || f.until != 0 || !f.recheck.empty())
    return Status::Usage("--state, --from, --until and --recheck go with --follow");
  if (f.range.empty()) return Status::Usage("--range FROM:TO is required (or --follow)");
  LD_ASSIGN_OR_RETURN(f.options.range, ParseLedgerRange(f.range, RangeUse::kCompare));
  if (f.shard != -1) {
    if (f.shard < 0) return Status::Usagef("--shard {} is not a shard index (a number from 0)", f.shard);
    f.options.shard = f.shard;
  }
  verify::VerifyRangeOptions o = f.options;
  o.plan = true;  // the one-shot command
  LD_ASSIGN_OR_RETURN(f.valid, verify::ValidateVerifyRangeOptions(std::move(o)));
  return Status::Ok();
}

// A follower outlives restarts of its servers: one unreachable now is retried (RunFollow), and
// the target line is printed once both answer.
Result<Outcome> RunFollowVerifyRange(const VerifyRangeFlags& f, Context& ctx) {
  const auto& o = f.options;
  auto left = ConnectedTarget(o.left, {o.left_schema});
  auto right = left.ok() ? ConnectedTarget(o.right, {o.right_schema}) : left.status();
  if (!right.ok() && right.status().kind() != Status::Kind::kRuntime) return right.status();
  std::optional<TargetPair> targets;
  if (right.ok()) {
    targets = TargetPair{*left, *right};
    ctx.Announce(*targets);
  }
  return RunFollowCommand(*f.valid_follow, targets, f.reports, ctx);
}

Result<Outcome> RunVerifyRangeCommand(const VerifyRangeFlags& f, Context& ctx) {
  if (f.follow) return RunFollowVerifyRange(f, ctx);
  const verify::VerifyRangeOptions& o = f.valid->get();
  LD_ASSIGN_OR_RETURN(Target left, ConnectedTarget(o.left, {o.left_schema}));
  LD_ASSIGN_OR_RETURN(Target right, ConnectedTarget(o.right, {o.right_schema}));
  const TargetPair targets{left, right};
  ctx.Announce(targets);
  LD_ASSIGN_OR_RETURN(auto report, verify::RunVerifyRange(*f.valid, ctx.reporter()));
  report.diff.targets = targets;
  Outcome out{report.verdict() == diff::Verdict::kIdentical ? 0 : 1, report::RenderVerifyRangeText(report),
              report::VerifyRangeToJson(report), ""};
  AddWriteFailure(out, EmitReports(report::VerifyRangeReports(report), f.reports));
  return out;
}

}  // namespace

Action SetupVerifyRange(CLI::App* sub) {
  auto f = std::make_shared<VerifyRangeFlags>();
  AddVerifyRangeSideFlags(sub, *f);
  auto engine = AddDigestEngineFlag(sub);
  AddVerifyRangeCompareFlags(sub, *f);
  AddVerifyRangeFollowFlags(sub, *f);
  AddReportFlags(sub, f->reports);
  Action a;
  a.check = [f, engine]() -> Status {
    f->options.diff.engine = engine().value_or(dump::kDefaultEngine);
    return CheckVerifyRangeFlags(*f);
  };
  a.run = [f](Context& ctx) -> Result<Outcome> { return RunVerifyRangeCommand(*f, ctx); };
  return a;
}

Action SetupSelftest(CLI::App* sub) {
  struct Flags {
    std::string range = "2:2001";
    verify::SelftestOptions options;
    ReportFiles reports;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO")->capture_default_str();
  AddPlanFlags(sub, o.plan);
  AddDigestProfileFlag(sub, o.table_profile);
  auto engine = AddDigestEngineFlag(sub);
  AddReportFlags(sub, f->reports);
  Action a;
  a.check = [f, engine]() -> Status {
    f->options.engine = engine().value_or(dump::kDefaultEngine);
    LD_ASSIGN_OR_RETURN(f->options.plan.range, ParseLedgerRange(f->range));
    LD_RETURN_IF_ERROR(f->options.plan.Validate(/*check_schema=*/false));
    // The profile before any ingest: a FIFO or a bad file is a usage error, not 11 failed rows.
    LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, dump::LoadProfileSpec(f->options.table_profile));
    f->options.profile_spec = std::make_shared<const dump::ProfileSpec>(std::move(spec));  // every case's
    return verify::PlanSelftest(f->options).status();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database(static_cast<int>(f->options.plan.workers)));
    ctx.Announce(db->target());
    f->options.reconnect_flags = ReconnectFlags(*db);
    f->options.database_removed_on_exit = db->ephemeral();
    LD_ASSIGN_OR_RETURN(auto report, verify::RunSelftest(db->conninfo(), f->options, ctx.reporter()));
    report.target = db->target();
    Outcome out{report.passed() ? 0 : 1, report::RenderSelftestText(report), report::SelftestReportToJson(report),
                ""};
    AddWriteFailure(out, EmitReports(report::SelftestReports(report), f->reports));
    return out;
  };
  return a;
}

Action SetupFollowStatus(CLI::App* sub) {
  auto dir = std::make_shared<std::string>();
  sub->add_option("--state", *dir, "The state directory of a verify-range --follow")->required();
  Action a;
  a.check = [dir]() -> Status { return verify::CheckFollowStateDir(*dir); };
  a.run = [dir](Context&) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(verify::FollowStatus st, verify::ReadFollowStatus(*dir));
    // Exit 1 while a divergence is open: a script can gate on it as on the follower's verdict.
    return Outcome{st.state.open_divergences.empty() ? 0 : 1, report::RenderFollowStatusText(st),
                   report::FollowStatusToJson(st), ""};
  };
  return a;
}

}  // namespace ledgerdiff::cli
