// Markdown of a verify report (contract in markdown.h).
#include "report/markdown.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/report.h"
#include "report/escape.h"
#include "report/verify_text_json.h"
#include "report/verify_view.h"

namespace ledgerdiff::report {

using verify::VerifyReport;

std::string RenderVerifyMarkdown(const VerifyReport& r) {
  const auto [sides, tables, sound] = ViewOf(r);
  const std::string verdict = r.verdict();
  std::string m;
  const char* icon = verdict == "identical" ? "\xe2\x9c\x85" : verdict == "error" ? "\xe2\x9a\xa0\xef\xb8\x8f" : "\xe2\x9d\x8c";
  m += fmt::format("## {} ledgerdiff verify: {}\n\n", icon, verdict);
  if (verdict == "identical") {
    m += fmt::format("The parallel ingestion wrote exactly what the {} one wrote: {} ledgers, {} rows compared.\n\n",
                     sides.left, FormatCount(r.diff.ledgers_compared), FormatCount(r.diff.rows_compared_left));
  } else if (verdict == "divergent") {
    if (r.diff.first_divergent_ledger)
      m += fmt::format("**First divergent ledger: {}** ({} of {} ledgers compared differ)\n\n",
                       *r.diff.first_divergent_ledger, FormatCount(r.diff.divergent_ledgers),
                       FormatCount(r.diff.ledgers_compared));
    else
      m += "**" + MdText(DivergenceWithoutLedger(r.diff)) + "**\n\n";
  } else if (verdict == "incomplete") {
    m += fmt::format("**Ledgers of {} are missing** ({} {}, {} {}); the ledgers held are identical.\n\n",
                     r.range.str(), sides.left, FormatCount(r.diff.coverage.left.missing_ledgers), sides.right,
                     FormatCount(r.diff.coverage.right.missing_ledgers));
  } else {
    m += "**Error:** " + MdText(r.error) + "\n\n";
  }

  if (r.target) m += fmt::format("- target: {}\n", MdCode(r.target->Describe()));
  m += fmt::format("- range: {} ({} ledgers)\n", MdCode(r.range.str()), FormatCount(r.range.size()));
  m += fmt::format("- workers: {}, jobs of {} ledgers\n", r.workers, FormatCount(r.job_size));
  m += fmt::format("- run: {}\n", MdCode(r.run_id));
  if (!r.baseline.empty()) m += fmt::format("- baseline: {}\n", MdCode(r.baseline));
  if (!r.bug.empty()) m += fmt::format("- injected bug: {}\n", MdCode(r.bug));
  if (r.schemas_kept)
    m += fmt::format("- schemas kept: {}{}\n", r.serial_schema.empty() ? "" : MdCode(r.serial_schema) + ", ",
                     MdCode(r.parallel_schema));
  if (!r.kept_cluster.empty())
    m += fmt::format("- embedded cluster kept in {} (remove it when done: {})\n", MdCode(r.kept_cluster),
                     MdCode(r.remove_command));
  if (!r.evidence_gone.empty()) m += "- nothing kept: " + MdText(r.evidence_gone) + "\n";
  m += "\n";

  if (!r.phases.empty()) {
    m += "| phase | time |\n|---|---:|\n";
    for (const auto& p : r.phases) m += fmt::format("| {} | {} |\n", MdText(p.name), FormatDuration(p.seconds));
    if (r.speedup > 0) m += fmt::format("| **parallel speed-up** | **{:.2f}x** |\n", r.speedup);
    m += "\n";
  }

  if (!tables.empty()) {
    m += fmt::format("| table | {} rows | {} rows | divergent ledgers | status |\n", sides.left, sides.right);
    m += "|---|---:|---:|---:|---|\n";
    for (const auto& t : tables) {
      std::string status = !t.compared ? "\xe2\x80\x94 not compared"
                           : t.differs ? "\xe2\x9d\x8c divergent"
                                       : "\xe2\x9c\x85 identical";
      m += fmt::format("| {} | {} | {} | {} | {} |\n", MdCode(t.table, true), CountOrDash(t.left_rows),
                       CountOrDash(t.right_rows), t.compared ? FormatCount(t.divergent_ledgers) : "\xe2\x80\x94",
                       status);
    }
    m += "\n";
  }

  if (verdict == "divergent") {
    std::vector<std::string> names;
    for (const auto& t : r.diff.divergent_tables) names.push_back(MdCode(t.table));
    if (!names.empty() && r.diff.first_divergent_ledger)
      m += fmt::format("Divergent tables at ledger {}: {}\n\n", *r.diff.first_divergent_ledger,
                       fmt::join(names, ", "));
    if (r.first_divergent_job && r.diff.first_divergent_ledger)
      m += MdText(DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job)) + ".\n\n";
    for (const auto& s : r.diff.schema_differences) m += "- schema difference: " + MdText(s) + "\n";
    if (!r.diff.schema_differences.empty()) m += "\n";
    for (const auto& rd : r.diff.rows) {
      const diff::TableAtLedger* at = nullptr;
      for (const auto& t : r.diff.divergent_tables)
        if (t.table == rd.table) at = &t;
      m += fmt::format("<details><summary>Row diff of {} at ledger {}{}</summary>\n\n", Esc(rd.table),
                       r.diff.first_divergent_ledger.value_or(0),
                       at ? fmt::format(" ({} {} rows, {} {} rows)", sides.left, FormatCount(at->left_rows),
                                        sides.right, FormatCount(at->right_rows))
                          : "");
      std::string body;
      for (const auto& line : RowDiffLines(rd, sides, 10, 120)) body += line + "\n";
      m += MdBlock("diff", body) + "\n</details>\n\n";
    }
    for (const auto& t : tables)
      if (t.divergent.size() > 1)
        m += fmt::format("- {} diverges at ledgers {}\n", MdCode(t.table), MdText(Intervals(t.divergent, 10)));
    m += "\n";
  }
  if (!r.error.empty()) {
    for (const auto& [side, run] : SideRuns(r)) {
      for (const auto& j : run->failed_jobs)
        m += fmt::format("- {} job {} {} failed after {}: {}\n", side, j.job_id, MdCode(j.range.str()),
                         Plural(j.attempt, "attempt", "attempts"), MdText(j.error));
      if (run->restart_range) m += fmt::format("- {} restart range: {}\n", side, MdCode(run->restart_range->str()));
    }
    m += "\n";
  }
  for (const auto& list : FindingLists(sound)) {
    m += fmt::format("**{}:**\n\n", list.title);
    for (const auto& line : list.lines) m += (list.failing ? "- \xe2\x9d\x8c " : "- ") + MdText(line) + "\n";
    m += "\n";
  }
  if (!r.look_again.empty()) m += "Look again:\n\n" + MdBlock("sh", r.look_again) + "\n";
  return m;
}

}  // namespace ledgerdiff::report
