// ingest: the reference ingester (serial with --workers 1, parallel otherwise), and the hidden
// processes of a run: _worker (one worker) and _orchestrate (the orchestrator of a registered
// run, started by chaos with nothing but the run id).
#include <cstdlib>

#include "cli/command.h"
#include "core/report.h"
#include "core/ledger_range.h"
#include "core/process.h"
#include "core/text.h"
#include "fixtures/state.h"
#include "ingest/orchestrator.h"
#include "ingest/worker.h"
#include "report/ingest_text_json.h"

namespace ledgerdiff::cli {

namespace {

// The report as text, plus a hint when the embedded database goes away with the process.
Outcome IngestOutcome(ingest::IngestReport report, Database& db) {
  report.target = db.target({report.schema});
  Outcome out;
  out.json = report::IngestCommandToJson(report);
  out.text = report::RenderIngestCommandText(report, db.embedded() && !db.embedded_server()->kept());
  if (!report.ok) {
    out.error = report.error;
    // A job out of retries: the run failed, an answer about the ingester (as `worker` and `wait`
    // exit 1). The environment failing (a lost server) is an error Status instead: exit 3.
    out.exit_code = static_cast<int>(ExitCode::kDifferent);
  }
  return out;
}

}  // namespace

Action SetupIngest(CLI::App* sub) {
  struct Flags {
    std::string range;
    std::string deprecated_profile;
    std::vector<std::string> faults, holds;
    uint64_t state_rows = 0;
    ingest::IngestOptions options;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)");
  sub->add_option("--schema", o.plan.schema, "Target schema (created and marked as ledgerdiff's)");
  AddPlanFlags(sub, o.plan);
  sub->add_option("--profile", f->deprecated_profile, "Deprecated spelling of --density (one more release)")
      ->group("");
  sub->add_option("--ingest-cmd", o.plan.ingest_cmd,
                  "Run this command per job instead of the built-in ingester; placeholders {from} {to} {schema} {db} "
                  "{worker} {job} (passed as $LEDGERDIFF_JOB_* variables, safe in any quoting); DATABASE_URL, PG* and "
                  "PGOPTIONS=search_path are set; its output goes to per-job logs (--log-dir)");
  sub->add_option("--log-dir", o.log_root,
                  "External ingester: each job's stdout and stderr go to DIR/RUN/job-N.{stdout,stderr}.log "
                  "(default $TMPDIR/ledgerdiff-logs)");
  sub->add_option("--inject-bug", o.hooks.bug, "Self-test: misbehave at one ledger, KIND@LEDGER (" + InjectBugKinds() + ")");
  sub->add_flag("--force", o.force, "Write into a schema ledgerdiff did not create");
  sub->add_option("--state-rows", f->state_rows,
                  "After the history, write Horizon state tables (accounts, trust_lines, offers, key_value_store at "
                  "the range's last ledger) of about N rows in all, derived from the history and the seed "
                  "(fixtures/state.h; the benchmark's state)");
  sub->add_flag("--fresh", o.replace_schema, "Drop and recreate the schema first (only if ledgerdiff owns it)");
  sub->add_option("--resume", o.resume_run, "Continue an interrupted run from the job table");
  sub->add_option("--run-id", o.run_id, "Use this run id instead of a new one")->group("");
  sub->add_option("--unsafe-commit-every", o.hooks.unsafe_commit_every, "Negative control")->group("");
  sub->add_option("--fault", f->faults, "Test fault point JOB:ATTEMPT:STAGE:abort|fail")->group("");
  sub->add_option("--hold", f->holds, "Test hold point JOB:ATTEMPT:STAGE:SECONDS")->group("");
  Action a;
  a.check = [f, sub]() -> Status {
    auto& o = f->options;
    if (!f->deprecated_profile.empty()) {
      fmt::print(stderr, "ledgerdiff: warning: ingest --profile is deprecated (it is the ledger density); use "
                         "--density\n");
      LD_ASSIGN_OR_RETURN(const fixtures::Density density, fixtures::ParseDensity(f->deprecated_profile));
      if (sub->count("--density") > 0 && density != o.plan.density)
        return Status::Usagef("--profile {} and --density {} disagree; use --density", f->deprecated_profile,
                              fixtures::ToString(o.plan.density));
      o.plan.density = density;
    }
    if (f->state_rows > 0 && (!o.resume_run.empty() || !o.plan.ingest_cmd.empty()))
      return Status::Usage("--state-rows writes the reference ingester's state after a new run: not with --resume or "
                           "--ingest-cmd");
    if (o.resume_run.empty()) {
      if (f->range.empty()) return Status::Usage("--range FROM:TO is required");
      if (o.plan.schema.empty()) return Status::Usage("--schema NAME is required");
      LD_ASSIGN_OR_RETURN(o.plan.range, ParseLedgerRange(f->range));
    }
    for (const auto& text : f->faults) {
      LD_ASSIGN_OR_RETURN(auto fault, ingest::ParseFaultPoint(text));
      o.hooks.crash_points.push_back(fault);
    }
    for (const auto& text : f->holds) {
      LD_ASSIGN_OR_RETURN(auto hold, ingest::ParseHoldPoint(text));
      o.hooks.hold_points.push_back(hold);
    }
    return ingest::ValidateIngestOptions(o);
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database(EmbeddedWorkersFor(f->options.plan, f->options.plan.workers)));
    // A resumed run's schema is in the job table: the line names the database only.
    const std::string& target_schema = f->options.plan.schema;
    Target announced =
        db->target(target_schema.empty() ? std::vector<std::string>{} : std::vector<std::string>{target_schema});
    announced.kept_if = "a failed run is kept to be resumed";  // o.keep_database below
    ctx.Announce(announced);
    ingest::IngestOptions o = f->options;
    // A failed run's resume hint works only if the embedded default outlives the process.
    o.keep_database = db->Keeper();
    if (o.run_id.empty() && o.resume_run.empty()) o.run_id = NewRunId();
    const std::string run_id = o.resume_run.empty() ? o.run_id : o.resume_run;
    // Ctrl-C: in a database that outlives the process the run stays, resumable there (--db or
    // --keep-db: the resume must reach the same database).
    const std::string reach = ReconnectFlags(*db);
    const std::string flags = reach.empty() ? "" : " " + reach;
    ScopedCleanup interrupted(
        db->ephemeral() ? nullptr : std::function<std::string()>([run_id, schema = o.plan.schema, flags] {
          return fmt::format("ingest run {} stays in the database{}: continue it with `ledgerdiff ingest --resume {}{}`",
                             run_id, schema.empty() ? "" : " with its schema \"" + schema + "\"", run_id, flags);
        }));
    LD_ASSIGN_OR_RETURN(auto report, ingest::RunIngest(db->conninfo(), o, ctx.reporter()));
    const bool write_state = report.ok && f->state_rows > 0;
    Outcome out = IngestOutcome(report, *db);
    if (write_state) {
      LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff state fixtures"));
      const fixtures::StateConfig config{o.plan.seed, o.plan.range.to, f->state_rows};
      LD_ASSIGN_OR_RETURN(fixtures::StateWritten w, fixtures::WriteSyntheticState(*conn, o.plan.schema, config));
      out.text += fmt::format("state at ledger {}: {} accounts, {} trust lines, {} offers\n", config.ledger,
                              FormatCount(w.accounts), FormatCount(w.trust_lines), FormatCount(w.offers));
      out.json["state"] = {{"ledger", config.ledger},
                           {"accounts", w.accounts},
                           {"trust_lines", w.trust_lines},
                           {"offers", w.offers}};
    }
    return out;
  };
  return a;
}

Action SetupOrchestrate(CLI::App* sub) {
  auto options = std::make_shared<ingest::IngestOptions>();
  sub->add_option("--run", options->resume_run, "The registered run to carry out")->required();
  Action a;
  a.run = [options](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    LD_ASSIGN_OR_RETURN(auto report, ingest::RunIngest(db->conninfo(), *options, ctx.reporter()));
    Outcome out = IngestOutcome(report, *db);
    out.text = out.json.dump(2) + "\n";  // read by the process that started this one
    return out;
  };
  return a;
}

Action SetupWorker(CLI::App* sub) {
  auto worker = std::make_shared<ingest::WorkerOptions>();
  sub->add_option("--run", worker->run_id)->required();
  sub->add_option("--worker", worker->worker)->required();
  sub->add_option("--slot", worker->slot, "Lane 1..N recorded with every attempt");
  Action a;
  a.run = [worker](Context&) -> Result<Outcome> {
    const char* db = std::getenv(ingest::kWorkerDbEnv);
    worker->conninfo = db ? db : "";
    const char* log_dir = std::getenv(ingest::kWorkerLogDirEnv);
    worker->log_dir = log_dir ? log_dir : "";
    Outcome out;
    out.exit_code = ingest::RunWorker(*worker);
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
