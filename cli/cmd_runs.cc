// plan, worker, wait, runs: a distributed ingestion with no orchestrator process (ingest/distributed.h).
// `plan` registers the run and prints its id as the last stdout line (deploy/ reads it).
#include <fmt/format.h>

#include <cmath>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "ingest/distributed.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff::cli {

namespace {

nlohmann::json RunStatusToJson(const ingest::RunStatus& s) {
  return {{"run_id", s.run_id},
          {"schema", s.schema},
          {"state", s.state},
          {"range", {{"from", s.range.from}, {"to", s.range.to}}},
          {"job_size", s.job_size},
          {"created_at", s.created_at},
          {"jobs", {{"total", s.counts.total()},
                    {"pending", s.counts.pending},
                    {"running", s.counts.running},
                    {"done", s.counts.done},
                    {"failed", s.counts.failed}}},
          {"ledgers_done", s.counts.ledgers_done},
          {"workers", s.workers}};
}

std::string RunStatusLine(const ingest::RunStatus& s) {
  return fmt::format("{}  {:<7}  schema \"{}\"  ledgers {}  jobs {}/{} done, {} running, {} pending, {} failed  "
                     "{} workers  created {}\n",
                     s.run_id, s.state, s.schema, s.range.str(), s.counts.done, s.counts.total(), s.counts.running,
                     s.counts.pending, s.counts.failed, s.workers.size(), s.created_at);
}

int StateExitCode(const std::string& state) { return state == "done" ? 0 : state == "running" ? 2 : 1; }

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
  sub->add_option("--schema", o.schema, "Target schema (created and marked as ledgerdiff's)")->required();
  AddPlanFlags(sub, o);
  sub->add_option("--ingest-cmd", o.ingest_cmd,
                  "Run this command per job instead of the built-in ingester (placeholders as for ingest)");
  sub->add_flag("--force", o.force, "Write into a schema ledgerdiff did not create");
  sub->add_flag("--fresh", o.replace_schema, "Drop and recreate the schema first (only if ledgerdiff owns it)");
  sub->add_option("--run-id", o.run_id, "Use this run id instead of a new one");
  Action a;
  a.check = [f]() -> Status {
    LD_ASSIGN_OR_RETURN(f->options.range, ParseLedgerRange(f->range));
    for (const auto& text : f->holds) {
      LD_ASSIGN_OR_RETURN(auto hold, ingest::ParseHoldPoint(text));
      f->options.hold_points.push_back(hold);
    }
    return ingest::ValidateIngestOptions(f->options);
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff plan"));
    LD_ASSIGN_OR_RETURN(ingest::RunSpec spec, ingest::PlanRun(*conn, f->options));
    const auto jobs = SplitJobs(spec.range, spec.job_size).size();
    Outcome out;
    out.text = fmt::format("# run {}: schema \"{}\", ledgers {}, {} jobs of {} ledgers; start workers with "
                           "`ledgerdiff worker --run {}`\n{}\n",
                           spec.run_id, spec.schema, spec.range.str(), jobs, spec.job_size, spec.run_id, spec.run_id);
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
    Outcome out;
    out.exit_code = ingest::RunDistributedWorker(db->conninfo(), f->run, f->worker, ctx.reporter());
    out.text = out.exit_code == 0   ? fmt::format("run {} complete\n", f->run)
               : out.exit_code == 1 ? fmt::format("run {} failed: a job ran out of retries\n", f->run)
                                    : "";
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
  sub->add_option("--timeout", f->timeout, "Give up after S seconds (exit 2); default: wait forever");
  Action a;
  a.check = [f]() -> Status {
    if (!std::isfinite(f->timeout) || f->timeout < 0)
      return Status::Usagef("--timeout {}: must be a number of seconds from 0 (0: wait forever)", f->timeout);
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff wait"));
    LD_ASSIGN_OR_RETURN(auto status, ingest::WaitForRun(*conn, f->run, f->timeout, ctx.reporter()));
    return Outcome{StateExitCode(status.state), RunStatusLine(status), RunStatusToJson(status), ""};
  };
  return a;
}

Action SetupRuns(CLI::App* sub) {
  (void)sub;
  Action a;
  a.run = [](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(db->conninfo(), "ledgerdiff runs"));
    LD_ASSIGN_OR_RETURN(auto runs, ingest::ListRuns(*conn));
    Outcome out;
    out.json = nlohmann::json::array();
    for (const auto& r : runs) {
      out.json.push_back(RunStatusToJson(r));
      out.text += RunStatusLine(r);
    }
    if (runs.empty()) out.text = "no runs\n";
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
