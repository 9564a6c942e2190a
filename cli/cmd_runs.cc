// plan, worker, wait, runs, cancel, drop: a distributed ingestion with no orchestrator process
// (ingest/distributed.h).
// `plan` registers the run and prints its id as the last stdout line (deploy/ reads it).
#include <fmt/format.h>

#include <cmath>

#include <algorithm>

#include "cli/command.h"
#include "core/report.h"
#include "core/ledger_range.h"
#include "core/text.h"
#include "ingest/distributed.h"
#include "ingest/orchestrator.h"
#include "ingest/schema_guard.h"
#include "report/runs_text_json.h"

namespace ledgerdiff::cli {

namespace {

// wait's exit code and error line for a run that is no longer running.
Outcome SettledOutcome(const ingest::RunStatus& s, const Database& db) {
  Outcome out{s.state == ingest::RunState::kDone ? 0 : 1, db.target({s.schema}).Line() + "\n" + report::RunStatusText(s),
              report::RunStatusToJson(s, db.target({s.schema})), ""};
  if (s.state == ingest::RunState::kCancelled)
    out.error = fmt::format("run {} was cancelled{}", s.run_id, s.error.empty() ? "" : " (" + s.error + ")");
  else if (s.state != ingest::RunState::kDone)
    out.error = fmt::format("run {} {}{}", s.run_id, ingest::ToString(s.state), s.error.empty() ? "" : ": " + s.error);
  return out;
}

}  // namespace

Action SetupPlan(CLI::App* sub) {
  struct Flags {
    std::string range;
    std::vector<std::string> holds;
    ingest::IngestOptions options;
  };
  auto f = std::make_shared<Flags>();
  auto& o = f->options;
  sub->add_option("--range", f->range, "Ledgers FROM:TO (inclusive)")->required();
  sub->add_option("--hold", f->holds, "Test hold point JOB:ATTEMPT:STAGE:SECONDS")->group("");
  sub->add_option("--schema", o.plan.schema, "Target schema (created and marked as ledgerdiff's)")->required();
  AddPlanFlags(sub, o.plan);
  sub->add_option("--ingest-cmd", o.plan.ingest_cmd,
                  "Run this command per job instead of the built-in ingester (placeholders as for ingest)");
  sub->add_flag("--force", o.force, "Write into a schema ledgerdiff did not create");
  sub->add_flag("--fresh", o.replace_schema, "Drop and recreate the schema first (only if ledgerdiff owns it)");
  sub->add_option("--run-id", o.run_id, "Use this run id instead of a new one");
  Action a;
  a.check = [f]() -> Status {
    LD_ASSIGN_OR_RETURN(f->options.plan.range, ParseLedgerRange(f->range));
    for (const auto& text : f->holds) {
      LD_ASSIGN_OR_RETURN(auto hold, ingest::ParseHoldPoint(text));
      f->options.hooks.hold_points.push_back(hold);
    }
    return ingest::ValidateIngestOptions(f->options);
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    ctx.Announce(db->target({f->options.plan.schema}));
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff plan"));
    LD_ASSIGN_OR_RETURN(ingest::RunSpec spec, ingest::PlanRun(*conn, f->options));
    const auto jobs = SplitJobs(spec.plan.range, spec.plan.job_size).size();
    Outcome out;
    out.text = report::RenderPlanText(spec, jobs, db->target({spec.plan.schema}), ReconnectFlags(*db));
    return out;
  };
  return a;
}

Action SetupRunWorker(CLI::App* sub) {
  struct Flags {
    std::string run, worker;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("--run", f->run, "The run (printed by plan)")->required();
  sub->add_option("--worker-id", f->worker, "Name in the job table (default: host-pid-start time)");
  Action a;
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    ctx.Announce(db->target());
    Outcome out;
    ingest::WorkerOutcome w = ingest::RunDistributedWorker(db->conninfo(), f->run, f->worker, ctx.reporter());
    out.exit_code = w.exit_code;
    if (w.exit_code == 0) out.text = report::RenderRunCompleteText(f->run);
    out.error = w.message;  // why the run failed (the failed job's last error) or was cancelled
    return out;
  };
  return a;
}

Action SetupWait(CLI::App* sub) {
  struct Flags {
    std::string run;
    double timeout = 0;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("--run", f->run, "The run (printed by plan)")->required();
  sub->add_option("--timeout", f->timeout,
                  "Give up after S seconds (the run's status, then an error: exit 3, a runtime error: the run may "
                  "still finish); default: wait forever");
  Action a;
  a.check = [f]() -> Status {
    if (!std::isfinite(f->timeout) || f->timeout < 0)
      return Status::Usagef("--timeout {}: must be a number of seconds from 0 (0: wait forever)", f->timeout);
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    ctx.Announce(db->target());
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff wait"));
    ingest::RunStatus last;
    auto status = ingest::WaitForRun(*conn, f->run, f->timeout, ctx.reporter(), &last);
    if (!status.ok()) {
      if (last.run_id.empty()) return status.status();
      // Timed out: where the run stands (stale jobs, no live worker), then the error.
      return Outcome{static_cast<int>(status.status().exit_code()),
                     db->target({last.schema}).Line() + "\n" + report::RunStatusText(last), report::RunStatusToJson(last, db->target({last.schema})),
                     status.status().message()};
    }
    return SettledOutcome(*status, *db);
  };
  return a;
}

Action SetupRuns(CLI::App* sub) {
  (void)sub;
  Action a;
  a.run = [](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    const Target target = db->target();
    ctx.Announce(target);
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff runs"));
    LD_ASSIGN_OR_RETURN(auto runs, ingest::ListRuns(*conn));
    std::vector<Target> targets;
    for (const auto& r : runs) targets.push_back(db->target({r.schema}));
    Outcome out;
    out.text = report::RenderRunListText(runs, target);
    out.json = report::RunListToJson(runs, targets);
    return out;
  };
  return a;
}

Action SetupCancel(CLI::App* sub) {
  auto run = std::make_shared<std::string>();
  sub->add_option("--run", *run, "The run to cancel (printed by plan; `ledgerdiff runs` lists them)")->required();
  Action a;
  a.run = [run](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    ctx.Announce(db->target());
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff cancel"));
    LD_ASSIGN_OR_RETURN(ingest::CancelReport r, ingest::CancelRun(*conn, *run));
    const Target target = db->target({r.schema});
    Outcome out;
    out.text = report::RenderCancelText(r, target, ReconnectFlags(*db));
    out.json = report::CancelReportToJson(r, target);
    return out;
  };
  return a;
}

// Drops schemas ledgerdiff created (their ownership mark says so) that no live run holds. Every
// schema is checked before any is dropped: one foreign or reserved schema refuses them all
// (exit 2). A live run refuses its schema unless --cancel, which first cancels it as `ledgerdiff
// cancel` does (its jobs fenced: a worker still running can no longer commit). A schema already
// gone is reported as such, so the drop hints printed after a run can be repeated.
Action SetupDrop(CLI::App* sub) {
  struct Flags {
    std::vector<std::string> schemas;
    bool cancel = false;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("--schema", f->schemas, "A schema to drop (repeatable); only one ledgerdiff created")
      ->required()
      ->allow_extra_args(false);
  sub->add_flag("--cancel", f->cancel,
                "Cancel a live run of the schema first (as `ledgerdiff cancel`), e.g. one left by an interrupted "
                "verify; without it such a schema is refused");
  Action a;
  a.check = [f]() -> Status {
    for (const std::string& schema : f->schemas) {
      LD_RETURN_IF_ERROR(ValidateSchemaName(schema));
      LD_RETURN_IF_ERROR(ingest::ValidateTargetSchema(schema, /*force=*/false));
    }
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    const Target target = db->target(f->schemas);
    ctx.Announce(target);
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff drop"));
    for (const std::string& schema : f->schemas) {
      LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(*conn, schema));
      if (state == SchemaState::kForeign)
        return Status::Usagef("schema \"{}\" was not created by ledgerdiff; refusing to drop it (nothing dropped)",
                              schema);
      if (auto live = ingest::CheckNoLiveRun(*conn, schema); !f->cancel && !live.ok())
        return live.kind() == Status::Kind::kUsage
                   ? Status::Usagef("{} (`ledgerdiff drop --cancel` gives that run up and drops the schema; nothing "
                                    "dropped)",
                                    live.message())
                   : live;
    }
    std::vector<std::string> dropped, absent, cancelled;
    for (const std::string& schema : f->schemas) {
      if (f->cancel) {
        LD_ASSIGN_OR_RETURN(std::vector<ingest::RunStatus> runs, ingest::ListRuns(*conn));
        for (const auto& run : runs) {
          if (run.schema != schema || run.state != ingest::RunState::kRunning) continue;
          LD_RETURN_IF_ERROR(ingest::CancelRun(*conn, run.run_id).status());
          cancelled.push_back(run.run_id);
        }
      }
      LD_RETURN_IF_ERROR(ingest::WithSchemaGuard(*conn, schema, [&]() -> Status {
        LD_RETURN_IF_ERROR(ingest::CheckNoLiveRun(*conn, schema));  // a run registered meanwhile
        LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(*conn, schema));
        if (state == SchemaState::kAbsent) {
          absent.push_back(schema);
          return Status::Ok();
        }
        LD_RETURN_IF_ERROR(DropOwnedSchema(*conn, schema));
        dropped.push_back(schema);
        return Status::Ok();
      }));
    }
    const report::DropOutcome dropped_schemas{cancelled, dropped, absent};
    Outcome out;
    out.text = report::RenderDropText(dropped_schemas, target);
    out.json = report::DropOutcomeToJson(dropped_schemas, target);
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
