// Ingestion orchestration: worker processes, job splitting, retries, failures, bad input.
// Everything runs real worker processes (build/ledgerdiff _worker) against a real PostgreSQL.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "core/database.h"
#include "core/history_tables.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/stage_timer.h"
#include "core/process.h"
#include "fixtures/generator.h"
#include "fixtures/schema.h"
#include "tests/harness.h"
#include "ingest/ingest_command.h"
#include "ingest/job_table.h"
#include "ingest/orchestrator.h"
#include "ingest/plan.h"
#include "ingest/worker.h"

namespace ledgerdiff {
namespace {

using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;
using ingest::IngestOptions;
using ingest::IngestReport;
using ingest::RunIngest;

IngestOptions Options(const std::string& schema, LedgerRange range, uint32_t workers, uint32_t job_size,
                      fixtures::Density density = fixtures::Density::kFlat) {
  IngestOptions o;
  o.plan.schema = schema;
  o.plan.range = range;
  o.plan.workers = workers;
  o.plan.job_size = job_size;
  o.plan.density = density;
  o.plan.retry_backoff_s = 0.05;
  return o;
}

IngestReport Ingest(const IngestOptions& o) {
  NullReporter reporter;
  auto r = RunIngest(TestConninfo(), o, reporter);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : IngestReport{};
}


// A fingerprint of the natural content of a table (surrogate ids resolved), for equality
// checks between schemas that do not need the digest room.
std::string EffectsFingerprint(const std::string& schema) {
  auto conn = Connect();
  auto rows = conn->Exec(fmt::format(
      "SELECT md5(string_agg(e.history_operation_id || ':' || e.\"order\" || ':' || a.address || ':' || e.type, ',' "
      "ORDER BY e.history_operation_id, e.\"order\")) FROM {} e JOIN {} a ON a.id = e.history_account_id",
      pg::Qualified(schema, "history_effects"), pg::Qualified(schema, "history_accounts")));
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? std::string(rows->Get(0, 0)) : "";
}

TEST(Ingest, SerialWritesWhatTheGeneratorProduces) {
  std::string schema = UniqueName("serial");
  auto report = Ingest(Options(schema, {2, 301}, 1, 50));
  EXPECT_TRUE(report.ok);
  EXPECT_EQ(report.ledgers, 300u);
  EXPECT_EQ(report.jobs, 6u);
  EXPECT_EQ(report.rows_per_table, fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {2, 301}));
  EXPECT_GT(report.rows, 1000u);
}

TEST(Ingest, ParallelMatchesSerialForAwkwardSplits) {
  const LedgerRange range{2, 152};  // 151 ledgers: job size 10 leaves a last job of one ledger
  auto expected = fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, range);
  std::string serial = UniqueName("ser");
  Ingest(Options(serial, range, 1, 151));
  std::string fingerprint = EffectsFingerprint(serial);
  struct Case {
    uint32_t workers, job_size;
  };
  for (Case c : {Case{2, 10}, Case{3, 7}, Case{4, 33}, Case{4, 1}, Case{2, 150}}) {
    std::string schema = UniqueName("par");
    auto report = Ingest(Options(schema, range, c.workers, c.job_size));
    EXPECT_TRUE(report.ok) << c.workers << "x" << c.job_size;
    EXPECT_EQ(report.jobs, (range.size() + c.job_size - 1) / c.job_size);
    EXPECT_EQ(report.rows_per_table, expected) << c.workers << "x" << c.job_size;
    EXPECT_EQ(EffectsFingerprint(schema), fingerprint) << c.workers << "x" << c.job_size;
  }
}

TEST(Ingest, RangeOfOneLedger) {
  std::string schema = UniqueName("one");
  auto report = Ingest(Options(schema, {77, 77}, 4, 250));
  EXPECT_TRUE(report.ok);
  EXPECT_EQ(report.jobs, 1u);
  EXPECT_EQ(report.rows_per_table, fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {77, 77}));
}

TEST(Ingest, ParallelWorkersReallyRunInSeparateProcesses) {
  std::string schema = UniqueName("procs");
  auto report = Ingest(Options(schema, {2, 401}, 3, 20));
  std::set<std::string> workers;
  for (const auto& a : report.timeline) workers.insert(a.worker);
  EXPECT_GE(workers.size(), 2u);  // work was pulled by more than one worker
  EXPECT_EQ(report.timeline.size(), 20u);
}

