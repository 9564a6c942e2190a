#pragma once
// chaos: fault-injection rounds that prove nothing is lost, duplicated or half-written.
//
// Ingests a serial baseline once, then runs R parallel rounds. Each round registers its plan in
// the job table and starts a real orchestrator process on it (`ledgerdiff _orchestrate --run
// RUN`: nothing but the run id on its command line) with N worker processes; a nemesis in this
// process watches the job table (the single source of truth) and injects the round's faults:
//   kill         SIGKILL a worker's process group in the middle of a job
//   hang         SIGSTOP a worker's process group and never resume it
//   crash        the worker aborts inside its open data transaction (a fault point)
//   disconnect   pg_terminate_backend of the worker's session in the middle of a job
//   orchestrator SIGKILL the orchestrator, then start `ledgerdiff _orchestrate --run RUN` again
// "In the middle of a job" is made certain with hold points: the target attempt pauses inside
// its open data transaction after writing part of the job, and reports "hold:<stage>".
// Each fault kind exists to prove one detector (ingest/detector.h), and counts as fired only
// when that detector caught it (ExpectedDetector); a fault caught by another one (say a frozen
// worker that died with a killed orchestrator) leaves its round inconclusive, like a fault that
// never fired. So an orchestrator kill never preempts another fault's detector: it waits until
// every fault that fired was caught (a hang's heartbeat timeout included), and a hang waits
// for the round's orchestrator kills (its held target attempt dies with the orchestrator and
// the hang moves to the next attempt) unless its hold is about to end.
// After each round the schema is compared with the baseline by diff/ (every divergent ledger of
// every table); each divergent ledger is then classified by its row counts on both sides:
// lost (the ledger row is missing), duplicated (more rows than the baseline in some table),
// partial (fewer rows), divergent (same counts, other content).
// Determinism: the schedule is a function of (seed, rounds, faults, range, job size) only.

#include <array>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/status.h"
#include "core/target.h"
#include "dump/canonical.h"
#include "dump/profile.h"
#include "ingest/detector.h"
#include "ingest/job_rows.h"
#include "ingest/plan.h"

