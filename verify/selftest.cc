#include "verify/selftest.h"

#include <atomic>

#include "core/database.h"
#include "core/process.h"
#include "core/stage_timer.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "verify/verify.h"

namespace ledgerdiff::verify {

Result<std::vector<std::pair<std::string, Ledger>>> PlanSelftest(const SelftestOptions& options) {
  const ingest::IngestPlan& o = options.plan;
  const fixtures::Density density = o.density;
  const auto& kinds = fixtures::AllBugKinds();
  std::vector<std::pair<std::string, Ledger>> plan;
  for (size_t i = 0; i < kinds.size(); ++i) {
    // Spread the targets over the range; then walk forward (wrapping) to a ledger that fits,
    // avoiding the first ledger of a job so that job boundaries are exercised from inside;
    // except row-past-end, which needs exactly that: a job start after the first job.
    const bool needs_job_start = kinds[i] == fixtures::BugKind::kRowPastEnd;
    uint64_t start = o.range.from + (o.range.size() * (i + 1)) / (kinds.size() + 1);
    std::optional<Ledger> chosen;
    for (uint64_t step = 0; step < o.range.size() && !chosen; ++step) {
      Ledger l = static_cast<Ledger>(o.range.from + (start - o.range.from + step) % o.range.size());
      const bool job_start = (l - o.range.from) % o.job_size == 0;
      if (needs_job_start ? (!job_start || l == o.range.from) : (o.range.size() > 1 && job_start)) continue;
      if (fixtures::CheckBugApplies({o.seed, density}, {kinds[i], l}).ok()) chosen = l;
    }
    if (!chosen) {
      return Status::Usagef("selftest: no ledger in {} has content that {} can act on; use a longer --range",
                            o.range.str(), fixtures::BugKindName(kinds[i]));
    }
    plan.emplace_back(fixtures::BugKindName(kinds[i]), *chosen);
  }
  return plan;
}

namespace {

// The lookup section reports `address` under several ids on the parallel (right) side.
bool SplitReported(const diff::DiffReport& d, const std::string& address) {
  for (const auto& l : d.lookups) {
    if (l.table != "history_accounts") continue;
    for (const auto& issue : l.issues)
      if (issue.side == Side::kRight && issue.kind == "key_under_several_ids" &&
          issue.detail.find(address) != std::string::npos)
        return true;
  }
  return false;
}

// Selftest's phases: the serial ingestion every case reuses, then each case's verify's phases
// (VerifyPhases) named "case N of M: PHASE". `first_case`: case 1's options, of run `<run>_1`,
// reusing the serial schema.
CommandPlan SelftestPlan(const std::vector<std::pair<std::string, Ledger>>& cases, const VerifyOptions& first_case,
                         const std::string& run) {
  VerifyOptions serial = first_case;
  serial.reuse_serial_schema.clear();
  CommandPlan plan{VerifyPhases(serial).front()};  // its serial ingest, into the reused schema
  plan.front().reports = {fmt::format("ingest \"{}\"", first_case.reuse_serial_schema)};
  for (size_t n = 1; n <= cases.size(); ++n) {
    VerifyOptions v = first_case;
    v.run_id = fmt::format("{}_{}", run, n);
    for (PlannedPhase phase : VerifyPhases(v)) {
      phase.name = fmt::format("case {} of {}: {}", n, cases.size(), phase.name);
      plan.push_back(std::move(phase));
    }
  }
  return plan;
}

}  // namespace

Result<SelftestReport> RunSelftest(const std::string& conninfo, const SelftestOptions& o, Reporter& reporter) {
  const Stopwatch wall;
  LD_ASSIGN_OR_RETURN(auto plan, PlanSelftest(o));
  SelftestReport report;
  report.range = o.plan.range;
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff selftest"));

  // One serial ingest serves every case.
  std::string run = NewRunId();
  report.serial_schema = "ld_" + run + "_selftest_serial";
  // Ctrl-C: in a database that outlives the process the serial schema and the current case's
  // stay (each case's verify is told the database goes, so it does not offer to resume itself).
  // The signal thread reads only what is immutable here and the case number.
  std::atomic<int> current_case{0};
  ScopedCleanup interrupted(
      o.database_removed_on_exit
          ? nullptr
          : std::function<std::string()>([serial = report.serial_schema, &current_case, run, flags = o.reconnect_flags] {
              std::vector<std::string> schemas{serial};
              if (int n = current_case.load(); n > 0) {
                VerifyOptions v;
                v.run_id = fmt::format("{}_{}", run, n);
                v.reuse_serial_schema = serial;
                schemas.push_back(VerifySchemas(v).back());
              }
              return fmt::format("selftest left its schemas in the database (those created so far): drop them with `{}`",
                                 DropSchemasCommand(flags, schemas));
            }));
  // Each case's verify, as the plan and the loop below run it.
  plan.insert(plan.begin(), {"clean", 0});
  const auto case_options = [&](int n, const std::string& kind, Ledger ledger) {
    VerifyOptions v;
    v.plan = o.plan;
    v.table_profile = o.table_profile;
    v.profile_spec = o.profile_spec;
    v.diff.engine = o.engine;
    v.reuse_serial_schema = report.serial_schema;
    v.diff.max_rows = 5;
    v.run_id = fmt::format("{}_{}", run, n);
    v.database_removed_on_exit = true;  // the interrupt is selftest's to describe (above)
    v.hooks.bug = kind == "clean" ? "" : fmt::format("{}@{}", kind, ledger);
    return v;
  };
  reporter.Plan("selftest", SelftestPlan(plan, case_options(1, "clean", 0), run));
  NestedReporter nested(reporter);  // the cases' verifies do not replace selftest's plan

  IngestOptions serial;
  serial.plan = o.plan;
  serial.plan.schema = report.serial_schema;
  serial.plan.workers = 1;
  reporter.Note(fmt::format("selftest: serial ingest of {} into \"{}\"", o.plan.range.str(), report.serial_schema));
  LD_ASSIGN_OR_RETURN(IngestReport serial_report, ingest::RunIngest(conninfo, serial, reporter));
  if (!serial_report.ok) return Status::Runtimef("selftest: serial ingest failed: {}", serial_report.error);

  int n = 0;
  for (const auto& [kind, ledger] : plan) {
    SelftestCase c;
    c.kind = kind;
    c.ledger = ledger;
    const VerifyOptions v = case_options(++n, kind, ledger);
    current_case.store(n);
    const Stopwatch verifying;
    auto r = RunVerify(conninfo, v, nested);
    c.seconds = verifying.Seconds();
    std::string split_address;
    if (kind == fixtures::BugKindName(fixtures::BugKind::kSplitLookup)) {
      LD_ASSIGN_OR_RETURN(split_address, fixtures::SplitLookupAccount({o.plan.seed, o.plan.density}, ledger));
    }
    if (!r.ok()) {
      c.error = r.status().message();
    } else if (!r->error.empty()) {
      c.error = r->error;
    } else {
      c.reported = r->diff.first_divergent_ledger;
      for (const auto& d : r->diff.divergent_tables) c.tables.push_back(d.table);
      for (const auto& l : r->diff.lookups)
        if (l.divergent()) c.tables.push_back(l.table);
      if (kind == "clean") {
        c.caught = r->identical;
      } else if (!split_address.empty()) {
        // Natural-key digests cannot see a split; the lookup section must name it.
        c.caught = !r->identical && SplitReported(r->diff, split_address);
      } else {
        c.caught = !r->identical && c.reported == ledger;
      }
      // The parallel schema is evidence only while it is needed: drop it here.
      if (r->schemas_kept) (void)DropOwnedSchema(*conn, r->parallel_schema);
    }
    reporter.Note(fmt::format("selftest: {} {} -> {}", kind, ledger ? fmt::format("@{}", ledger) : "",
                              c.caught ? "caught" : c.error.empty() ? "MISSED" : "ERROR: " + c.error));
    report.cases.push_back(std::move(c));
  }
  (void)DropOwnedSchema(*conn, report.serial_schema);
  report.seconds = wall.Seconds();
  return report;
}

}  // namespace ledgerdiff::verify
