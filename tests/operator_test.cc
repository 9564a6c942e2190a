// Operator safety (issue 22): output paths are checked before any work and a late write failure
// does not lose the verdict; advice (resume, "kept") is given only when it can work; an
// interruption says what it stopped and removed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/pg.h"
#include "core/stage_timer.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A scratch directory (0755: the embedded server's user reaches a cluster inside it).
struct Scratch : testing::ScratchDir {
  Scratch() : ScratchDir("ledgerdiff-operator-") {}
  fs::path operator/(const std::string& name) const { return fs::path(path) / name; }
  std::vector<std::string> Clusters() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().filename().string().rfind("ledgerdiff-pg-", 0) == 0) out.push_back(e.path().string());
    return out;
  }
};

// The environment of a run on the embedded default, its clusters in `tmpdir`.
std::vector<std::string> EmbeddedEnv(const std::string& tmpdir) {
  return {"TMPDIR=" + tmpdir, "LEDGERDIFF_DB=", "PGHOST=", "PGPORT=", "PGDATABASE=", "PGSERVICE="};
}

// The `ledgerdiff drop ...` command a message advises (between backquotes).
std::string DropAdvice(const std::string& message) {
  std::smatch m;
  return std::regex_search(message, m, std::regex("`(ledgerdiff drop [^`]+)`")) ? std::string(m[1]) : "";
}

// Runs an advised command line (starting "ledgerdiff ") through the shell, as an operator pasting
// it would; its exit code.
int RunAdvice(const std::string& command) {
  if (command.rfind("ledgerdiff ", 0) != 0) return -1;
  const std::string line = "'" + testing::LedgerdiffBinary() + "'" + command.substr(10) + " >/dev/null 2>&1";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool SchemaExists(const std::string& conninfo, const std::string& schema) {
  auto conn = testing::Connect(conninfo);
  auto rows = conn->Exec("SELECT count(*) FROM pg_namespace WHERE nspname = $1", {schema});
  return rows.ok() && rows->GetInt(0, 0) == 1;
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// ---- 1. Output paths: created or refused before any work -------------------------------------

// Every output target of every command, behind a regular file where a directory should be: exit
// 2, one line naming the path, before any database is reached (the database given cannot be
// reached: had the command started its work, it would have exited 3).
TEST(Paths, AnUnwritableTargetIsRefusedBeforeAnyWork) {
  Scratch scratch;
  const std::string blocker = (scratch / "a_file").string();
  std::ofstream(blocker) << "not a directory\n";
  const std::string nowhere = "host=/nonexistent port=1 dbname=x";
  const std::string file = blocker + "/sub/out.x", dir = blocker + "/sub/dir";
  const std::vector<std::vector<std::string>> cases = {
      {"verify", "--range", "2:21", "--db", nowhere, "--junit", file},
      {"verify", "--range", "2:21", "--db", nowhere, "--markdown", file},
      {"verify", "--range", "2:21", "--db", nowhere, "--report", dir},
      {"verify", "--range", "2:21", "--db", nowhere, "--save-baseline", file},
      {"verify-range", "--range", "2:21", "--left", nowhere, "--right", nowhere, "--out", file},
      {"verify-range", "--range", "2:21", "--left", nowhere, "--right", nowhere, "--junit", file},
      {"verify-range", "--range", "2:21", "--left", nowhere, "--right", nowhere, "--metrics", file},
      {"chaos", "--range", "2:21", "--workers", "2", "--db", nowhere, "--metrics", file},
      {"selftest", "--db", nowhere, "--markdown", file},
      {"chaos", "--range", "2:21", "--workers", "2", "--db", nowhere, "--report", dir},
      {"sweep", "--range", "2:21", "--workers", "1", "--job-size", "10", "--db", nowhere, "--csv", file},
      {"digest", "--schema", "s", "--db", nowhere, "--out", file},
      {"dump", "--schema", "s", "--db", nowhere, "--out", dir},
      {"manifest", "merge", "--out", file, (scratch / "no_part.ldm").string()},
  };
  for (const auto& args : cases) {
    auto r = RunCli(args);
    const std::string what = args[0] + " " + args[args.size() - 2];
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, blocker)) << what << ": the error names the path: " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << what << ": " << r.err;
    EXPECT_FALSE(Contains(r.err, "connect")) << what << ": reached the database first: " << r.err;
  }
  EXPECT_EQ(testing::ReadFileBytes(blocker), "not a directory\n");
}

