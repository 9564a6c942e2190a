// Past one machine, trusted (issue 20): a planned run owns its schema from `plan` until it is
// done, failed or cancelled, as an orchestrated run does; `cancel` fences a run's jobs; a planned
// run is settled done only after the end-of-run checks; `plan --run-id` is checked before
// anything is written; local workers must fit the server's connections.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "core/database.h"
#include "core/embedded_pg.h"
#include "core/status.h"
#include "ingest/job_table.h"
#include "ingest/orchestrator.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;
using namespace std::chrono_literals;

// The exit code of a runtime failure (core/status.h: 3).
const int kRuntimeExit = static_cast<int>(Status::Runtime("x").exit_code());

using testing::LastLine;

int Lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

std::string TempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() / UniqueName(name)).string();
}

// Starts `ledgerdiff ARGS` in the background: stdout to `out`, stderr to `out`.err.
pid_t Start(const std::vector<std::string>& args, const std::string& out) {
  testing::CliSpawnOptions so;
  so.stdout_path = out;
  so.stderr_path = out + ".err";
  return testing::SpawnCli(args, so);
}

pid_t StartWorker(const std::string& run_id, const std::string& out) {
  return Start({"worker", "--run", run_id, "--db", TestConninfo()}, out);
}

// Polls `done` every 50 ms for up to `limit`.
bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// One value of a query (the first column of the first row; "" when there is none).
std::string Value(pg::Connection& conn, const std::string& sql,
                  const std::vector<std::optional<std::string>>& args = {}) {
  auto r = conn.Exec(sql, args);
  if (!r.ok() || r->size() == 0 || r->IsNull(0, 0)) return "";
  return std::string(r->Get(0, 0));
}

std::string MarkOf(pg::Connection& conn, const std::string& schema) {
  return Value(conn, "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", {schema});
}

// Waits until job `job` of the run is held (its worker sleeps inside the job's data transaction).
bool JobHeld(pg::Connection& conn, const std::string& run_id, int job) {
  return Eventually([&] {
    return Value(conn,
                 "SELECT 1 FROM ledgerdiff_control.jobs WHERE run_id = $1 AND job_id = $2::int AND state = 'running' "
                 "AND stage LIKE 'hold:%'",
                 {run_id, std::to_string(job)}) == "1";
  });
}

std::string Plan(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"plan", "--db", TestConninfo(), "--density", "flat"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? LastLine(r.out) : "";
}

// ---- The live-run guard ----

