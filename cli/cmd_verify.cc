// verify (the CI gate), verify-range (the cut-over check) and selftest (the gate's self-test).
#include <fstream>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "verify/selftest.h"
#include "verify/verify.h"

namespace ledgerdiff::cli {

namespace {

Status WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Usagef("cannot write {}", path);
  out << content;
  out.close();
  if (!out) return Status::Runtimef("cannot write {}", path);
  return Status::Ok();
}

// How to reach the database again after this process: the look-again command uses it.
std::string ReconnectFlags(Database& db) {
  if (db.embedded()) {
    return db.embedded_server()->kept() ? "--keep-db " + db.embedded_server()->dir() : "";
  }
  return db.conninfo().empty() ? "" : "--db '" + pg::RedactConninfo(db.conninfo()) + "'";
}

struct VerifyFlags {
  std::string range;
  verify::VerifyOptions options;
  DatabaseOptions db;
  OutputFormat format = OutputFormat::kText;
  std::string junit, markdown, report_dir;
};

Runner SetupVerify(CLI::App* sub, VerifyFlags& f) {
  auto& o = f.options;
  sub->add_option("--range", f.range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--resume", o.resume_run, "Continue an interrupted verify run (its run id) from the job table");
  AddWorkloadFlags(sub, {o.workers, o.job_size, o.seed, o.density, o.table_profile});
  sub->add_option("--retries", o.retries, "Retries of a failed job")->capture_default_str();
  sub->add_option("--retry-backoff", o.retry_backoff_s, "First retry delay in seconds")->capture_default_str();
  sub->add_option("--job-timeout", o.job_timeout_s, "Seconds without heartbeat before a worker is declared hung")
      ->capture_default_str();
  sub->add_option("--jobs", o.digest_jobs, "Digest connections per side")->capture_default_str();
  sub->add_option("--max-rows", o.max_rows, "Rows shown per table in the row diff")->capture_default_str();
  sub->add_flag("--keep", o.keep, "Keep both schemas after a pass too");
  sub->add_option("--ingest-cmd", o.ingest_cmd,
                  "External ingester per job (and over the whole range for the serial side); placeholders {from} {to} "
                  "{schema} {db} {worker} {job}");
  sub->add_option("--inject-bug", o.bug,
                  "Self-test: the parallel side misbehaves at one ledger, KIND@LEDGER (skip-ledger, duplicate-row, "
                  "drop-row, mutate-row, swap-order, stale-surrogate, boundary-gap, partial-commit)");
  sub->add_option("--save-baseline", o.save_baseline, "Write the serial side's manifest to FILE");
  sub->add_option("--baseline", o.baseline, "Compare the parallel run against this manifest (no serial ingest)");
  sub->add_option("--junit", f.junit, "Also write a JUnit XML report (one test case per table)");
  sub->add_option("--markdown", f.markdown, "Also write a Markdown summary");
  sub->add_option("--report", f.report_dir, "Also write a self-contained HTML report into DIR");
  AddDatabaseFlags(sub, f.db);
  AddFormatFlag(sub, f.format);
  return [&f]() -> int {
    if (f.options.resume_run.empty() || !f.range.empty()) {
      if (f.range.empty()) return Fail(Status::Usage("--range FROM:TO is required"));
      auto range = ParseLedgerRange(f.range);
      if (!range.ok()) return Fail(range.status());
      f.options.range = *range;
    }
    if (f.options.resume_run.empty()) {
      if (Status s = verify::ValidateVerifyOptions(f.options); !s.ok()) return Fail(s);
    }
    auto db = Database::Resolve(f.db);
    if (!db.ok()) return Fail(db.status());
    f.options.reconnect_flags = ReconnectFlags(**db);
    StderrReporter reporter;
    auto report = verify::RunVerify((*db)->conninfo(), f.options, reporter);
    if (!report.ok()) return Fail(report.status());
    if (!f.junit.empty())
      if (Status s = WriteFile(f.junit, verify::RenderVerifyJUnit(*report)); !s.ok()) return Fail(s);
    if (!f.markdown.empty())
      if (Status s = WriteFile(f.markdown, verify::RenderVerifyMarkdown(*report)); !s.ok()) return Fail(s);
    if (!f.report_dir.empty())
      if (Status s = verify::WriteVerifyHtml(*report, f.report_dir); !s.ok()) return Fail(s);
    if (f.format == OutputFormat::kJson) {
      fmt::print("{}\n", verify::VerifyReportToJson(*report).dump(2));
    } else {
      fmt::print("{}", verify::RenderVerifyText(*report));
      if (report->schemas_kept && (*db)->embedded() && !(*db)->embedded_server()->kept())
        fmt::print("  (the embedded database is removed on exit: rerun with --keep-db DIR to keep the schemas)\n");
    }
    if (!report->error.empty()) {
      fmt::print(stderr, "ledgerdiff: {}\n", report->error);
      return 2;
    }
    return report->identical ? 0 : 1;
  };
}

struct VerifyRangeFlags {
  std::string range;
  verify::VerifyRangeOptions options;
  OutputFormat format = OutputFormat::kText;
};

Runner SetupVerifyRange(CLI::App* sub, VerifyRangeFlags& f) {
  auto& o = f.options;
  sub->add_option("--range", f.range, "Ledgers FROM:TO (inclusive)")->required();
  sub->add_option("--left", o.left, "The database that served so far (conninfo)")->required();
  sub->add_option("--right", o.right, "The re-ingested database (conninfo)")->required();
  sub->add_option("--left-schema", o.left_schema, "Schema on the left")->capture_default_str();
  sub->add_option("--right-schema", o.right_schema, "Schema on the right")->capture_default_str();
  sub->add_option("--profile", o.table_profile, "Digest profile: horizon | auto | FILE.json")->capture_default_str();
  sub->add_option("--jobs", o.jobs, "Digest connections per side")->capture_default_str();
  sub->add_option("--max-rows", o.max_rows, "Rows shown per table in the row diff")->capture_default_str();
  sub->add_flag("--all", o.all, "List every divergent ledger per table as intervals");
  sub->add_flag("--allow-empty", o.allow_empty, "Accept zero rows on both sides as identical (else exit 2)");
  AddFormatFlag(sub, f.format);
  return [&f]() -> int {
    auto range = ParseLedgerRange(f.range);
    if (!range.ok()) return Fail(range.status());
    f.options.range = *range;
    StderrReporter reporter;
    auto report = verify::RunVerifyRange(f.options, reporter);
    if (!report.ok()) return Fail(report.status());
    if (f.format == OutputFormat::kJson)
      fmt::print("{}\n", diff::DiffReportToJson(*report).dump(2));
    else
      fmt::print("{}", diff::RenderDiffText(*report));
    return report->identical ? 0 : 1;
  };
}

struct SelftestFlags {
  std::string range = "2:2001";
  verify::SelftestOptions options;
  DatabaseOptions db;
  OutputFormat format = OutputFormat::kText;
};

Runner SetupSelftest(CLI::App* sub, SelftestFlags& f) {
  auto& o = f.options;
  sub->add_option("--range", f.range, "Ledgers FROM:TO")->capture_default_str();
  AddWorkloadFlags(sub, {o.workers, o.job_size, o.seed, o.density, o.table_profile});
  AddDatabaseFlags(sub, f.db);
  AddFormatFlag(sub, f.format);
  return [&f]() -> int {
    auto range = ParseLedgerRange(f.range);
    if (!range.ok()) return Fail(range.status());
    f.options.range = *range;
    if (f.options.workers == 0) return Fail(Status::Usage("--workers must be at least 1"));
    if (f.options.job_size == 0) return Fail(Status::Usage("--job-size must be at least 1"));
    if (auto plan = verify::PlanSelftest(f.options); !plan.ok()) return Fail(plan.status());
    auto db = Database::Resolve(f.db);
    if (!db.ok()) return Fail(db.status());
    StderrReporter reporter;
    auto report = verify::RunSelftest((*db)->conninfo(), f.options, reporter);
    if (!report.ok()) return Fail(report.status());
    if (f.format == OutputFormat::kJson)
      fmt::print("{}\n", verify::SelftestReportToJson(*report).dump(2));
    else
      fmt::print("{}", verify::RenderSelftestText(*report));
    return report->passed() ? 0 : 1;
  };
}

}  // namespace

std::vector<Command> VerifyCommands() {
  static VerifyFlags verify_flags;
  static VerifyRangeFlags range_flags;
  static SelftestFlags selftest_flags;
  return {
      {"verify", "Ingest a range serially and in parallel, digest and diff both: the CI gate", false,
       [](CLI::App* sub) { return SetupVerify(sub, verify_flags); }},
      {"verify-range", "Read-only cut-over check: digest a range in two databases and diff them", false,
       [](CLI::App* sub) { return SetupVerifyRange(sub, range_flags); }},
      {"selftest", "Prove the gate catches every injected bug at its ledger", false,
       [](CLI::App* sub) { return SetupSelftest(sub, selftest_flags); }},
  };
}

}  // namespace ledgerdiff::cli