TEST(Ingest, JobThatFailsOnceSucceedsOnRetry) {
  std::string schema = UniqueName("retry");
  auto o = Options(schema, {2, 101}, 2, 25);
  o.hooks.crash_points = {{2, 1, "start", ingest::CrashAction::kFail}};
  auto report = Ingest(o);
  EXPECT_TRUE(report.ok);
  EXPECT_EQ(report.retried_jobs, 1u);
  EXPECT_EQ(report.attempts, 5u);
  EXPECT_EQ(report.rows_per_table, fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {2, 101}));
  bool saw_failed_attempt = false;
  for (const auto& a : report.timeline)
    if (a.job_id == 2 && a.attempt == 1) saw_failed_attempt = a.outcome == ingest::AttemptOutcome::kFailed;
  EXPECT_TRUE(saw_failed_attempt);
}

TEST(Ingest, WorkerCrashInsideTransactionLeavesNothingAndIsRetried) {
  std::string schema = UniqueName("crash");
  auto o = Options(schema, {2, 101}, 2, 25);
  o.hooks.crash_points = {{3, 1, "history_effects", ingest::CrashAction::kAbort}};
  auto report = Ingest(o);
  EXPECT_TRUE(report.ok);
  EXPECT_GE(report.workers_replaced, 1u);
  EXPECT_EQ(report.retried_jobs, 1u);
  EXPECT_EQ(report.rows_per_table, fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {2, 101}));
}

TEST(Ingest, AttemptsCarryTheWorkersSlotAndJobsTheRowsTheyCommitted) {
  std::string schema = UniqueName("slots");
  // One lane: w1 dies inside job 2, its replacement w1.1 does the rest in the same lane.
  auto o = Options(schema, {2, 61}, 1, 10);
  o.hooks.crash_points = {{2, 1, "history_effects", ingest::CrashAction::kAbort}};
  auto report = Ingest(o);
  ASSERT_TRUE(report.ok);
  ASSERT_GE(report.workers_replaced, 1u);
  bool saw_replacement = false;
  for (const auto& a : report.timeline) {
    EXPECT_EQ(a.slot, 1) << a.worker;
    // Names are "w<slot>[.<generation>]@host:pid:start": the slot stored agrees with the name.
    const std::string lane = a.worker.substr(0, a.worker.find('@'));
    EXPECT_NE(a.worker.find('@'), std::string::npos) << a.worker;
    EXPECT_EQ(lane.substr(0, lane.find('.')), "w" + std::to_string(a.slot)) << a.worker;
    saw_replacement |= lane.find('.') != std::string::npos;
  }
  EXPECT_TRUE(saw_replacement);
  auto conn = Connect();
  auto jobs = ingest::ListJobs(*conn, report.run_id);
  ASSERT_TRUE(jobs.ok());
  int64_t committed = 0;
  for (const auto& j : *jobs) {
    EXPECT_EQ(j.state, ingest::JobState::kDone);
    EXPECT_GT(j.rows, 0) << "job " << j.job_id;
    committed += j.rows;
  }
  EXPECT_EQ(static_cast<uint64_t>(committed), report.rows);
}

// Issue 22: the ingest weighs its ledgers by the rows the plan's density puts in them (stellar:
// they grow along the range), for the done jobs and the range alike.
TEST(Ingest, ProgressWeighsLedgersByThePlannedRows) {
  struct Recorder : Reporter {
    std::vector<std::pair<double, Progress>> updates;  // seconds since the start, the update
    Stopwatch start;
    void Note(std::string_view) override {}
    void Update(const Progress& p) override { updates.emplace_back(start.Seconds(), p); }
  } recorder;
  const LedgerRange range{2, 3000};
  auto r = RunIngest(TestConninfo(), Options(UniqueName("growing"), range, 2, 250, fixtures::Density::kStellar), recorder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->ok) << r->error;
  ASSERT_FALSE(recorder.updates.empty());
  const uint64_t estimated = recorder.updates.front().second.work_total;
  EXPECT_GE(static_cast<double>(estimated), static_cast<double>(r->rows) / 1.5);
  EXPECT_LE(static_cast<double>(estimated), static_cast<double>(r->rows) * 1.5);
  for (size_t i = 1; i < recorder.updates.size(); ++i) {
    EXPECT_EQ(recorder.updates[i].second.work_total, estimated);
    EXPECT_GE(recorder.updates[i].second.work_done, recorder.updates[i - 1].second.work_done);
  }
  const auto& [end_s, last] = recorder.updates.back();
  EXPECT_EQ(last.done, range.size());
  EXPECT_EQ(last.work_done, estimated);
  // Half the ledgers are far less than half the rows; the ETA the reporter shows then, replayed
  // from the updates (RecentRate as StderrReporter feeds it), by ledgers and by rows.
  RecentRate rate;
  for (const auto& [t_s, p] : recorder.updates) {
    rate.Add(p.phase, t_s, p.done, p.work_done);
    if (2 * p.done < range.size()) continue;
    EXPECT_LT(static_cast<double>(p.work_done), 0.4 * static_cast<double>(estimated));
    std::printf("[ measured ] stellar ingest of %s, 2 workers, jobs of 250: at %llu of %llu ledgers, %.2f s "
                "left; ETA by ledgers %.2f s, by rows %.2f s\n",
                range.str().c_str(), static_cast<unsigned long long>(p.done),
                static_cast<unsigned long long>(range.size()), end_s - t_s, rate.Eta(p.total),
                rate.Eta(p.total, p.work_total));
    break;
  }
}