// The issue's reproducer: `verify --junit nodir/sub/v.xml` ran the whole ingest, then failed to
// write. The parent directories are made before any work, so the files land where asked.
TEST(Paths, MissingParentDirectoriesAreCreatedUpFront) {
  Scratch scratch;
  const fs::path junit = scratch / "nodir/sub/v.xml", md = scratch / "md/x/s.md", html = scratch / "h/i/report";
  // Before any work: the database is unreachable (exit 3), the directories exist already.
  auto early = RunCli({"verify", "--range", "2:21", "--db", "host=/nonexistent port=1", "--junit", junit.string(),
                       "--markdown", md.string(), "--report", html.string()});
  EXPECT_EQ(early.exit_code, 3) << early.err;
  EXPECT_TRUE(fs::is_directory(junit.parent_path()));
  EXPECT_TRUE(fs::is_directory(md.parent_path()));
  EXPECT_TRUE(fs::is_directory(html.parent_path()));
  fs::remove_all(scratch / "nodir");
  fs::remove_all(scratch / "md");
  fs::remove_all(scratch / "h");

  auto r = RunCli({"verify", "--range", "2:21", "--workers", "2", "--job-size", "10", "--db", TestConninfo(), "--junit",
                   junit.string(), "--markdown", md.string(), "--report", html.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(testing::ReadFileBytes(junit), "<testsuite")) << junit;
  EXPECT_TRUE(Contains(testing::ReadFileBytes(md), "identical"));
  EXPECT_TRUE(fs::exists(html / "index.html"));
}

// A target that becomes unwritable during the run (here: the external ingester replaces the
// report's directory with a file) fails at the end: the verdict is printed first, then one error
// line naming the file, exit 3 (the path was fine when checked: the environment changed).
TEST(Paths, AWriteFailureAtTheEndStillPrintsTheVerdictFirst) {
  Scratch scratch;
  const std::string source = UniqueName("operator_source");
  auto ingested = RunCli({"ingest", "--db", TestConninfo(), "--range", "2:41", "--schema", source, "--workers", "1"});
  ASSERT_EQ(ingested.exit_code, 0) << ingested.err;
  const fs::path reports = scratch / "reports";
  const std::string script = testing::SourceDir() + "/tests/ingesters/copy_from_source.sh";
  const std::string ingest_cmd =
      "rm -rf '" + reports.string() + "'; : > '" + reports.string() + "'; exec '" + script + "' {from} {to} {schema}";
  for (const std::string format : {"text", "json"}) {
    fs::remove_all(reports);
    auto r = RunCli({"verify", "--range", "2:41", "--workers", "2", "--job-size", "20", "--db", TestConninfo(),
                     "--ingest-cmd", ingest_cmd, "--junit", (reports / "v.xml").string(), "--markdown",
                     (reports / "v.md").string(), "--format", format},
                    {"LEDGERDIFF_TEST_SOURCE_SCHEMA=" + source});
    EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
    if (format == "text") {
      EXPECT_TRUE(Contains(r.out, "verdict: IDENTICAL")) << r.out;
    } else {
      EXPECT_EQ(nlohmann::json::parse(r.out).value("verdict", ""), "identical") << r.out;
    }
    // Both files were tried; the one error line names both.
    EXPECT_TRUE(Contains(r.err, "ledgerdiff: cannot write " + (reports / "v.xml").string())) << r.err;
    EXPECT_TRUE(Contains(r.err, (reports / "v.md").string())) << r.err;
    EXPECT_TRUE(fs::is_regular_file(reports)) << "the ingester did not run";
  }
  auto conn = testing::Connect();
  ASSERT_TRUE(conn->Run("DROP SCHEMA " + pg::QuoteIdent(source) + " CASCADE").ok());
}

// ---- 2. Advice only when it can work ---------------------------------------------------------

// The kept-cluster directory named in a hint: "--keep-db DIR".
std::string KeepDbDirIn(const std::string& text) {
  std::smatch m;
  static const std::regex kKeepDb("--keep-db (\\S+)");
  return std::regex_search(text, m, kKeepDb) ? m[1].str() : "";
}

// A failed serial ingest on the embedded default: the cluster is kept, the hint resumes in it
// (and the resume finds the run), and says how to remove it.
TEST(Advice, AFailedVerifyOnTheEmbeddedDefaultKeepsItsClusterForTheResume) {
  Scratch scratch;
  auto r = RunCli({"verify", "--range", "2:21", "--workers", "2", "--job-size", "10", "--retries", "0",
                   "--ingest-cmd", "exit 4 # {from} {to}", "--format", "json"},
                  EmbeddedEnv(scratch.path));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const std::string id = j.at("run_id"), error = j.value("error", "");
  EXPECT_TRUE(Contains(error, "serial ingest failed")) << error;
  const std::string dir = KeepDbDirIn(error);
  ASSERT_FALSE(dir.empty()) << error;
  EXPECT_TRUE(Contains(error, "--resume " + id + " --keep-db " + dir)) << error;
  EXPECT_TRUE(Contains(error, "rm -rf " + dir)) << error;
  EXPECT_EQ(j["kept_cluster"].value("dir", ""), dir) << r.out;
  ASSERT_TRUE(fs::is_directory(dir)) << "the cluster the hint names is gone";
  // The advice works: the run is there (it fails again the same way: exit 1, not "no such run").
  auto resumed = RunCli({"verify", "--resume", id, "--keep-db", dir, "--format", "json"}, EmbeddedEnv(scratch.path));
  EXPECT_EQ(resumed.exit_code, 1) << resumed.err << resumed.out;
  EXPECT_FALSE(Contains(resumed.err, "no verify run")) << resumed.err;
  EXPECT_EQ(nlohmann::json::parse(resumed.out).value("run_id", ""), id);
  fs::remove_all(dir);
}

TEST(Advice, AFailedIngestOnTheEmbeddedDefaultKeepsItsClusterForTheResume) {
  Scratch scratch;
  auto r = RunCli({"ingest", "--range", "2:21", "--schema", "s", "--workers", "2", "--job-size", "10", "--retries",
                   "0", "--ingest-cmd", "exit 4 # {from} {to}"},
                  EmbeddedEnv(scratch.path));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("--resume (\\S+) --keep-db (\\S+)"))) << r.err;
  const std::string id = m[1], dir = m[2];
  EXPECT_TRUE(Contains(r.err, "rm -rf " + dir)) << r.err;
  EXPECT_FALSE(Contains(r.out, "removed on exit")) << r.out;
  ASSERT_TRUE(fs::is_directory(dir));
  auto resumed = RunCli({"ingest", "--resume", id, "--keep-db", dir}, EmbeddedEnv(scratch.path));
  EXPECT_EQ(resumed.exit_code, 1) << "resumed, and failed again the same way: " << resumed.err;
  EXPECT_TRUE(Contains(resumed.err, "resuming run " + id)) << resumed.err;
  // Its hint still reaches the kept cluster: a bare `--resume ID` would look in a new throwaway one.
  EXPECT_TRUE(Contains(resumed.err, "--resume " + id + " --keep-db " + dir)) << resumed.err;
  fs::remove_all(dir);
}

