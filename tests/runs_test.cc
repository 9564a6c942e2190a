// Runs that cannot hurt each other (issue 11): one live run per schema, targets that are never
// allowed, ownership and row counts re-checked at a run's end and on resume, worker identity
// across a resumed orchestrator, and flags refused before anything is created.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/database.h"
#include "core/embedded_pg.h"
#include "core/process.h"
#include "core/tempdir.h"
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

// A run of the flat-density generator (few rows a ledger: quick jobs).
ingest::IngestOptions FlatPlan(const std::string& schema, LedgerRange range, uint32_t workers, uint32_t job_size) {
  ingest::IngestOptions o;
  o.plan.schema = schema;
  o.plan.range = range;
  o.plan.workers = workers;
  o.plan.job_size = job_size;
  o.plan.density = fixtures::Density::kFlat;
  return o;
}

// Starts `ledgerdiff ARGS` in the background (stdout to `out_file`, stderr to `out_file`.err).
pid_t StartCli(const std::vector<std::string>& args, const std::string& out_file) {
  testing::CliSpawnOptions options;
  options.stdout_path = out_file;
  options.stderr_path = out_file + ".err";
  return testing::SpawnCli(args, options);
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
  ASSERT_EQ(testing::WaitExitCode(first), 0) << testing::ReadFileBytes(out + ".err");
  auto j = nlohmann::json::parse(testing::ReadFileBytes(out));
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
    EXPECT_EQ(testing::WaitExitCode(run), 1) << "the run failed its end-of-run check";
    EXPECT_NE(testing::ReadFileBytes(out + ".err").find("no longer this run's"), std::string::npos) << testing::ReadFileBytes(out + ".err");
  }
  // Rows a job committed disappear under the run.
  {
    std::string schema = UniqueName("tampered");
    std::string out = std::filesystem::temp_directory_path() / (schema + ".json");
    pid_t run = StartCli(HeldIngest(schema, "2"), out);
    ASSERT_FALSE(WaitForHeldRun(schema).empty());
    auto conn = Connect();
    LD_ASSERT_OK(conn->Exec(fmt::format("DELETE FROM {} WHERE sequence = 3", pg::Qualified(schema, "history_ledgers"))));
    EXPECT_EQ(testing::WaitExitCode(run), 1) << "the run failed its end-of-run check";
    EXPECT_NE(testing::ReadFileBytes(out + ".err").find("its jobs committed"), std::string::npos) << testing::ReadFileBytes(out + ".err");
  }
}

