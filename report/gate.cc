// Gate summaries and their JUnit, Markdown and HTML (contracts in gate.h).
#include "report/gate.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "core/history_tables.h"
#include "core/text.h"
#include "report/chaos_text_json.h"
#include "report/escape.h"
#include "report/html.h"
#include "report/junit.h"
#include "report/markdown.h"
#include "report/metrics.h"
#include "report/selftest_text_json.h"
#include "report/state_text_json.h"
#include "report/sweep.h"
#include "report/verify_text_json.h"
#include "report/verify_view.h"
#include "report/diff_text_json.h"

namespace ledgerdiff::report {

using State = GateCheck::State;

namespace {

// Coverage: a failing check when a side lacks ledgers of the range (a warning with --allow-gaps),
// a warning per table with rows at ledgers a side does not hold; a fact per side.
void AddCoverageChecks(const diff::DiffReport& d, const Sides& sides, GateSummary& s) {
  const diff::Coverage& cov = d.coverage;
  if (!cov.checked) {
    s.checks.push_back({"coverage", State::kWarning,
                        fmt::format("not checked: {} is not compared on both sides", kLedgerTable), ""});
    return;
  }
  const std::pair<const std::string*, const diff::SideCoverage*> each[] = {{&sides.left, &cov.left},
                                                                           {&sides.right, &cov.right}};
  std::string missing;
  for (const auto& [name, c] : each) {
    s.facts.push_back({*name + " holds", CoverageHeld(*c)});
    if (c->missing_ledgers) missing += fmt::format("{}{}: {}", missing.empty() ? "" : "; ", *name, CoverageMissing(*c));
    for (const auto& o : c->orphans)
      s.checks.push_back({fmt::format("coverage: {} ({})", o.table, *name), State::kWarning,
                          fmt::format("{} at {} without a {} row: {}", Plural(o.rows, "row", "rows"),
                                      Plural(o.ledgers, "ledger", "ledgers"), cov.table,
                                      FormatIntervals(o.at, o.at.size())),
                          ""});
  }
  if (missing.empty())
    s.checks.push_back({"coverage", State::kPass, fmt::format("both sides hold every ledger of {}", d.range.str()), ""});
  else if (cov.allow_gaps)
    s.checks.push_back({"coverage", State::kWarning, "gaps accepted by --allow-gaps: " + missing, ""});
  else
    s.checks.push_back({"coverage", State::kFail, "incomplete: " + missing, ""});
}

// The per-table checks and soundness problems of a diff, as verify and verify-range show them.
void AddDiffChecks(const verify::VerifyReport& shell, const VerifyView& view, GateSummary& s) {
  const Sides& sides = view.sides;
  for (const auto& t : view.tables) {
    GateCheck c{t.table, State::kPass, "", ""};
    if (t.differs) {
      c.state = State::kFail;
      c.message = fmt::format("{}: {}; {} {} rows, {} {} rows; {}", t.table,
                              t.first ? fmt::format("first divergent ledger {}", *t.first) : "divergent", sides.left,
                              CountOrDash(t.left_rows), sides.right, CountOrDash(t.right_rows),
                              Plural(t.divergent_ledgers, "divergent ledger", "divergent ledgers"));
      if (t.at_first && shell.first_divergent_job && shell.diff.first_divergent_ledger)
        c.message += "; " + DescribeWritingJob(*shell.diff.first_divergent_ledger, *shell.first_divergent_job);
      if (t.row_diff)
        for (const auto& line : RowDiffLines(*t.row_diff, sides, 5, 200)) c.detail += line + "\n";
    } else if (!t.compared) {
      continue;
    }
    s.checks.push_back(std::move(c));
  }
  if (!shell.diff.divergent_sample.empty()) {
    std::string listed;
    for (Ledger l : shell.diff.divergent_sample) listed += (listed.empty() ? "" : ", ") + std::to_string(l);
    const uint64_t more = shell.diff.divergent_ledgers - shell.diff.divergent_sample.size();
    s.checks.push_back({"divergent ledgers", State::kFail,
                        fmt::format("{}: {}{}", Plural(shell.diff.divergent_ledgers, "divergent ledger", "divergent ledgers"), listed,
                                    more ? fmt::format(" and {} more", FormatCount(more)) : ""),
                        ""});
  }
  AddCoverageChecks(shell.diff, sides, s);
  const Soundness& sound = view.soundness;
  for (const auto& p : sound.problems) s.checks.push_back({p.name, State::kFail, p.detail, ""});
  for (const auto& w : sound.warnings) s.checks.push_back({"not compared", State::kWarning, w, ""});
  // A schema difference is named whether or not a table check failed with it: it is what
  // explains the ledgers a type class made divergent.
  const auto& differences = shell.diff.schema_differences;
  if (!differences.empty() ||
      (!shell.identical && shell.error.empty() &&
       std::none_of(s.checks.begin(), s.checks.end(), [](const GateCheck& c) { return c.state == State::kFail; }))) {
    std::string detail;
    for (const auto& d : differences) detail += d + "\n";
    std::string message = "the schemas differ";
    if (!differences.empty())
      message += ": " + differences.front() +
                 (differences.size() > 1 ? fmt::format(" and {} more", differences.size() - 1) : "");
    s.checks.push_back({"schema", State::kFail, message, detail});
  }
}

const char* StateWord(State st) {
  switch (st) {
    case State::kPass: return "pass";
    case State::kFail: return "FAIL";
    case State::kError: return "ERROR";
    case State::kWarning: return "warning";
  }
  return "";
}

// Failing checks first, then warnings, then passes; stable within each.
std::vector<const GateCheck*> Ordered(const GateSummary& s) {
  std::vector<const GateCheck*> out;
  for (State st : {State::kError, State::kFail, State::kWarning, State::kPass})
    for (const auto& c : s.checks)
      if (c.state == st) out.push_back(&c);
  return out;
}

}  // namespace

GateSummary VerifyGate(const verify::VerifyReport& r) {
  GateSummary s;
  s.command = "verify";
  s.verdict = ToString(r.verdict());
  s.passed = r.verdict() == verify::VerifyVerdict::kIdentical;
  if (r.target) s.target = r.target->Describe();
  s.facts = {{"range", r.range.str()},
             {"run", r.run_id},
             {"workers", std::to_string(r.workers)},
             {"job size", std::to_string(r.job_size)}};
  if (r.diff.first_divergent_ledger) s.facts.push_back({"first divergent ledger", std::to_string(*r.diff.first_divergent_ledger)});
  if (r.first_divergent_job && r.diff.first_divergent_ledger)
    s.facts.push_back({"written by", DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job)});
  if (!r.error.empty()) {
    std::string detail;
    for (const auto& [side, run] : SideRuns(r))
      for (const auto& j : run->failed_jobs) detail += FailedJobLine(side, j) + "\n";
    s.checks.push_back({"ingest", State::kError, r.error, detail});
  } else {
    AddDiffChecks(r, ViewOf(r), s);
  }
  if (!r.look_again.empty()) s.next_steps.push_back({"look again", r.look_again});
  if (!r.remove_command.empty()) s.next_steps.push_back({"remove the kept cluster", r.remove_command});
  if (!r.evidence_gone.empty()) s.facts.push_back({"nothing kept", r.evidence_gone});
  s.text = RenderVerifyText(r);
  return s;
}