TEST(HistoryTables, LedgerRangePredicateHoldsAtTheTopOfTheLedgerSpace) {
  auto conn = Connect();
  std::string schema = UniqueName("top");
  ASSERT_TRUE(conn->Run(fmt::format("CREATE SCHEMA {0}; CREATE TABLE {1} (history_operation_id bigint); "
                                    "INSERT INTO {1} VALUES ({2}), ({3}), ({4})",
                                    pg::QuoteIdent(schema), pg::Qualified(schema, "history_effects"),
                                    Toid(2147483647, 1, 1), Toid(2147483646, 1048575, 4095), Toid(5, 1, 1)))
                  .ok());
  auto count = [&](LedgerRange r) {
    auto rows = conn->Exec(fmt::format("SELECT count(*) FROM {} WHERE {}", pg::Qualified(schema, "history_effects"),
                                       LedgerRangePredicate(*FindHistoryTable("history_effects"), r)));
    EXPECT_TRUE(rows.ok()) << rows.status().message();
    return rows.ok() ? rows->GetInt(0, 0) : -1;
  };
  EXPECT_EQ(count({2147483647, 2147483647}), 1);
  EXPECT_EQ(count({2147483646, 2147483647}), 2);
  EXPECT_EQ(count({2147483646, 2147483646}), 1);  // the last TOID of a ledger is inside it
  EXPECT_EQ(count({1, 2147483647}), 3);
  EXPECT_EQ(count({6, 2147483645}), 0);
  EXPECT_FALSE(FindHistoryTable("history_accounts").has_value());  // a lookup table has no ledger
  ASSERT_TRUE(conn->Run("DROP SCHEMA " + pg::QuoteIdent(schema) + " CASCADE").ok());
}

TEST(Ingest, JobThatAlwaysFailsStopsTheRunAndNamesARestartRange) {
  std::string schema = UniqueName("fail");
  auto o = Options(schema, {2, 201}, 2, 50);
  o.plan.retries = 2;
  for (uint32_t attempt = 1; attempt <= 3; ++attempt)
    o.hooks.crash_points.push_back({3, attempt, "start", ingest::CrashAction::kFail});
  NullReporter reporter;
  auto r = RunIngest(TestConninfo(), o, reporter);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->ok);
  ASSERT_EQ(r->failed_jobs.size(), 1u);
  EXPECT_EQ(r->failed_jobs[0].range, (LedgerRange{102, 151}));
  EXPECT_EQ(r->failed_jobs[0].attempt, 3u);
  ASSERT_TRUE(r->restart_range.has_value());
  EXPECT_LE(r->restart_range->from, 102u);
  EXPECT_NE(r->error.find("102:151"), std::string::npos) << r->error;
  // The run stopped: no job is left running, and the job table says so.
  auto conn = Connect();
  auto counts = ingest::CountJobs(*conn, r->run_id);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->running, 0u);

  // Resume finishes the run without redoing finished jobs once the fault is gone.
  IngestOptions resume;
  resume.resume_run = r->run_id;
  auto done_before = ingest::ListJobs(*conn, r->run_id);
  ASSERT_TRUE(done_before.ok());
  std::map<uint32_t, uint32_t> attempts_before;
  for (auto& j : *done_before) {
    if (j.state == ingest::JobState::kDone) attempts_before[j.job_id] = j.attempt;
  }
  // The fault points are part of a test run's spec, and say so; clear them as an operator would fix the bug.
  auto marked = conn->Exec("SELECT spec->>'test_run', jsonb_array_length(spec->'test_hooks'->'crash_points') "
                           "FROM ledgerdiff_control.runs WHERE run_id = $1",
                           {r->run_id});
  ASSERT_TRUE(marked.ok() && marked->size() == 1) << marked.status().message();
  EXPECT_EQ(marked->Get(0, 0), "true");
  EXPECT_EQ(marked->Get(0, 1), "3");
  ASSERT_TRUE(conn->Exec("UPDATE ledgerdiff_control.runs SET spec = jsonb_set(spec, '{test_hooks,crash_points}', '[]') "
                         "WHERE run_id = $1",
                         {r->run_id})
                  .ok());
  auto resumed = Ingest(resume);
  EXPECT_TRUE(resumed.ok);
  EXPECT_EQ(resumed.rows_per_table, fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {2, 201}));
  auto after = ingest::ListJobs(*conn, r->run_id);
  for (auto& j : *after) {
    EXPECT_EQ(j.state, ingest::JobState::kDone);
    if (attempts_before.count(j.job_id)) {
      EXPECT_EQ(j.attempt, attempts_before[j.job_id]) << "job redone: " << j.job_id;
    }
  }
}

