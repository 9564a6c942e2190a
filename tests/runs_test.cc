// Runs that cannot hurt each other (issue 11): one live run per schema, targets that are never
// allowed, ownership and row counts re-checked at a run's end and on resume, worker identity
// across a resumed orchestrator, and flags refused before anything is created.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/database.h"
#include "core/process.h"
#include "tests/harness.h"
#include "ingest/ingest_command.h"
#include "ingest/job_table.h"
#include "ingest/orchestrator.h"

namespace ledgerdiff {
namespace {

using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

// Starts `ledgerdiff ARGS` in the background (stdout/stderr to files); returns its pid.
pid_t StartCli(const std::vector<std::string>& args, const std::string& out_file) {
  std::vector<std::string> argv = {testing::LedgerdiffBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions so;
  so.output_file = out_file;
  so.error_file = out_file + ".err";
  auto pid = Spawn(argv, so);
  EXPECT_TRUE(pid.ok()) << pid.status().message();
  return pid.ok() ? *pid : -1;
}

int WaitExit(pid_t pid) {
  int ws = 0;
  waitpid(pid, &ws, 0);
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

// Waits until some job of a run on `schema` reports a hold stage; returns the run id.
std::string WaitForHeldRun(const std::string& schema) {
  auto conn = Connect();
  for (int i = 0; i < 300; ++i) {
    auto r = conn->Exec("SELECT j.run_id FROM ledgerdiff_control.jobs j JOIN ledgerdiff_control.runs r USING (run_id) "
                        "WHERE r.schema_name = $1 AND j.stage LIKE 'hold:%' AND j.state = 'running'",
                        {schema});
    if (r.ok() && r->size() > 0) return std::string(r->Get(0, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "no held job on " << schema;
  return "";
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> HeldIngest(const std::string& schema, const std::string& hold_s) {
  return {"ingest", "--range", "2:41", "--schema", schema, "--workers", "1", "--job-size", "20", "--density", "flat",
          "--hold", "2:1:history_ledgers:" + hold_s, "--db", TestConninfo(), "--format", "json"};
}

TEST(Runs, ASecondRunOnALiveSchemaIsRefusedNamingTheLiveRun) {
  std::string schema = UniqueName("live");
  std::string out = std::filesystem::temp_directory_path() / (schema + ".json");
  pid_t first = StartCli(HeldIngest(schema, "4"), out);
  std::string live_run = WaitForHeldRun(schema);
  ASSERT_FALSE(live_run.empty());
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--fresh"}, {}}) {
    std::vector<std::string> args = {"ingest", "--range", "2:41", "--schema", schema, "--db", TestConninfo()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto second = RunCli(args);
    EXPECT_EQ(second.exit_code, 2) << second.err;
    EXPECT_NE(second.err.find("live run"), std::string::npos) << second.err;
    EXPECT_NE(second.err.find(live_run), std::string::npos) << second.err;
  }
  ASSERT_EQ(WaitExit(first), 0) << Slurp(out + ".err");
  auto j = nlohmann::json::parse(Slurp(out));
  EXPECT_EQ(j["ledgers"], 40);
  EXPECT_EQ(j["rows_per_table"]["history_ledgers"], 40);
  // With the live run gone, the schema is free again.
  auto again = RunCli({"ingest", "--range", "2:41", "--schema", schema, "--fresh", "--db", TestConninfo()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST(Runs, ControlAndSystemSchemasAreNeverTargets) {
  auto conn = Connect();
  LD_ASSERT_OK(conn->Exec("SELECT 1"));
  struct Case {
    std::vector<std::string> extra;
    std::string schema;
  };
  for (const Case& c : std::vector<Case>{{{"--fresh", "--force"}, "ledgerdiff_control"},
                                         {{"--fresh"}, "ledgerdiff_control"},
                                         {{"--force"}, "information_schema"},
                                         {{"--force"}, "pg_catalog"},
                                         {{}, "public"}}) {
    std::vector<std::string> args = {"ingest", "--range", "2:11", "--schema", c.schema, "--db", TestConninfo()};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << c.schema << ": " << r.err;
    EXPECT_NE(r.err.find(c.schema), std::string::npos) << r.err;
  }
  auto tables = conn->Exec("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'history_ledgers'");
  EXPECT_EQ(tables->GetInt(0, 0), 0);
}

TEST(Runs, ARunWhoseSchemaIsTakenOverOrTamperedWithFailsAtItsEnd) {
  // The mark changes under the run.
  {
    std::string schema = UniqueName("taken");
    std::string out = std::filesystem::temp_directory_path() / (schema + ".json");
    pid_t run = StartCli(HeldIngest(schema, "2"), out);
    ASSERT_FALSE(WaitForHeldRun(schema).empty());
    auto conn = Connect();
    LD_ASSERT_OK(conn->Exec(fmt::format("COMMENT ON SCHEMA {} IS 'ledgerdiff:owned run=somebody_else'",
                                        pg::QuoteIdent(schema))));
    EXPECT_EQ(WaitExit(run), 2);
    EXPECT_NE(Slurp(out + ".err").find("no longer this run's"), std::string::npos) << Slurp(out + ".err");
  }
  // Rows a job committed disappear under the run.
  {
    std::string schema = UniqueName("tampered");
    std::string out = std::filesystem::temp_directory_path() / (schema + ".json");
    pid_t run = StartCli(HeldIngest(schema, "2"), out);
    ASSERT_FALSE(WaitForHeldRun(schema).empty());
    auto conn = Connect();
    LD_ASSERT_OK(conn->Exec(fmt::format("DELETE FROM {} WHERE sequence = 3", pg::Qualified(schema, "history_ledgers"))));
    EXPECT_EQ(WaitExit(run), 2);
    EXPECT_NE(Slurp(out + ".err").find("its jobs committed"), std::string::npos) << Slurp(out + ".err");
  }
}

TEST(Runs, ResumeReChecksOwnership) {
  std::string schema = UniqueName("resume_owner");
  auto conn = Connect();
  ingest::IngestOptions o;
  o.schema = schema;
  o.range = {2, 41};
  o.workers = 1;
  o.job_size = 20;
  o.density = "flat";
  auto spec = ingest::RegisterRun(*conn, o);
  LD_ASSERT_OK(spec);
  LD_ASSERT_OK(conn->Exec(fmt::format("COMMENT ON SCHEMA {} IS 'ledgerdiff:owned run=another'", pg::QuoteIdent(schema))));
  auto r = RunCli({"ingest", "--resume", spec->run_id, "--db", TestConninfo()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no longer this run's"), std::string::npos) << r.err;
  auto rows = conn->Exec("SELECT count(*) FROM " + pg::Qualified(schema, "history_ledgers"));
  EXPECT_EQ(rows->GetInt(0, 0), 0);
}

TEST(Runs, BadFlagsAreRefusedBeforeAnythingIsCreated) {
  auto conn = Connect();
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{{"--job-timeout", "300000"},
                                                                                      {"--job-timeout", "nan"},
                                                                                      {"--job-timeout", "inf"},
                                                                                      {"--job-timeout", "0.5"},
                                                                                      {"--job-size", "4294967295"},
                                                                                      {"--retry-backoff", "nan"}}) {
    std::string schema = UniqueName("badflag");
    auto r = RunCli({"ingest", "--range", "2:11", "--schema", schema, flag, value, "--db", TestConninfo()});
    EXPECT_EQ(r.exit_code, 2) << flag << " " << value << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    auto s = conn->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = $1", {schema});
    EXPECT_EQ(s->GetInt(0, 0), 0) << flag << " " << value;
  }
  // --resume of an unknown run in a database that never had runs creates nothing.
  std::string db = UniqueName("noruns");
  LD_ASSERT_OK(conn->Exec("CREATE DATABASE " + pg::QuoteIdent(db)));
  std::string conninfo = TestConninfo() + " dbname=" + db;
  auto r = RunCli({"ingest", "--resume", "no_such_run", "--db", conninfo});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no_such_run"), std::string::npos) << r.err;
  auto other = Connect(conninfo);
  auto control = other->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = 'ledgerdiff_control'");
  EXPECT_EQ(control->GetInt(0, 0), 0);
}

TEST(Runs, SixtyFourWorkersOnTheEmbeddedServer) {
  auto r = RunCli({"ingest", "--range", "2:129", "--schema", "wide", "--workers", "64", "--job-size", "2", "--density",
                   "flat", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ledgers"], 128);
  EXPECT_EQ(j["workers"], 64);
}

// A resumed orchestrator keeps its own workers: jobs lost by the killed orchestrator's workers
// are requeued, but no worker of the new orchestrator is killed for them (names are unique per
// orchestrator instance), so the resume costs one extra attempt per job in flight, no more.
TEST(Runs, ResumedOrchestratorNeverKillsItsOwnHealthyWorkers) {
  std::string schema = UniqueName("orch_kill");
  auto conn = Connect();
  ingest::IngestOptions o;
  o.schema = schema;
  o.range = {2, 161};
  o.workers = 3;
  o.job_size = 10;
  o.density = "flat";
  o.retry_backoff_s = 0.05;
  o.job_timeout_s = 3;
  o.hold_points = {{2, 1, "history_ledgers", 3.0}, {3, 1, "history_ledgers", 3.0}};
  auto spec = ingest::RegisterRun(*conn, o);
  LD_ASSERT_OK(spec);
  std::string out = std::filesystem::temp_directory_path() / (schema + ".json");
  pid_t orchestrator = StartCli({"_orchestrate", "--run", spec->run_id, "--db", TestConninfo()}, out);
  // Both held jobs must be claimed by the first orchestrator's workers: a hold left for the
  // resumed orchestrator would outlast idle_in_transaction_session_timeout and cost a worker.
  auto held = [&] {
    auto r = conn->Exec("SELECT count(*) FROM ledgerdiff_control.jobs WHERE run_id = $1 AND stage LIKE 'hold:%' "
                        "AND state = 'running'",
                        {spec->run_id});
    return r.ok() ? r->GetInt(0, 0) : 0;
  };
  for (int i = 0; i < 400 && held() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_EQ(held(), 2);
  kill(orchestrator, SIGKILL);
  WaitExit(orchestrator);
  // Its workers die with it (PR_SET_PDEATHSIG); a statement one of them had already sent may
  // still commit, so jobs in flight are counted only once all their sessions are gone.
  // (Each suite has its own server and its tests run one at a time: every worker session here
  // is the killed orchestrator's.)
  auto sessions = [&] {
    auto r = conn->Exec("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'ledgerdiff worker %'");
    return r.ok() ? r->GetInt(0, 0) : -1;
  };
  for (int i = 0; i < 400 && sessions() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_EQ(sessions(), 0);
  auto running = conn->Exec("SELECT count(*) FROM ledgerdiff_control.jobs WHERE run_id = $1 AND state = 'running'",
                            {spec->run_id});
  int64_t in_flight = running->GetInt(0, 0);
  ASSERT_GE(in_flight, 1);
  ingest::IngestOptions resume;
  resume.resume_run = spec->run_id;
  resume.worker_binary = testing::LedgerdiffBinary();
  NullReporter reporter;
  auto report = ingest::RunIngest(TestConninfo(), resume, reporter);
  LD_ASSERT_OK(report);
  EXPECT_TRUE(report->ok) << report->error;
  EXPECT_EQ(report->ledgers, 160u);
  EXPECT_EQ(report->attempts, report->jobs + static_cast<uint32_t>(in_flight));
  EXPECT_EQ(report->workers_replaced, 0u);
}

// The search path handed to an external ingester names the schema exactly: mixed case, a
// comma, a space and a quote survive (a session opened with that PGOPTIONS sits in the schema).
TEST(Runs, IngesterSearchPathNamesTheSchemaExactly) {
  auto conn = Connect();
  for (const std::string& schema : {UniqueName("Ledgers"), UniqueName("a,public"), UniqueName("with space"),
                                    UniqueName("q\"uote\\")}) {
    LD_ASSERT_OK(conn->Exec("CREATE SCHEMA " + pg::QuoteIdent(schema)));
    auto env = ingest::IngesterEnvironment(TestConninfo(), schema);
    setenv("PGOPTIONS", env.at("PGOPTIONS").c_str(), 1);
    auto in_schema = pg::Connection::Open(TestConninfo(), "search path probe");
    unsetenv("PGOPTIONS");
    ASSERT_TRUE(in_schema.ok()) << in_schema.status().message();
    auto current = (*in_schema)->Exec("SELECT current_schema()");
    ASSERT_TRUE(current.ok()) << current.status().message();
    EXPECT_EQ(std::string(current->Get(0, 0)), schema) << env.at("PGOPTIONS");
  }
}

}  // namespace
}  // namespace ledgerdiff