GateSummary VerifyRangeGate(const diff::DiffReport& d, const std::string& look_again) {
  verify::VerifyReport shell;
  shell.diff = d;
  shell.identical = d.identical;
  shell.range = d.range;
  GateSummary s;
  s.command = "verify-range";
  s.verdict = diff::VerdictName(d.verdict);
  s.passed = d.identical;
  if (d.targets) s.target = d.targets->Describe();
  s.facts = {{"range", d.range.str()}, {"left", d.left}, {"right", d.right},
             {"ledgers compared", FormatCount(d.ledgers_compared)}};
  if (d.first_divergent_ledger) s.facts.push_back({"first divergent ledger", std::to_string(*d.first_divergent_ledger)});
  VerifyView view = ViewOf(shell);
  view.sides = {"left", "right"};
  AddDiffChecks(shell, view, s);
  if (!d.identical && !look_again.empty()) s.next_steps.push_back({"look again", look_again});
  s.text = report::RenderDiffText(d);
  return s;
}

void AddStateCheck(const verify::StateComparison& state, diff::Verdict combined, GateSummary& s) {
  s.verdict = diff::VerdictName(combined);
  s.passed = combined == diff::Verdict::kIdentical;
  s.facts.push_back({"state", state.compared ? fmt::format("{} at ledger {}", verify::ToString(state.verdict),
                                                           *state.ledger_left)
                                             : verify::ToString(state.verdict)});
  GateCheck check;
  check.name = "state";
  const std::string text = RenderStateText(state);
  check.message = text.substr(0, text.find('\n'));
  check.detail = text.find('\n') + 1 < text.size() ? text.substr(text.find('\n') + 1) : "";
  switch (state.verdict) {
    // Nothing to compare (no state on either side) passes with its note: it is no finding.
    case verify::StateVerdict::kIdentical:
    case verify::StateVerdict::kNotCompared: check.state = GateCheck::State::kPass; break;
    case verify::StateVerdict::kDivergent:
    case verify::StateVerdict::kIncomplete: check.state = GateCheck::State::kFail; break;
    case verify::StateVerdict::kSkipped: check.state = GateCheck::State::kWarning; break;
  }
  s.checks.push_back(std::move(check));
}