// Against a database that outlives the process, the hint is the plain one (no cluster to keep).
TEST(Advice, AFailedIngestOnANamedDatabaseHintsThePlainResume) {
  const std::string schema = UniqueName("operator_failed");
  auto r = RunCli({"ingest", "--db", TestConninfo(), "--range", "2:21", "--schema", schema, "--workers", "2",
                   "--job-size", "10", "--retries", "0", "--ingest-cmd", "exit 4 # {from} {to}"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("restart with --resume \\S+ or --range"))) << r.err;
  EXPECT_FALSE(Contains(r.err, "--keep-db")) << r.err;
}

// sweep says "kept: <schema> (divergent)": on the embedded default the cluster is kept with it,
// and the kept schema is really there afterwards.
TEST(Advice, SweepKeepsTheClusterOfTheSchemasItCallsKept) {
  Scratch scratch;
  auto r = RunCli({"sweep", "--range", "2:41", "--workers", "1,2", "--job-size", "20", "--repeat", "1",
                   "--inject-bug", "skip-ledger@30"},
                  EmbeddedEnv(scratch.path));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("kept: \"([^\"]+)\" \\(divergent\\)"))) << r.out;
  const std::string schema = m[1];
  const std::string dir = KeepDbDirIn(r.out);
  ASSERT_FALSE(dir.empty()) << r.out;
  EXPECT_TRUE(Contains(r.out, "embedded cluster kept in " + dir)) << r.out;
  EXPECT_TRUE(Contains(r.out, "rm -rf " + dir)) << r.out;
  auto digest = RunCli({"digest", "--keep-db", dir, "--schema", schema}, EmbeddedEnv(scratch.path));
  EXPECT_EQ(digest.exit_code, 0) << "the kept schema is not there: " << digest.err;
  fs::remove_all(dir);
}

