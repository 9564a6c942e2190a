// sweep: measure every workers x job size cell against the serial reference and recommend one.
#include <fstream>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "verify/sweep.h"
#include "verify/sweep_render.h"

namespace ledgerdiff::cli {

namespace {

struct SweepFlags {
  std::string range;
  std::string workers = "1,2,4";
  std::string job_sizes = "100,500,2000";
  verify::SweepOptions options;
  DatabaseOptions db;
  OutputFormat format = OutputFormat::kText;
  std::string report_dir, csv;
};

Status WriteTextFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Runtimef("cannot write {}", path);
  out << content;
  out.close();
  if (!out) return Status::Runtimef("cannot write {}", path);
  return Status::Ok();
}

// Everything the user gave, checked before a database is resolved.
Status Prepare(SweepFlags& f) {
  if (f.range.empty()) return Status::Usage("--range FROM:TO is required");
  LD_ASSIGN_OR_RETURN(f.options.range, ParseLedgerRange(f.range));
  LD_ASSIGN_OR_RETURN(f.options.workers, verify::ParseUintList(f.workers, "--workers"));
  LD_ASSIGN_OR_RETURN(f.options.job_sizes, verify::ParseUintList(f.job_sizes, "--job-size"));
  return verify::ValidateSweepOptions(f.options);
}

Runner SetupSweep(CLI::App* sub, SweepFlags& f) {
  auto& o = f.options;
  sub->add_option("--range", f.range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--workers", f.workers, "Worker counts to measure, comma-separated")->capture_default_str();
  sub->add_option("--job-size", f.job_sizes, "Job sizes (ledgers) to measure, comma-separated")->capture_default_str();
  sub->add_option("--repeat", o.repeat, "Ingestions per cell (median and spread over them)")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of the generator")->capture_default_str();
  sub->add_option("--density", o.density, "Generated ledger density: stellar | flat")->capture_default_str();
  sub->add_option("--profile", o.table_profile, "Digest profile: horizon | auto | FILE.json")->capture_default_str();
  sub->add_option("--retries", o.retries, "Retries of a failed job")->capture_default_str();
  sub->add_option("--retry-backoff", o.retry_backoff_s, "First retry delay in seconds")->capture_default_str();
  sub->add_option("--job-timeout", o.job_timeout_s, "Seconds without heartbeat before a worker is declared hung")
      ->capture_default_str();
  sub->add_option("--jobs", o.digest_jobs, "Digest connections")->capture_default_str();
  sub->add_option("--ingest-cmd", o.ingest_cmd,
                  "External ingester per job (and over the whole range for the serial reference); placeholders "
                  "{from} {to} {schema} {db} {worker} {job}");
  sub->add_option("--baseline", o.baseline, "Reference manifest (verify --save-baseline): no serial ingest");
  sub->add_option("--inject-bug", o.bug, "Self-test: parallel cells (workers > 1) misbehave at KIND@LEDGER");
  sub->add_flag("--keep", o.keep, "Keep every cell's schema (divergent ones are always kept)");
  sub->add_option("--report", f.report_dir, "Also write a self-contained HTML report into DIR");
  sub->add_option("--csv", f.csv, "Also write one CSV line per cell to FILE");
  AddDatabaseFlags(sub, f.db);
  AddFormatFlag(sub, f.format);
  return [&f]() -> int {
    if (Status s = Prepare(f); !s.ok()) return Fail(s);
    auto db = Database::Resolve(f.db);
    if (!db.ok()) return Fail(db.status());
    StderrReporter reporter;
    auto report = verify::RunSweep((*db)->conninfo(), f.options, reporter);
    reporter.Done();
    if (!report.ok()) return Fail(report.status());
    if (!f.csv.empty())
      if (Status s = WriteTextFile(f.csv, verify::RenderSweepCsv(*report)); !s.ok()) return Fail(s);
    if (!f.report_dir.empty())
      if (Status s = verify::WriteSweepHtml(*report, f.report_dir); !s.ok()) return Fail(s);
    if (f.format == OutputFormat::kJson)
      fmt::print("{}\n", verify::SweepReportToJson(*report).dump(2));
    else
      fmt::print("{}", verify::RenderSweepText(*report));
    bool kept = !report->reference_schema.empty();
    for (const auto& c : report->cells)
      for (const auto& r : c.repeats) kept = kept || r.kept;
    if (kept && f.format == OutputFormat::kText && (*db)->embedded() && !(*db)->embedded_server()->kept())
      fmt::print("  (the embedded database is removed on exit: rerun with --keep-db DIR to keep the schemas)\n");
    if (report->recommendation.every_parallel_divergent)
      fmt::print(stderr, "ledgerdiff: every parallel cell diverged: {}\n",
                 fmt::join(report->recommendation.divergent, ", "));
    return report->exit_code();
  };
}

}  // namespace

std::vector<Command> SweepCommands() {
  static SweepFlags sweep_flags;
  return {
      {"sweep", "Measure workers x job size against the serial reference and recommend the fastest correct cell",
       false, [](CLI::App* sub) { return SetupSweep(sub, sweep_flags); }},
  };
}

}  // namespace ledgerdiff::cli