GateSummary SelftestGate(const verify::SelftestReport& r) {
  GateSummary s;
  s.command = "selftest";
  s.passed = r.passed();
  if (r.target) s.target = r.target->Describe();
  s.verdict = s.passed ? "passed" : "failed";
  s.facts = {{"range", r.range.str()}, {"cases", std::to_string(r.cases.size())}, {"time", FormatDuration(r.seconds)}};
  for (const auto& c : r.cases) {
    GateCheck check;
    check.name = c.ledger ? fmt::format("{}@{}", c.kind, c.ledger) : c.kind;
    std::string tables;
    for (const auto& t : c.tables) tables += (tables.empty() ? "" : ", ") + t;
    if (!c.error.empty()) {
      check.state = State::kError;
      check.message = c.error;
    } else if (!c.caught) {
      check.state = State::kFail;
      check.message = c.ledger ? fmt::format("{} injected at ledger {} but {}", c.kind, c.ledger,
                                             c.reported ? fmt::format("reported at ledger {}", *c.reported)
                                                        : std::string("not reported"))
                               : SelftestOutcome(c);
    } else {
      check.message = c.ledger ? fmt::format("caught at ledger {} ({})", c.ledger, tables) : SelftestOutcome(c);
    }
    s.checks.push_back(std::move(check));
  }
  s.text = RenderSelftestText(r);
  return s;
}

GateSummary ChaosGate(const verify::ChaosReport& r) {
  GateSummary s;
  s.command = "chaos";
  s.passed = r.valid;
  if (r.target) s.target = r.target->Describe();
  s.verdict = verify::ToString(r.verdict());
  s.facts = {{"range", r.options.plan.range.str()},
             {"workers", std::to_string(r.options.plan.workers)},
             {"job size", std::to_string(r.options.plan.job_size)},
             {"seed", std::to_string(r.options.plan.seed)},
             {"rounds", std::to_string(r.rounds.size())},
             {"jobs retried / recovered", fmt::format("{} / {}", r.jobs_retried, r.jobs_recovered)}};
  if (r.options.unsafe_ingester) s.facts.push_back({"ingester", "UNSAFE (negative control)"});
  for (const auto& round : r.rounds) {
    GateCheck c;
    c.name = fmt::format("round {}", round.round);
    for (const auto& f : round.faults)
      c.detail += fmt::format("{}: {}\n", verify::DescribeFault(f.plan),
                              f.injected ? f.detail : "NOT COUNTED: " + f.not_counted);
    std::string anomalies;
    for (const auto& [cls, iv] : round.anomalies)
      if (!iv.empty())
        anomalies += fmt::format("{}{} ledgers {}", anomalies.empty() ? "" : "; ", verify::ToString(cls), Intervals(iv, 10));
    if (!round.ingest_ok) {
      c.state = State::kError;
      c.message = "ingest failed: " + round.ingest_error;
    } else if (!anomalies.empty()) {
      c.state = State::kFail;
      c.message = "anomalies: " + anomalies;
    } else if (round.inconclusive) {
      c.state = State::kFail;
      c.message =
          "unknown: a planned fault never fired or was caught by another detector than the one it exists to "
          "prove, the round proves nothing";
    } else if (!round.valid) {
      c.state = State::kFail;
      c.message = "invalid";
    } else {
      c.message = fmt::format("valid: {} jobs, {} retried, {} recovered", round.jobs, round.retried_jobs,
                              round.recovered_jobs);
    }
    std::string caught;
    for (ingest::Detector d : ingest::kDetectors)
      if (round.detectors.count(d) && round.detectors.at(d) > 0)
        caught += fmt::format("{}{} {}", caught.empty() ? "" : ", ", ingest::ToString(d), round.detectors.at(d));
    if (!caught.empty()) c.detail += "caught by: " + caught + "\n";
    if (round.schema_kept) c.detail += "schema kept: " + round.schema + "\n";
    s.checks.push_back(std::move(c));
  }
  if (!r.replay.empty()) s.next_steps.push_back({"replay", r.replay});
  s.text = RenderChaosText(r);
  return s;
}