TEST(Runs, ResumeReChecksOwnership) {
  std::string schema = UniqueName("resume_owner");
  auto conn = Connect();
  ingest::IngestOptions o = FlatPlan(schema, {2, 41}, 1, 20);
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
// The jobs in flight are read from the attempts history after the resume, not counted at the
// kill: a worker still starting when its orchestrator dies may claim a job after any such count
// (seen under load: three jobs lost where two were counted 'running').
TEST(Runs, ResumedOrchestratorNeverKillsItsOwnHealthyWorkers) {
  auto conn = Connect();
  std::string schema = UniqueName("orch_kill");
  ingest::IngestOptions o = FlatPlan(schema, {2, 161}, 3, 10);
  o.plan.retry_backoff_s = 0.05;
  o.plan.job_timeout_s = 3;
  o.hooks.hold_points = {{2, 1, "history_ledgers", 3.0}, {3, 1, "history_ledgers", 3.0}};
  auto spec = ingest::RegisterRun(*conn, o);
  LD_ASSERT_OK(spec);
  std::string out = std::filesystem::temp_directory_path() / (schema + ".json");
  pid_t orchestrator = StartCli({"_orchestrate", "--run", spec->run_id, "--db", TestConninfo()}, out);
  // Both held jobs are claimed by the first orchestrator's workers: a hold left for the resumed
  // orchestrator would outlast idle_in_transaction_session_timeout and cost a worker.
  auto held = [&] {
    auto r = conn->Exec("SELECT count(*) FROM ledgerdiff_control.jobs WHERE run_id = $1 AND stage LIKE 'hold:%' "
                        "AND state = 'running'",
                        {spec->run_id});
    return r.ok() ? r->GetInt(0, 0) : 0;
  };
  for (int i = 0; i < 400 && held() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_EQ(held(), 2);
  kill(orchestrator, SIGKILL);
  testing::WaitExitCode(orchestrator);

  ingest::IngestOptions resume;
  resume.resume_run = spec->run_id;
  NullReporter reporter;
  auto report = ingest::RunIngest(TestConninfo(), resume, reporter);
  LD_ASSERT_OK(report);
  EXPECT_TRUE(report->ok) << report->error;
  EXPECT_EQ(report->ledgers, 160u);
  EXPECT_EQ(report->workers_replaced, 0u);

  // Worker names carry their orchestrator's pid (name@host:pid:start): the killed one's, or this
  // process's (the resume ran in it).
  const std::string killed = fmt::format("%:{}:%", orchestrator), resumed = fmt::format("%:{}:%", getpid());
  auto count = [&](const std::string& where) {
    auto r = conn->Exec("SELECT count(*) FROM ledgerdiff_control.attempts WHERE run_id = $1 AND " + where,
                        {spec->run_id, killed, resumed});
    return r.ok() ? r->GetInt(0, 0) : -1;
  };
  auto history = [&] {
    auto r = conn->Exec("SELECT string_agg(format('job %s attempt %s by %s: %s %s', job_id, attempt, worker, outcome, "
                        "coalesce(error, '')), E'\\n' ORDER BY job_id, attempt) FROM ledgerdiff_control.attempts "
                        "WHERE run_id = $1",
                        {spec->run_id});
    return r.ok() ? std::string(r->Get(0, 0)) : r.status().message();
  };
  const int64_t in_flight = count("worker LIKE $2 AND outcome <> 'done' AND $3 <> ''");
  // The two held jobs at least were in flight; each was lost with its session and done again.
  EXPECT_GE(in_flight, 2) << history();
  EXPECT_EQ(count("worker LIKE $2 AND outcome <> 'done' AND outcome <> 'lost' AND $3 <> ''"), 0) << history();
  // The resumed orchestrator's workers never lost or failed an attempt: none was killed.
  EXPECT_EQ(count("worker LIKE $3 AND outcome <> 'done' AND $2 <> ''"), 0) << history();
  EXPECT_EQ(count("worker NOT LIKE $2 AND worker NOT LIKE $3"), 0) << history();
  // One attempt per job, plus one per job in flight at the kill.
  EXPECT_EQ(report->attempts, report->jobs + static_cast<uint32_t>(in_flight)) << history();
  EXPECT_EQ(count("outcome = 'done' AND $2 <> '' AND $3 <> ''"), static_cast<int64_t>(report->jobs)) << history();
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

// A scratch directory (mode 0755: the embedded server's user can reach a cluster inside it),
// removed at scope end.
struct Scratch : testing::ScratchDir {
  Scratch() : ScratchDir("ledgerdiff-runs-test-") {}
};

// `ledgerdiff verify` with many workers (and many digest connections) on the embedded
// default: the server is sized for them (EmbeddedMaxConnectionsFor), never "too many clients".
TEST(Runs, VerifyWithManyWorkersOnTheEmbeddedServer) {
  Scratch scratch;
  const std::string cluster = scratch.path + "/cluster";
  auto r = RunCli({"verify", "--range", "2:129", "--workers", "64", "--job-size", "2", "--density", "flat", "--jobs",
                   "64", "--keep-db", cluster, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "identical");
  EXPECT_EQ(j["workers"], 64);
  EXPECT_EQ(j["parallel_run"]["jobs"], 64);
  // The server was started for 64 workers and 2 x 64 digest connections.
  const std::string opts = testing::ReadFileBytes(cluster + "/data/postmaster.opts");
  EXPECT_NE(opts.find("max_connections=" + std::to_string(EmbeddedMaxConnectionsFor(64 + 2 * 64))), std::string::npos)
      << opts;
}

// ---- External ingesters (--ingest-cmd) ----

// An ingester's stdout and stderr go to per-job logs in the run's log directory (named in the
// JSON), never to ledgerdiff's stdout or stderr: --format json stays parseable.
TEST(ExternalIngester, OutputGoesToPerJobLogsNeverToLedgerdiffsOutput) {
  Scratch tmp;
  const std::string cmd = "echo \"INGESTER-OUT job {job} from {from}\"; echo \"INGESTER-ERR job {job}\" >&2";
  for (const bool explicit_dir : {false, true}) {
    std::vector<std::string> args = {"ingest", "--range", "2:41", "--schema", UniqueName("ing_logs"), "--workers", "2",
                                     "--job-size", "20", "--ingest-cmd", cmd, "--db", TestConninfo(), "--format",
                                     "json"};
    if (explicit_dir) args.insert(args.end(), {"--log-dir", tmp.path + "/mine"});
    auto r = RunCli(args, {"TMPDIR=" + tmp.path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("INGESTER-"), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("INGESTER-"), std::string::npos) << r.err;
    auto j = nlohmann::json::parse(r.out);  // nothing else on stdout
    const std::string run_id = j["run_id"];
    ASSERT_TRUE(j["log_dir"].is_string()) << r.out;
    const std::string log_dir = j["log_dir"];
    EXPECT_EQ(log_dir, tmp.path + (explicit_dir ? "/mine/" : "/ledgerdiff-logs/") + run_id);
    for (uint32_t job : {1u, 2u}) {
      const std::string out = testing::ReadFileBytes(ingest::JobStdoutLog(log_dir, job)), err = testing::ReadFileBytes(ingest::JobStderrLog(log_dir, job));
      EXPECT_NE(out.find(fmt::format("== ledgerdiff: job {} attempt 1 [ledgers", job)), std::string::npos) << out;
      EXPECT_NE(out.find(fmt::format("INGESTER-OUT job {} from {}", job, job == 1 ? 2 : 22)), std::string::npos) << out;
      EXPECT_EQ(out.find("INGESTER-ERR"), std::string::npos) << out;
      EXPECT_NE(err.find(fmt::format("INGESTER-ERR job {}", job)), std::string::npos) << err;
    }
  }
}

// A failing ingester: the error (stderr, JSON) names how it ended, its stderr log and the last
// lines it wrote there.
TEST(ExternalIngester, AFailureShowsTheLastLinesOfTheJobsStderr) {
  Scratch tmp;
  const std::string cmd =
      "echo 'progress 1 of 3'; echo 'connecting' >&2; echo 'fatal: ledger {from} not found' >&2; exit 3";
  auto r = RunCli({"ingest", "--range", "2:41", "--schema", UniqueName("ing_fail"), "--workers", "1", "--job-size",
                   "40", "--retries", "0", "--ingest-cmd", cmd, "--db", TestConninfo(), "--format", "json"},
                  {"TMPDIR=" + tmp.path});
  ASSERT_EQ(r.exit_code, 1) << "the run failed: " << r.err;
  EXPECT_EQ(r.out.find("progress 1 of 3"), std::string::npos);
  for (const char* part : {"exit 3", "job-1.stderr.log", "connecting | fatal: ledger 2 not found"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " missing from: " << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["failed_jobs"].size(), 1u) << r.out;
  EXPECT_NE(j["failed_jobs"][0]["error"].get<std::string>().find("fatal: ledger 2 not found"), std::string::npos);
}

// verify under an ingester that logs to stdout (as Horizon does): the JSON still parses.
TEST(ExternalIngester, VerifyJsonStaysCleanWithAChattyIngester) {
  Scratch tmp;
  const std::string source = UniqueName("chatty_source");
  auto src = RunCli({"ingest", "--range", "2:81", "--schema", source, "--workers", "1", "--db", TestConninfo()});
  ASSERT_EQ(src.exit_code, 0) << src.err;
  const std::string script = testing::SourceDir() + "/tests/ingesters/copy_from_source.sh";
  const std::string cmd = "echo 'horizon: ingesting {from}-{to}'; echo 'horizon: warning' >&2; '" + script +
                          "' {from} {to} {schema}";
  auto r = RunCli({"verify", "--range", "2:81", "--workers", "2", "--job-size", "40", "--ingest-cmd", cmd, "--db",
                   TestConninfo(), "--format", "json"},
                  {"LEDGERDIFF_TEST_SOURCE_SCHEMA=" + source, "TMPDIR=" + tmp.path});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "identical");
  const std::string log_dir = j["parallel_run"]["log_dir"];
  EXPECT_NE(testing::ReadFileBytes(ingest::JobStdoutLog(log_dir, 1)).find("horizon: ingesting 2-41"), std::string::npos);
  EXPECT_NE(testing::ReadFileBytes(ingest::JobStderrLog(log_dir, 2)).find("horizon: warning"), std::string::npos);
  EXPECT_EQ(r.err.find("horizon:"), std::string::npos) << r.err;
}

// Placeholder values are data in every quoting context: a schema name carrying $(...),
// backticks, double or single quotes runs nothing, whether the template writes {schema},
// "{schema}" or '{schema}', and the command receives the name exactly.
TEST(ExternalIngester, HostileValuesNeverRunInAnyQuotingContext) {
  Scratch tmp;
  const std::string tag = std::to_string(getpid());
  std::vector<std::string> markers;
  auto marker = [&](char which) {
    markers.push_back("/tmp/ldpw" + tag + which);
    return markers.back();
  };
  const std::vector<std::string> names = {
      "x$(touch " + marker('a') + ")",
      "x`touch " + marker('b') + "`",
      "x\"; touch " + marker('c') + "; echo \"",
      "x'; touch " + marker('d') + "; echo '",
      "'\"$(touch " + marker('e') + ")\"'`touch " + marker('f') + "`",
      "a b\\\\c *",
  };
  const std::string out = tmp.path + "/value";
  // Template, and what it prints around the value.
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> templates = {
      {"printf '%s\\n' {schema} > '" + out + "'", {"", ""}},
      {"printf '%s\\n' \"{schema}\" > '" + out + "'", {"", ""}},
      {"printf '%s\\n' '{schema}' > '" + out + "'", {"", ""}},
      {"printf '%s\\n' \"[{schema}] {job}\" > '" + out + "'", {"[", "] 7"}},
      {"printf '%s\\n' '[{schema}] {job}' > '" + out + "'", {"[", "] 7"}},
      {"printf '%s\\n' pre{schema}post > '" + out + "' # it's {schema}", {"pre", "post"}},
  };
  for (const auto& name : names) {
    for (const auto& [tmpl, around] : templates) {
      std::filesystem::remove(out);
      ingest::IngestCommandJob job{"host=/nonexistent", name, "w1", 7, 1, {2, 41}, tmp.path + "/logs/run"};
      Status s = ingest::RunIngestCommand(tmpl, job);
      EXPECT_TRUE(s.ok()) << tmpl << " with " << name << ": " << s.message();
      EXPECT_EQ(testing::ReadFileBytes(out), around.first + name + around.second + "\n") << tmpl << " with " << name;
    }
  }
  // End to end, through a run and its workers, with the name as a real schema.
  const std::string hostile = "x$(touch " + marker('g') + ")\"`touch " + marker('h') + "`";
  for (const std::string quoted : {"{schema}", "\"{schema}\"", "'{schema}'"}) {
    std::filesystem::remove(out);
    auto r = RunCli({"ingest", "--range", "2:21", "--schema", hostile, "--fresh", "--workers", "1", "--ingest-cmd",
                     "printf '%s\\n' " + quoted + " > '" + out + "'", "--db", TestConninfo()},
                    {"TMPDIR=" + tmp.path});
    EXPECT_EQ(r.exit_code, 0) << quoted << ": " << r.err;
    EXPECT_EQ(testing::ReadFileBytes(out), hostile + "\n") << quoted;
  }
  for (const auto& m : markers) EXPECT_FALSE(std::filesystem::exists(m)) << m << " was created: code ran";
  for (const auto& m : markers) std::filesystem::remove(m);
}

}  // namespace
}  // namespace ledgerdiff