TEST(Ingest, AProductionRunStoresNoTestHooks) {
  const std::string schema = UniqueName("production");
  NullReporter reporter;
  auto r = RunIngest(TestConninfo(), Options(schema, {2, 41}, 2, 20), reporter);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->ok) << r->error;
  auto conn = Connect();
  auto spec = conn->Exec("SELECT spec ? 'test_run', spec ? 'test_hooks', spec ? 'bug', spec ? 'crash_points', "
                         "spec->>'density' FROM ledgerdiff_control.runs WHERE run_id = $1",
                         {r->run_id});
  ASSERT_TRUE(spec.ok() && spec->size() == 1) << spec.status().message();
  for (int column = 0; column < 4; ++column) EXPECT_EQ(spec->Get(0, column), "f") << "column " << column;
  EXPECT_EQ(spec->Get(0, 4), "flat");
  auto loaded = ingest::LoadRun(*conn, r->run_id);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->hooks.active());
  EXPECT_EQ(loaded->plan.density, fixtures::Density::kFlat);
  ASSERT_TRUE(conn->Run("DROP SCHEMA " + pg::QuoteIdent(schema) + " CASCADE").ok());
}

TEST(RunSpec, TestHooksRoundTripAndOlderSpecsStillRead) {
  ingest::RunSpec spec;
  spec.run_id = "r1";
  spec.plan.schema = "s";
  spec.plan.range = {2, 101};
  spec.plan.density = fixtures::Density::kFlat;
  spec.hooks.bug = "drop-row@50";
  spec.hooks.hold_points = {{2, 1, "history_effects", 1.5}};
  const nlohmann::json j = spec.ToJson();
  EXPECT_EQ(j.at("test_run"), true);
  EXPECT_FALSE(j.contains("bug"));
  auto back = ingest::RunSpec::FromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->hooks.bug, "drop-row@50");
  ASSERT_EQ(back->hooks.hold_points.size(), 1u);
  EXPECT_EQ(back->hooks.hold_points[0].stage, "history_effects");
  EXPECT_EQ(back->plan.density, fixtures::Density::kFlat);
  EXPECT_EQ(back->plan.range, spec.plan.range);

  // Releases before TestHooks kept the hooks at the top level of every run's spec.
  nlohmann::json older = j;
  older.erase("test_run");
  older.erase("test_hooks");
  older["bug"] = "skip-ledger@7";
  older["unsafe_commit_every"] = 0;
  older["crash_points"] = nlohmann::json::array({{{"job", 3}, {"attempt", 1}, {"stage", "start"}, {"action", "fail"}}});
  older["hold_points"] = nlohmann::json::array();
  auto read = ingest::RunSpec::FromJson(older);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->hooks.bug, "skip-ledger@7");
  ASSERT_EQ(read->hooks.crash_points.size(), 1u);
  EXPECT_EQ(read->hooks.crash_points[0].action, ingest::CrashAction::kFail);

  nlohmann::json unknown_density = j;
  unknown_density["density"] = "dense";
  EXPECT_FALSE(ingest::RunSpec::FromJson(unknown_density).ok());
}