GateSummary SweepGate(const verify::SweepReport& r) {
  GateSummary s;
  s.command = "sweep";
  s.passed = r.exit_code() == 0;
  if (r.target) s.target = r.target->Describe();
  s.verdict = s.passed ? "all identical" : "divergent or failed cells";
  s.facts = {{"range", r.options.range.str()}, {"run", r.run_id}, {"repeat", std::to_string(r.options.repeat)},
             {"reference", r.reference}};
  const auto& rec = r.recommendation;
  s.facts.push_back({"recommendation", rec.found ? fmt::format("{} workers, jobs of {} ({})", rec.workers,
                                                               rec.job_size, rec.reason)
                                                 : "none: " + rec.reason});
  for (const auto& cell : r.cells) {
    GateCheck c;
    c.name = cell.Name();
    if (cell.verdict == verify::CellVerdict::kDivergent) {
      c.state = State::kFail;
      c.message = cell.first_divergent_ledger ? fmt::format("divergent at ledger {}", *cell.first_divergent_ledger)
                                              : "divergent";
    } else if (cell.verdict == verify::CellVerdict::kFailed) {
      c.state = State::kError;
      c.message = "failed: " + cell.error;
    } else {
      c.message = fmt::format("identical, median {:.2f} s, {:.0f} ledgers/s", cell.median_s, cell.ledgers_per_s);
    }
    for (const auto& rep : cell.repeats)
      if (rep.kept) c.detail += "schema kept: " + rep.schema + "\n";
    s.checks.push_back(std::move(c));
  }
  s.text = RenderSweepText(r);
  return s;
}

std::string RenderGateJUnit(const GateSummary& s) {
  JUnitSuite suite;
  suite.suites_name = "ledgerdiff " + s.command;
  suite.name = "ledgerdiff." + s.command;
  suite.classname = "ledgerdiff." + s.command;
  suite.properties.emplace_back("verdict", s.verdict);
  if (!s.target.empty()) suite.properties.emplace_back("target", s.target);
  for (const auto& [k, v] : s.facts) suite.properties.emplace_back(k, v);
  for (const auto& [k, v] : s.next_steps) suite.properties.emplace_back(k, v);
  for (const auto& c : s.checks) {
    if (c.state == State::kPass || c.state == State::kWarning) {
      suite.cases.push_back({c.name, JUnitCase::Kind::kPass, "", "",
                             c.state == State::kWarning ? "warning: " + c.message + "\n" + c.detail : c.detail});
      continue;
    }
    std::string body = c.message + "\n" + c.detail;
    for (const auto& [k, v] : s.next_steps) body += k + ": " + v + "\n";
    const bool failed = c.state == State::kFail;
    suite.cases.push_back({c.name, failed ? JUnitCase::Kind::kFailure : JUnitCase::Kind::kError,
                           failed ? "Divergence" : "Error", c.message, body});
  }
  suite.system_out = s.text;
  return RenderJUnitXml(suite);
}

