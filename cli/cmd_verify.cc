// verify (the CI gate), verify-range (the cut-over check) and selftest (the gate's self-test).
#include <algorithm>
#include <fstream>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "verify/selftest.h"
#include "verify/verify.h"
#include "report/html.h"
#include "report/junit.h"
#include "report/markdown.h"
#include "report/selftest_text_json.h"
#include "report/verify_text_json.h"

namespace ledgerdiff::cli {

namespace {

// How to reach the database again after this process: the look-again command uses it.
std::string ReconnectFlags(Database& db) {
  if (db.embedded()) {
    return db.embedded_server()->kept() ? "--keep-db " + db.embedded_server()->dir() : "";
  }
  return db.conninfo().empty() ? "" : "--db '" + pg::RedactConninfo(db.conninfo()) + "'";
}

}  // namespace

Action SetupVerify(CLI::App* sub) {
  struct Flags {
    std::string range;
    verify::VerifyOptions options;
    std::string junit, markdown, report_dir;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--resume", o.resume_run, "Continue an interrupted verify run (its run id) from the job table");
  AddPlanFlags(sub, o);
  AddDigestProfileFlag(sub, o.table_profile);
  sub->add_option("--jobs", o.digest_jobs, "Digest connections per side")->capture_default_str();
  sub->add_option("--max-rows", o.max_rows, "Rows shown per table in the row diff")->capture_default_str();
  sub->add_flag("--keep", o.keep, "Keep both schemas after a pass too");
  sub->add_option("--ingest-cmd", o.ingest_cmd,
                  "External ingester per job (and over the whole range for the serial side); placeholders {from} {to} "
                  "{schema} {db} {worker} {job}");
  sub->add_option("--inject-bug", o.bug,
                  "Self-test: the parallel side misbehaves at one ledger, KIND@LEDGER (" + InjectBugKinds() + ")");
  sub->add_flag("--workers-external", o.workers_external,
                "Start no parallel workers: register the run and wait for `ledgerdiff worker --run ID` from elsewhere");
  sub->add_option("--workers-timeout", o.workers_timeout_s,
                  "With --workers-external: give up after S seconds (exit 2); default: wait forever");
  sub->add_option("--save-baseline", o.save_baseline, "Write the serial side's manifest to FILE");
  sub->add_option("--baseline", o.baseline, "Compare the parallel run against this manifest (no serial ingest)");
  sub->add_option("--junit", f->junit, "Also write a JUnit XML report (one test case per table)");
  sub->add_option("--markdown", f->markdown, "Also write a Markdown summary");
  sub->add_option("--report", f->report_dir, "Also write a self-contained HTML report into DIR");
  Action a;
  a.check = [f]() -> Status {
    auto& o = f->options;
    if (o.resume_run.empty() || !f->range.empty()) {
      if (f->range.empty()) return Status::Usage("--range FROM:TO is required");
      LD_ASSIGN_OR_RETURN(o.range, ParseLedgerRange(f->range));
    }
    // A resumed verify takes its plan from the job table; it is checked then.
    return o.resume_run.empty() ? verify::ValidateVerifyOptions(o) : Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    // Both sides' digests run next to the workers: size the embedded server for all of them.
    LD_ASSIGN_OR_RETURN(Database * db,
                        ctx.database(static_cast<int>(f->options.workers) + 2 * std::min(f->options.digest_jobs, 1000)));
    f->options.reconnect_flags = ReconnectFlags(*db);
    LD_ASSIGN_OR_RETURN(auto report, verify::RunVerify(db->conninfo(), f->options, ctx.reporter()));
    if (!f->junit.empty()) LD_RETURN_IF_ERROR(WriteFile(f->junit, report::RenderVerifyJUnit(report)));
    if (!f->markdown.empty()) LD_RETURN_IF_ERROR(WriteFile(f->markdown, report::RenderVerifyMarkdown(report)));
    if (!f->report_dir.empty()) LD_RETURN_IF_ERROR(report::WriteVerifyHtml(report, f->report_dir));
    Outcome out;
    out.json = report::VerifyReportToJson(report);
    out.text = report::RenderVerifyText(report);
    if (report.schemas_kept && db->embedded() && !db->embedded_server()->kept())
      out.text += "  (the embedded database is removed on exit: rerun with --keep-db DIR to keep the schemas)\n";
    out.error = report.error;
    out.exit_code = !report.error.empty() ? 2 : report.identical ? 0 : 1;
    return out;
  };
  return a;
}

Action SetupVerifyRange(CLI::App* sub) {
  struct Flags {
    std::string range;
    int64_t shard = -1;
    verify::VerifyRangeOptions options;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)")->required();
  sub->add_option("--left", o.left, "The database that served so far (conninfo)")->required();
  sub->add_option("--right", o.right, "The re-ingested database (conninfo)")->required();
  sub->add_option("--left-schema", o.left_schema, "Schema on the left")->capture_default_str();
  sub->add_option("--right-schema", o.right_schema, "Schema on the right")->capture_default_str();
  AddDigestProfileFlag(sub, o.table_profile);
  sub->add_option("--jobs", o.jobs, "Digest connections per side")->capture_default_str();
  sub->add_option("--max-rows", o.max_rows, "Rows shown per table in the row diff")->capture_default_str();
  sub->add_flag("--all", o.all, "List every divergent ledger per table as intervals");
  sub->add_flag("--allow-empty", o.allow_empty, "Accept zero rows on both sides as identical (else exit 2)");
  sub->add_option("--shards", o.shards,
                  "Compare one shard of N (deterministic contiguous slices of --range) and write its part (--out); "
                  "join the parts with `manifest merge`");
  sub->add_option("--shard", f->shard,
                  "Which shard, 0..N-1 (default: $JOB_COMPLETION_INDEX, else $AWS_BATCH_JOB_ARRAY_INDEX)");
  sub->add_option("--out", o.out,
                  "Write the left side's manifest with the outcome (.ldm; a partial one with --shards)");
  Action a;
  a.check = [f]() -> Status {
    LD_ASSIGN_OR_RETURN(f->options.range, ParseLedgerRange(f->range, RangeUse::kCompare));
    if (f->shard != -1) {
      if (f->shard < 0) return Status::Usagef("--shard {} is not a shard index (a number from 0)", f->shard);
      f->options.shard = f->shard;
    }
    return verify::ValidateVerifyRangeOptions(f->options);
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(auto report, verify::RunVerifyRange(f->options, ctx.reporter()));
    Outcome out{report.diff.identical ? 0 : 1, diff::RenderDiffText(report.diff), diff::DiffReportToJson(report.diff),
                ""};
    if (report.shard)
      out.json["shard"] = {
          {"index", report.shard->index},
          {"count", report.shard->count},
          {"full_range", {{"from", report.shard->full_range.from}, {"to", report.shard->full_range.to}}}};
    if (report.manifest) {
      out.json["manifest"] = {{"path", report.manifest->manifest_path},
                              {"bytes", report.manifest->manifest_bytes},
                              {"root", report.manifest->root}};
      out.text += report.shard ? fmt::format(
                                     "part {} (shard {} of {}) written: join the parts with `ledgerdiff "
                                     "manifest merge --out FULL PART...`\n",
                                     report.manifest->manifest_path, report.shard->index, report.shard->count)
                               : fmt::format("manifest {} written\n", report.manifest->manifest_path);
    }
    return out;
  };
  return a;
}

Action SetupSelftest(CLI::App* sub) {
  struct Flags {
    std::string range = "2:2001";
    verify::SelftestOptions options;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO")->capture_default_str();
  AddPlanFlags(sub, o);
  AddDigestProfileFlag(sub, o.table_profile);
  Action a;
  a.check = [f]() -> Status {
    LD_ASSIGN_OR_RETURN(f->options.range, ParseLedgerRange(f->range));
    LD_RETURN_IF_ERROR(f->options.Validate(/*check_schema=*/false));
    return verify::PlanSelftest(f->options).status();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database(static_cast<int>(f->options.workers)));
    LD_ASSIGN_OR_RETURN(auto report, verify::RunSelftest(db->conninfo(), f->options, ctx.reporter()));
    return Outcome{report.passed() ? 0 : 1, report::RenderSelftestText(report), report::SelftestReportToJson(report),
                   ""};
  };
  return a;
}

}  // namespace ledgerdiff::cli