// Issue 46: --quiet prints nothing on stderr for a passing run (the verdict still on stdout);
// without it the same run names its target there.
TEST(Progress, QuietPassingRunPrintsNothingOnStderr) {
  const std::vector<std::string> verify = {"verify", "--db",      TestConninfo(), "--range", "2:41", "--workers",
                                           "2",      "--job-size", "10",          "--density", "flat"};
  auto loud = RunCli(verify);
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_TRUE(Contains(loud.err, "target: ")) << loud.err;
  std::vector<std::string> quiet = verify;
  quiet.push_back("--quiet");
  auto r = RunCli(quiet);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(Contains(r.out, "identical")) << r.out;
  auto ingest = RunCli({"ingest", "--db", TestConninfo(), "--range", "2:101", "--schema", UniqueName("quiet"),
                        "--workers", "2", "--job-size", "10", "--density", "flat", "--quiet"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  EXPECT_EQ(ingest.err, "");
  EXPECT_FALSE(ingest.out.empty());
}

// Issue 46: a log (stderr is not a terminal) got a line per job; now at most one progress line
// per --progress-interval, jobs included. 0 shows every job.
TEST(Progress, ALogGetsAtMostOneProgressLinePerInterval) {
  auto progress_lines = [](const std::string& err) {
    static const std::regex line(R"((^|\n)(job \d+ \[|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ))");
    return static_cast<double>(std::distance(std::sregex_iterator(err.begin(), err.end(), line), std::sregex_iterator()));
  };
  const Stopwatch start;
  auto r = RunCli({"ingest", "--db", TestConninfo(), "--range", "2:1001", "--schema", UniqueName("interval"),
                   "--workers", "2", "--job-size", "10", "--density", "flat", "--progress-interval", "0.5"});
  const double seconds = start.Seconds();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(progress_lines(r.err), 1) << r.err;  // the first job is logged at once
  EXPECT_LE(progress_lines(r.err), seconds / 0.5 + 1) << seconds << " s:\n" << r.err;
  auto every = RunCli({"ingest", "--db", TestConninfo(), "--range", "2:1001", "--schema", UniqueName("interval"),
                       "--workers", "2", "--job-size", "10", "--density", "flat", "--progress-interval", "0"});
  ASSERT_EQ(every.exit_code, 0) << every.err;
  EXPECT_GE(progress_lines(every.err), 100) << every.err;  // each of the 100 jobs
  auto negative = RunCli({"verify", "--range", "2:41", "--progress-interval", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_EQ(negative.err, "ledgerdiff: --progress-interval: must be 0 or more seconds, not '-1'\n");
}

// The progress lines of a log, each with what follows "; COMMAND " on it (the command's own
// progress: "N% (PHASE, phase K of M), ETA ..."); a line without it gives "".
std::vector<std::string> CommandSuffixes(const std::string& err, const std::string& command) {
  static const std::regex progress(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ .*$)");
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (!std::regex_match(line, progress)) continue;
    const size_t at = line.find("; " + command + " ");
    out.push_back(at == std::string::npos ? "" : line.substr(at + command.size() + 3));
  }
  return out;
}

// Issue 46: verify-range plans its phases (both digests at once, the row diff, the state tables
// when they are compared, which report nothing but are waited for): every progress line of a
// log ends with the command's fraction, phase and ETA, never the digest's own ETA.
TEST(Progress, VerifyRangeLinesCarryOneEtaForTheWholeCommand) {
  const std::string left = UniqueName("plan_left"), right = UniqueName("plan_right");
  for (const auto& schema : {left, right}) {
    auto r = RunCli({"ingest", "--db", TestConninfo(), "--schema", schema, "--range", "2:201", "--workers", "1",
                     "--density", "flat", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::vector<std::string> sides = {"--left", TestConninfo(), "--left-schema", left, "--right", TestConninfo(),
                                          "--right-schema", right, "--progress-interval", "0"};
  // Between phases (the digests ended) no phase is in progress: "N%, ETA ...".
  const std::regex digests(R"(\d+%(?: \(digests, phase 1 of (\d)\))?(, ETA .+)?)");
  for (const bool shard : {false, true}) {
    std::vector<std::string> args = {"verify-range", "--range", "2:201"};
    args.insert(args.end(), sides.begin(), sides.end());
    if (shard) {
      for (const char* a : {"--shards", "1", "--shard", "0", "--out"}) args.push_back(a);
      args.push_back((std::filesystem::temp_directory_path() / UniqueName("plan_shard")).string() + ".ldm");
    }
    auto r = RunCli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto suffixes = CommandSuffixes(r.err, "verify-range");
    ASSERT_GE(suffixes.size(), 2u) << r.err;  // each side's digest reports at least its start
    size_t with_eta = 0, in_digests = 0;
    for (const std::string& s : suffixes) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(s, m, digests)) << "'" << s << "' in:\n" << r.err;
      // digests, row diff, state tables; a shard compares no state.
      if (m[1].matched) {
        EXPECT_EQ(m[1].str(), shard ? "2" : "3") << r.err;
      }
      in_digests += m[1].matched;
      with_eta += m[2].matched;
    }
    EXPECT_GE(in_digests, 2u) << r.err;
    EXPECT_GE(with_eta, 1u) << r.err;
    EXPECT_EQ(r.err.find(" ledgers/s, ETA "), std::string::npos) << r.err;  // never the phase's own
  }
  // --quiet silences a planned command's lines too (its plan is still handed to the reporter).
  std::vector<std::string> quiet = {"verify-range", "--range", "2:201", "--quiet"};
  quiet.insert(quiet.end(), sides.begin(), sides.end());
  auto q = RunCli(quiet);
  ASSERT_EQ(q.exit_code, 0) << q.err << q.out;
  EXPECT_EQ(q.err, "");
  EXPECT_TRUE(Contains(q.out, "identical")) << q.out;
}

TEST(Advice, ChaosKeepsTheClusterOfTheSchemasItCallsKept) {
  Scratch scratch;
  auto r = RunCli({"chaos", "--range", "2:41", "--workers", "2", "--job-size", "10", "--rounds", "1", "--faults",
                   "kill=1,hang=0,crash=0,disconnect=0,orchestrator=0", "--keep", "--format", "json",
                   "--progress-interval", "0"},
                  EmbeddedEnv(scratch.path));
  ASSERT_LE(r.exit_code, 1) << r.err << r.out;
  // Issue 46: chaos plans the serial baseline, then each round (under its digests).
  std::set<std::string> phases;
  for (const std::string& s : CommandSuffixes(r.err, "chaos")) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(s, m, std::regex(R"(\d+%(?: \((.+), phase \d of 2\))?(, ETA .+)?)"))) << s << "\n" << r.err;
    if (m[1].matched) phases.insert(m[1]);  // a phase's final line is labelled with it too
  }
  EXPECT_EQ(phases, (std::set<std::string>{"serial baseline", "round 1 of 1"})) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.at("rounds").at(0).value("schema_kept", false)) << r.out;
  const std::string schema = j["rounds"][0].at("schema");
  ASSERT_TRUE(j.contains("kept_cluster")) << r.out;
  const std::string dir = j["kept_cluster"].at("dir");
  EXPECT_EQ(j["kept_cluster"].value("remove", ""), "rm -rf " + dir);
  auto digest = RunCli({"digest", "--keep-db", dir, "--schema", schema}, EmbeddedEnv(scratch.path));
  EXPECT_EQ(digest.exit_code, 0) << "the kept schema is not there: " << digest.err;
  fs::remove_all(dir);
}

// --workers-external that times out cancels its run (it stays neither "running" nor claimable)
// and names the schemas that remain with the command that drops them.
TEST(Advice, ExternalWorkersTimeoutCancelsTheRunAndSaysWhatRemains) {
  auto r = RunCli({"verify", "--db", TestConninfo(), "--range", "2:21", "--job-size", "10", "--workers-external",
                   "--workers-timeout", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("verify (\\S+): run (\\S+) not finished after 1 s"))) << r.err;
  const std::string id = m[1], run = m[2];
  EXPECT_EQ(run, id + "_p");
  EXPECT_TRUE(Contains(r.err, "cancelled the run")) << r.err;
  const std::string serial = "ld_" + id + "_serial", parallel = "ld_" + id + "_parallel";
  const std::string drop = DropAdvice(r.err);
  EXPECT_TRUE(Contains(drop, " --schema " + serial + " --schema " + parallel)) << r.err;
  EXPECT_EQ(Lines(r.err.substr(r.err.find("ledgerdiff: "))), 1u) << r.err;
  auto runs = RunCli({"runs", "--db", TestConninfo(), "--format", "json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  std::string state;
  for (const auto& row : nlohmann::json::parse(runs.out))
    if (row.value("run_id", "") == run) state = row.value("state", "");
  EXPECT_EQ(state, "cancelled") << runs.out;
  // A worker that joins now exits 1 (cancelled), claiming nothing.
  auto worker = RunCli({"worker", "--run", run, "--db", TestConninfo()});
  EXPECT_EQ(worker.exit_code, 1) << worker.err;
  // The advice works.
  EXPECT_EQ(RunAdvice(drop), 0) << drop;
  EXPECT_FALSE(SchemaExists(TestConninfo(), serial));
  EXPECT_FALSE(SchemaExists(TestConninfo(), parallel));
}

// ---- 3. An interruption says what it stopped and removed ---------------------------------------

// Waits until `path` contains `text` (the run has reached that point); false after `seconds`.
bool AwaitText(const fs::path& path, const std::string& text, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Contains(testing::ReadFileBytes(path), text)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Waits until a job of a run matching `run_like` (SQL LIKE) in the database at `conninfo` has
// been claimed: its workers are up. False after `seconds`.
bool AwaitClaimedJob(const std::string& conninfo, const std::string& run_like, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto conn = pg::Connection::Open(conninfo); conn.ok()) {
      auto rows = (*conn)->Exec(
          "SELECT count(*) FROM ledgerdiff_control.jobs WHERE run_id LIKE $1 AND state <> 'pending'", {run_like});
      if (rows.ok() && rows->GetInt(0, 0) > 0) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

using testing::LastLine;

TEST(Interrupt, CtrlCOnTheEmbeddedDefaultNamesTheWorkersAndTheRemovedCluster) {
  Scratch scratch;
  const fs::path err = scratch / "stderr";
  testing::CliSpawnOptions so;
  so.stderr_path = err.string();
  so.env = EmbeddedEnv(scratch.path);
  const pid_t pid = testing::SpawnCli({"verify", "--range", "2:4001", "--workers", "2", "--job-size", "50"}, so);
  ASSERT_TRUE(AwaitText(err, "parallel ingest", 300)) << testing::ReadFileBytes(err);
  ASSERT_EQ(scratch.Clusters().size(), 1u);
  const std::string cluster = scratch.Clusters().front();
  // The parallel side's workers are running once one of its jobs is claimed (the cluster's
  // socket is in its directory).
  ASSERT_TRUE(AwaitClaimedJob("host=" + cluster + " port=5432 user=ledgerdiff dbname=postgres", "%\\_p", 120))
      << testing::ReadFileBytes(err);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExitCode(pid), 130);
  const std::string line = LastLine(testing::ReadFileBytes(err));
  EXPECT_TRUE(Contains(line, "ledgerdiff verify: interrupted by SIGINT: ")) << line;
  EXPECT_TRUE(std::regex_search(line, std::regex("stopped [12] workers? of run \\S+_p"))) << line;
  EXPECT_TRUE(Contains(line, "stopped the embedded server and removed its cluster " + cluster)) << line;
  EXPECT_FALSE(fs::exists(cluster));
}

TEST(Interrupt, CtrlCOnANamedDatabaseSaysTheRunStaysAndHowToContinueIt) {
  Scratch scratch;
  const fs::path err = scratch / "stderr";
  const std::string schema = UniqueName("operator_sigint");
  testing::CliSpawnOptions so;
  so.stderr_path = err.string();
  const std::string run_id = UniqueName("operator_sigint_run");
  const pid_t pid = testing::SpawnCli({"ingest", "--db", TestConninfo(), "--range", "2:2001", "--schema", schema,
                                       "--workers", "2", "--job-size", "50", "--run-id", run_id, "--format", "json"},
                                      so);
  ASSERT_TRUE(AwaitClaimedJob(TestConninfo(), run_id, 120)) << testing::ReadFileBytes(err);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExitCode(pid), 130);
  const std::string line = LastLine(testing::ReadFileBytes(err));
  EXPECT_TRUE(Contains(line, "ledgerdiff ingest: interrupted by SIGINT: stopped 2 workers of run " + run_id)) << line;
  EXPECT_TRUE(Contains(line, "ingest run " + run_id + " stays in the database with its schema \"" + schema + "\"")) << line;
  // The advice reaches the database the run lives in (issue 44: it named no --db).
  EXPECT_TRUE(Contains(line, "`ledgerdiff ingest --resume " + run_id + " --db ")) << line;
  EXPECT_FALSE(Contains(line, "embedded")) << line;
  // The advice works: the resume finishes the run.
  auto resumed = RunCli({"ingest", "--db", TestConninfo(), "--resume", run_id, "--format", "json"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  auto conn = testing::Connect();
  ASSERT_TRUE(conn->Run("DROP SCHEMA " + pg::QuoteIdent(schema) + " CASCADE").ok());
}

TEST(Interrupt, CtrlCOfAVerifyOnANamedDatabaseNamesTheSchemasThatStayAndHowToDropThem) {
  Scratch scratch;
  const fs::path err = scratch / "stderr";
  testing::CliSpawnOptions so;
  so.stderr_path = err.string();
  const pid_t pid = testing::SpawnCli(
      {"verify", "--db", TestConninfo(), "--range", "2:2001", "--workers", "2", "--job-size", "50"}, so);
  ASSERT_TRUE(AwaitText(err, "_serial\"", 120)) << testing::ReadFileBytes(err);
  std::smatch m;
  const std::string note = testing::ReadFileBytes(err);
  ASSERT_TRUE(std::regex_search(note, m, std::regex("into \"ld_(\\S+)_serial\""))) << note;
  const std::string id = m[1];
  ASSERT_TRUE(AwaitClaimedJob(TestConninfo(), id + "%", 120)) << testing::ReadFileBytes(err);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExitCode(pid), 130);
  const std::string line = LastLine(testing::ReadFileBytes(err));
  EXPECT_TRUE(Contains(line, "ledgerdiff verify: interrupted by SIGINT: stopped 1 worker of run " + id + "_s")) << line;
  EXPECT_TRUE(Contains(line, "verify run " + id + " stays in the database")) << line;
  EXPECT_TRUE(Contains(line, "`ledgerdiff verify --resume " + id + " --db ")) << line;
  const std::string drop = DropAdvice(line);
  EXPECT_TRUE(Contains(drop, "ledgerdiff drop --cancel --db ")) << line;
  EXPECT_TRUE(Contains(drop, " --schema ld_" + id + "_serial --schema ld_" + id + "_parallel")) << line;
  // The advice works: the interrupted serial run is given up and its schema dropped (the
  // parallel schema does not exist yet: nothing to drop).
  EXPECT_EQ(RunAdvice(drop), 0) << drop;
  EXPECT_FALSE(SchemaExists(TestConninfo(), "ld_" + id + "_serial"));
}

// selftest runs a verify per case: its Ctrl-C names selftest's schemas (the shared serial one and
// the current case's) and how to drop them, not a verify to resume.
TEST(Interrupt, CtrlCOfASelftestNamesItsSchemasNotAVerifyToResume) {
  Scratch scratch;
  const fs::path err = scratch / "stderr";
  testing::CliSpawnOptions so;
  so.stderr_path = err.string();
  const pid_t pid = testing::SpawnCli({"selftest", "--db", TestConninfo(), "--range", "2:401"}, so);
  ASSERT_TRUE(AwaitText(err, "-> ", 300)) << testing::ReadFileBytes(err);  // a case finished
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExitCode(pid), 130);
  const std::string text = testing::ReadFileBytes(err);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("into \"ld_(\\S+)_selftest_serial\""))) << text;
  const std::string run = m[1];
  const std::string line = LastLine(text);
  // The Ctrl-C may land while a case's parallel ingest has its workers running: then the line
  // says first that it stopped them (seen under load), and then what selftest left.
  EXPECT_TRUE(std::regex_search(line, std::regex("^ledgerdiff selftest: interrupted by SIGINT: (stopped [0-9]+ "
                                                  "workers? of run \\S+; )?selftest left its schemas")))
      << line;
  EXPECT_FALSE(Contains(line, "--resume")) << line;
  const std::string drop = DropAdvice(line);
  EXPECT_TRUE(Contains(drop, "ledgerdiff drop --cancel --db ")) << line;
  EXPECT_TRUE(Contains(drop, " --schema ld_" + run + "_selftest_serial --schema ld_" + run + "_")) << line;
  EXPECT_EQ(RunAdvice(drop), 0) << drop;
  EXPECT_FALSE(SchemaExists(TestConninfo(), "ld_" + run + "_selftest_serial"));
}

// A --keep-db cluster outlives the run, stopped: the advice names it, and works on it as it stands
// (drop starts the cluster as any command given --keep-db does).
TEST(Interrupt, CtrlCOfAVerifyOnAKeptClusterAdvisesCommandsThatReachTheStoppedCluster) {
  Scratch scratch;
  const fs::path err = scratch / "stderr";
  const std::string cluster = (scratch / "kept").string();
  testing::CliSpawnOptions so;
  so.stderr_path = err.string();
  so.env = EmbeddedEnv(scratch.path);
  const pid_t pid = testing::SpawnCli(
      {"verify", "--keep-db", cluster, "--range", "2:2001", "--workers", "2", "--job-size", "50"}, so);
  ASSERT_TRUE(AwaitText(err, "_serial\"", 300)) << testing::ReadFileBytes(err);
  std::smatch m;
  const std::string note = testing::ReadFileBytes(err);
  ASSERT_TRUE(std::regex_search(note, m, std::regex("into \"ld_(\\S+)_serial\""))) << note;
  const std::string id = m[1];
  const std::string conninfo = "host=" + cluster + " port=5432 user=ledgerdiff dbname=postgres";
  ASSERT_TRUE(AwaitClaimedJob(conninfo, id + "%", 120)) << testing::ReadFileBytes(err);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitExitCode(pid), 130);
  const std::string line = LastLine(testing::ReadFileBytes(err));
  EXPECT_TRUE(Contains(line, "`ledgerdiff verify --resume " + id + " --keep-db " + cluster + "`")) << line;
  const std::string drop = DropAdvice(line);
  EXPECT_TRUE(Contains(drop, "ledgerdiff drop --cancel --keep-db " + cluster + " --schema ld_" + id + "_serial"))
      << line;
  EXPECT_TRUE(Contains(line, "its cluster stays in " + cluster)) << line;
  // The server is stopped now; the advice works as printed.
  ASSERT_EQ(RunAdvice(drop), 0) << drop;
  auto runs = RunCli({"runs", "--keep-db", cluster, "--format", "json"}, EmbeddedEnv(scratch.path));
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  for (const auto& row : nlohmann::json::parse(runs.out)) EXPECT_EQ(row.value("state", ""), "cancelled") << row;
  auto gone = RunCli({"drop", "--keep-db", cluster, "--schema", "ld_" + id + "_serial", "--format", "json"},
                     EmbeddedEnv(scratch.path));
  ASSERT_EQ(gone.exit_code, 0) << gone.err;
  EXPECT_EQ(nlohmann::json::parse(gone.out)["absent"], nlohmann::json::array({"ld_" + id + "_serial"})) << gone.out;
}

