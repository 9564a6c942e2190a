// sweep: measure every workers x job size cell against the serial reference and recommend one.
#include <algorithm>
#include <memory>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "report/gate.h"
#include "report/sweep.h"
#include "verify/sweep.h"

namespace ledgerdiff::cli {

Action SetupSweep(CLI::App* sub) {
  struct Flags {
    std::string range;
    std::string workers = "1,2,4";
    std::string job_sizes = "100,500,2000";
    verify::SweepOptions options;
    ReportFiles reports;
    std::string csv;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  ingest::IngestPlan& p = o.plan;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--workers", f->workers, "Worker counts to measure, comma-separated")->capture_default_str();
  sub->add_option("--job-size", f->job_sizes, "Job sizes (ledgers) to measure, comma-separated")->capture_default_str();
  sub->add_option("--repeat", o.repeat,
                  "Ingestions per cell (each cell's median and min-max interval; 1 measures no noise)")
      ->capture_default_str();
  AddPlanFlags(sub, p, PlanFlags::kWithoutShape);  // the rest of the workload, with the plan's defaults
  AddDigestProfileFlag(sub, o.table_profile);
  auto engine = AddDigestEngineFlag(sub);
  sub->add_option("--jobs", o.digest_jobs, "Digest connections")->capture_default_str();
  sub->add_option("--ingest-cmd", p.ingest_cmd,
                  "External ingester per job (and over the whole range for the serial reference); placeholders "
                  "{from} {to} {schema} {db} {worker} {job}");
  sub->add_option("--baseline", o.baseline, "Reference manifest (verify --save-baseline): no serial ingest");
  sub->add_option("--inject-bug", o.hooks.bug, "Self-test: parallel cells (workers > 1) misbehave at KIND@LEDGER (" + InjectBugKinds() + ")");
  sub->add_flag("--keep", o.keep, "Keep every cell's schema (divergent ones are always kept)");
  AddReportFlags(sub, f->reports);
  sub->add_option("--csv", f->csv, "Also write one CSV line per cell to FILE")->check(WritableFile());
  Action a;
  // Everything the user gave, checked before a database is resolved.
  a.check = [f, engine]() -> Status {
    f->options.engine = engine();  // nullopt: the baseline's, else the default
    if (f->range.empty()) return Status::Usage("--range FROM:TO is required");
    LD_ASSIGN_OR_RETURN(f->options.range, ParseLedgerRange(f->range));
    LD_ASSIGN_OR_RETURN(f->options.workers, verify::ParseUintList(f->workers, "--workers"));
    LD_ASSIGN_OR_RETURN(f->options.job_sizes, verify::ParseUintList(f->job_sizes, "--job-size"));
    LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, verify::ValidateSweepOptions(f->options));
    f->options.profile_spec = std::make_shared<const dump::ProfileSpec>(std::move(spec));  // the run's, not read again
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    uint32_t most_workers = 0;
    for (uint32_t w : f->options.workers) most_workers = std::max(most_workers, w);
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database(static_cast<int>(most_workers)));
    Target announced = db->target();
    announced.kept_if = "a cell diverges, or --keep";  // KeepClusterOfKeptSchemas below
    ctx.Announce(announced);
    LD_ASSIGN_OR_RETURN(verify::SweepReport report, verify::RunSweep(db->conninfo(), f->options, ctx.reporter()));
    bool kept = !report.reference_schema.empty();
    for (const auto& c : report.cells)
      for (const auto& r : c.repeats) kept = kept || r.kept;
    // The cluster is kept first, so that the report's target says whether it stays.
    Outcome keep;
    KeepClusterOfKeptSchemas(*db, kept, keep);
    report.target = db->target();
    Outcome out;
    out.exit_code = report.exit_code();
    out.json = report::SweepReportToJson(report);
    if (keep.json.is_object()) out.json.update(keep.json);
    out.text = report::RenderSweepText(report) + keep.text;
    if (report.recommendation.every_parallel_divergent)
      out.error = fmt::format("every parallel cell diverged: {}", fmt::join(report.recommendation.divergent, ", "));
    if (!f->csv.empty()) AddWriteFailure(out, WriteFile(f->csv, report::RenderSweepCsv(report)));
    AddWriteFailure(out, EmitReports(report::SweepReports(report), f->reports));
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