namespace ledgerdiff::verify {

// The fault kinds, in the order the schedule draws them and every report lists them. Strings
// ("kill", ...) only at the edges: --faults, JSON, text, metrics labels.
enum class FaultKind { kKill, kHang, kCrash, kDisconnect, kOrchestrator };
inline constexpr std::array<FaultKind, 5> kFaultKinds = {FaultKind::kKill, FaultKind::kHang, FaultKind::kCrash,
                                                         FaultKind::kDisconnect, FaultKind::kOrchestrator};
std::string_view ToString(FaultKind kind);
std::optional<FaultKind> ParseFaultKind(std::string_view text);
// Every kind but the orchestrator kill targets one job's attempt.
bool PerJob(FaultKind kind);

inline constexpr uint32_t kMaxFaultsPerKind = 1000;

// The detector a fault kind exists to prove: hang -> heartbeat_timeout; kill -> process_exit;
// crash -> process_exit (the worker's own std::abort inside its open transaction: nothing in the
// worker reports it, the process dies of SIGABRT and the orchestrator reaps it as it reaps a
// killed one); disconnect -> lost_connection (the orchestrator sees the terminated session, or
// the worker its broken connection); orchestrator -> orchestrator_restart (the restarted
// orchestrator resumed the run: runs.resumes).
ingest::Detector ExpectedDetector(FaultKind kind);

// Faults per round, by kind.
using FaultCounts = std::map<FaultKind, uint32_t>;
// Parses "kill=K,hang=H,crash=C,disconnect=D,orchestrator=O" (kinds may be omitted: 0).
Result<FaultCounts> ParseFaultCounts(const std::string& text);

// The plan is every round's (and, with one worker, the baseline's); the seed also draws the
// fault schedule. Chaos keeps the plan's defaults but two, on purpose: a job timeout of 4 s
// (a frozen worker is found within its round, not 30 s later) and a retry backoff of 0.1 s
// (each fault costs one retry; rounds stay short).
struct ChaosOptions {
  ChaosOptions() {
    plan.job_timeout_s = 4;
    plan.retry_backoff_s = 0.1;
  }
  ingest::IngestPlan plan;
  uint32_t rounds = 3;
  FaultCounts faults = {{FaultKind::kKill, 1}, {FaultKind::kHang, 1}, {FaultKind::kCrash, 1}, {FaultKind::kDisconnect, 1},
                        {FaultKind::kOrchestrator, 1}};
  std::string table_profile = "horizon";
  // table_profile's spec, when the caller loaded it already (the CLI's check): ValidateChaosOptions
  // takes it instead of reading the profile again. nullptr: loaded there.
  std::shared_ptr<const dump::ProfileSpec> profile_spec;
  dump::DigestEngine engine = dump::kDefaultEngine;  // how rounds are compared with the baseline
  bool unsafe_ingester = false;  // the negative control (rounds commit every 100 ledgers)
  double hold_s = 2;             // how long a target attempt pauses mid-job
  bool keep = false;             // keep every round's schema (divergent rounds are always kept)
};

// Checks everything before any database is touched (the CLI calls it before it starts a server,
// RunChaos at its entry), the fault schedule included; returns the digest profile:
// options.profile_spec, else table_profile loaded.
Result<dump::ProfileSpec> ValidateChaosOptions(const ChaosOptions& options);

struct PlannedFault {
  FaultKind kind = FaultKind::kKill;
  uint32_t job = 0;              // target job (per-job kinds)
  std::string stage;             // where the target attempt is held / crashes
  uint32_t after_jobs_done = 0;  // orchestrator: kill once this many jobs are done
};

struct RoundPlan {
  uint32_t round = 0;
  std::vector<PlannedFault> faults;
};

// The whole schedule, drawn from the seed.
Result<std::vector<RoundPlan>> PlanChaos(const ChaosOptions& options);
std::string DescribeFault(const PlannedFault& fault);

struct RoundFault {
  PlannedFault plan;
  // The attempt of plan.job the fault targets: 1, or a later one when an orchestrator kill took
  // the earlier attempt (claimed but not yet at its fault) with it.
  uint32_t attempt = 1;
  // Fired: performed and caught by ExpectedDetector(plan.kind); only then does the fault count.
  bool injected = false;
  std::string detail;      // what was done ("SIGKILL worker w2 (pid 123) during job 4 attempt 1"), what caught it
  bool performed = false;  // the nemesis did it (crash: the target attempt died at its crash point)
  std::optional<ingest::Detector> detector;  // what caught it (none: never performed, or nothing recorded)
  std::string not_counted;  // when not injected: why (never fired, or which detector caught it instead)
  // Orchestrator kills: the round's jobs in flight (running) when it fired; none before it fired.
  std::optional<uint32_t> in_flight;
};

// Whether the round's next orchestrator kill `due` (not yet performed) fires now, from the job
// table `jobs` (pure; the nemesis asks at every poll). It is due once its planned number of jobs is
// done; then it waits for a job in flight that no per-job fault targets (resume with jobs in flight
// is its point), for at most workers - 1 more jobs done, and never fires with no job in flight at
// all (a kill then would exercise no resume: it waits, and never fires when the run ends first).
// It never cuts another fault's detector short: it waits while a fault that fired is not yet
// caught (its target attempt still running) and while a crash target runs. On kNo and the waits
// `kill_wait` says why (WhyNeverFired's FaultFate::kill_wait).
enum class KillDue { kNo, kAwaitCatch, kAwaitHang, kNow };
KillDue OrchestratorKillDue(const std::vector<RoundFault>& faults, const RoundFault& due,
                            const std::vector<ingest::JobRow>& jobs, uint32_t workers, std::string& kill_wait);

// Judges orchestrator kill number `kill` (1, 2, ... in the round) when the round's run was
// resumed `resumes` times: caught by orchestrator_restart when it fired with jobs in flight and
// a restarted orchestrator resumed the run (sets `detector`, returns the evidence); else "" and,
// when it fired, `not_counted` says why (no job in flight: it tested no resume; or no resume).
std::string JudgeOrchestratorKill(RoundFault& fault, uint32_t kill, uint32_t resumes, const std::string& run_id);

// What became of a planned fault's target by the end of its round, from the job table: the
// facts WhyNeverFired explains a fault that never fired with.
struct FaultFate {
  std::optional<ingest::AttemptOutcome> attempt_outcome;  // the target attempt's outcome; none: never claimed
  std::string attempt_error;                             // that attempt's error, if any
  std::optional<ingest::JobState> job_state;             // the target job's state at the end; none: unknown
  uint32_t job_attempt = 0;     // the job's last attempt
  bool external_ingester = false;  // --ingest-cmd: no hold points, a fault fires once its attempt is seen running
  std::string run_end;          // how the round's run ended: "the run finished", "the run failed: ...", ...
  std::string kill_wait;        // orchestrator: why the kill was not due when the nemesis last looked
};

// Why `fault` never fired, in words, from `fate` ("never fired: job 3 attempt 1 finished (done)
// without reaching its hold point at history_effects: ..."). Pure; RoundFault::not_counted.
std::string WhyNeverFired(const RoundFault& fault, const FaultFate& fate);

// How a round's ledger differs from the serial baseline (ClassifyDivergence). Declared in the
// order of their names, so that maps of them list as they always did.
enum class AnomalyClass { kDivergent, kDuplicated, kLost, kPartial };
std::string_view ToString(AnomalyClass anomaly);  // "divergent" | "duplicated" | "lost" | "partial"
// Most severe first, as the totals list them.
inline constexpr std::array<AnomalyClass, 4> kAnomaliesBySeverity = {AnomalyClass::kLost, AnomalyClass::kDuplicated,
                                                                     AnomalyClass::kPartial, AnomalyClass::kDivergent};
// Ledger intervals per class.
using Anomalies = std::map<AnomalyClass, std::vector<LedgerRange>>;

// A chaos run's (or round's) verdict: valid; unknown (a planned fault never fired, or another
// detector than the one its kind exists to prove caught it: the run proves nothing); invalid.
enum class ChaosVerdict { kValid, kUnknown, kInvalid };
std::string_view ToString(ChaosVerdict verdict);  // "valid" | "unknown" | "invalid"
// The verdict of an outcome (ChaosRound, ChaosReport) from its `valid` and `inconclusive`.
template <typename Outcome>
ChaosVerdict VerdictOf(const Outcome& o) {
  return o.valid ? ChaosVerdict::kValid : o.inconclusive ? ChaosVerdict::kUnknown : ChaosVerdict::kInvalid;
}

struct ChaosRound {
  uint32_t round = 0;
  std::string run_id, schema;
  std::vector<RoundFault> faults;
  bool ingest_ok = false;
  std::string ingest_error;
  uint32_t jobs = 0, attempts = 0, retried_jobs = 0, recovered_jobs = 0;
  uint32_t orchestrator_restarts = 0;
  uint32_t redone_after_resume = 0;                           // jobs done before an orchestrator kill that ran again
  Anomalies anomalies;                                        // class -> ledger intervals
  std::map<ingest::Detector, uint32_t> detectors;             // the round's faults by the detector that caught them
  bool valid = false;
  bool inconclusive = false;  // a planned fault not injected (fired, caught by its detector): the round proves nothing
  ChaosVerdict verdict() const { return VerdictOf(*this); }
  bool schema_kept = false;
  double seconds = 0;
};

struct ChaosReport {
  ChaosOptions options;
  std::vector<RoundPlan> schedule;
  std::vector<ChaosRound> rounds;
  FaultCounts planned, injected;                              // per fault kind
  std::map<ingest::Detector, uint32_t> detectors;             // faults per detector that caught them, all rounds
  Anomalies anomalies;                                        // per class, over all rounds
  uint32_t jobs_retried = 0, jobs_recovered = 0;
  double baseline_s = 0, seconds = 0;
  bool valid = false;         // every round valid (hence every planned fault injected)
  bool inconclusive = false;  // some round's planned fault never fired (exit 1)
  ChaosVerdict verdict() const { return VerdictOf(*this); }
  std::string replay;         // the command line that replays this run exactly (shell-quoted)
  // What the command worked on (Target::Line in text, "target" in JSON); unset: not shown.
  std::optional<Target> target;
};

// The command that replays `options` exactly (every flag that shapes the run, shell-quoted);
// `faults` is the KIND=COUNT list.
std::string ReplayCommand(const ChaosOptions& options, const std::string& faults);

// How a round is judged: `schema` compared with `baseline` through diff/ (every divergent ledger
// of every table), each divergent ledger classified by its row counts on both sides (first that
// applies): lost (its history_ledgers row is gone), duplicated (some table has more rows than the
// baseline), partial (some table has fewer), divergent (same counts, other content). Empty when
// identical. Both schemas are digested by `engine`.
Result<Anomalies> ClassifyDivergence(const std::string& conninfo, const std::string& baseline,
                                     const std::string& schema, const dump::ProfileSpec& spec, const LedgerRange& range,
                                     dump::DigestEngine engine, Reporter& reporter);

// Runs the whole chaos session against the database at `conninfo`.
Result<ChaosReport> RunChaos(const std::string& conninfo, const ChaosOptions& options, Reporter& reporter);

}  // namespace ledgerdiff::verify
