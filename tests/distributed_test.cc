// Distributed ingestion without an orchestrator (`plan`, `worker`, `wait`, `runs`): three worker
// processes join a planned run at different times, one is SIGKILLed in the middle of a job (held
// open inside its data transaction), the others requeue its job through the lease and finish the
// run; the schema's digest equals a serial ingest's. verify --workers-external: the parallel side done by
// such workers. Bad input: exit 2 with one clear line, nothing created.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "core/pg.h"
#include "core/stage_timer.h"
#include "core/process.h"
#include "core/status.h"
#include "ingest/job_table.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

using testing::Connect;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;
using namespace std::chrono_literals;

using testing::LastLine;

pid_t StartWorker(const std::string& run_id, const std::string& log, const std::string& worker_id = "") {
  SpawnOptions so;
  so.output_file = log;
  so.env["LEDGERDIFF_DB"] = TestConninfo();
  std::vector<std::string> argv = {testing::LedgerdiffBinary(), "worker", "--run", run_id};
  if (!worker_id.empty()) argv.insert(argv.end(), {"--worker-id", worker_id});
  auto pid = Spawn(argv, so);
  EXPECT_TRUE(pid.ok()) << pid.status().message();
  return pid.ok() ? *pid : -1;
}

int ExitCodeOf(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Polls the run's job table every 50 ms until `pred(jobs)` holds (true) or 60 s pass (false).
// Events between workers are ordered by what the job table shows, never by fixed sleeps.
bool PollJobs(pg::Connection& conn, const std::string& run_id,
              const std::function<bool(const std::vector<ingest::JobRow>&)>& pred) {
  for (int i = 0; i < 1200; ++i) {
    auto jobs = ingest::ListJobs(conn, run_id);
    if (jobs.ok() && pred(*jobs)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}
size_t CountJobs(const std::vector<ingest::JobRow>& jobs, const std::function<bool(const ingest::JobRow&)>& pred) {
  return static_cast<size_t>(std::count_if(jobs.begin(), jobs.end(), pred));
}

std::string RootOf(const std::string& schema, const std::string& range) {
  auto r = RunCli({"digest", "--db", TestConninfo(), "--schema", schema, "--range", range, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("root").get<std::string>() : "";
}

// `schema` holds what a serial ingest of `range` into the fresh schema `serial` writes (equal roots).
void ExpectWhatASerialIngestWrites(const std::string& schema, const std::string& serial, const std::string& range) {
  auto ingest = RunCli({"ingest", "--db", TestConninfo(), "--schema", serial, "--range", range, "--workers", "1"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  EXPECT_EQ(RootOf(schema, range), RootOf(serial, range));
}

TEST(Distributed, WorkersJoiningAtDifferentTimesFinishARunDespiteOneKilledMidJob) {
  const std::string schema = UniqueName("dist"), serial = UniqueName("dist_serial"), range = "2:401";
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", range, "--schema", schema, "--job-size", "25",
                      "--hold", "1:1:history_effects:60"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run_id = LastLine(plan.out);
  ASSERT_FALSE(run_id.empty());
  auto conn = Connect();
  ASSERT_TRUE(conn);

  // The workers' output files, removed with their directory at scope end (also on failure).
  const testing::ScratchDir log_dir("ledgerdiff-dist-log");
  const std::string logs = log_dir.path + "/worker";
  pid_t first = StartWorker(run_id, logs + "_1");
  ASSERT_GT(first, 0);
  // The first worker claims job 1 and is held inside its data transaction: kill it there.
  bool held = false;
  for (int i = 0; i < 600 && !held; ++i) {
    auto jobs = ingest::ListJobs(*conn, run_id);
    ASSERT_TRUE(jobs.ok()) << jobs.status().message();
    held = jobs->at(0).stage == "hold:history_effects" && jobs->at(0).worker_pid == first;
    if (!held) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(held) << "job 1 was never held by the first worker";
  pid_t second = StartWorker(run_id, logs + "_2");
  // The second worker is at work (it holds a job) before the first dies, ...
  EXPECT_TRUE(PollJobs(*conn, run_id, [&](const auto& jobs) {
    return CountJobs(jobs, [&](const ingest::JobRow& j) { return j.worker_pid == second; }) > 0;
  })) << "the second worker never claimed a job";
  kill(first, SIGKILL);
  EXPECT_EQ(ExitCodeOf(first), 128 + SIGKILL);
  // ... and has finished another one after it died, before the third joins.
  const size_t done_at_kill = CountJobs(*ingest::ListJobs(*conn, run_id),
                                        [](const ingest::JobRow& j) { return j.state == ingest::JobState::kDone; });
  EXPECT_TRUE(PollJobs(*conn, run_id, [&](const auto& jobs) {
    return CountJobs(jobs, [](const ingest::JobRow& j) { return j.state == ingest::JobState::kDone; }) > done_at_kill;
  })) << "no job was done after the first worker died";
  pid_t third = StartWorker(run_id, logs + "_3");

  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "240", "--format", "json"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(ExitCodeOf(second), 0);
  EXPECT_EQ(ExitCodeOf(third), 0);
  auto status = nlohmann::json::parse(wait.out);
  EXPECT_EQ(status.at("state"), "done");
  EXPECT_EQ(status.at("jobs").at("done"), 16);
  EXPECT_EQ(status.at("ledgers_done"), 400);
  // Distinct host-pid-start worker ids made attempts (the third may find the run done already);
  // job 1 took a second attempt.
  EXPECT_GE(status.at("workers").size(), 2u) << status.dump();
  auto jobs = ingest::ListJobs(*conn, run_id);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->at(0).attempt, 2u);
  EXPECT_NE(jobs->at(0).worker_pid, first);
  auto attempts = ingest::ListAttempts(*conn, run_id);
  ASSERT_TRUE(attempts.ok());
  EXPECT_EQ(attempts->at(0).outcome, ingest::AttemptOutcome::kLost);

  auto runs = RunCli({"runs", "--db", TestConninfo(), "--format", "json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  bool listed = false;
  for (const auto& r : nlohmann::json::parse(runs.out)) listed |= r.at("run_id") == run_id && r.at("state") == "done";
  EXPECT_TRUE(listed) << runs.out;
  auto runs_text = RunCli({"runs", "--db", TestConninfo()});
  EXPECT_NE(runs_text.out.find(run_id + "  done"), std::string::npos) << runs_text.out;
  // A late worker has nothing to do and says the run is complete.
  auto late = RunCli({"worker", "--db", TestConninfo(), "--run", run_id});
  EXPECT_EQ(late.exit_code, 0) << late.err;

  ExpectWhatASerialIngestWrites(schema, serial, range);
}

// A job out of retries fails the run; its last attempt's error (the external ingester's stderr
// tail) reaches the worker's stderr and wait's text and JSON.
TEST(Distributed, AJobOutOfRetriesFailsTheRunForEveryWorkerAndWait) {
  const std::string schema = UniqueName("distfail");
  // Job 2 always fails: its command says why on stderr and exits 3.
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:101", "--schema", schema, "--job-size", "25",
                      "--retries", "1", "--retry-backoff", "0.1", "--ingest-cmd",
                      "test {job} -ne 2 && echo ok || { echo \"boom: ledger {from} is missing\" >&2; exit 3; }"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run_id = LastLine(plan.out);
  auto worker = RunCli({"worker", "--db", TestConninfo(), "--run", run_id});
  EXPECT_EQ(worker.exit_code, 1) << worker.out << worker.err;
  EXPECT_NE(worker.err.find("run " + run_id + " failed: job 2 [27:51] ran out of retries after 2 attempts"),
            std::string::npos)
      << worker.err;
  EXPECT_NE(worker.err.find("boom: ledger 27 is missing"), std::string::npos) << worker.err;
  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "30"});
  EXPECT_EQ(wait.exit_code, 1) << wait.out << wait.err;
  EXPECT_NE(wait.out.find("failed"), std::string::npos) << wait.out;
  EXPECT_NE(wait.out.find("job 2 [27:51] failed after 2 attempts: "), std::string::npos) << wait.out;
  EXPECT_NE(wait.out.find("boom: ledger 27 is missing"), std::string::npos) << wait.out;
  EXPECT_NE(wait.err.find("boom: ledger 27 is missing"), std::string::npos) << wait.err;
  auto json = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--format", "json"});
  EXPECT_EQ(json.exit_code, 1) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("state"), "failed");
  ASSERT_EQ(j.at("failed_jobs").size(), 1u) << j.dump();
  EXPECT_EQ(j["failed_jobs"][0]["job"], 2);
  EXPECT_NE(j["failed_jobs"][0]["error"].get<std::string>().find("boom: ledger 27 is missing"), std::string::npos);
  EXPECT_NE(j.at("error").get<std::string>().find("boom: ledger 27 is missing"), std::string::npos);
}

// What wait and runs say about a run nobody works on: before any worker joined, "no worker has
// joined yet" (not "0 workers"); after its only worker is SIGKILLed mid-job, the job is "stale (no
// heartbeat for N s, worker W)" and the run has no worker alive. A new worker takes over.
TEST(Distributed, WaitTellsAStaleJobAndARunWithoutLiveWorkers) {
  const std::string schema = UniqueName("stale");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:101", "--schema", schema, "--job-size", "25",
                      "--density", "flat", "--job-timeout", "3", "--hold", "1:1:history_ledgers:60"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run_id = LastLine(plan.out);
  auto idle = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "1"});
  EXPECT_EQ(idle.exit_code, static_cast<int>(Status::Runtime("x").exit_code())) << idle.err;
  EXPECT_NE(idle.out.find("no worker has joined yet"), std::string::npos) << idle.out;
  EXPECT_EQ(idle.out.find("0 workers"), std::string::npos) << idle.out;
  EXPECT_NE(idle.err.find("not finished after 1 s"), std::string::npos) << idle.err;
  auto listed = RunCli({"runs", "--db", TestConninfo(), "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  for (const auto& r : nlohmann::json::parse(listed.out))
    if (r.at("run_id") == run_id) {
      EXPECT_EQ(r.at("liveness"), "never_had_worker") << r.dump();
    }

  auto conn = Connect();
  ASSERT_TRUE(conn);
  const std::string logs = UniqueName("/tmp/ledgerdiff_stale_log");
  pid_t worker = StartWorker(run_id, logs + "_1");
  ASSERT_GT(worker, 0);
  bool held = false;
  for (int i = 0; i < 1200 && !held; ++i) {
    auto jobs = ingest::ListJobs(*conn, run_id);
    ASSERT_TRUE(jobs.ok()) << jobs.status().message();
    held = jobs->at(0).stage == "hold:history_ledgers" && jobs->at(0).worker_pid == worker;
    if (!held) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(held);
  const std::string worker_name = ingest::ListJobs(*conn, run_id)->at(0).worker;
  kill(worker, SIGKILL);
  EXPECT_EQ(ExitCodeOf(worker), 128 + SIGKILL);
  // Poll the job table until the heartbeat is older than the job timeout (3 s).
  bool stale = false;
  for (int i = 0; i < 600 && !stale; ++i) {
    auto r = conn->Exec("SELECT now() - heartbeat > interval '3.2 s' FROM ledgerdiff_control.jobs WHERE run_id = $1 "
                        "AND job_id = 1",
                        {run_id});
    stale = r.ok() && r->size() == 1 && r->Get(0, 0) == "t";
    if (!stale) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(stale);
  auto text = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "1"});
  EXPECT_EQ(text.exit_code, static_cast<int>(Status::Runtime("x").exit_code())) << text.err;
  EXPECT_NE(text.out.find("job 1 [2:26] attempt 1: stale (no heartbeat for "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" s, worker " + worker_name), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("no worker alive: 3 jobs pending, 1 running"), std::string::npos) << text.out;
  EXPECT_NE(text.err.find("job 1 stale (worker " + worker_name + ")"), std::string::npos) << text.err;
  auto json = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "1", "--format", "json"});
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("liveness"), "no_worker_alive") << j.dump();
  EXPECT_EQ(j.at("workers_alive"), 0);
  ASSERT_EQ(j.at("stale_jobs").size(), 1u) << j.dump();
  EXPECT_EQ(j["stale_jobs"][0]["worker"], worker_name);
  EXPECT_GE(j["stale_jobs"][0]["heartbeat_age_s"].get<double>(), 3.0);
  EXPECT_NE(j["stale_jobs"][0]["status"].get<std::string>().find("stale (no heartbeat for "), std::string::npos);

  // A new worker requeues the lost job (the hold was for attempt 1 only) and finishes the run.
  pid_t second = StartWorker(run_id, logs + "_2");
  auto done = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "240"});
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_EQ(ExitCodeOf(second), 0);
  for (const char* suffix : {"_1", "_2"}) std::remove((logs + suffix).c_str());
}

// Polls until `pred()` holds (true) or 60 s pass (false).
bool PollUntil(const std::function<bool()>& pred) {
  for (int i = 0; i < 1200; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// Waits until job 1 of `run_id` is held at `stage` by process `worker`.
bool HeldBy(pg::Connection& conn, const std::string& run_id, const std::string& stage, pid_t worker) {
  return PollJobs(conn, run_id, [&](const auto& jobs) {
    return jobs.at(0).stage == "hold:" + stage && jobs.at(0).worker_pid == worker;
  });
}

// The server ends a worker's sessions in the middle of a job held longer than the job timeout
// (pg_terminate_backend, as a pooler, a failover or an idle timeout does): first its heartbeat
// session, then its lease keeper's (job timeout 8 s, held 11 s, inside the 12 s the server allows an idle
// transaction). The worker reopens both, its job is never requeued (no retry
// left to spend: --retries 0 would fail the run), and the run completes identical to a serial ingest.
TEST(Distributed, AWorkerWhoseSessionsTheServerEndsReconnectsAndSpendsNoRetry) {
  const std::string schema = UniqueName("reconnect"), serial = UniqueName("reconnect_serial"), range = "2:201";
  const std::string worker_id = UniqueName("w_reconnect");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", range, "--schema", schema, "--job-size", "50",
                      "--job-timeout", "8", "--retries", "0", "--hold", "1:1:history_effects:11"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run_id = LastLine(plan.out);
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const testing::ScratchDir log_dir("ledgerdiff-reconnect-log");
  pid_t worker = StartWorker(run_id, log_dir.path + "/worker", worker_id);
  ASSERT_GT(worker, 0);
  ASSERT_TRUE(HeldBy(*conn, run_id, "history_effects", worker)) << "job 1 was never held";
  const int job_backend = ingest::ListJobs(*conn, run_id)->at(0).backend_pid;

  const std::string registry = pg::Qualified(ingest::kControlSchema, "workers");
  auto heartbeat_pid = [&]() -> int {
    auto r = conn->Exec(fmt::format("SELECT w.backend_pid FROM {} w WHERE run_id = $1 AND worker = $2 AND EXISTS "
                                    "(SELECT 1 FROM pg_stat_activity a WHERE a.pid = w.backend_pid)",
                                    registry),
                        {run_id, worker_id});
    return r.ok() && r->size() == 1 ? static_cast<int>(r->GetInt(0, 0)) : 0;
  };
  // The worker registers on its job session; its heartbeat session records itself on its first beat.
  int first_heartbeat = 0;
  ASSERT_TRUE(PollUntil([&] {
    first_heartbeat = heartbeat_pid();
    return first_heartbeat > 0 && first_heartbeat != job_backend;
  })) << "the heartbeat session never recorded itself";
  auto terminated = conn->Exec("SELECT pg_terminate_backend($1)", {std::to_string(first_heartbeat)});
  ASSERT_TRUE(terminated.ok() && terminated->GetBool(0, 0)) << terminated.status().message();
  EXPECT_TRUE(PollUntil([&] {
    const int now = heartbeat_pid();
    return now > 0 && now != first_heartbeat;
  })) << "the heartbeat session was not reopened";

  // The lease keeper's session: the worker's sessions other than its job's and its heartbeat's.
  const std::string others = "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> $2 AND pid <> $3";
  const std::string app = "ledgerdiff worker " + worker_id;
  auto keeper = conn->Exec(others, {app, std::to_string(job_backend), std::to_string(heartbeat_pid())});
  ASSERT_TRUE(keeper.ok() && keeper->size() == 1) << (keeper.ok() ? keeper->size() : -1);
  const std::string first_keeper(keeper->Get(0, 0));
  ASSERT_TRUE(conn->Exec("SELECT pg_terminate_backend($1)", {first_keeper}).ok());
  EXPECT_TRUE(PollUntil([&] {
    auto r = conn->Exec(others, {app, std::to_string(job_backend), std::to_string(heartbeat_pid())});
    return r.ok() && r->size() == 1 && r->Get(0, 0) != first_keeper;
  })) << "the lease keeper's session was not reopened";
  // Reopened by the keeper itself, while job 1 is still held (the worker's end opens one too).
  EXPECT_EQ(ingest::ListJobs(*conn, run_id)->at(0).stage, "hold:history_effects")
      << "the lease keeper's session came back only after the job";

  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "120", "--format", "json"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(ExitCodeOf(worker), 0);
  auto attempts = ingest::ListAttempts(*conn, run_id);
  ASSERT_TRUE(attempts.ok());
  for (const auto& a : *attempts) {
    EXPECT_EQ(a.attempt, 1u) << "job " << a.job_id << " was requeued: " << a.error;
    EXPECT_EQ(a.outcome, ingest::AttemptOutcome::kDone) << "job " << a.job_id << ": " << a.error;
  }
  ExpectWhatASerialIngestWrites(schema, serial, range);
}

// A worker that recorded no exit and was seen within the job timeout, but whose heartbeat session
// is gone, is reconnecting (ingest/worker.h): `runs` and `wait` say so and do not advise starting
// another worker onto its jobs; once it has not been seen for the job timeout, it is gone and they do.
TEST(Distributed, RunsTellAWorkerThatLostItsSessionFromOneThatIsGone) {
  const std::string schema = UniqueName("lost_session");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:51", "--schema", schema, "--job-size", "25",
                      "--job-timeout", "3"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run_id = LastLine(plan.out);
  {
    // The worker's heartbeat session: it registers, then the server ends it (closed here).
    auto session = Connect();
    ASSERT_TRUE(session);
    ASSERT_TRUE(ingest::RegisterWorker(*session, run_id, "w_lost", 4242, 0).ok());
  }
  auto status_of = [&] {
    auto r = RunCli({"runs", "--db", TestConninfo(), "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& j : nlohmann::json::parse(r.out))
      if (j.at("run_id") == run_id) return j;
    return nlohmann::json();
  };
  nlohmann::json j;
  ASSERT_TRUE(PollUntil([&] {
    j = status_of();
    return j.value("workers_reconnecting", 0) == 1;
  })) << j.dump();
  EXPECT_EQ(j.at("liveness"), "workers_reconnecting") << j.dump();
  EXPECT_EQ(j.at("workers_alive"), 0) << j.dump();
  auto text = RunCli({"runs", "--db", TestConninfo()});
  EXPECT_NE(text.out.find("1 worker lost its database session and is reconnecting"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("start `ledgerdiff worker --run " + run_id), std::string::npos) << text.out;
  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "1"});
  EXPECT_NE(wait.err.find("1 reconnecting"), std::string::npos) << wait.err;

  // Not seen for longer than the job timeout (3 s): gone, and the advice is to start one.
  ASSERT_TRUE(PollUntil([&] {
    j = status_of();
    return j.value("liveness", "") == "no_worker_alive";
  })) << j.dump();
  EXPECT_EQ(j.at("workers_reconnecting"), 0) << j.dump();
  text = RunCli({"runs", "--db", TestConninfo()});
  EXPECT_NE(text.out.find("no worker alive: 2 jobs pending, 0 running; start `ledgerdiff worker --run " + run_id),
            std::string::npos)
      << text.out;
  auto cancel = RunCli({"cancel", "--db", TestConninfo(), "--run", run_id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
}

// A worker stopped with SIGTERM hands its job back at once (outcome "interrupted", pending again,
// no retry spent) instead of leaving it "running" until the job timeout (here 60 s); a second
// worker then finishes the run.
TEST(Distributed, AWorkerStoppedWithSigtermHandsItsJobBackAtOnce) {
  const std::string schema = UniqueName("sigterm");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:101", "--schema", schema, "--job-size", "50",
                      "--job-timeout", "60", "--retries", "0", "--hold", "1:1:history_effects:120"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string run_id = LastLine(plan.out);
  auto conn = Connect();
  ASSERT_TRUE(conn);
  const testing::ScratchDir log_dir("ledgerdiff-sigterm-log");
  pid_t worker = StartWorker(run_id, log_dir.path + "/worker_1");
  ASSERT_GT(worker, 0);
  ASSERT_TRUE(HeldBy(*conn, run_id, "history_effects", worker)) << "job 1 was never held";
  const Stopwatch stopped;
  kill(worker, SIGTERM);
  EXPECT_EQ(ExitCodeOf(worker), 128 + SIGTERM);
  auto jobs = ingest::ListJobs(*conn, run_id);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->at(0).state, ingest::JobState::kPending) << "job 1 still " << ingest::ToString(jobs->at(0).state);
  EXPECT_LT(stopped.Seconds(), 30);
  auto attempts = ingest::ListAttempts(*conn, run_id);
  ASSERT_TRUE(attempts.ok());
  EXPECT_EQ(attempts->at(0).outcome, ingest::AttemptOutcome::kInterrupted) << attempts->at(0).error;
  std::ifstream log(log_dir.path + "/worker_1");
  const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("requeued job 1 (attempt 1) at once"), std::string::npos) << said;

  pid_t second = StartWorker(run_id, log_dir.path + "/worker_2");
  auto wait = RunCli({"wait", "--db", TestConninfo(), "--run", run_id, "--timeout", "120"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
  EXPECT_EQ(ExitCodeOf(second), 0);
  EXPECT_EQ(ingest::ListJobs(*conn, run_id)->at(0).attempt, 2u);
}

// verify --workers-external starts no worker of its own: it registers the parallel run, says which
// command joins it, and waits; two workers started later as separate processes (as on other
// machines) do every job, and the verdict is a pass.
TEST(Distributed, VerifyWithExternalWorkersWaitsForWorkersStartedElsewhere) {
  const std::string log = UniqueName("/tmp/ledgerdiff_dist_verify_log");
  // Logs are appended to: a file left by an earlier run with the same name must not be read.
  for (const char* suffix : {"", "_a", "_b"}) std::remove((log + suffix).c_str());
  SpawnOptions so;
  so.output_file = log;
  auto verify = Spawn({testing::LedgerdiffBinary(), "verify", "--db", TestConninfo(), "--range", "2:201", "--job-size",
                       "20", "--workers-external", "--workers-timeout", "240", "--keep"},
                      so);
  ASSERT_TRUE(verify.ok()) << verify.status().message();
  // The run id comes from verify's own note (after its serial side), whose worker command reaches
  // the database (--db, without a password).
  const std::regex join("ledgerdiff worker --run (\\S+) --db '[^']*dbname=[^']*'`");
  std::smatch m;
  std::string text;
  for (int i = 0; i < 2400; ++i) {
    text = testing::ReadFileBytes(log);
    if (std::regex_search(text, m, join)) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(std::regex_search(text, m, join)) << text;
  const std::string run_id = m[1];
  // Nothing is claimed while no external worker runs: once verify waits (its first line on the
  // run's progress), every job of the run is pending and held by no worker, and no attempt exists.
  const std::string waiting = "run " + run_id + ": 0 of 10 jobs done";
  for (int i = 0; i < 1200 && text.find(waiting) == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
    text = testing::ReadFileBytes(log);
  }
  ASSERT_NE(text.find(waiting), std::string::npos) << text;
  EXPECT_NE(text.find("10 pending, 0 failed; no worker has joined yet"), std::string::npos) << text;
  auto conn = Connect();
  ASSERT_TRUE(conn);
  auto planned = ingest::ListJobs(*conn, run_id);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_EQ(planned->size(), 10u);
  EXPECT_EQ(CountJobs(*planned,
                      [](const ingest::JobRow& j) {
                        return j.state == ingest::JobState::kPending && j.attempt == 0 && j.worker.empty();
                      }),
            planned->size());
  auto before = ingest::ListAttempts(*conn, run_id);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_TRUE(before->empty());

  pid_t a = StartWorker(run_id, log + "_a");
  // The second worker joins a run the first is already working on.
  EXPECT_TRUE(PollJobs(*conn, run_id, [&](const auto& jobs) {
    return CountJobs(jobs, [&](const ingest::JobRow& j) { return j.worker_pid == a; }) > 0;
  })) << "the first external worker never claimed a job";
  pid_t b = StartWorker(run_id, log + "_b");
  EXPECT_EQ(ExitCodeOf(*verify), 0) << testing::ReadFileBytes(log);
  EXPECT_EQ(ExitCodeOf(a), 0) << testing::ReadFileBytes(log + "_a");
  EXPECT_EQ(ExitCodeOf(b), 0) << testing::ReadFileBytes(log + "_b");
  EXPECT_NE(testing::ReadFileBytes(log).find("identical"), std::string::npos) << testing::ReadFileBytes(log);
  // Every attempt was made by one of the two external workers (host-<pid>-<start>).
  auto attempts = ingest::ListAttempts(*conn, run_id);
  ASSERT_TRUE(attempts.ok());
  EXPECT_GE(attempts->size(), 10u);
  for (const auto& at : *attempts) {
    const bool external = at.worker.find("-" + std::to_string(a) + "-") != std::string::npos ||
                          at.worker.find("-" + std::to_string(b) + "-") != std::string::npos;
    EXPECT_TRUE(external) << at.worker;
  }
  for (const char* suffix : {"", "_a", "_b"}) std::remove((log + suffix).c_str());
}

TEST(Distributed, VerifyWithExternalWorkersTimesOutWithoutWorkers) {
  auto r = RunCli({"verify", "--db", TestConninfo(), "--range", "2:31", "--job-size", "10", "--workers-external",
                   "--workers-timeout", "1"});
  EXPECT_EQ(r.exit_code, 3) << "a timeout is a runtime failure: " << r.out << r.err;
  EXPECT_NE(r.err.find("not finished after 1 s"), std::string::npos) << r.err;
  auto bad =
      RunCli({"verify", "--db", TestConninfo(), "--range", "2:31", "--workers-external", "--workers-timeout", "-3"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--workers-timeout -3"), std::string::npos) << bad.err;
}

// Counts the runs planned into `schema` (`runs` lists every run, also with no job table yet).
int RunsInto(const std::string& schema) {
  auto runs = RunCli({"runs", "--db", TestConninfo(), "--format", "json"});
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  int n = 0;
  for (const auto& r : nlohmann::json::parse(runs.out)) n += r.at("schema") == schema;
  return n;
}

TEST(Distributed, BadInputExitsTwo) {
  EXPECT_EQ(RunCli({"plan", "--db", TestConninfo(), "--range", "9:2", "--schema", UniqueName("bad")}).exit_code, 2);
  EXPECT_EQ(RunCli({"plan", "--db", TestConninfo(), "--range", "2:9"}).exit_code, 2);  // no --schema
  auto conn = Connect();
  ASSERT_TRUE(conn);
  // A schema name the tool would print on two lines: refused by name before anything is created.
  const std::string newline = UniqueName("bad") + "\nname";
  auto control = RunCli({"plan", "--db", TestConninfo(), "--range", "2:9", "--schema", newline});
  EXPECT_EQ(control.exit_code, 2);
  EXPECT_NE(control.err.find("\\x0a"), std::string::npos) << control.err;
  EXPECT_EQ(std::count(control.err.begin(), control.err.end(), '\n'), 1) << control.err;
  auto exists = conn->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = $1", {newline});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(exists->GetInt(0, 0), 0);
  // A schema ledgerdiff did not create: refused, no run planned into it.
  const std::string foreign = UniqueName("foreign");
  ASSERT_TRUE(conn->Run("CREATE SCHEMA " + pg::QuoteIdent(foreign)).ok());
  auto refused = RunCli({"plan", "--db", TestConninfo(), "--range", "2:9", "--schema", foreign});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("schema \"" + foreign + "\" exists and was not created by ledgerdiff"), std::string::npos)
      << refused.err;
  EXPECT_EQ(RunsInto(foreign), 0);

  // An unknown run: one clear line, no SQL error.
  auto unknown = RunCli({"worker", "--db", TestConninfo(), "--run", "no-such-run"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no such run \"no-such-run\""), std::string::npos) << unknown.err;
  EXPECT_EQ(unknown.err.find("ERROR"), std::string::npos) << unknown.err;
  const std::string error = testing::AfterTargetLine(unknown.err);  // the database it looked in, then why
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << unknown.err;
  auto wait_unknown = RunCli({"wait", "--db", TestConninfo(), "--run", "no-such-run"});
  EXPECT_EQ(wait_unknown.exit_code, 2);
  EXPECT_NE(wait_unknown.err.find("no such run \"no-such-run\""), std::string::npos) << wait_unknown.err;
  // A run with no worker times out; a negative timeout is a usage error.
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:51", "--schema", UniqueName("idle")});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  auto negative = RunCli({"wait", "--db", TestConninfo(), "--run", LastLine(plan.out), "--timeout", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("--timeout -1: must be a number of seconds from 0"), std::string::npos) << negative.err;
  auto timeout = RunCli({"wait", "--db", TestConninfo(), "--run", LastLine(plan.out), "--timeout", "1"});
  EXPECT_EQ(timeout.exit_code, 3) << "waiting longer may help: a runtime failure";
  EXPECT_NE(timeout.err.find("not finished after 1 s"), std::string::npos) << timeout.err;
}

}  // namespace
}  // namespace ledgerdiff