std::string RenderGateMarkdown(const GateSummary& s) {
  const char* icon = s.passed ? "\xe2\x9c\x85" : "\xe2\x9d\x8c";
  std::string m = fmt::format("## {} ledgerdiff {}: {}\n\n", icon, MdText(s.command), MdText(s.verdict));
  if (!s.target.empty()) m += fmt::format("- target: {}\n", MdCode(s.target));
  for (const auto& [k, v] : s.facts) m += fmt::format("- {}: {}\n", MdText(k), MdCode(v));
  m += "\n";
  if (!s.checks.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const GateCheck* c : Ordered(s)) {
      const char* mark = c->state == State::kPass      ? "\xe2\x9c\x85 pass"
                         : c->state == State::kWarning ? "\xe2\x9a\xa0\xef\xb8\x8f warning"
                         : c->state == State::kFail    ? "\xe2\x9d\x8c FAIL"
                                                       : "\xe2\x9d\x8c ERROR";
      rows.push_back({MdCode(c->name, true), mark, MdText(c->message)});
    }
    m += MdTable({"check", "result", "detail"}, "lll", rows);
  }
  for (const GateCheck* c : Ordered(s)) {
    if (c->state == State::kPass || c->detail.empty()) continue;
    m += MdDetails(c->name, MdBlock("", c->detail));
  }
  for (const auto& [label, command] : s.next_steps) m += MdText(label) + ":\n\n" + MdBlock("sh", command) + "\n";
  return m;
}

std::string RenderGateHtml(const GateSummary& s, const std::string& extra_html) {
  const std::string title = "ledgerdiff " + s.command + ": " + s.verdict;
  const char* banner = s.passed ? "identical" : s.verdict == "incomplete" ? "incomplete" : "divergent";
  // The headline: the first failing check and what it says, or how many checks passed.
  const std::vector<const GateCheck*> ordered = Ordered(s);
  std::string what;
  if (!ordered.empty() && (ordered.front()->state == State::kFail || ordered.front()->state == State::kError)) {
    what = "<span class=\"headline\">" + Esc(ordered.front()->name) + "</span>: " + Esc(ordered.front()->message);
  } else {
    size_t passes = 0, warnings = 0;
    for (const auto& c : s.checks) (c.state == State::kPass ? passes : warnings) += 1;
    what = Plural(passes, "check passed", "checks passed") +
           (warnings ? ", " + Plural(warnings, "warning", "warnings") : std::string());
  }
  std::string h = "<div class=\"brand\"><b>ledgerdiff</b><span>" + Esc(s.command) + "</span></div>\n";
  h += fmt::format("<div class=\"banner {}\" id=\"verdict\"><div class=\"word\">{}</div><div class=\"what\">{}</div>"
                   "</div>\n",
                   banner, Esc(UpperAscii(s.verdict)), what);
  h += "<dl class=\"facts\">\n";
  if (!s.target.empty()) h += "<div><dt>target</dt><dd>" + Esc(s.target) + "</dd></div>\n";
  for (const auto& [k, v] : s.facts) h += "<div><dt>" + Esc(k) + "</dt><dd>" + Esc(v) + "</dd></div>\n";
  h += "</dl>\n";
  h += extra_html;
  if (!s.checks.empty()) {
    h += "<h2>Checks</h2>\n<div class=\"wide\"><table class=\"checks\">\n"
         "<tr><th>check</th><th>result</th><th>detail</th></tr>\n";
    for (const GateCheck* c : Ordered(s)) {
      const bool bad = c->state == State::kFail || c->state == State::kError;
      h += fmt::format("<tr{}><td><code class=\"name\">{}</code></td><td>{}</td><td>{}{}</td></tr>\n",
                       bad ? " class=\"bad\"" : "",
                       Esc(c->name), StateWord(c->state), Esc(c->message),
                       c->detail.empty() ? "" : "<pre>" + Esc(c->detail) + "</pre>");
    }
    h += "</table></div>\n";
  }
  for (const auto& [label, command] : s.next_steps)
    h += "<h2>" + Esc(label) + "</h2>\n<pre class=\"look-again\">" + Esc(command) + "</pre>\n";
  return HtmlPage(title, h);
}

