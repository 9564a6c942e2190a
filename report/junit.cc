// JUnit XML of a verify report (contract in junit.h).
#include "report/junit.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/report.h"
#include "report/escape.h"
#include "report/verify_text_json.h"
#include "report/verify_view.h"

namespace ledgerdiff::report {

using verify::VerifyReport;

std::string RenderVerifyJUnit(const VerifyReport& r) {
  const auto [sides, tables, sound] = ViewOf(r);
  const bool errored = !r.error.empty();

  struct Case {
    std::string name;
    std::string kind;  // "" pass | "failure" | "error"
    std::string message;
    std::string body;
  };
  std::vector<Case> cases;
  if (errored) {
    std::string body = r.error + "\n";
    for (const auto& [side, run] : SideRuns(r)) {
      for (const auto& j : run->failed_jobs) body += FailedJobLine(side, j) + "\n";
      if (run->restart_range) body += fmt::format("{} restart range: {}\n", side, run->restart_range->str());
    }
    cases.push_back({"ingest", "error", r.error, body});
  } else {
    for (const auto& t : tables) {
      Case c{t.table, "", "", ""};
      if (t.differs) {
        c.kind = "failure";
        std::string first = t.first ? fmt::format("first divergent ledger {}", *t.first) : "divergent";
        c.message = fmt::format("{}: {}; {} {} rows, {} {} rows; {}", t.table, first, sides.left,
                                CountOrDash(t.left_rows), sides.right, CountOrDash(t.right_rows),
                                Plural(t.divergent_ledgers, "divergent ledger", "divergent ledgers"));
        std::string& b = c.body;
        b += c.message + "\n";
        if (!t.divergent.empty()) b += "divergent ledgers: " + Intervals(t.divergent, 20) + "\n";
        if (t.at_first && r.diff.first_divergent_ledger)
          b += fmt::format("at ledger {}: {} {} rows, {} {} rows\n", *r.diff.first_divergent_ledger, sides.left,
                           FormatCount(t.at_first->left_rows), sides.right, FormatCount(t.at_first->right_rows));
        if (t.at_first && r.first_divergent_job && r.diff.first_divergent_ledger)
          b += DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job) + "\n";
        if (t.row_diff)
          for (const auto& line : RowDiffLines(*t.row_diff, sides, 5, 200)) b += "  " + line + "\n";
        if (!r.look_again.empty()) b += "look again: " + r.look_again + "\n";
        if (!r.remove_command.empty()) b += "remove the kept cluster when done: " + r.remove_command + "\n";
        if (!r.evidence_gone.empty()) b += "nothing kept: " + r.evidence_gone + "\n";
      }
      cases.push_back(std::move(c));
    }
    // A failing case per lookup difference, broken invariant and table whose rows outside the
    // range differ; what was not compared rides along.
    for (const auto& p : sound.problems) cases.push_back({p.name, "failure", p.detail, p.detail + "\n"});
    if (!sound.warnings.empty()) {
      std::string body;
      for (const auto& w : sound.warnings) body += "warning: " + w + "\n";
      cases.push_back({"soundness warnings", "", "", body});
    }
    // Divergent without a divergent table (schemas differ only): fail visibly anyway.
    if (!r.identical && std::none_of(cases.begin(), cases.end(), [](const Case& c) { return !c.kind.empty(); })) {
      std::string body;
      for (const auto& s : r.diff.schema_differences) body += "schema difference: " + s + "\n";
      for (const auto& n : r.diff.notes) body += "note: " + n + "\n";
      std::string msg = r.diff.schema_differences.empty() ? "the two sides differ"
                                                          : "schemas differ: " + r.diff.schema_differences.front();
      cases.push_back({"schema", "failure", msg, body});
    }
  }

  size_t failures = 0, errors = 0;
  for (const auto& c : cases) {
    if (c.kind == "failure") ++failures;
    if (c.kind == "error") ++errors;
  }
  const std::string time = fmt::format("{:.3f}", TotalSeconds(r));
  const std::string suite = "ledgerdiff verify " + r.range.str();

  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"ledgerdiff verify\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n",
                   cases.size(), failures, errors, time);
  x += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">\n",
                   Attr(suite), cases.size(), failures, errors, time);
  x += "    <properties>\n";
  auto prop = [&](std::string_view name, const std::string& value) {
    x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, Attr(value));
  };
  prop("verdict", r.verdict());
  if (r.target) prop("target", r.target->Describe());
  prop("run_id", r.run_id);
  prop("range", r.range.str());
  prop("workers", std::to_string(r.workers));
  prop("job_size", std::to_string(r.job_size));
  std::string schemas = r.serial_schema.empty() ? r.parallel_schema : r.serial_schema + " " + r.parallel_schema;
  prop("schemas", schemas);
  if (!r.baseline.empty()) prop("baseline", r.baseline);
  prop("bug", r.bug);
  prop("speedup", fmt::format("{:.2f}", r.speedup));
  if (r.diff.first_divergent_ledger) prop("first_divergent_ledger", std::to_string(*r.diff.first_divergent_ledger));
  if (!r.look_again.empty()) prop("look_again", r.look_again);
  if (const auto& w = r.first_divergent_job)
    prop("first_divergent_job", fmt::format("job {} ({}) attempt {} worker {} position {}", w->job, w->range.str(),
                                            w->attempt, w->worker, w->position));
  prop("schemas_kept", r.schemas_kept ? "true" : "false");
  if (!r.kept_cluster.empty()) prop("kept_cluster", r.kept_cluster);
  if (!r.evidence_gone.empty()) prop("evidence_gone", r.evidence_gone);
  x += "    </properties>\n";
  for (const auto& c : cases) {
    x += fmt::format("    <testcase classname=\"ledgerdiff.verify\" name=\"{}\"", Attr(c.name));
    if (c.kind.empty()) {
      x += c.body.empty() ? "/>\n" : ">\n      <system-out>" + Esc(c.body) + "</system-out>\n    </testcase>\n";
      continue;
    }
    x += fmt::format(">\n      <{} message=\"{}\" type=\"{}\">{}</{}>\n    </testcase>\n", c.kind, Attr(c.message),
                     c.kind == "error" ? "error" : "divergent", Esc(c.body), c.kind);
  }
  x += "    <system-out>" + Esc(RenderVerifyText(r)) + "</system-out>\n";
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace ledgerdiff::report