TEST(IngestCli, BadInputIsOneLineAndExit2) {
  const std::string db = "--db=" + TestConninfo();
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  std::vector<Case> cases = {
      {{"ingest", "--range", "5:2", "--schema", "x", db}, "before FROM"},
      {{"ingest", "--range", "0:10", "--schema", "x", db}, "is 0"},
      {{"ingest", "--range", "-3:10", "--schema", "x", db}, "negative"},
      {{"ingest", "--range", "abc", "--schema", "x", db}, "not a number"},
      {{"ingest", "--range", "2:10", "--schema", "x", "--job-size", "0", db}, "--job-size"},
      {{"ingest", "--range", "2:10", "--schema", "x", "--workers", "0", db}, "--workers"},
      {{"ingest", "--range", "2:10", "--schema", "x", "--density", "lumpy", db}, "lumpy"},
      {{"ingest", "--range", "2:10", db}, "--schema"},
      // Test fault points: an unknown action, and "fail" where it would never fire.
      {{"ingest", "--range", "2:10", "--schema", "x", "--fault", "1:1:start:explode", db}, "abort|fail"},
      {{"ingest", "--range", "2:10", "--schema", "x", "--fault", "1:1:history_effects:fail", db},
       "fail is only at stage start"},
  };
  for (const auto& c : cases) {
    auto r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[2] << " " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.find("topsecret"), std::string::npos);
  }
  // An unreachable server is no bad input: a runtime failure (exit 3) that a retry may cure.
  auto unreachable =
      RunCli({"ingest", "--range", "2:10", "--schema", "x", "--db", "host=/nonexistent port=9 user=u password=topsecret"});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable.err;
  EXPECT_NE(unreachable.err.find("cannot connect"), std::string::npos) << unreachable.err;
  EXPECT_EQ(std::count(unreachable.err.begin(), unreachable.err.end(), '\n'), 1) << unreachable.err;
  EXPECT_EQ(unreachable.err.find("topsecret"), std::string::npos);
}

// Issue 44: an empty --db (an unset variable: --db "$DB") is one exit-2 line, never a silent fall
// back to LEDGERDIFF_DB, PG* or the embedded default.
TEST(IngestCli, AnEmptyDbIsExit2) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"ingest", "--range", "2:10", "--schema", "x", "--db", ""},
           {"ingest", "--range", "2:10", "--schema", "x", "--db="},
           {"digest", "--schema", "x", "--db", ""},
           {"verify", "--range", "2:10", "--db", ""},
           {"plan", "--range", "2:10", "--schema", "x", "--db", ""},
           {"runs", "--db", ""}}) {
    auto r = RunCli(args, {"LEDGERDIFF_DB=" + TestConninfo()});
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    // "--db=" is refused by CLI parsing itself ("--db: 1 required TEXT missing").
    EXPECT_NE(r.err.find(args.back() == "--db=" ? "--db" : "--db is empty"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// Issue 44: a run holds at most kMaxJobsPerRun jobs. plan, ingest and verify refuse more with one
// exit-2 line naming the cap and the --job-size that fits, before any schema or run exists (plan
// --range 1:2147483647 --job-size 1 ended in std::bad_alloc, a marked schema left behind).
TEST(IngestCli, MoreJobsThanARunHoldsIsExit2BeforeAnySchema) {
  ASSERT_EQ(ingest::kMaxJobsPerRun, 1'000'000u);
  const std::string schema = UniqueName("too_many_jobs");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"plan", "--range", "1:2147483647", "--job-size", "1", "--schema", schema, "--db", TestConninfo()},
           {"ingest", "--range", "1:2147483647", "--job-size", "1", "--schema", schema, "--db", TestConninfo()},
           {"verify", "--range", "1:2147483647", "--job-size", "1", "--db", TestConninfo()}}) {
    auto r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("into 2,147,483,647 jobs, more than a run holds (at most 1,000,000): use --job-size 2148 "
                         "or larger"),
              std::string::npos)
        << r.err;
  }
  // The bound itself: 1,000,000 jobs are fine, one more is not.
  ingest::IngestPlan plan;
  plan.schema = schema;
  plan.range = {2, 1'000'001};
  plan.job_size = 1;
  EXPECT_TRUE(plan.Validate().ok());
  plan.range = {2, 1'000'002};
  EXPECT_EQ(plan.Validate().kind(), Status::Kind::kUsage);
  EXPECT_EQ(ingest::MinJobSizeFor(plan.range), 2u);
  auto conn = Connect();
  ASSERT_TRUE(conn);
  auto exists = conn->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = $1", {schema});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(exists->GetInt(0, 0), 0) << "no schema is created for a run that cannot be split";
}

