#pragma once
// What the render tests share (render_test's files and render_range_test): the sample verify and
// chaos reports they build in code (no database: a realistic parallel run of 2:401 and the
// identical and divergent reports over it), an XML well-formedness check, a scratch directory.
// Included by test sources only.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/html.h"
#include "report/junit.h"
#include "report/markdown.h"
#include "verify/chaos.h"
#include "verify/verify.h"

namespace ledgerdiff::verify::render_samples {

// What every render test file uses, brought in with the samples.
namespace fs = std::filesystem;
using report::RenderVerifyJUnit;
using report::RenderVerifyMarkdown;
using report::WriteVerifyHtml;

// A minimal XML well-formedness check: balanced and properly nested elements, quoted attributes,
// no raw '<' or '&' outside markup and entities. Returns "" or what is wrong.
inline std::string CheckWellFormed(const std::string& x) {
  auto entity_ok = [](const std::string& s, size_t at) {
    size_t semi = s.find(';', at);
    if (semi == std::string::npos || semi - at > 8) return false;
    std::string e = s.substr(at + 1, semi - at - 1);
    return e == "amp" || e == "lt" || e == "gt" || e == "quot" || e == "apos" || (e.size() > 1 && e[0] == '#');
  };
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < x.size()) {
    if (x[i] == '&') {
      if (!entity_ok(x, i)) return "bad entity at " + x.substr(i, 12);
      ++i;
      continue;
    }
    if (x[i] != '<') {
      ++i;
      continue;
    }
    size_t end = x.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = x.substr(i + 1, end - i - 1);
    i = end + 1;
    if (!tag.empty() && tag[0] == '?') continue;
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    bool closing = !tag.empty() && tag[0] == '/';
    bool self = !tag.empty() && tag.back() == '/';
    std::string body = closing ? tag.substr(1) : self ? tag.substr(0, tag.size() - 1) : tag;
    std::string name = body.substr(0, body.find_first_of(" \t\n"));
    if (name.empty()) return "empty tag name: <" + tag + ">";
    std::string attrs = body.substr(name.size());
    size_t quotes = 0;
    for (char a : attrs) quotes += a == '"';
    if (quotes % 2) return "unbalanced quotes in <" + name + ">";
    for (size_t k = attrs.find('&'); k != std::string::npos; k = attrs.find('&', k + 1))
      if (!entity_ok(attrs, k)) return "bad entity in an attribute of <" + name + ">";
    if (closing) {
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
    } else if (!self) {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

// An attempt row field by field (robust to fields added to AttemptRow later).
inline AttemptRow Attempt(uint32_t job, uint32_t attempt, const std::string& worker, double start, double end,
                   const std::string& outcome, const std::string& error, LedgerRange range, int slot = 0) {
  AttemptRow a{};
  a.slot = slot;
  a.job_id = job;
  a.attempt = attempt;
  a.worker = worker;
  a.start_s = start;
  a.end_s = end;
  const auto parsed = ingest::ParseAttemptOutcome(outcome);
  EXPECT_TRUE(parsed.has_value()) << outcome;
  a.outcome = parsed.value_or(ingest::AttemptOutcome::kRunning);
  a.error = error;
  a.range = range;
  return a;
}

// A realistic parallel run of 2:401 with 3 workers and jobs of 25 ledgers: worker w2 dies in
// job 6 and is replaced by w2.1, job 9 fails once and succeeds on its retry, job 12's first
// attempt is fenced off.
inline std::vector<AttemptRow> SampleTimeline(double* wall) {
  std::vector<AttemptRow> tl;
  double free_at[4] = {0, 0.05, 0.08, 0.11};
  // Worker names as the orchestrator makes them: wSLOT[.GEN]@host:pid:start, long and alike.
  const std::string at = "@ci-runner-1a2b3c4d5e6f:48121:18f3a2b4c10";
  std::string name[4] = {"", "w1" + at, "w2" + at, "w3" + at};
  uint32_t job = 0;
  for (Ledger from = 2; from <= 401; from += 25) {
    ++job;
    LedgerRange range{from, std::min<Ledger>(from + 24, 401)};
    int lane = 1;
    for (int l = 2; l <= 3; ++l)
      if (free_at[l] < free_at[lane]) lane = l;
    double start = free_at[lane];
    double dur = 0.42 + 0.03 * static_cast<double>((job * 7) % 5);
    uint32_t attempt = 1;
    auto add = [&](const std::string& outcome, double d, const std::string& err) {
      tl.push_back(Attempt(job, attempt, name[lane], start, start + d, outcome, err, range, lane));
      start += d;
      ++attempt;
    };
    if (job == 6) {
      add("lost", 0.3, "worker w2 died (killed by signal 9)");
      name[2] = "w2.1" + at;
      start += 0.2;
    } else if (job == 9) {
      add("failed", 0.15, "history_effects: connection reset <by peer> & \"retried\"");
      start += 0.25;
    } else if (job == 12) {
      add("fenced", 0.2, "attempt fenced off: job handed to another worker");
    }
    add("done", dur, "");
    free_at[lane] = start + 0.01;
  }
  *wall = 0;
  for (const auto& a : tl) *wall = std::max(*wall, a.end_s);
  *wall += 0.05;
  return tl;
}

inline IngestReport SampleRun(const std::string& schema, uint32_t workers, std::vector<AttemptRow> timeline,
                              double wall) {
  IngestReport run;
  run.run_id = "r7f3_p";
  run.schema = schema;
  run.range = {2, 401};
  run.workers = workers;
  run.job_size = 25;
  run.jobs = 16;
  run.ok = true;
  run.wall_s = wall;
  run.ledgers = 400;
  run.rows_per_table = {{"history_ledgers", 400},        {"history_transactions", 3210},
                        {"history_operations", 8155},    {"history_effects", 12044},
                        {"history_trades", 610},         {"history_operation_participants", 9120}};
  for (const auto& [t, n] : run.rows_per_table) run.rows += n;
  run.attempts = static_cast<uint32_t>(timeline.size());
  run.retried_jobs = 3;
  run.workers_replaced = 1;
  run.timeline = std::move(timeline);
  return run;
}

inline VerifyReport BaseReport() {
  VerifyReport r;
  r.run_id = "r7f3";
  r.range = {2, 401};
  r.workers = 3;
  r.job_size = 25;
  r.serial_schema = "ld_r7f3_serial";
  r.parallel_schema = "ld_r7f3_parallel";
  double wall = 0;
  std::vector<AttemptRow> tl = SampleTimeline(&wall);
  r.parallel = SampleRun(r.parallel_schema, 3, tl, wall);
  std::vector<AttemptRow> serial_tl;
  double t = 0;
  uint32_t job = 0;
  for (Ledger from = 2; from <= 401; from += 25, t += 0.31) {
    serial_tl.push_back(
        Attempt(++job, 1, "w1", t, t + 0.3, "done", "", {from, std::min<Ledger>(from + 24, 401)}, 1));
  }
  r.serial = SampleRun(r.serial_schema, 1, serial_tl, t + 0.05);
  r.serial->run_id = "r7f3_s";
  r.serial->retried_jobs = 0;
  r.serial->workers_replaced = 0;
  r.phases = {{"serial ingest", r.serial->wall_s}, {"parallel ingest", r.parallel.wall_s}, {"digest and diff", 0.84}};
  r.speedup = r.serial->wall_s / r.parallel.wall_s;
  r.diff.left = "schema \"ld_r7f3_serial\"";
  r.diff.right = "schema \"ld_r7f3_parallel\"";
  r.diff.range = r.range;
  r.diff.profile = "horizon";
  r.diff.ledgers_compared = 400;
  r.diff.excluded_columns = {"history_accounts.id", "history_operation_participants.history_account_id"};
  for (const auto& [table, n] : r.parallel.rows_per_table) {
    diff::TableComparison c;
    c.table = table;
    c.left_rows = n;
    c.right_rows = n;
    c.left_root = c.right_root = "9f2c" + table;
    r.diff.tables.push_back(c);
    r.diff.rows_compared_left += n;
    r.diff.rows_compared_right += n;
  }
  r.diff.identical = true;
  r.diff.verdict = diff::Verdict::kIdentical;
  r.diff.coverage.checked = true;
  r.diff.coverage.table = "history_ledgers";
  r.diff.coverage.explicit_range = true;
  for (diff::SideCoverage* side : {&r.diff.coverage.left, &r.diff.coverage.right}) {
    side->held = 400;
    side->first = 2;
    side->last = 401;
  }
  r.identical = true;
  return r;
}

inline VerifyReport IdenticalReport() { return BaseReport(); }

// Divergent at ledger 200 in history_effects (one row dropped, one changed) with hostile values.
inline VerifyReport DivergentReport() {
  VerifyReport r = BaseReport();
  r.bug = "drop-row@200";
  r.identical = false;
  r.schemas_kept = true;
  r.look_again = "ledgerdiff diff --keep-db /tmp/ld-db ld_r7f3_serial ld_r7f3_parallel --range 2:401";
  r.diff.identical = false;
  r.diff.verdict = diff::Verdict::kDivergent;
  r.diff.first_divergent_ledger = 200;
  r.diff.divergent_ledgers = 1;
  r.diff.all = true;
  for (auto& t : r.diff.tables) {
    if (t.table != "history_effects") continue;
    t.right_rows = t.left_rows - 1;
    t.divergent_ledgers = 1;
    t.divergent = {{200, 200}};
    t.right_root = "0bad";
  }
  r.diff.divergent_tables = {{"history_effects", 31, 30}};
  diff::TableRowDiff rd;
  rd.table = "history_effects";
  rd.columns = {"history_operation_id", "order", "account", "type", "details"};
  rd.key = {"history_operation_id", "order"};
  rd.only_left = {{"858993463297", "2", "GBXQ...ZP4T", "2", "<script>alert(1)</script>"}};
  rd.only_left_total = 1;
  rd.changed = {{{"858993463298", "1"}, {{"details", std::string("{\"amount\":\"10\"}"), std::string("a<b&\"c\"")},
                                         {"account", std::nullopt, std::string("GA\x01X")}}}};
  rd.changed_total = 1;
  r.diff.rows = {rd};
  return r;
}

// Occurrences of `needle` in `haystack`.
inline size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + needle.size()))
    ++n;
  return n;
}

