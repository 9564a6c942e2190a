// chaos: fault-injection rounds over parallel ingestion, with a Jepsen-style verdict.
#include <memory>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "verify/chaos.h"
#include "report/chaos_text_json.h"
#include "report/gate.h"

namespace ledgerdiff::cli {

namespace {

// The campaign's own flags: its rounds, the faults each round injects (`faults`, parsed by
// verify::ParseFaultCounts in the check), how long a target job pauses for one, and the
// negative control.
void AddCampaignFlags(CLI::App* sub, verify::ChaosOptions& o, std::string& faults) {
  sub->add_option("--rounds", o.rounds, "Parallel rounds, each with its own faults")->capture_default_str();
  sub->add_option("--faults", faults,
                  "Faults per round: kill=K,hang=H,crash=C,disconnect=D,orchestrator=O (default 1 of each)");
  sub->add_option("--hold", o.hold_s, "Seconds a target job pauses mid-transaction for a fault")->capture_default_str();
  sub->add_flag("--unsafe-ingester", o.unsafe_ingester,
                "Negative control: commit every 100 ledgers inside a job and retry without clearing");
}

}  // namespace

Action SetupChaos(CLI::App* sub) {
  struct Flags {
    std::string range;
    std::string faults;
    verify::ChaosOptions options;
    ReportFiles reports;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)")->required();
  AddPlanFlags(sub, o.plan);  // chaos's own defaults: --job-timeout 4, --retry-backoff 0.1 (verify/chaos.h)
  AddDigestProfileFlag(sub, o.table_profile);
  auto engine = AddDigestEngineFlag(sub);
  AddCampaignFlags(sub, o, f->faults);
  sub->add_option("--ingest-cmd", o.plan.ingest_cmd, "External ingester per job (kill and hang signal its process group)");
  sub->add_flag("--keep", o.keep, "Keep every round's schema (invalid rounds are always kept)");
  AddReportFlags(sub, f->reports);
  Action a;
  a.check = [f, engine]() -> Status {
    LD_ASSIGN_OR_RETURN(f->options.plan.range, ParseLedgerRange(f->range));
    f->options.engine = engine().value_or(dump::kDefaultEngine);
    if (!f->faults.empty()) {
      LD_ASSIGN_OR_RETURN(f->options.faults, verify::ParseFaultCounts(f->faults));
    }
    LD_ASSIGN_OR_RETURN(dump::ProfileSpec spec, verify::ValidateChaosOptions(f->options));
    f->options.profile_spec = std::make_shared<const dump::ProfileSpec>(std::move(spec));  // the run's, not read again
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database(EmbeddedWorkersFor(f->options.plan, f->options.plan.workers)));
    Target announced = db->target();
    announced.kept_if = "a round diverges, or --keep";  // KeepClusterOfKeptSchemas below
    ctx.Announce(announced);
    LD_ASSIGN_OR_RETURN(auto report, verify::RunChaos(db->conninfo(), f->options, ctx.reporter()));
    bool kept = false;
    for (const auto& round : report.rounds) kept = kept || round.schema_kept;
    // The cluster is kept first, so that the report's target says whether it stays.
    Outcome keep;
    KeepClusterOfKeptSchemas(*db, kept, keep);
    report.target = db->target();
    // A planned fault that never fired makes its round (and the campaign) inconclusive: exit 1.
    Outcome out{report.valid ? 0 : 1, report::RenderChaosText(report) + keep.text, report::ChaosReportToJson(report),
                ""};
    if (keep.json.is_object()) out.json.update(keep.json);
    AddWriteFailure(out, EmitReports(report::ChaosReports(report), f->reports));
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
