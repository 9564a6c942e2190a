// Markdown pieces and a verify report as Markdown (contracts in markdown.h).
#include "report/markdown.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/report.h"
#include "report/escape.h"
#include "report/state_text_json.h"
#include "report/verify_text_json.h"
#include "report/verify_view.h"

namespace ledgerdiff::report {

using verify::VerifyReport;

std::string MdTable(const std::vector<std::string>& header, std::string_view align,
                    const std::vector<std::vector<std::string>>& rows) {
  auto line = [](const std::vector<std::string>& cells) {
    std::string l = "|";
    for (const auto& c : cells) l += " " + c + " |";
    return l + "\n";
  };
  std::string m = line(header) + "|";
  for (size_t i = 0; i < header.size(); ++i) m += i < align.size() && align[i] == 'r' ? "---:|" : "---|";
  m += "\n";
  for (const auto& row : rows) m += line(row);
  return m + "\n";
}

std::string MdDetails(std::string_view summary, std::string_view body) {
  return "<details><summary>" + Esc(summary) + "</summary>\n\n" + std::string(body) + "\n</details>\n\n";
}

namespace {

// The heading with the verdict, and what it means in one sentence.
std::string VerifyMdVerdict(const VerifyReport& r, const Sides& sides) {
  const verify::VerifyVerdict verdict = r.verdict();
  const char* icon = verdict == verify::VerifyVerdict::kIdentical ? "\xe2\x9c\x85"
                     : verdict == verify::VerifyVerdict::kError   ? "\xe2\x9a\xa0\xef\xb8\x8f"
                                                                  : "\xe2\x9d\x8c";
  std::string m = fmt::format("## {} ledgerdiff verify: {}\n\n", icon, ToString(verdict));
  switch (verdict) {
    case verify::VerifyVerdict::kIdentical:
      m += fmt::format("The parallel ingestion wrote exactly what the {} one wrote: {} ledgers, {} rows compared.\n\n",
                       sides.left, FormatCount(r.diff.ledgers_compared), FormatCount(r.diff.rows_compared_left));
      break;
    case verify::VerifyVerdict::kDivergent:
      if (r.diff.first_divergent_ledger)
        m += fmt::format("**First divergent ledger: {}** ({} of {} ledgers compared differ)\n\n",
                         *r.diff.first_divergent_ledger, FormatCount(r.diff.divergent_ledgers),
                         FormatCount(r.diff.ledgers_compared));
      else
        m += "**" + MdText(DivergenceWithoutLedger(r.diff)) + "**\n\n";
      break;
    case verify::VerifyVerdict::kIncomplete:
      m += fmt::format("**Ledgers of {} are missing** ({} {}, {} {}); the ledgers both sides hold are identical.\n\n",
                       r.range.str(), sides.left, FormatCount(r.diff.coverage.left.missing_ledgers), sides.right,
                       FormatCount(r.diff.coverage.right.missing_ledgers));
      break;
    case verify::VerifyVerdict::kError:
      m += "**Error:** " + MdText(r.error) + "\n\n";
      break;
  }
  return m;
}

// The run facts as a list: target, range, workers, run, baseline, bug, what was kept.
std::string VerifyMdFacts(const VerifyReport& r) {
  std::string m;
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
  return m + "\n";
}

// The phase times, then one row per table.
std::string VerifyMdTables(const VerifyReport& r, const VerifyView& view) {
  std::string m;
  if (!r.phases.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : r.phases) rows.push_back({MdText(p.name), FormatDuration(p.seconds)});
    if (r.speedup > 0) rows.push_back({"**parallel speed-up**", fmt::format("**{:.2f}x**", r.speedup)});
    m += MdTable({"phase", "time"}, "lr", rows);
  }
  if (!view.tables.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : view.tables) {
      std::string status = !t.compared ? "\xe2\x80\x94 not compared"
                           : t.differs ? "\xe2\x9d\x8c divergent"
                                       : "\xe2\x9c\x85 identical";
      rows.push_back({MdCode(t.table, true), CountOrDash(t.left_rows), CountOrDash(t.right_rows),
                      t.compared ? FormatCount(t.divergent_ledgers) : "\xe2\x80\x94", status});
    }
    m += MdTable({"table", view.sides.left + " rows", view.sides.right + " rows", "divergent ledgers", "status"},
                 "lrrrl", rows);
  }
  return m;
}