TEST(IngestCli, RefusesASchemaItDidNotCreateAndWritesNothing) {
  auto conn = Connect();
  std::string schema = UniqueName("Their Data");
  ASSERT_TRUE(conn->Run(fmt::format("CREATE SCHEMA {0}; CREATE TABLE {1} (x int); INSERT INTO {1} VALUES (42)",
                                    pg::QuoteIdent(schema), pg::Qualified(schema, "precious")))
                  .ok());
  auto r = RunCli({"ingest", "--range", "2:20", "--schema", schema, "--db", TestConninfo()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not created by ledgerdiff"), std::string::npos) << r.err;
  auto tables = conn->Exec("SELECT count(*) FROM pg_tables WHERE schemaname = $1", {schema});
  EXPECT_EQ(tables->GetInt(0, 0), 1);
  auto rows = conn->Exec("SELECT x FROM " + pg::Qualified(schema, "precious"));
  EXPECT_EQ(rows->GetInt(0, 0), 42);
}

TEST(IngestCli, SchemaNameThatNeedsQuotingWorks) {
  std::string schema = UniqueName("Mixed Case; \"quoted\"");
  auto r = RunCli({"ingest", "--range", "2:60", "--schema", schema, "--workers", "2", "--job-size", "9", "--db",
                   TestConninfo(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], schema);
  EXPECT_EQ(j["ledgers"], 59);
  EXPECT_EQ(j["rows_per_table"]["history_ledgers"], 59);
}

TEST(IngestCli, DensityFlagAndItsDeprecatedSpelling) {
  std::string schema = UniqueName("dens");
  auto r = RunCli({"ingest", "--range", "2:30", "--schema", schema, "--workers", "2", "--job-size", "10", "--density",
                   "flat", "--db", TestConninfo(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("deprecated"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows_per_table"], nlohmann::json(fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {2, 30})));

  // The old spelling still works for one release, with a warning on stderr.
  std::string old_schema = UniqueName("dens_old");
  r = RunCli({"ingest", "--range", "2:30", "--schema", old_schema, "--workers", "2", "--job-size", "10", "--profile",
              "flat", "--db", TestConninfo(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--profile is deprecated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--density"), std::string::npos) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows_per_table"], nlohmann::json(fixtures::GeneratedRowCounts({1, fixtures::Density::kFlat}, {2, 30})));

  // --help shows the new spelling only.
  r = RunCli({"ingest", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--density"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--profile"), std::string::npos) << r.out;
}

TEST(IngestCli, EveryWorkloadCommandShowsTheSameDefaults) {
  const ingest::IngestPlan plan;
  const std::vector<std::string> defaults = {
      fmt::format("--workers UINT={}", plan.workers), fmt::format("--job-size UINT={}", plan.job_size),
      fmt::format("--retries UINT={}", plan.retries), fmt::format("--seed UINT={}", plan.seed),
      fmt::format("--density TEXT={}", fixtures::ToString(plan.density))};
  for (const char* command : {"ingest", "verify", "selftest", "chaos"}) {
    auto r = RunCli({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << command;
    for (const auto& d : defaults) EXPECT_NE(r.out.find(d), std::string::npos) << command << ": " << d;
  }
}

TEST(IngestCli, EmbeddedDefaultPrintsSummaryAndCleansUp) {
  auto r = RunCli({"ingest", "--range", "2:120", "--schema", "demo", "--workers", "2", "--job-size", "25"},
                  {"LEDGERDIFF_DB=", "PGHOST=", "PGDATABASE=", "PGPORT=", "PGSERVICE="});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ingested 119 ledgers (2:120) into \"demo\" with 2 workers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("history_operations"), std::string::npos);
  EXPECT_NE(r.out.find("rows/s"), std::string::npos);
}

}  // namespace
}  // namespace ledgerdiff

namespace ledgerdiff {
namespace {

TEST(IngestCommand, PlaceholdersBecomeQuotedVariablesAndShellBracesPassThrough) {
  auto e = ingest::ExpandIngestCommand("run {from} {to} {schema} ${HOME} {{job}} awk '{print $1}' { a; }");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(*e, "run \"${LEDGERDIFF_JOB_FROM}\" \"${LEDGERDIFF_JOB_TO}\" \"${LEDGERDIFF_JOB_SCHEMA}\" ${HOME} {job} "
                "awk '{print $1}' { a; }");
  auto bad = ingest::ExpandIngestCommand("run {from} {form}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("{form}"), std::string::npos);
}

}  // namespace
}  // namespace ledgerdiff

namespace ledgerdiff {
namespace {

// Issue 44: an interrupted ingest --db leaves its run in that database; the advice to continue it
// names the database (--db, password removed), or the resume would look in the default one.
TEST(IngestCli, CtrlCOfAnIngestIntoADbAdvisesAResumeThere) {
  const std::string tmp = "/tmp/" + UniqueName("ld-sigint-db");
  std::filesystem::create_directories(tmp);
  SpawnOptions so;
  so.output_file = tmp + "/out.log";
  so.error_file = tmp + "/err.log";
  so.env = {{"TMPDIR", tmp}};
  const std::string run_id = UniqueName("r");
  auto pid = Spawn({testing::LedgerdiffBinary(), "ingest", "--range", "2:20001", "--schema", UniqueName("sigint_db"),
                    "--workers", "2", "--run-id", run_id, "--db", TestConninfo() + " password=ResumeAdvicePw"},
                   so);
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  bool ingesting = false;
  for (int i = 0; i < 1200 && !ingesting; ++i) {
    ingesting = (testing::ReadFileBytes(so.output_file) + testing::ReadFileBytes(so.error_file)).find("] done by ") !=
                std::string::npos;
    if (!ingesting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ingesting) << testing::ReadFileBytes(so.error_file);
  kill(*pid, SIGINT);
  int ws = 0;
  waitpid(*pid, &ws, 0);
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 130) << ws;
  const std::string err = testing::ReadFileBytes(so.error_file);
  const std::string advice = "continue it with `ledgerdiff ingest --resume " + run_id + " --db '" +
                             pg::RedactConninfo(TestConninfo() + " password=ResumeAdvicePw") + "'`";
  EXPECT_NE(err.find(advice), std::string::npos) << advice << " not in: " << err;
  EXPECT_EQ(err.find("ResumeAdvicePw"), std::string::npos) << err;
  std::filesystem::remove_all(tmp);
}

TEST(IngestCli, CtrlCStopsWorkersAndRemovesTheEmbeddedServer) {
  // The embedded cluster lands in TMPDIR: give the run a directory of its own to watch.
  std::string tmp = "/tmp/" + UniqueName("ld-sigint");
  std::filesystem::create_directories(tmp);
  SpawnOptions so;
  so.output_file = tmp + ".log";
  so.env = {{"TMPDIR", tmp}, {"LEDGERDIFF_DB", ""}, {"PGHOST", ""}, {"PGDATABASE", ""}, {"PGPORT", ""}};
  auto pid = Spawn({testing::LedgerdiffBinary(), "ingest", "--range", "2:20001", "--schema", "big", "--workers", "2"},
                   so);
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  // Wait until the server is up and workers are ingesting.
  bool running = false;
  for (int i = 0; i < 300 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (auto& e : std::filesystem::directory_iterator(tmp))
      running = running || std::filesystem::exists(e.path() / "data" / "postmaster.pid");
  }
  ASSERT_TRUE(running);
  // Workers are ingesting once a job is reported done ("job N [A:B] done by ..."): interrupt then.
  bool ingesting = false;
  for (int i = 0; i < 1200 && !ingesting; ++i) {
    ingesting = testing::ReadFileBytes(so.output_file).find("] done by ") != std::string::npos;
    if (!ingesting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ingesting) << testing::ReadFileBytes(so.output_file);
  kill(*pid, SIGINT);
  int ws = 0;
  waitpid(*pid, &ws, 0);
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 130) << ws;
  std::string left;
  for (auto& e : std::filesystem::recursive_directory_iterator(tmp)) left += e.path().string() + " ";
  EXPECT_TRUE(left.empty()) << "the embedded cluster was left behind: " << left.substr(0, 600);
  std::filesystem::remove_all(tmp);
  std::filesystem::remove(tmp + ".log");
}

}  // namespace
}  // namespace ledgerdiff