std::string ChaosTimelineHtml(const verify::ChaosReport& r) {
  // Nine columns of prose: at a narrow width the matrix scrolls inside its box, the page does not.
  std::string h =
      "<h2>Rounds &#215; faults</h2>\n<div class=\"wide\"><table class=\"rounds\">\n<tr><th>round</th>";
  for (const verify::FaultKind k : verify::kFaultKinds) h += "<th>" + Esc(std::string(verify::ToString(k))) + "</th>";
  h += "<th>caught by</th><th>anomalies</th><th>verdict</th></tr>\n";
  auto detector_list = [](const std::map<ingest::Detector, uint32_t>& counts) {
    std::string cell;
    for (ingest::Detector d : ingest::kDetectors)
      if (counts.count(d) && counts.at(d) > 0)
        cell += fmt::format("<div>{} {}</div>", Esc(std::string(ingest::ToString(d))), counts.at(d));
    return cell.empty() ? std::string("none") : cell;
  };
  for (const auto& round : r.rounds) {
    const std::string_view verdict = verify::ToString(round.verdict());
    h += fmt::format("<tr{}><td class=\"n\">{}</td>", round.valid ? "" : " class=\"bad\"", round.round);
    for (const verify::FaultKind k : verify::kFaultKinds) {
      std::string cell;
      for (const auto& f : round.faults) {
        if (f.plan.kind != k) continue;
        const std::string caught =
            f.injected ? fmt::format("caught by <b>{}</b>",
                                     Esc(std::string(ingest::ToString(verify::ExpectedDetector(f.plan.kind)))))
                       : "<b>not counted</b>: " + Esc(f.not_counted);
        cell += fmt::format("<div>{}<br/><span class=\"muted\">{}</span><br/>{}</div>",
                            Esc(verify::DescribeFault(f.plan)), Esc(f.detail), caught);
      }
      h += "<td>" + (cell.empty() ? std::string("&#8212;") : cell) + "</td>";
    }
    std::string anomalies;
    for (const auto& [cls, iv] : round.anomalies)
      if (!iv.empty()) anomalies += "<div>" + Esc(verify::ToString(cls)) + ": " + Esc(Intervals(iv, 10)) + "</div>";
    if (!round.ingest_ok) anomalies += "<div>ingest failed: " + Esc(round.ingest_error) + "</div>";
    h += "<td>" + detector_list(round.detectors) + "</td><td>" + (anomalies.empty() ? std::string("none") : anomalies) +
         "</td><td>" + Esc(verdict) + "</td></tr>\n";
  }
  // Totals: faults fired (caught by their own detector) of planned, per kind, and per detector.
  h += "<tr><td>all</td>";
  for (const verify::FaultKind k : verify::kFaultKinds)
    h += fmt::format("<td class=\"n\">{} of {} fired</td>", r.injected.count(k) ? r.injected.at(k) : 0,
                     r.planned.count(k) ? r.planned.at(k) : 0);
  h += "<td>" + detector_list(r.detectors) + "</td><td></td><td>" +
       Esc(std::string(r.valid          ? "valid"
                       : r.inconclusive ? "unknown"
                                        : "invalid")) +
       "</td></tr>\n";
  h += "</table></div>\n";
  return h;
}

namespace {
// --metrics: the gate's verdict, time and last success, then its own figures.
std::function<std::string(const std::string&, std::time_t)> MetricsOf(std::string command, std::string verdict,
                                                                      bool passed, double seconds,
                                                                      std::function<std::vector<Metric>(std::time_t now)> own) {
  return [=](const std::string& previous, std::time_t now) {
    std::vector<Metric> m = GateMetrics(command, verdict, passed, seconds, now, previous);
    if (own)
      for (Metric& one : own(now)) m.push_back(std::move(one));
    return RenderPrometheus(m);
  };
}
}  // namespace

