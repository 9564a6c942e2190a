// chaos: fault-injection rounds over parallel ingestion, with a Jepsen-style verdict.
#include "cli/command.h"
#include "core/ledger_range.h"
#include "report/chaos_text_json.h"
#include "verify/chaos.h"

namespace ledgerdiff::cli {

namespace {

struct ChaosFlags {
  std::string range;
  std::string faults;
  verify::ChaosOptions options;
  DatabaseOptions db;
  OutputFormat format = OutputFormat::kText;
};

Runner SetupChaos(CLI::App* sub, ChaosFlags& f) {
  auto& o = f.options;
  sub->add_option("--range", f.range, "Ledgers FROM:TO (inclusive)")->required();
  AddWorkloadFlags(sub, {o.workers, o.job_size, o.seed, o.density, o.table_profile});
  sub->add_option("--rounds", o.rounds, "Parallel rounds, each with its own faults")->capture_default_str();
  sub->add_option("--faults", f.faults,
                  "Faults per round: kill=K,hang=H,crash=C,disconnect=D,orchestrator=O (default 1 of each)");
  sub->add_option("--job-timeout", o.job_timeout_s, "Seconds without heartbeat before a worker is declared hung")
      ->capture_default_str();
  sub->add_option("--hold", o.hold_s, "Seconds a target job pauses mid-transaction for a fault")->capture_default_str();
  sub->add_option("--retries", o.retries, "Retries of a failed job")->capture_default_str();
  sub->add_flag("--unsafe-ingester", o.unsafe_ingester,
                "Negative control: commit every 100 ledgers inside a job and retry without clearing");
  sub->add_option("--ingest-cmd", o.ingest_cmd, "External ingester per job (kill and hang signal its process group)");
  sub->add_flag("--keep", o.keep, "Keep every round's schema (invalid rounds are always kept)");
  AddDatabaseFlags(sub, f.db);
  AddFormatFlag(sub, f.format);
  return [&f]() -> int {
    auto range = ParseLedgerRange(f.range);
    if (!range.ok()) return Fail(range.status());
    f.options.range = *range;
    if (!f.faults.empty()) {
      auto counts = verify::ParseFaultCounts(f.faults);
      if (!counts.ok()) return Fail(counts.status());
      f.options.faults = *counts;
    }
    if (Status s = verify::ValidateChaosOptions(f.options); !s.ok()) return Fail(s);
    auto db = Database::Resolve(f.db);
    if (!db.ok()) return Fail(db.status());
    StderrReporter reporter;
    auto report = verify::RunChaos((*db)->conninfo(), f.options, reporter);
    if (!report.ok()) return Fail(report.status());
    if (f.format == OutputFormat::kJson)
      fmt::print("{}\n", report::ChaosReportToJson(*report).dump(2));
    else
      fmt::print("{}", report::RenderChaosText(*report));
    return report->valid ? 0 : 1;
  };
}

}  // namespace

std::vector<Command> ChaosCommands() {
  static ChaosFlags flags;
  return {{"chaos", "Fault-injection rounds: kill, freeze, crash and disconnect workers and the orchestrator", false,
           [](CLI::App* sub) { return SetupChaos(sub, flags); }}};
}

}  // namespace ledgerdiff::cli