// A fresh scratch directory, removed with everything in it when the object goes away, so the
// suite leaves nothing in the temporary directory.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("ledgerdiff-render-test-" + std::to_string(getpid()) + "-" + std::to_string(++count_) + "-" + name)) {
    std::filesystem::remove_all(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int count_ = 0;
  std::filesystem::path path_;
};

// A chaos report of two rounds, a worker kill and an orchestrator kill in each; with !valid the
// second round found ledgers 401-500 duplicated and kept its schema.
inline verify::ChaosReport SampleChaos(bool valid) {
  verify::ChaosReport r;
  r.options.plan.range = {2, 3001};
  r.options.plan.workers = 4;
  r.options.plan.job_size = 100;
  r.options.plan.seed = 7;
  r.replay = "ledgerdiff chaos --range 2:3001 --workers 4 --job-size 100 --seed 7";
  for (uint32_t i = 1; i <= 2; ++i) {
    verify::ChaosRound round;
    round.round = i;
    round.ingest_ok = true;
    round.jobs = 30;
    round.valid = true;
    round.faults.push_back({{verify::FaultKind::kKill, 4, "mid-job", 0},
                            1,
                            true,
                            "SIGKILL worker w2 (pid 123) during job 4 attempt 1",
                            true,
                            ingest::Detector::kProcessExit,
                            "",
                            std::nullopt});
    round.faults.push_back({{verify::FaultKind::kOrchestrator, 0, "", 25},
                            1,
                            true,
                            "killed the orchestrator after 25 jobs done",
                            true,
                            ingest::Detector::kOrchestratorRestart,
                            "",
                            std::nullopt});
    round.detectors = {{ingest::Detector::kProcessExit, 1}, {ingest::Detector::kOrchestratorRestart, 1}};
    r.rounds.push_back(round);
  }
  if (!valid) {
    r.rounds[1].valid = false;
    r.rounds[1].anomalies[verify::AnomalyClass::kDuplicated] = {{401, 500}};
    r.rounds[1].schema_kept = true;
    r.rounds[1].schema = "ld_c_r2";
  }
  r.valid = valid;
  return r;
}

}  // namespace ledgerdiff::verify::render_samples