GateReports VerifyReports(const verify::VerifyReport& r) {
  GateReports g;
  g.summary = VerifyGate(r);
  g.junit = [&r] { return RenderVerifyJUnit(r); };
  g.markdown = [&r] { return RenderVerifyMarkdown(r); };
  g.html = [&r](const std::string& dir) { return WriteVerifyHtml(r, dir); };
  double seconds = 0;
  for (const auto& p : r.phases) seconds += p.seconds;
  g.metrics = MetricsOf("verify", std::string(ToString(r.verdict())), r.identical, seconds,
                        r.error.empty() ? std::function<std::vector<Metric>(std::time_t)>([&r](std::time_t) { return ComparisonMetrics(r.diff); })
                                        : nullptr);
  return g;
}

namespace {
GateReports FromSummary(GateSummary s, std::function<std::string()> extra_html = {}) {
  GateReports g;
  g.summary = std::move(s);
  const GateSummary summary = g.summary;
  g.junit = [summary] { return RenderGateJUnit(summary); };
  g.markdown = [summary] { return RenderGateMarkdown(summary); };
  g.html = [summary, extra_html](const std::string& dir) {
    return WriteHtmlReport(RenderGateHtml(summary, extra_html ? extra_html() : ""), dir);
  };
  return g;
}
}  // namespace

GateReports VerifyRangeReports(const diff::DiffReport& r, const std::string& look_again) {
  verify::VerifyRangeReport range;
  range.diff = r;
  range.look_again = look_again;
  GateReports g = VerifyRangeReports(range);
  g.summary.text = report::RenderDiffText(r);
  return g;
}
GateReports VerifyRangeReports(const verify::VerifyRangeReport& r) {
  GateSummary s = VerifyRangeGate(r.diff, r.look_again);
  if (r.state) AddStateCheck(*r.state, r.verdict(), s);
  s.text = RenderVerifyRangeText(r);
  // JUnit, Markdown and HTML are verify's renderers over the range report (issue 46); the summary
  // serves the annotations. The renderers own a copy: `r` need not outlive them.
  GateReports g;
  g.summary = std::move(s);
  const auto own = std::make_shared<const verify::VerifyRangeReport>(r);
  g.junit = [own] { return RenderVerifyRangeJUnit(*own); };
  g.markdown = [own] { return RenderVerifyRangeMarkdown(*own); };
  g.html = [own](const std::string& dir) { return WriteHtmlReport(RenderVerifyRangeHtml(*own), dir); };
  g.metrics = MetricsOf("verify-range", diff::VerdictName(r.verdict()), r.verdict() == diff::Verdict::kIdentical,
                        r.diff.digest_seconds + r.diff.row_diff_seconds,
                        [own](std::time_t) {
                          std::vector<Metric> m = ComparisonMetrics(own->diff);
                          if (own->state)
                            for (auto& one : StateMetrics(*own->state)) m.push_back(std::move(one));
                          return m;
                        });
  return g;
}
GateReports SelftestReports(const verify::SelftestReport& r) {
  GateReports g = FromSummary(SelftestGate(r));
  g.metrics = MetricsOf("selftest", g.summary.verdict, g.summary.passed, r.seconds, nullptr);
  return g;
}
GateReports ChaosReports(const verify::ChaosReport& r) {
  GateReports g = FromSummary(ChaosGate(r), [&r] { return ChaosTimelineHtml(r); });
  g.metrics = MetricsOf("chaos", g.summary.verdict, g.summary.passed, r.seconds, [&r](std::time_t) { return ChaosMetrics(r); });
  return g;
}
GateReports SweepReports(const verify::SweepReport& r) {
  GateReports g = FromSummary(SweepGate(r));
  g.html = [&r](const std::string& dir) { return WriteSweepHtml(r, dir); };  // the heatmap and USL page
  double seconds = r.reference_warmup_s;
  for (double run : r.reference_runs_s) seconds += run;
  for (const auto& cell : r.cells)
    for (const auto& repeat : cell.repeats) seconds += repeat.wall_s;
  g.metrics = MetricsOf("sweep", g.summary.verdict, g.summary.passed, seconds, nullptr);
  return g;
}

GateReports FollowCycleReports(const verify::FollowCycle& c, const FollowTotals& totals) {
  GateReports g;
  // Nothing compared yet (the frontier before the first ledger): incomplete, not a success.
  // Divergent while a divergence is open (found by this cycle or before and not closed since):
  // a divergence is state, not an event that the next quiet cycle clears (issue 43).
  const std::string verdict = c.finding || !c.open.empty() ? "divergent"
                              : c.frontier < c.first        ? "incomplete"
                                                            : "identical";
  g.metrics = MetricsOf("verify-range", verdict, verdict == "identical", c.seconds,
                        [c, totals](std::time_t now) { return FollowMetrics(c, totals, now); });
  return g;
}