// While workers of a planned run are at work, nothing may take its schema: a second plan, plan
// --fresh (which used to drop the schema under the workers), ingest and ingest --fresh each exit 2
// naming the run, change nothing, and the run still finishes identical to a serial ingest.
TEST(Guard, LiveWorkersOfAPlannedRunKeepTheirSchema) {
  const std::string schema = UniqueName("guarded"), serial = UniqueName("guarded_serial"), range = "2:201";
  const std::string run_id =
      Plan({"--range", range, "--schema", schema, "--job-size", "25", "--hold", "1:1:history_ledgers:15"});
  ASSERT_FALSE(run_id.empty());
  auto conn = Connect();
  const std::string mark = MarkOf(*conn, schema),
                    oid = Value(*conn, "SELECT oid FROM pg_namespace WHERE nspname = $1", {schema});
  ASSERT_EQ(mark, "ledgerdiff:owned run=" + run_id);
  const std::string log = TempFile("guard_workers");
  pid_t a = StartWorker(run_id, log + "_a"), b = StartWorker(run_id, log + "_b");
  ASSERT_TRUE(JobHeld(*conn, run_id, 1));

  const std::vector<std::vector<std::string>> attacks = {
      {"plan", "--range", range, "--schema", schema, "--fresh"},
      {"plan", "--range", range, "--schema", schema},
      {"plan", "--range", range, "--schema", schema, "--force"},
      {"ingest", "--range", range, "--schema", schema, "--fresh", "--workers", "2"},
      {"ingest", "--range", range, "--schema", schema, "--workers", "1"},
  };
  for (auto args : attacks) {
    SCOPED_TRACE(args[0] + (args.size() > 5 ? " " + args[5] : ""));
    args.insert(args.end(), {"--db", TestConninfo(), "--density", "flat"});
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("has a live run: run " + run_id), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ledgerdiff cancel --run " + run_id), std::string::npos) << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
  // Nothing changed: the same schema (not dropped and recreated), its mark, one run.
  EXPECT_EQ(Value(*conn, "SELECT oid FROM pg_namespace WHERE nspname = $1", {schema}), oid);
  EXPECT_EQ(MarkOf(*conn, schema), mark);
  EXPECT_EQ(Value(*conn, "SELECT count(*) FROM ledgerdiff_control.runs WHERE schema_name = $1", {schema}), "1");

  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "240"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(testing::WaitExitCode(a), 0) << testing::ReadFileBytes(log + "_a.err");
  EXPECT_EQ(testing::WaitExitCode(b), 0) << testing::ReadFileBytes(log + "_b.err");
  auto ingest = RunCli(
      {"ingest", "--db", TestConninfo(), "--schema", serial, "--range", range, "--workers", "1", "--density", "flat"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  auto diff = RunCli({"diff", "--db", TestConninfo(), serial, schema, "--range", range});
  EXPECT_EQ(diff.exit_code, 0) << diff.out << diff.err;
  // Done: the schema is free again.
  auto again = RunCli({"plan", "--db", TestConninfo(), "--range", range, "--schema", schema, "--fresh"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  for (const char* s : {"_a", "_a.err", "_b", "_b.err"}) std::filesystem::remove(log + s);
}

// An orchestrated live run blocks plan too; cancelling it stops its orchestrator.
TEST(Guard, AnOrchestratedLiveRunBlocksPlanAndCanBeCancelled) {
  const std::string schema = UniqueName("orch_live");
  const std::string out = TempFile("orch_live");
  pid_t ingest =
      Start({"ingest", "--range", "2:61", "--schema", schema, "--workers", "1", "--job-size", "20", "--density", "flat",
             "--hold", "2:1:history_ledgers:6", "--db", TestConninfo(), "--format", "json"},
            out);
  auto conn = Connect();
  std::string run_id;
  ASSERT_TRUE(Eventually([&] {
    run_id = Value(*conn, "SELECT run_id FROM ledgerdiff_control.runs WHERE schema_name = $1", {schema});
    return !run_id.empty() && Value(*conn,
                                    "SELECT 1 FROM ledgerdiff_control.jobs WHERE run_id = $1 AND job_id = 2 "
                                    "AND stage LIKE 'hold:%'",
                                    {run_id}) == "1";
  }));
  for (const std::string fresh : {"--fresh", "--force"}) {
    auto r = RunCli({"plan", "--db", TestConninfo(), "--range", "2:61", "--schema", schema, fresh});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("has a live run: run " + run_id), std::string::npos) << r.err;
  }
  auto cancel = RunCli({"cancel", "--db", TestConninfo(), "--run", run_id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  // The orchestrator ends: its run did not complete.
  EXPECT_NE(testing::WaitExitCode(ingest), 0);
  EXPECT_NE(testing::ReadFileBytes(out + ".err").find("was cancelled"), std::string::npos)
      << testing::ReadFileBytes(out + ".err");
  EXPECT_EQ(Value(*conn, "SELECT state FROM ledgerdiff_control.runs WHERE run_id = $1", {run_id}), "cancelled");
  // The held attempt never committed.
  EXPECT_EQ(Value(*conn, "SELECT count(*) FROM " + pg::Qualified(schema, "history_ledgers") + " WHERE sequence >= 22"),
            "0");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:61", "--schema", schema, "--fresh"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  std::filesystem::remove(out);
  std::filesystem::remove(out + ".err");
}

// A run marked running whose orchestrator holds no lock (killed, or never started) still owns its
// schema: a new run is refused with the two ways out, resume or cancel; the resume is allowed.
TEST(Guard, ARunningRowWithoutOrchestratorIsRefusedUntilResumedOrCancelled) {
  auto conn = Connect();
  for (const bool resume : {true, false}) {
    SCOPED_TRACE(resume ? "resume" : "cancel");
    const std::string schema = UniqueName("orphan");
    ingest::IngestOptions o;
    o.plan.schema = schema;
    o.plan.range = {2, 41};
    o.plan.workers = 1;
    o.plan.job_size = 20;
    o.plan.density = fixtures::Density::kFlat;
    auto spec = ingest::RegisterRun(*conn, o);
    LD_ASSERT_OK(spec);
    const std::string run_id = spec->run_id;
    for (const std::string cmd : {"ingest", "plan"}) {
      auto r = RunCli({cmd, "--db", TestConninfo(), "--range", "2:41", "--schema", schema, "--fresh"});
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_NE(r.err.find("run " + run_id + " is marked running"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("ledgerdiff ingest --resume " + run_id), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("ledgerdiff cancel --run " + run_id), std::string::npos) << r.err;
    }
    if (resume) {
      auto r = RunCli({"ingest", "--db", TestConninfo(), "--resume", run_id, "--format", "json"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(nlohmann::json::parse(r.out)["ledgers"], 40);
    } else {
      auto r = RunCli({"cancel", "--db", TestConninfo(), "--run", run_id});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      // A cancelled run is never continued.
      auto again = RunCli({"ingest", "--db", TestConninfo(), "--resume", run_id});
      EXPECT_EQ(again.exit_code, 2) << again.err;
      EXPECT_NE(again.err.find("was cancelled"), std::string::npos) << again.err;
    }
    auto fresh = RunCli({"ingest", "--db", TestConninfo(), "--range", "2:41", "--schema", schema, "--fresh",
                         "--workers", "1", "--density", "flat"});
    EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  }
}

// ---- cancel ----

TEST(Guard, CancelFencesAPlannedRunsWorkersAndKeepsItsSchema) {
  const std::string schema = UniqueName("cancelled");
  const std::string run_id =
      Plan({"--range", "2:101", "--schema", schema, "--job-size", "25", "--hold", "1:1:history_ledgers:4"});
  ASSERT_FALSE(run_id.empty());
  auto conn = Connect();
  const std::string log = TempFile("cancel_worker");
  pid_t worker = StartWorker(run_id, log);
  ASSERT_TRUE(JobHeld(*conn, run_id, 1));

  auto cancel = RunCli({"cancel", "--db", TestConninfo(), "--run", run_id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("run " + run_id + " cancelled: 3 pending and 1 running jobs fenced"), std::string::npos)
      << cancel.out;
  EXPECT_NE(cancel.out.find("ingest --fresh --schema " + schema), std::string::npos) << cancel.out;
  EXPECT_NE(cancel.out.find("`ledgerdiff drop --db '"), std::string::npos) << cancel.out;
  EXPECT_NE(cancel.out.find(" --schema " + schema + "`"), std::string::npos) << cancel.out;

  // The worker's held attempt cannot commit; it stops claiming and exits 1 naming the cancel.
  EXPECT_EQ(testing::WaitExitCode(worker), 1) << testing::ReadFileBytes(log + ".err");
  EXPECT_NE(testing::ReadFileBytes(log + ".err").find("run " + run_id + " was cancelled"), std::string::npos)
      << testing::ReadFileBytes(log + ".err");
  auto jobs = ingest::ListJobs(*conn, run_id);
  ASSERT_TRUE(jobs.ok());
  for (const auto& j : *jobs) EXPECT_EQ(j.state, ingest::JobState::kCancelled) << j.job_id;
  auto attempts = ingest::ListAttempts(*conn, run_id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);  // nothing was claimed after the cancel
  EXPECT_EQ(attempts->at(0).outcome, ingest::AttemptOutcome::kFenced) << attempts->at(0).error;
  EXPECT_EQ(Value(*conn, "SELECT count(*) FROM " + pg::Qualified(schema, "history_ledgers")), "0");
  // The schema stays, still ledgerdiff's.
  EXPECT_EQ(MarkOf(*conn, schema), "ledgerdiff:owned run=" + run_id);

  auto runs = RunCli({"runs", "--db", TestConninfo(), "--format", "json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  bool listed = false;
  for (const auto& r : nlohmann::json::parse(runs.out))
    if (r["run_id"] == run_id) {
      listed = true;
      EXPECT_EQ(r["state"], "cancelled");
      EXPECT_EQ(r["jobs"]["cancelled"], 4);
    }
  EXPECT_TRUE(listed) << runs.out;
  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id});
  EXPECT_EQ(wait.exit_code, 1) << wait.err;
  EXPECT_NE(wait.err.find("was cancelled"), std::string::npos) << wait.err;

  auto twice = RunCli({"cancel", "--db", TestConninfo(), "--run", run_id});
  EXPECT_EQ(twice.exit_code, 2) << twice.err;
  EXPECT_NE(twice.err.find("run " + run_id + " is already cancelled"), std::string::npos) << twice.err;
  EXPECT_EQ(Lines(twice.err), 1) << twice.err;
  auto unknown = RunCli({"cancel", "--db", TestConninfo(), "--run", "no_such_run"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("no such run \"no_such_run\""), std::string::npos) << unknown.err;
  // A finished run: nothing to cancel.
  const std::string done_schema = UniqueName("cancel_done");
  const std::string done_run = Plan({"--range", "2:21", "--schema", done_schema, "--job-size", "10"});
  auto finish = RunCli({"worker", "--db", TestConninfo(), "--run", done_run});
  ASSERT_EQ(finish.exit_code, 0) << finish.err;
  auto late = RunCli({"cancel", "--db", TestConninfo(), "--run", done_run});
  EXPECT_EQ(late.exit_code, 2) << late.err;
  EXPECT_NE(late.err.find("is already done"), std::string::npos) << late.err;
  // The cancelled run holds its schema no more.
  auto fresh = RunCli({"plan", "--db", TestConninfo(), "--range", "2:101", "--schema", schema, "--fresh"});
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  std::filesystem::remove(log);
  std::filesystem::remove(log + ".err");
}

// ---- the end-of-run checks of a planned run ----

TEST(Guard, APlannedRunWhoseEndOfRunCheckFailsIsFailed) {
  struct Case {
    const char* name;
    std::string tamper;  // SQL, {} is the schema
    std::string reason;
  };
  for (const Case& c :
       {Case{"re-marked", "COMMENT ON SCHEMA {} IS 'ledgerdiff:owned run=somebody_else'", "no longer this run's"},
        Case{"rows deleted", "DELETE FROM {}.history_ledgers WHERE sequence = 3", "its jobs committed"}}) {
    SCOPED_TRACE(c.name);
    const std::string schema = UniqueName("settle");
    const std::string run_id =
        Plan({"--range", "2:41", "--schema", schema, "--job-size", "20", "--hold", "2:1:history_ledgers:3"});
    ASSERT_FALSE(run_id.empty());
    auto conn = Connect();
    const std::string log = TempFile("settle_worker");
    pid_t worker = StartWorker(run_id, log);
    ASSERT_TRUE(JobHeld(*conn, run_id, 2));  // job 1 is done by then
    std::string sql = c.tamper;
    sql.replace(sql.find("{}"), 2, pg::QuoteIdent(schema));
    ASSERT_TRUE(conn->Run(sql).ok());
    EXPECT_EQ(testing::WaitExitCode(worker), 1) << testing::ReadFileBytes(log + ".err");
    EXPECT_NE(testing::ReadFileBytes(log + ".err").find(c.reason), std::string::npos)
        << testing::ReadFileBytes(log + ".err");
    auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--format", "json"});
    EXPECT_EQ(wait.exit_code, 1) << wait.err;
    EXPECT_NE(wait.err.find("run " + run_id + " failed: "), std::string::npos) << wait.err;
    EXPECT_NE(wait.err.find(c.reason), std::string::npos) << wait.err;
    auto j = nlohmann::json::parse(wait.out);
    EXPECT_EQ(j["state"], "failed");
    EXPECT_NE(j["error"].get<std::string>().find(c.reason), std::string::npos) << j.dump();
    std::filesystem::remove(log);
    std::filesystem::remove(log + ".err");
  }
}

// ---- plan --run-id ----

TEST(Guard, PlanRunIdIsCheckedBeforeAnythingIsWritten) {
  auto conn = Connect();
  const std::string id = UniqueName("my_run"), first = UniqueName("runid_a"), second = UniqueName("runid_b");
  EXPECT_EQ(Plan({"--range", "2:21", "--schema", first, "--run-id", id}), id);
  const std::string oid = Value(*conn, "SELECT oid FROM pg_namespace WHERE nspname = $1", {first});
  for (const auto& [schema, extra] :
       std::vector<std::pair<std::string, std::string>>{{second, "--force"}, {first, "--fresh"}}) {
    auto r = RunCli({"plan", "--db", TestConninfo(), "--range", "2:21", "--schema", schema, "--run-id", id, extra});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--run-id " + id + ": a run with that id exists already (schema \"" + first + "\""),
              std::string::npos)
        << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
  // Nothing was created, dropped or re-marked.
  EXPECT_EQ(Value(*conn, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", {second}), "0");
  EXPECT_EQ(Value(*conn, "SELECT oid FROM pg_namespace WHERE nspname = $1", {first}), oid);
  EXPECT_EQ(MarkOf(*conn, first), "ledgerdiff:owned run=" + id);

  const std::string third = UniqueName("runid_c");
  for (const std::string& bad : {std::string("a b"), std::string("x;drop"), std::string("it's"), std::string("dash-id"),
                                 std::string("caf\xc3\xa9"), std::string("new\nline"), std::string(41, 'a')}) {
    auto r = RunCli({"plan", "--db", TestConninfo(), "--range", "2:21", "--schema", third, "--run-id", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--run-id"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("A-Z, a-z, 0-9 and _"), std::string::npos) << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
  EXPECT_EQ(Value(*conn, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", {third}), "0");
}

// ---- the connection budget ----

// Against a server with max_connections=20: more local workers than fit are refused before
// anything is written, with the figures and the largest --workers that fits (which then runs); a
// worker that dies on a refused connection counts in the report and is replaced.
TEST(Guard, LocalWorkersMustFitTheServersConnections) {
  EmbeddedOptions eo;
  eo.max_connections = 20;
  auto server = EmbeddedPostgres::Start(eo);
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto admin = Connect((*server)->conninfo());
  ASSERT_TRUE(admin);
  // A role that is not a superuser, so that the role's own connection limit can refuse a worker.
  for (const char* sql : {"CREATE ROLE ld_budget LOGIN", "CREATE DATABASE ld_budget OWNER ld_budget"}) {
    Status s = admin->Run(sql);
    ASSERT_TRUE(s.ok()) << sql << ": " << s.message();
  }
  const std::string db = (*server)->conninfo() + " user=ld_budget dbname=ld_budget";

  auto refused =
      RunCli({"ingest", "--db", db, "--range", "2:41", "--schema", "wide", "--workers", "16", "--density", "flat"});
  ASSERT_EQ(refused.exit_code, 2) << refused.err;
  for (const char* part : {"--workers 16 needs 32 connections (2 per worker: its jobs and its heartbeat)",
                           "max_connections 20", "superuser_reserved_connections 3", " in use"})
    EXPECT_NE(refused.err.find(part), std::string::npos) << part << " missing: " << refused.err;
  EXPECT_EQ(Lines(refused.err), 1) << refused.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(refused.err, m, std::regex("at most (\\d+) workers fit: use --workers (\\d+)")))
      << refused.err;
  const std::string fits = m[1];
  EXPECT_EQ(m[2], fits);
  auto budget_db = Connect(db);
  EXPECT_EQ(Value(*budget_db, "SELECT count(*) FROM pg_namespace WHERE nspname IN ('wide', 'ledgerdiff_control')"),
            "0");
  budget_db.reset();
  auto fitted = RunCli({"ingest", "--db", db, "--range", "2:41", "--schema", "wide", "--workers", fits, "--job-size",
                        "5", "--density", "flat", "--format", "json"});
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  EXPECT_EQ(nlohmann::json::parse(fitted.out)["ledgers"], 40);

  // Worker A holds job 1; worker B does jobs 2 and 3 and waits. The role may then hold no more
  // sessions than the orchestrator's and A's: B, killed, is replaced by a worker whose
  // connection is refused, until the limit is lifted.
  const std::string out = TempFile("budget_ingest");
  pid_t ingest = Start({"ingest", "--db", db, "--range", "2:61", "--schema", "held", "--workers", "2", "--job-size",
                        "20", "--density", "flat", "--hold", "1:1:history_ledgers:10", "--format", "json"},
                       out);
  auto watch = Connect(db);
  std::string run_id, b_pid;
  ASSERT_TRUE(Eventually([&] {
    run_id = Value(*watch, "SELECT run_id FROM ledgerdiff_control.runs WHERE schema_name = 'held'");
    b_pid = Value(*watch,
                  "SELECT worker_pid FROM ledgerdiff_control.jobs WHERE run_id = $1 AND job_id = 3 AND "
                  "state = 'done'",
                  {run_id});
    return !b_pid.empty() &&
           Value(*watch,
                 "SELECT 1 FROM ledgerdiff_control.jobs WHERE run_id = $1 AND job_id = 1 AND stage LIKE "
                 "'hold:%'",
                 {run_id}) == "1";
  })) << testing::ReadFileBytes(out + ".err");
  watch.reset();
  // The orchestrator's session and two per worker (this test's own has gone).
  ASSERT_TRUE(Eventually([&] {
    return Value(*admin,
                 "SELECT count(*) FROM pg_stat_activity WHERE usename = 'ld_budget' AND backend_type = "
                 "'client backend'") == "5";
  }));
  ASSERT_TRUE(admin->Run("ALTER ROLE ld_budget CONNECTION LIMIT 3").ok());
  ASSERT_EQ(kill(std::stoi(b_pid), SIGKILL), 0);
  const bool refused_worker = Eventually(
      [&] { return testing::ReadFileBytes(out + ".err").find("too many connections for role") != std::string::npos; },
      20s);
  ASSERT_TRUE(admin->Run("ALTER ROLE ld_budget CONNECTION LIMIT -1").ok());
  EXPECT_TRUE(refused_worker) << testing::ReadFileBytes(out + ".err");
  EXPECT_EQ(testing::WaitExitCode(ingest), 0) << testing::ReadFileBytes(out + ".err");
  auto report = nlohmann::json::parse(testing::ReadFileBytes(out));
  EXPECT_EQ(report["ledgers"], 60);
  EXPECT_GE(report["workers_failed"].get<int>(), 2) << report.dump();  // B, and at least one refused replacement
  EXPECT_GE(report["workers_replaced"].get<int>(), 2) << report.dump();
  std::filesystem::remove(out);
  std::filesystem::remove(out + ".err");
}

// The schemas of database `conninfo` other than PostgreSQL's own and public.
std::set<std::string> UserSchemas(const std::string& conninfo) {
  std::set<std::string> out;
  auto conn = Connect(conninfo);
  auto rows = conn->Exec(
      "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname NOT IN ('public', "
      "'information_schema')");
  if (!rows.ok())
    ADD_FAILURE() << rows.status().message();
  else
    for (int i = 0; i < rows->size(); ++i) out.insert(std::string(rows->Get(i, 0)));
  return out;
}

// verify checks before work what it can (issue 44): a parallel side that does not fit the
// server's connections is refused before the serial side is ingested (exit 2, nothing created),
// and the run's schema names are claimed from the start: while the serial side is still being
// ingested, `plan` into the parallel side's predictable schema is refused.
TEST(Guard, VerifyChecksItsBudgetAndClaimsItsSchemasBeforeWork) {
  EmbeddedOptions eo;
  eo.max_connections = 20;
  auto server = EmbeddedPostgres::Start(eo);
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string db = (*server)->conninfo();

  auto refused = RunCli({"verify", "--db", db, "--range", "2:41", "--workers", "16", "--density", "flat"});
  ASSERT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("--workers 16 needs 32 connections"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("serial ingest"), std::string::npos) << refused.err;
  EXPECT_EQ(UserSchemas(db), std::set<std::string>{}) << "verify created schemas before it was refused";

  // The serial side's external ingester sleeps: the run is in its serial phase meanwhile.
  const std::string out = TempFile("claim_verify");
  pid_t verify = Start({"verify", "--db", db, "--range", "2:11", "--workers", "2", "--ingest-cmd", "sleep 6"}, out);
  auto watch = Connect(db);
  std::string serial;
  ASSERT_TRUE(Eventually([&] {
    serial = Value(*watch, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ld\\_%\\_serial'");
    return !serial.empty();
  })) << testing::ReadFileBytes(out + ".err");
  const std::string parallel = serial.substr(0, serial.size() - std::string("_serial").size()) + "_parallel";
  auto planned = RunCli({"plan", "--db", db, "--range", "2:11", "--schema", parallel});
  EXPECT_EQ(planned.exit_code, 2) << planned.out << planned.err;
  EXPECT_EQ(Value(*watch, "SELECT count(*) FROM ledgerdiff_control.runs WHERE schema_name = $1", {parallel}), "0");
  kill(verify, SIGKILL);
  (void)testing::WaitExitCode(verify);
  std::filesystem::remove(out);
  std::filesystem::remove(out + ".err");
}

// An operator's shell whose PG* points at production: writing commands use the embedded default
// (one line says PG* was ignored, and how to write there) and leave production untouched; a
// worker, which joins an existing run, exits 2 naming the missing database; a reading command
// still reads where PG* points, and --db writes where it says.
TEST(Guard, WritingCommandsIgnoreThePgEnvironment) {
  const std::string prod = UniqueName("ld_prod");
  const Status created = Connect()->Run("CREATE DATABASE " + pg::QuoteIdent(prod));
  ASSERT_TRUE(created.ok()) << created.message();
  std::smatch host, port;
  const std::string base = TestConninfo();
  ASSERT_TRUE(std::regex_search(base, host, std::regex("host=(\\S+)")) &&
              std::regex_search(base, port, std::regex("port=(\\S+)")))
      << base;
  const std::vector<std::string> env = {"LEDGERDIFF_DB=",    "PGHOST=" + host[1].str(), "PGPORT=" + port[1].str(),
                                        "PGUSER=ledgerdiff", "PGDATABASE=" + prod,      "PGAPPNAME=ops-shell"};
  const std::string prod_conninfo = base + " dbname=" + prod;
  ASSERT_TRUE(UserSchemas(prod_conninfo).empty());

  auto verify = RunCli({"verify", "--range", "2:201", "--workers", "2", "--density", "flat"}, env);
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  for (const char* part :
       {"PGAPPNAME, PGDATABASE, PGHOST, PGPORT, PGUSER set but ignored: verify writes", "export LEDGERDIFF_DB"})
    EXPECT_NE(verify.err.find(part), std::string::npos) << part << " missing: " << verify.err;
  EXPECT_EQ(verify.err.find(prod), std::string::npos) << verify.err;
  auto ingest = RunCli({"ingest", "--range", "2:51", "--schema", "ops", "--density", "flat"}, env);
  EXPECT_EQ(ingest.exit_code, 0) << ingest.err;
  EXPECT_NE(ingest.err.find("set but ignored: ingest writes"), std::string::npos) << ingest.err;
  auto worker = RunCli({"worker", "--run", "some-run"}, env);
  EXPECT_EQ(worker.exit_code, 2) << worker.err;
  EXPECT_NE(worker.err.find("worker: no database given (PGAPPNAME, PGDATABASE, PGHOST, PGPORT, PGUSER ignored"),
            std::string::npos)
      << worker.err;
  EXPECT_EQ(Lines(worker.err), 1) << worker.err;
  // plan registers a run for workers that join later: never on a throwaway server, never in PG*'s.
  auto plan = RunCli({"plan", "--range", "2:51", "--schema", "planned"}, env);
  EXPECT_EQ(plan.exit_code, 2) << plan.err;
  EXPECT_NE(plan.err.find("plan: no database given"), std::string::npos) << plan.err;
  EXPECT_NE(plan.err.find("--keep-db DIR"), std::string::npos) << plan.err;
  auto external = RunCli({"verify", "--range", "2:51", "--workers-external", "--workers-timeout", "1"}, env);
  EXPECT_EQ(external.exit_code, 2) << external.err;
  EXPECT_NE(external.err.find("--workers-external: workers started elsewhere cannot reach the embedded"),
            std::string::npos)
      << external.err;
  EXPECT_EQ(UserSchemas(prod_conninfo), std::set<std::string>{}) << "a writing command wrote into PG*'s database";

  // Named with --db, production is written; a reader with only PG* reads it.
  auto named =
      RunCli({"ingest", "--db", prod_conninfo, "--range", "2:51", "--schema", "named", "--density", "flat"}, env);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.err.find("ignored"), std::string::npos) << named.err;
  EXPECT_TRUE(UserSchemas(prod_conninfo).count("named"));
  auto digest = RunCli({"digest", "--schema", "named", "--range", "2:51"}, env);
  EXPECT_EQ(digest.exit_code, 0) << digest.err;
  EXPECT_NE(digest.out.find("history_ledgers"), std::string::npos) << digest.out;
  EXPECT_EQ(digest.err.find("ignored"), std::string::npos) << digest.err;
  // diff's bare schema names are schemas of that same database (its help says PG* is a default).
  auto diff = RunCli({"diff", "named", "named", "--range", "2:51"}, env);
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("identical"), std::string::npos) << diff.out;
  // The printed worker command reaches the database it was planned in (no password in it).
  auto planned = RunCli({"plan", "--db", prod_conninfo, "--range", "2:51", "--schema", "planned"}, env);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_NE(planned.out.find("worker --run 2"), std::string::npos) << planned.out;
  EXPECT_NE(planned.out.find(" --db '"), std::string::npos) << planned.out;
  EXPECT_NE(planned.out.find("dbname=" + prod), std::string::npos) << planned.out;
  // A reader given --keep-db asked for that embedded cluster: PG* yields to it (the look-again
  // commands of a kept cluster run in such a shell).
  testing::ScratchDir kept("ld-guard-kept");
  auto runs = RunCli({"runs", "--keep-db", kept.path + "/pg"}, env);
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_EQ(runs.err.find("cannot be combined"), std::string::npos) << runs.err;
}

// A worker claims jobs only of a run that is running: a failed or cancelled run keeps its pending
// jobs pending (the job table's claim, asked directly; the run is then set running again as the
// positive control).
TEST(Guard, OnlyARunningRunsJobsCanBeClaimed) {
  const std::string schema = UniqueName("claim");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:101", "--schema", schema, "--job-size", "50"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::string run = plan.out.substr(0, plan.out.find_last_not_of("\n") + 1);
  run = run.substr(run.find_last_of('\n') + 1);
  auto conn = Connect();
  for (const char* state : {"failed", "cancelled", "running"}) {
    const Status set = conn->Run(
        fmt::format("UPDATE ledgerdiff_control.runs SET state = '{}' WHERE run_id = {}", state, pg::QuoteLiteral(run)));
    ASSERT_TRUE(set.ok()) << set.message();
    auto claimed = ingest::ClaimJob(*conn, run, "w-test", static_cast<int>(getpid()), 0);
    ASSERT_TRUE(claimed.ok()) << claimed.status().message();
    EXPECT_EQ(claimed->has_value(), std::string(state) == "running") << "run " << state;
  }
  auto cancel = RunCli({"cancel", "--db", TestConninfo(), "--run", run});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
}

}  // namespace
}  // namespace ledgerdiff
