// The HTML report of a verify run (contract in html.h).
//
// Vocabulary follows the text renderers: the left side is "serial" (or "baseline" when a
// manifest stood in for it), the right side is "parallel"; "first divergent ledger",
// "divergent tables", "only serial / only parallel / changed" rows, "look again".
#include "report/html.h"

#include "core/atomic_file.h"
#include "report/verify_text_json.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/report.h"
#include "core/text.h"
#include "report/escape.h"
#include "report/state_text_json.h"
#include "report/svg_chart.h"
#include "report/verify_view.h"
#include "report/diff_text_json.h"

namespace ledgerdiff::report {

using ingest::IngestReport;
using verify::VerifyReport;

namespace {

// The one stylesheet of every page (verify, verify-range, the gates, sweep). Then sweep's block:
// its recommendation banner (ok, bad), noise caveat, right-aligned cells table with its verdict
// column, and its charts, which sit directly in <main> and shrink to fit. Last, the per-table
// table's headers wrap and its cells pad less at a narrow width, so its unbroken table names
// (code.name) leave room for the status column.
constexpr const char* kCss = R"css(
:root{--ok:#1a7f37;--ok-bg:#dafbe1;--bad:#cf222e;--bad-bg:#ffebe9;--warn:#9a6700;--warn-bg:#fff8c5;
--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--accent:#0969da}
*{box-sizing:border-box}
body{margin:0;background:#fff;color:var(--fg);font:14px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:20px 32px 56px}
.brand{display:flex;align-items:baseline;gap:12px;color:var(--muted);font-size:13px;margin-bottom:12px}
.brand b{color:var(--fg);font-size:16px;letter-spacing:.02em}
.banner{border-radius:10px;padding:18px 24px;display:flex;align-items:center;gap:22px;color:#fff}
.banner.identical{background:linear-gradient(90deg,#1a7f37,#2da44e)}
.banner.divergent{background:linear-gradient(90deg,#b62324,#cf222e)}
.banner.error,.banner.incomplete{background:linear-gradient(90deg,#9a6700,#bf8700)}
.banner .headline{font-size:19px;font-weight:700}
.banner .word{font-size:30px;font-weight:800;letter-spacing:.06em}
.banner .what{font-size:15px;opacity:.95;line-height:1.45}
.banner .what code{background:rgba(255,255,255,.18);color:#fff}.banner .what a{color:#fff}
h2{font-size:17px;margin:34px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:22px 0 8px}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(230px,1fr));gap:10px 28px;margin:18px 0 0;padding:14px 18px;background:var(--soft);border:1px solid var(--line);border-radius:8px}
.facts div{min-width:0}
.facts div.row{grid-column:1/-1}.facts div.half{grid-column:span 2}
@media (max-width:760px){.facts div.half{grid-column:1/-1}}
.facts dt{font-size:11px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:28px}
@media (max-width:900px){.cols{grid-template-columns:1fr}}
@media (max-width:900px){main{padding:16px 16px 40px}th{white-space:normal}th,td{padding:5px 6px}
.banner{flex-wrap:wrap;gap:6px 18px;padding:14px 16px}.banner .word{font-size:24px}}
.wide{overflow-x:auto}
td code{overflow-wrap:anywhere}
code.name,td code.name{white-space:nowrap;overflow-wrap:normal;word-break:keep-all}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;color:var(--muted);font-size:12px;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.bad td{background:#fff5f5}
table.runs td,table.runs th,table.phases td{padding:3px 10px}
.pill{display:inline-block;padding:0 9px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.pill.identical{background:var(--ok-bg);color:var(--ok)}.pill.divergent{background:var(--bad-bg);color:var(--bad)}
.pill.none{background:#eaeef2;color:var(--muted)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
code{background:#eff2f5;padding:1px 5px;border-radius:4px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:10px 14px;white-space:pre-wrap;overflow-wrap:anywhere;margin:6px 0}
.phase{display:flex;align-items:center;gap:10px}
.phase .bar{height:10px;border-radius:3px;background:var(--accent);min-width:2px}
.muted{color:var(--muted)}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:6px}
.scroll table td,.scroll table th{border-bottom:1px solid #e6ebf0}
table.rows td{font-family:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px;max-width:420px;overflow-wrap:anywhere}
table.rows tr.left td{background:var(--bad-bg)}table.rows tr.right td{background:var(--ok-bg)}
td.mark{font-weight:700;white-space:nowrap;font-family:inherit}
tr.left td.mark{color:var(--bad)}tr.right td.mark{color:var(--ok)}
del{background:var(--bad-bg);color:#82071e;text-decoration:line-through;padding:0 3px;border-radius:3px}
ins{background:var(--ok-bg);color:#116329;text-decoration:none;padding:0 3px;border-radius:3px}
.null{color:var(--muted);font-style:italic}
.note{padding:8px 12px;border-left:3px solid var(--line);background:var(--soft);margin:6px 0}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:12px;color:var(--muted);margin:6px 0 2px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:5px}
.legend i.retried{background:#fff;border:2px solid #1f2328}
figure{margin:6px 0 0;overflow-x:auto}figure svg{width:100%;min-width:960px;height:auto;display:block}
figcaption{font-size:12px;color:var(--muted);margin-top:4px}
footer{margin-top:44px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px}
.banner.ok{background:linear-gradient(90deg,#1a7f37,#2da44e)}.banner.bad{background:linear-gradient(90deg,#b62324,#cf222e)}
.banner.ok,.banner.bad{font-size:15px}
.noise{margin:8px 0 0;padding:8px 14px;border-left:4px solid var(--warn);background:var(--warn-bg)}
table.cells th,table.cells td{text-align:right;font-variant-numeric:tabular-nums}
table.cells td.v{text-align:left;overflow-wrap:anywhere;min-width:9em}
td.v.identical{color:var(--ok)}td.v.divergent{color:var(--bad)}td.v.failed{color:var(--muted)}
main>svg{max-width:100%;height:auto}
table.tables th,table.tables th.n{white-space:normal}
@media (max-width:900px){table.tables th,table.tables td{padding:5px 6px}}
)css";

// The timeline's legend: the colours of the outcomes that occur (done, failed and lost always),
// the retry outline and the replacement marker.
std::string Legend(const IngestReport& run) {
  std::set<ingest::AttemptOutcome> seen;
  for (const auto& a : run.timeline) seen.insert(a.outcome);
  std::string s = "<div class=\"legend\">";
  for (ingest::AttemptOutcome o : kLegendOutcomes)
    if (seen.count(o) || o == ingest::AttemptOutcome::kDone || o == ingest::AttemptOutcome::kFailed ||
        o == ingest::AttemptOutcome::kLost)
      s += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", OutcomeColor(o), ingest::ToString(o));
  s += "<span><i class=\"retried\"></i>job needed a retry (\xe2\x86\xbb attempt)</span>";
  s += "<span><i style=\"background:#9a6700;width:3px\"></i>replacement worker starts</span>";
  s += "</div>\n";
  return s;
}

// The timeline's lane key: each lane label (w1...wN) with the full identity of its worker and of
// the workers that replaced it, which the chart only shows in tooltips.
std::string LaneKey(const IngestReport& run) {
  const std::vector<TimelineLane> lanes = TimelineLanes(run);
  bool any_replaced = false;
  for (const auto& lane : lanes) any_replaced |= !lane.replacements.empty();
  std::string s = fmt::format("<div class=\"scroll\"><table class=\"lane-key\"><tr><th>lane</th><th>worker</th>{}</tr>\n",
                              any_replaced ? "<th>replaced by</th>" : "");
  for (const auto& lane : lanes) {
    s += fmt::format("<tr><td class=\"mono\">{}</td><td class=\"mono\">{}</td>", Esc(lane.label), Esc(lane.name));
    if (any_replaced) {
      std::vector<std::pair<double, std::string>> by_start;
      for (const auto& [name, start] : lane.replacements) by_start.emplace_back(start, name);
      std::sort(by_start.begin(), by_start.end());
      std::string cell;
      for (const auto& [start, name] : by_start)
        cell += fmt::format("{}<span class=\"mono\">{}</span> at {:.1f}s", cell.empty() ? "" : "<br/>", Esc(name), start);
      s += "<td>" + cell + "</td>";
    }
    s += "</tr>\n";
  }
  s += "</table></div>\n";
  return s;
}

// A row value in a table cell: NULL and the empty string marked, long values cut.
std::string HtmlValue(const std::optional<std::string>& v) {
  if (!v) return "<span class=\"null\">NULL</span>";
  if (v->empty()) return "<span class=\"null\">''</span>";
  return Esc(Truncate(*v, 400));
}

std::string RunStatsTable(const VerifyReport& r) {
  std::vector<std::pair<std::string, const IngestReport*>> runs;
  if (r.serial) runs.push_back({"serial", &*r.serial});
  if (!r.parallel.run_id.empty() || r.parallel.attempts > 0 || !r.parallel.timeline.empty())
    runs.push_back({"parallel", &r.parallel});
  if (runs.empty()) return "";
  std::string s = "<table class=\"runs\"><tr><th></th>";
  for (const auto& [name, run] : runs) s += "<th class=\"n\">" + Esc(name) + "</th>";
  s += "</tr>\n";
  auto row = [&](const std::string& label, auto value) {
    s += "<tr><td>" + label + "</td>";
    for (const auto& [name, run] : runs) s += "<td class=\"n\">" + value(*run) + "</td>";
    s += "</tr>\n";
  };
  row("workers", [](const IngestReport& x) { return std::to_string(x.workers); });
  row("wall time", [](const IngestReport& x) { return Esc(FormatDuration(x.wall_s)); });
  row("ledgers", [](const IngestReport& x) { return FormatCount(x.ledgers); });
  row("rows", [](const IngestReport& x) { return FormatCount(x.rows); });
  row("ledgers/s", [](const IngestReport& x) { return FormatCount(static_cast<uint64_t>(x.ledgers_per_s() + 0.5)); });
  row("rows/s", [](const IngestReport& x) { return FormatCount(static_cast<uint64_t>(x.rows_per_s() + 0.5)); });
  row("jobs", [](const IngestReport& x) { return FormatCount(x.jobs); });
  row("attempts", [](const IngestReport& x) { return FormatCount(x.attempts); });
  row("retried jobs", [](const IngestReport& x) { return FormatCount(x.retried_jobs); });
  row("workers replaced", [](const IngestReport& x) { return FormatCount(x.workers_replaced); });
  row("result", [](const IngestReport& x) {
    return x.ok ? std::string("<span class=\"pill identical\">ok</span>")
                : std::string("<span class=\"pill divergent\">failed</span>");
  });
  s += "</table>\n";
  return s;
}

std::string RowDiffHtml(const VerifyReport& r, const diff::TableRowDiff& rd, const Sides& sides) {
  std::string s;
  const diff::TableAtLedger* at = nullptr;
  for (const auto& t : r.diff.divergent_tables)
    if (t.table == rd.table) at = &t;
  s += fmt::format("<h3><code class=\"name\">{}</code> at ledger {}", Esc(rd.table),
                   r.diff.first_divergent_ledger.value_or(0));
  if (at)
    s += fmt::format(" <span class=\"muted\">&#183; {} {} rows, {} {} rows</span>", sides.left,
                     FormatCount(at->left_rows), sides.right, FormatCount(at->right_rows));
  s += "</h3>\n";
  if (const std::string why = report::ClassDifferenceExplanation(rd, sides.left, sides.right); !why.empty())
    return s + "<p class=\"note\">" + Esc(why) + "</p>\n";  // in place of an empty row diff
  s += fmt::format("<p class=\"muted\">{} only {}, {} only {}, {} changed{}</p>\n",
                   Plural(rd.only_left_total, "row", "rows"), sides.left, Plural(rd.only_right_total, "row", "rows"),
                   sides.right, Plural(rd.changed_total, "row", "rows"),
                   rd.key.empty() ? "" : fmt::format(" (matched on {})", Esc(fmt::format("{}", fmt::join(rd.key, ", ")))));
  if (!rd.left_available || !rd.right_available)
    s += fmt::format("<p class=\"note\">Rows of the {} side are not available: it is a manifest.</p>\n",
                     !rd.left_available ? sides.left : sides.right);
  if (!rd.only_left.empty() || !rd.only_right.empty()) {
    s += "<div class=\"scroll\"><table class=\"rows\"><tr><th></th>";
    for (const auto& c : rd.columns) s += "<th>" + Esc(c) + "</th>";
    s += "</tr>\n";
    auto emit = [&](bool left, const char* cls, const std::string& mark) {
      const auto& rows = left ? rd.only_left : rd.only_right;
      for (size_t row = 0; row < rows.size(); ++row) {
        const auto& v = rows[row];
        const std::string note =
            diff::StoredFlippedNote(left ? rd.OnlyLeftStoredFlipped(row) : rd.OnlyRightStoredFlipped(row));
        s += fmt::format("<tr class=\"{}\"><td class=\"mark\">{}{}</td>", cls, mark,
                         note.empty() ? "" : "<br><span class=\"muted\">" + Esc(note) + "</span>");
        for (size_t i = 0; i < rd.columns.size(); ++i)
          s += "<td>" + (i < v.size() ? HtmlValue(v[i]) : std::string()) + "</td>";
        s += "</tr>\n";
      }
    };
    emit(true, "left", "\xe2\x88\x92 only " + sides.left);
    emit(false, "right", "+ only " + sides.right);
    s += "</table></div>\n";
    if (rd.only_left_total > rd.only_left.size())
      s += fmt::format("<p class=\"muted\">\xe2\x80\xa6 {} more rows only {}</p>\n",
                       FormatCount(rd.only_left_total - rd.only_left.size()), sides.left);
    if (rd.only_right_total > rd.only_right.size())
      s += fmt::format("<p class=\"muted\">\xe2\x80\xa6 {} more rows only {}</p>\n",
                       FormatCount(rd.only_right_total - rd.only_right.size()), sides.right);
  }
  if (!rd.changed.empty()) {
    s += fmt::format("<div class=\"scroll\"><table class=\"rows changed\"><tr><th>key</th><th>column</th>"
                     "<th>{} \xe2\x86\x92 {}</th></tr>\n",
                     sides.left, sides.right);
    for (const auto& c : rd.changed) {
      std::string key;
      for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i)
        key += (i ? ", " : "") + Esc(rd.key[i]) + "=" + HtmlValue(c.key[i]);
      size_t n = std::max<size_t>(1, c.changes.size());
      const std::string note = diff::StoredFlippedNote(c, sides.left, sides.right);
      for (size_t i = 0; i < n; ++i) {
        s += "<tr>";
        if (i == 0)
          s += fmt::format("<td rowspan=\"{}\">{}{}</td>", n, key,
                           note.empty() ? "" : "<br><span class=\"muted\">" + Esc(note) + "</span>");
        if (i < c.changes.size()) {
          const auto& ch = c.changes[i];
          s += "<td>" + Esc(ch.column) + "</td><td><del>" + HtmlValue(ch.left) + "</del> \xe2\x86\x92 <ins>" +
               HtmlValue(ch.right) + "</ins></td>";
        } else {
          s += "<td></td><td></td>";
        }
        s += "</tr>\n";
      }
    }
    s += "</table></div>\n";
    if (rd.changed_total > rd.changed.size())
      s += fmt::format("<p class=\"muted\">\xe2\x80\xa6 {} more changed rows</p>\n",
                       FormatCount(rd.changed_total - rd.changed.size()));
  }
  return s;
}

}  // namespace

std::string HtmlPage(std::string_view title, std::string_view body) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  h += "<title>" + Esc(title) + "</title>\n<style>" + std::string(kCss) + "</style>\n</head>\n<body>\n<main>\n";
  h += body;
  h += "</main>\n</body>\n</html>\n";
  return h;
}

namespace {

// The banner of verify's and verify-range's pages: the verdict word (its class colours it) and
// `what_html` (markup), what it means.
std::string HtmlBanner(std::string_view verdict, const std::string& what_html) {
  return fmt::format("<div class=\"banner {}\" id=\"verdict\"><div class=\"word\">{}</div><div class=\"what\">{}</div>"
                     "</div>\n",
                     verdict, UpperAscii(verdict), what_html);
}

// The verdict banner: the verdict word and what it means in one or two sentences.
std::string VerifyHtmlBanner(const VerifyReport& r, const VerifyView& view) {
  const Sides& sides = view.sides;
  const std::string_view verdict = ToString(r.verdict());
  std::string what;
  switch (r.verdict()) {
    case verify::VerifyVerdict::kIdentical:
    what = fmt::format("The parallel ingestion wrote exactly what the {} one wrote.<br/>{} ledgers ({}) and {} rows "
                       "compared in {}.",
                       sides.left, FormatCount(r.diff.ledgers_compared), Esc(r.range.str()),
                       FormatCount(r.diff.rows_compared_left), Plural(view.tables.size(), "table", "tables"));
      break;
    case verify::VerifyVerdict::kDivergent:
      if (r.diff.first_divergent_ledger) {
      std::vector<std::string> names;
      for (const auto& t : r.diff.divergent_tables) names.push_back("<code>" + Esc(t.table) + "</code>");
      what = fmt::format("First divergent ledger <b>{}</b>{}.<br/>{} of {} ledgers compared differ.",
                         *r.diff.first_divergent_ledger,
                         names.empty() ? "" : fmt::format(" in {}", fmt::join(names, ", ")),
                         FormatCount(r.diff.divergent_ledgers), FormatCount(r.diff.ledgers_compared));
      } else {
        what = Esc(DivergenceWithoutLedger(r.diff));
      }
      break;
    case verify::VerifyVerdict::kIncomplete:
      what = fmt::format("Ledgers of {} are missing ({} {}, {} {}); the ledgers both sides hold are identical.",
                         Esc(r.range.str()), sides.left, FormatCount(r.diff.coverage.left.missing_ledgers), sides.right,
                         FormatCount(r.diff.coverage.right.missing_ledgers));
      break;
    case verify::VerifyVerdict::kError:
      what = "The run did not finish: " + Esc(r.error);
      break;
  }
  return HtmlBanner(verdict, what);
}

// The run facts: target, range, workers, times, schemas and what was kept.
std::string VerifyHtmlFacts(const VerifyReport& r) {
  std::string h = "<dl class=\"facts\">\n";
  auto fact = [&](const std::string& k, const std::string& v_html) {
    h += "<div><dt>" + k + "</dt><dd>" + v_html + "</dd></div>\n";
  };
  if (r.target) fact("target", Esc(r.target->Describe()));
  fact("range", fmt::format("{} <span class=\"muted\">({} ledgers)</span>", Esc(r.range.str()),
                            FormatCount(r.range.size())));
  fact("workers", fmt::format("{} <span class=\"muted\">&#183; jobs of {} ledgers</span>", r.workers,
                              FormatCount(r.job_size)));
  if (r.speedup > 0) fact("parallel speed-up", fmt::format("{:.2f}x", r.speedup));
  fact("total time", Esc(FormatDuration(TotalSeconds(r))));
  if (!r.baseline.empty()) fact("baseline", "<code>" + Esc(r.baseline) + "</code>");
  if (!r.serial_schema.empty()) fact("serial schema", "<code>" + Esc(r.serial_schema) + "</code>");
  if (!r.parallel_schema.empty()) fact("parallel schema", "<code>" + Esc(r.parallel_schema) + "</code>");
  fact("schemas", r.schemas_kept                ? (r.kept_cluster.empty() ? "kept" : "kept in " + Esc(r.kept_cluster))
                  : !r.evidence_gone.empty() ? "gone: " + Esc(r.evidence_gone)
                                             : "dropped after the pass");
  if (!r.bug.empty()) fact("injected bug", "<code>" + Esc(r.bug) + "</code>");
  if (!r.saved_baseline.empty()) fact("baseline saved to", "<code>" + Esc(r.saved_baseline) + "</code>");
  if (!r.diff.profile.empty()) fact("table profile", Esc(r.diff.profile));
  h += "</dl>\n";
  return h;
}

// An errored run: the error, then each run's failed jobs and restart range.
std::string VerifyHtmlError(const VerifyReport& r) {
  if (r.error.empty()) return "";
  std::string h = "<h2>Error</h2>\n<pre>" + Esc(r.error) + "</pre>\n";
  for (const auto& [side, run] : SideRuns(r)) {
    if (run->failed_jobs.empty() && !run->restart_range) continue;
    h += fmt::format("<h3>Failed jobs of the {} run</h3>\n<div class=\"wide\"><table><tr><th class=\"n\">job</th>"
                     "<th>range</th><th class=\"n\">attempts</th><th>last error</th></tr>\n",
                     side);
    for (const auto& j : run->failed_jobs)
      h += fmt::format("<tr><td class=\"n\">{}</td><td class=\"mono\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                       j.job_id, Esc(j.range.str()), j.attempt, Esc(j.error));
    h += "</table></div>\n";
    if (run->restart_range)
      h += fmt::format("<p>Restart range: <code>{}</code></p>\n", Esc(run->restart_range->str()));
  }
  return h;
}

// Phase times as bars beside the ingestion runs' figures.
std::string VerifyHtmlPhasesAndRuns(const VerifyReport& r) {
  std::string h = "<div class=\"cols\">\n<div>\n<h2>Phases</h2>\n";
  if (r.phases.empty()) {
    h += "<p class=\"muted\">No phase finished.</p>\n";
  } else {
    double longest = 0;
    for (const auto& p : r.phases) longest = std::max(longest, p.seconds);
    h += "<table class=\"phases\">\n";
    for (const auto& p : r.phases) {
      double pct = longest > 0 ? 100.0 * p.seconds / longest : 0;
      h += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td style=\"width:55%\"><div class=\"phase\">"
                       "<div class=\"bar\" style=\"width:{:.1f}%\"></div></div></td></tr>\n",
                       Esc(p.name), Esc(FormatDuration(p.seconds)), pct);
    }
    if (r.speedup > 0)
      h += fmt::format("<tr><td><b>parallel speed-up</b></td><td class=\"n\"><b>{:.2f}x</b></td><td></td></tr>\n",
                       r.speedup);
    h += "</table>\n";
  }
  h += "</div>\n<div>\n<h2>Ingestion runs</h2>\n" + RunStatsTable(r) + "</div>\n</div>\n";
  return h;
}

// The per-table comparison: rows on each side, their difference, divergent ledgers, status.
std::string VerifyHtmlTables(const VerifyReport& r, const VerifyView& view) {
  std::string h = "<h2>Tables</h2>\n";
  if (view.tables.empty()) return h + "<p class=\"muted\">No table was compared.</p>\n";
  h += fmt::format("<div class=\"wide\"><table class=\"tables\"><tr><th>table</th><th class=\"n\">{} rows</th>"
                   "<th class=\"n\">{} rows</th><th class=\"n\">&#916; rows</th><th class=\"n\">divergent ledgers</th><th>first divergent"
                   "</th><th>status</th></tr>\n",
                   view.sides.left, view.sides.right);
  for (const auto& t : view.tables) {
    std::string delta = "\xe2\x80\x94";
    if (t.left_rows >= 0 && t.right_rows >= 0) {
      int64_t d = t.right_rows - t.left_rows;
      delta = d == 0 ? "0" : fmt::format("{}{}", d > 0 ? "+" : "\xe2\x88\x92", FormatCount(static_cast<uint64_t>(std::llabs(d))));
    }
    std::string status = TableStatus(t);
    h += fmt::format("<tr class=\"{}\"><td><code class=\"name\">{}</code></td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"mono\">{}</td>"
                     "<td><span class=\"pill {}\">{}</span></td></tr>\n",
                     t.differs ? "bad" : "ok", Esc(t.table), CountOrDash(t.left_rows), CountOrDash(t.right_rows),
                     delta, t.compared ? FormatCount(t.divergent_ledgers) : "\xe2\x80\x94",
                     t.first ? std::to_string(*t.first) : "", status == "not compared" ? "none" : status, status);
  }
  h += "</table></div>\n";
  if (!r.diff.excluded_columns.empty())
    h += fmt::format("<p class=\"muted\">Columns left out of the comparison by the table profile: {}</p>\n",
                     Esc(fmt::format("{}", fmt::join(r.diff.excluded_columns, ", "))));
  return h;
}

// A divergent report: schema differences, the first divergent ledger and who wrote it, the
// divergent ledgers per table and each table's row diff.
std::string VerifyHtmlDivergence(const VerifyReport& r, const VerifyView& view) {
  const Sides& sides = view.sides;
  std::string h = "<h2>Divergence</h2>\n";
  for (const auto& d : r.diff.schema_differences) h += "<p class=\"note\">schema difference: " + Esc(d) + "</p>\n";
  if (r.diff.first_divergent_ledger) {
    h += fmt::format("<p>First divergent ledger <b>{}</b>: {} of {} ledgers compared differ.</p>\n",
                     *r.diff.first_divergent_ledger, FormatCount(r.diff.divergent_ledgers),
                     FormatCount(r.diff.ledgers_compared));
    if (r.first_divergent_job)
      h += "<p class=\"note\">" + Esc(DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job)) +
           "</p>\n";
    if (!r.diff.left.empty() || !r.diff.right.empty())
      h += fmt::format("<p class=\"muted\">{}: {}<br/>{}: {}</p>\n", sides.left, Esc(r.diff.left), sides.right,
                       Esc(r.diff.right));
  }
  bool any_intervals = false;
  for (const auto& t : view.tables) any_intervals |= !t.divergent.empty();
  if (any_intervals) {
    h += "<div class=\"wide\"><table><tr><th>table</th><th>divergent ledgers</th></tr>\n";
    for (const auto& t : view.tables)
      if (!t.divergent.empty())
        h += fmt::format("<tr><td><code class=\"name\">{}</code></td><td class=\"mono\">{}</td></tr>\n", Esc(t.table),
                         Esc(Intervals(t.divergent, 40)));
    h += "</table></div>\n";
  }
  for (const auto& rd : r.diff.rows) h += RowDiffHtml(r, rd, sides);
  return h;
}

// The diff's notes, the soundness findings and the look-again command.
std::string VerifyHtmlFindings(const VerifyReport& r, const VerifyView& view,
                               std::string_view look_again_lead = "The schemas were kept; this compares them again:") {
  std::string h;
  for (const auto& n : r.diff.notes) h += "<p class=\"note\">" + Esc(n) + "</p>\n";
  if (const auto lists = FindingLists(view.soundness); !lists.empty()) {
    h += "<h2 id=\"soundness\">Soundness</h2>\n";
    for (const auto& list : lists) {
      h += fmt::format("<p{}>{}:</p>\n<ul>\n", list.failing ? "" : " class=\"muted\"", list.title);
      for (const auto& line : list.lines) h += (list.failing ? "<li class=\"bad\">" : "<li>") + Esc(line) + "</li>\n";
      h += "</ul>\n";
    }
  }
  if (!r.look_again.empty()) {
    h += "<h2>Look again</h2>\n<p class=\"muted\">" + Esc(look_again_lead) + "</p>\n";
    h += "<pre class=\"look-again\">" + Esc(r.look_again) + "</pre>\n";
    if (!r.remove_command.empty())
      h += "<p class=\"muted\">Remove the kept cluster when done:</p>\n<pre>" + Esc(r.remove_command) + "</pre>\n";
  }
  return h;
}

// The parallel run's timeline (legend, chart, lane key) and throughput, then the serial run's
// timeline folded away.
std::string VerifyHtmlCharts(const VerifyReport& r) {
  std::string h = "<h2>Parallel run timeline</h2>\n";
  if (r.parallel.timeline.empty()) {
    h += "<p class=\"muted\">No job attempts were recorded for the parallel run.</p>\n";
  } else {
    const size_t lanes = TimelineLanes(r.parallel).size();
    h += Legend(r.parallel);
    h += "<figure>\n" + TimelineSvg(r.parallel);
    h += fmt::format("<figcaption>{} on {} over {}; {}, {}. Hover a bar for its job, ledger range, attempt, "
                     "duration and outcome, a lane label for its worker; the table below maps lanes to workers.{}"
                     "</figcaption>\n</figure>\n",
                     Plural(r.parallel.timeline.size(), "attempt", "attempts"),
                     Plural(lanes, "worker lane", "worker lanes"), Esc(FormatDuration(TimeSpan(r.parallel))),
                     Plural(r.parallel.retried_jobs, "job retried", "jobs retried"),
                     Plural(r.parallel.workers_replaced, "worker replaced", "workers replaced"),
                     r.parallel.timeline.size() > kDetailedAttempts
                         ? " Done attempts closer than a pixel are drawn as one bar."
                         : "");
    h += LaneKey(r.parallel);
    h += "<h2>Throughput</h2>\n<figure>\n" + ThroughputSvg(r.parallel, r.serial);
    h += "<figcaption>Ledgers per second of the parallel run: the ledgers of each done attempt, spread over its "
         "duration, per time bucket.</figcaption>\n</figure>\n";
  }
  if (r.serial && !r.serial->timeline.empty()) {
    h += "<details><summary>Serial run timeline</summary>\n" + Legend(*r.serial) + "<figure>\n" +
         TimelineSvg(*r.serial) + "</figure>\n" + LaneKey(*r.serial) + "</details>\n";
  }
  return h;
}

// verify-range's banner: the verdict word, the headline finding (RangeHeadline) with the tables
// at the first divergent ledger and the counts, the coverage, and how many findings of what was
// not compared the Soundness section lists.
std::string RangeHtmlBanner(const verify::VerifyRangeReport& r, const VerifyView& view) {
  const diff::DiffReport& d = r.diff;
  std::string what = "<span class=\"headline\">" + Esc(RangeHeadline(r)) + "</span>";
  std::vector<std::string> names;
  for (const auto& t : d.divergent_tables) names.push_back("<code class=\"name\">" + Esc(t.table) + "</code>");
  if (!names.empty()) what += fmt::format(" in {}", fmt::join(names, ", "));
  what += fmt::format("<br/>{} of {} ledgers compared differ; {} {} rows and {} {} rows compared in {}.",
                      FormatCount(d.divergent_ledgers), FormatCount(d.ledgers_compared),
                      FormatCount(d.rows_compared_left), view.sides.left, FormatCount(d.rows_compared_right),
                      view.sides.right,
                      Plural(view.tables.size(), "table", "tables"));
  what += "<br/>" + Esc(fmt::format("{}.", fmt::join(CoverageLines(d, view.sides), "; ")));
  if (const size_t n = view.soundness.warnings.size(); n > 0)
    what += fmt::format(" Not compared: {}, under <a href=\"#soundness\">Soundness</a>.",
                        Plural(n, "finding", "findings"));
  return HtmlBanner(diff::VerdictName(r.verdict()), what);
}

// verify-range's facts: target, range, the two sides, what was compared, the times.
std::string RangeHtmlFacts(const verify::VerifyRangeReport& r) {
  const diff::DiffReport& d = r.diff;
  std::string h = "<dl class=\"facts\">\n";
  auto fact = [&](const std::string& k, const std::string& v_html, const char* cls = "") {
    h += fmt::format("<div{}><dt>{}</dt><dd>{}</dd></div>\n", *cls ? fmt::format(" class=\"{}\"", cls) : "", k, v_html);
  };
  // The long ones (conninfos, schemas) get a row, or half of one, to themselves.
  if (d.targets) fact("target", Esc(d.targets->Describe()), "row");
  fact("left", Esc(d.left), "half");
  fact("right", Esc(d.right), "half");
  fact("range", fmt::format("{} <span class=\"muted\">({} ledgers)</span>", Esc(d.range.str()),
                            FormatCount(d.range.size())));
  fact("ledgers compared", FormatCount(d.ledgers_compared));
  if (d.first_divergent_ledger) fact("first divergent ledger", std::to_string(*d.first_divergent_ledger));
  if (!d.profile.empty()) fact("table profile", Esc(d.profile));
  fact("digest and row diff", Esc(FormatDuration(d.digest_seconds + d.row_diff_seconds)));
  if (r.shard) fact("shard", Esc(fmt::format("{} of {}", r.shard->index, r.shard->count)));
  if (r.ledgers_resumed) fact("resumed from the checkpoint", Plural(r.ledgers_resumed, "ledger", "ledgers"));
  h += "</dl>\n";
  return h;
}

// Coverage: what each side holds of the range and what it lacks.
std::string RangeHtmlCoverage(const diff::DiffReport& d, const Sides& sides) {
  std::string h = "<h2>Coverage</h2>\n";
  if (!d.coverage.checked) return h + "<p class=\"note\">" + Esc(CoverageLines(d, sides).front()) + "</p>\n";
  h += "<div class=\"wide\"><table class=\"coverage\"><tr><th>side</th><th>holds</th><th>missing</th></tr>\n";
  for (const auto& [name, c] : {std::pair{&sides.left, &d.coverage.left}, std::pair{&sides.right, &d.coverage.right}}) {
    const std::string missing = CoverageMissing(*c);
    h += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td></tr>\n", missing.empty() ? "" : " class=\"bad\"", *name,
                     Esc(CoverageHeld(*c)), missing.empty() ? "none" : Esc(missing));
  }
  h += "</table></div>\n";
  return h;
}

// The state comparison: its verdict line, then a row per differing column (or the row of the
// side that has the key), as the row diff shows changed rows.
std::string RangeHtmlState(const verify::StateComparison& st) {
  const std::string text = RenderStateText(st);
  std::string h = "<h2>State</h2>\n<p class=\"state\">" + Esc(text.substr(0, text.find('\n'))) + "</p>\n";
  for (const auto& n : st.notes) h += "<p class=\"note\">" + Esc(n) + "</p>\n";
  if (st.differences.empty()) return h;
  h += "<div class=\"scroll\"><table class=\"rows changed\"><tr><th>table</th><th>key</th><th>difference</th>"
       "<th>column</th><th>left \xe2\x86\x92 right</th></tr>\n";
  for (const auto& d : st.differences) {
    std::string key;
    for (size_t i = 0; i < d.key_columns.size() && i < d.key.size(); ++i)
      key += (i ? ", " : "") + Esc(d.key_columns[i]) + "=" + HtmlValue(d.key[i]);
    std::vector<std::pair<std::string, std::string>> cells;  // column, markup
    for (size_t i = 0; i < d.columns.size(); ++i) {
      const bool l = d.left && i < d.left->size(), r = d.right && i < d.right->size();
      if (l && r && (*d.left)[i] == (*d.right)[i]) continue;
      const std::string dash = "\xe2\x80\x94";
      cells.emplace_back(d.columns[i], (l ? "<del>" + HtmlValue((*d.left)[i]) + "</del>" : dash) + " \xe2\x86\x92 " +
                                           (r ? "<ins>" + HtmlValue((*d.right)[i]) + "</ins>" : dash));
    }
    if (cells.empty()) cells.emplace_back("", "");
    for (size_t i = 0; i < cells.size(); ++i) {
      h += "<tr>";
      if (i == 0)
        h += fmt::format("<td rowspan=\"{}\"><code class=\"name\">{}</code></td><td rowspan=\"{}\">{}</td>"
                         "<td rowspan=\"{}\">{}</td>",
                         cells.size(), Esc(d.table), cells.size(), key, cells.size(), verify::ToString(d.kind));
      h += "<td>" + Esc(cells[i].first) + "</td><td>" + cells[i].second + "</td></tr>\n";
    }
  }
  h += "</table></div>\n";
  if (st.differing_rows > st.differences.size())
    h += fmt::format("<p class=\"muted\">\xe2\x80\xa6 {} more differing keys</p>\n",
                     FormatCount(st.differing_rows - st.differences.size()));
  return h;
}

}  // namespace

std::string RenderVerifyHtml(const VerifyReport& r) {
  const VerifyView view = ViewOf(r);
  const verify::VerifyVerdict verdict = r.verdict();
  const std::string title = fmt::format("ledgerdiff verify {}: {}", r.range.str(), ToString(verdict));
  std::string body = fmt::format("<div class=\"brand\"><b>ledgerdiff</b><span>verify &#183; serial vs parallel ingestion "
                                 "&#183; run <code>{}</code></span></div>\n",
                                 Esc(r.run_id));
  body += VerifyHtmlBanner(r, view);
  body += VerifyHtmlFacts(r);
  body += VerifyHtmlError(r);
  body += VerifyHtmlPhasesAndRuns(r);
  body += VerifyHtmlTables(r, view);
  if (verdict == verify::VerifyVerdict::kDivergent) body += VerifyHtmlDivergence(r, view);
  body += VerifyHtmlFindings(r, view);
  body += VerifyHtmlCharts(r);
  body += fmt::format("<footer>ledgerdiff verify &#183; run <code>{}</code> &#183; {} &#183; exit code {}</footer>\n",
                      Esc(r.run_id), Esc(title), verify::ExitCodeOf(verdict));
  return HtmlPage(title, body);
}

std::string RenderVerifyRangeHtml(const verify::VerifyRangeReport& range) {
  const VerifyReport r = RangeShell(range);
  const VerifyView view = RangeViewOf(r);
  const std::string_view verdict = diff::VerdictName(range.verdict());
  const std::string title = fmt::format("ledgerdiff verify-range {}: {}", r.range.str(), RangeHeadline(range));
  std::string body =
      "<div class=\"brand\"><b>ledgerdiff</b><span>verify-range &#183; the cut-over check &#183; left vs right "
      "database</span></div>\n";
  body += RangeHtmlBanner(range, view);
  body += RangeHtmlFacts(range);
  body += VerifyHtmlTables(r, view);
  if (r.diff.verdict == diff::Verdict::kDivergent) body += VerifyHtmlDivergence(r, view);
  body += RangeHtmlCoverage(r.diff, view.sides);
  if (range.state) body += RangeHtmlState(*range.state);
  body += VerifyHtmlFindings(r, view, "This compares the first divergent (or missing) ledger again, every row shown:");
  body += fmt::format("<footer>ledgerdiff verify-range &#183; {} &#183; exit code {}</footer>\n", Esc(title),
                      verdict == "identical" ? 0 : 1);
  return HtmlPage(title, body);
}

Status WriteHtmlReport(const std::string& html, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Usagef("create report directory {}: {}", dir, ec.message());
  if (!fs::is_directory(dir, ec)) return Status::Usagef("report directory {} is not a directory", dir);
  return WriteFileAtomic((fs::path(dir) / "index.html").string(), html);
}

Status WriteVerifyHtml(const VerifyReport& report, const std::string& dir) {
  return WriteHtmlReport(RenderVerifyHtml(report), dir);
}

}  // namespace ledgerdiff::report