GateSummary FollowGate(const verify::FollowReport& r, const verify::FollowOptions& o, const std::string& stopped_by) {
  GateSummary s;
  s.command = "verify-range";
  const bool none = r.frontier < r.first;
  s.verdict = r.diverged ? "divergent" : none ? "incomplete" : "identical";
  s.passed = !r.diverged && !none;
  s.facts = {{"mode", "--follow"},
             {"state", o.state_dir},
             {"verified through", none ? std::string("nothing yet") : std::to_string(r.frontier)},
             {"first ledger", std::to_string(r.first)},
             {"cycles", FormatCount(r.cycles.size())},
             {"stopped by", stopped_by}};
  GateCheck through;
  through.name = "verified through";
  through.state = none ? GateCheck::State::kFail : GateCheck::State::kPass;
  through.message = none ? fmt::format("nothing verified yet (waiting for ledger {})", r.first)
                         : fmt::format("both sides identical through ledger {} over {}", r.frontier,
                                       FormatCountOf(r.cycles.size(), "cycle"));
  s.checks.push_back(through);
  // The state tables (--state-interval, issue 45): where the last cycle leaves them. Never
  // compared yet is a warning (the sides' state ledgers have not met), not a pass.
  if (!r.cycles.empty() && r.cycles.back().state_followed) {
    const verify::FollowCycle& last = r.cycles.back();
    GateCheck state;
    state.name = "state";
    if (last.state_divergent) {
      state.state = GateCheck::State::kFail;
      state.message = "the state tables differ (open until a comparison at a common ledger agrees)";
      for (auto c = r.cycles.rbegin(); c != r.cycles.rend(); ++c)
        if (c->state && c->state->verdict == verify::StateVerdict::kDivergent) {
          state.message = fmt::format("the state tables differ at ledger {}", c->state->ledger_left.value_or(0));
          state.detail = RenderFollowCycle(*c);
          break;
        }
    } else if (last.state_last_agreed_ledger) {
      state.state = GateCheck::State::kPass;
      state.message = fmt::format("the state tables last agreed at ledger {}", *last.state_last_agreed_ledger);
    } else {
      state.state = GateCheck::State::kWarning;
      state.message = "the state tables were not compared yet (the sides' state ledgers have not met)";
    }
    s.checks.push_back(std::move(state));
  }
  for (const auto& c : r.cycles) {
    if (!c.finding) continue;
    GateCheck f;
    f.name = fmt::format("cycle {}", c.number);
    f.state = GateCheck::State::kFail;
    f.message = fmt::format("{} at ledger {}", c.finding->changed_after_verified ? "changed after verified" : "divergent",
                            c.finding->ledger);
    f.detail = RenderFollowCycle(c);
    s.checks.push_back(std::move(f));
  }
  s.text = RenderFollowText(r, o, nullptr, nullptr);
  return s;
}

GateReports FollowReports(const verify::FollowReport& r, const verify::FollowOptions& o, const std::string& stopped_by) {
  return FromSummary(FollowGate(r, o, stopped_by));
}

KeptClusterLines RenderKeptCluster(const Result<KeptDatabase>& kept) {
  if (!kept.ok()) {
    const std::string gone = "the embedded database is removed on exit, the schemas called kept above included (" +
                             kept.status().message() + "): rerun with --keep-db DIR to keep them";
    return {"  nothing kept: " + gone + "\n", {{"evidence_gone", gone}}};
  }
  return {fmt::format("  embedded cluster kept in {} for the kept schemas: reach it with {} (e.g. `ledgerdiff "
                      "diff {} A B`); remove it when done: {}\n",
                      kept->dir, kept->reconnect_flags, kept->reconnect_flags, kept->remove_command),
          {{"kept_cluster", {{"dir", kept->dir}, {"remove", kept->remove_command}}}}};
}

}  // namespace ledgerdiff::report