// A divergent report: the divergent tables at the first divergent ledger and who wrote it, the
// schema differences, a collapsible row diff per table and each table's divergent ledgers.
std::string VerifyMdDivergence(const VerifyReport& r, const VerifyView& view) {
  const Sides& sides = view.sides;
  std::string m;
  std::vector<std::string> names;
  for (const auto& t : r.diff.divergent_tables) names.push_back(MdCode(t.table));
  if (!names.empty() && r.diff.first_divergent_ledger)
    m += fmt::format("Divergent tables at ledger {}: {}\n\n", *r.diff.first_divergent_ledger, fmt::join(names, ", "));
  if (r.first_divergent_job && r.diff.first_divergent_ledger)
    m += MdText(DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job)) + ".\n\n";
  for (const auto& s : r.diff.schema_differences) m += "- schema difference: " + MdText(s) + "\n";
  if (!r.diff.schema_differences.empty()) m += "\n";
  for (const auto& rd : r.diff.rows) {
    const diff::TableAtLedger* at = nullptr;
    for (const auto& t : r.diff.divergent_tables)
      if (t.table == rd.table) at = &t;
    std::string body;
    for (const auto& line : RowDiffLines(rd, sides, 10, 120)) body += line + "\n";
    m += MdDetails(fmt::format("Row diff of {} at ledger {}{}", rd.table, r.diff.first_divergent_ledger.value_or(0),
                               at ? fmt::format(" ({} {} rows, {} {} rows)", sides.left, FormatCount(at->left_rows),
                                                sides.right, FormatCount(at->right_rows))
                                  : ""),
                   MdBlock("diff", body));
  }
  for (const auto& t : view.tables)
    if (t.divergent.size() > 1)
      m += fmt::format("- {} diverges at ledgers {}\n", MdCode(t.table), MdText(Intervals(t.divergent, 10)));
  return m + "\n";
}

// An errored report: each run's failed jobs and restart range.
std::string VerifyMdFailedJobs(const VerifyReport& r) {
  std::string m;
  for (const auto& [side, run] : SideRuns(r)) {
    for (const auto& j : run->failed_jobs)
      m += fmt::format("- {} job {} {} failed after {}: {}\n", side, j.job_id, MdCode(j.range.str()),
                       Plural(j.attempt, "attempt", "attempts"), MdText(j.error));
    if (run->restart_range) m += fmt::format("- {} restart range: {}\n", side, MdCode(run->restart_range->str()));
  }
  return m + "\n";
}

// The soundness findings, then the look-again command.
std::string VerifyMdFindings(const VerifyReport& r, const VerifyView& view) {
  std::string m;
  for (const auto& list : FindingLists(view.soundness)) {
    m += fmt::format("**{}:**\n\n", list.title);
    for (const auto& line : list.lines) m += (list.failing ? "- \xe2\x9d\x8c " : "- ") + MdText(line) + "\n";
    m += "\n";
  }
  if (!r.look_again.empty()) m += "Look again:\n\n" + MdBlock("sh", r.look_again) + "\n";
  return m;
}

}  // namespace

std::string RenderVerifyMarkdown(const VerifyReport& r) {
  const VerifyView view = ViewOf(r);
  std::string m = VerifyMdVerdict(r, view.sides);
  m += VerifyMdFacts(r);
  m += VerifyMdTables(r, view);
  if (r.verdict() == verify::VerifyVerdict::kDivergent) m += VerifyMdDivergence(r, view);
  if (!r.error.empty()) m += VerifyMdFailedJobs(r);
  return m + VerifyMdFindings(r, view);
}

std::string RenderVerifyRangeMarkdown(const verify::VerifyRangeReport& range) {
  const VerifyReport r = RangeShell(range);
  const VerifyView view = RangeViewOf(r);
  const diff::Verdict verdict = range.verdict();
  const char* icon = verdict == diff::Verdict::kIdentical    ? "\xe2\x9c\x85"
                     : verdict == diff::Verdict::kIncomplete ? "\xe2\x9a\xa0\xef\xb8\x8f"
                                                             : "\xe2\x9d\x8c";
  // As verify's: the verdict in the heading, the finding in bold below it.
  std::string m = fmt::format("## {} ledgerdiff verify-range: {}\n\n**{}**\n\n", icon, diff::VerdictName(verdict),
                              MdText(RangeHeadline(range)));
  const diff::DiffReport& d = r.diff;
  m += fmt::format("{} of {} ledgers compared differ; {} {} rows and {} {} rows compared in {}.\n\n",
                   FormatCount(d.divergent_ledgers), FormatCount(d.ledgers_compared), FormatCount(d.rows_compared_left),
                   view.sides.left, FormatCount(d.rows_compared_right), view.sides.right,
                   Plural(view.tables.size(), "table", "tables"));
  if (d.targets) m += fmt::format("- target: {}\n", MdCode(d.targets->Describe()));
  m += fmt::format("- range: {} ({} ledgers)\n", MdCode(d.range.str()), FormatCount(d.range.size()));
  m += fmt::format("- left: {}\n- right: {}\n", MdCode(d.left), MdCode(d.right));
  for (const auto& line : CoverageLines(d, view.sides)) m += "- coverage: " + MdText(line) + "\n";
  m += "\n" + VerifyMdTables(r, view);
  if (d.verdict == diff::Verdict::kDivergent) m += VerifyMdDivergence(r, view);
  if (range.state) m += "**State:**\n\n" + MdBlock("", RenderStateText(*range.state)) + "\n";
  return m + VerifyMdFindings(r, view);
}

}  // namespace ledgerdiff::report