// drop touches only schemas ledgerdiff created and no live run holds: every schema is checked
// before any is dropped.
TEST(Drop, RefusesForeignReservedAndLiveSchemasBeforeDroppingAny) {
  auto conn = testing::Connect();
  const std::string own = UniqueName("drop_own"), foreign = UniqueName("drop_foreign");
  ASSERT_EQ(RunCli({"ingest", "--db", TestConninfo(), "--range", "2:11", "--schema", own}).exit_code, 0);
  ASSERT_TRUE(conn->Run("CREATE SCHEMA " + pg::QuoteIdent(foreign)).ok());

  auto refused = RunCli({"drop", "--db", TestConninfo(), "--schema", own, "--schema", foreign});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_TRUE(Contains(refused.err, "schema \"" + foreign + "\" was not created by ledgerdiff")) << refused.err;
  EXPECT_TRUE(SchemaExists(TestConninfo(), own));
  EXPECT_TRUE(SchemaExists(TestConninfo(), foreign));
  for (const std::string reserved : {"ledgerdiff_control", "public", "pg_catalog"}) {
    auto r = RunCli({"drop", "--db", TestConninfo(), "--schema", reserved});
    EXPECT_EQ(r.exit_code, 2) << reserved << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
  }

  // A planned run holds its schema until it is done or given up.
  const std::string held = UniqueName("drop_held");
  auto plan = RunCli({"plan", "--db", TestConninfo(), "--range", "2:21", "--schema", held});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  auto live = RunCli({"drop", "--db", TestConninfo(), "--schema", own, "--schema", held});
  EXPECT_EQ(live.exit_code, 2) << live.err;
  EXPECT_TRUE(Contains(live.err, "has a live run")) << live.err;
  EXPECT_TRUE(Contains(live.err, "ledgerdiff drop --cancel")) << live.err;
  EXPECT_TRUE(SchemaExists(TestConninfo(), own));

  auto dropped = RunCli({"drop", "--db", TestConninfo(), "--cancel", "--schema", own, "--schema", held, "--format",
                         "json"});
  ASSERT_EQ(dropped.exit_code, 0) << dropped.err;
  const auto j = nlohmann::json::parse(dropped.out);
  EXPECT_EQ(j["dropped"], nlohmann::json::array({own, held})) << dropped.out;
  EXPECT_EQ(j["cancelled_runs"].size(), 1u) << dropped.out;
  EXPECT_FALSE(SchemaExists(TestConninfo(), own));
  EXPECT_FALSE(SchemaExists(TestConninfo(), held));
  // A worker of the cancelled run claims nothing.
  const std::string run = j["cancelled_runs"][0];
  EXPECT_EQ(RunCli({"worker", "--run", run, "--db", TestConninfo()}).exit_code, 1);
  EXPECT_TRUE(conn->Run("DROP SCHEMA " + pg::QuoteIdent(foreign)).ok());
}

}  // namespace
}  // namespace ledgerdiff
