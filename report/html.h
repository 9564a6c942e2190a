#pragma once
// The HTML report of a verify run (`verify --report DIR`): one self-contained page (inline CSS
// and SVG; no script, no external resource) with the verdict banner, run facts, phase times,
// the ingestion runs side by side, the per-table comparison, the divergence with its row diff,
// the look-again command, and the parallel run's timeline and throughput charts (svg_chart.h).
//
// INVARIANT: RenderVerifyHtml is a pure function of the report (same report, same bytes); every
// data string is escaped, so the markup is well-formed (XHTML-compatible apart from the doctype).

#include <string>
#include <string_view>

#include "core/status.h"
#include "verify/verify.h"

namespace ledgerdiff::report {

std::string RenderVerifyHtml(const verify::VerifyReport& report);
// A one-shot verify-range (`verify-range --report DIR`, the cut-over page) as verify's page shows
// a comparison (issue 46), with the same pieces: the banner with the headline finding
// (RangeHeadline, the tables at the first divergent ledger, the counts, the coverage), the facts,
// the per-table table, the divergence with each table's per-column row diff, the coverage, the
// state comparison when there was one, the soundness findings and the look-again command.
std::string RenderVerifyRangeHtml(const verify::VerifyRangeReport& report);
// The page shell of every HTML report of report/ (verify, the gates of gate.h, sweep): doctype,
// head (charset, viewport, the escaped `title`, the one stylesheet inline), then `body` (markup,
// inserted as is) inside <body><main>. The stylesheet holds every class any of those pages uses.
std::string HtmlPage(std::string_view title, std::string_view body);

// Writes `html` to DIR/index.html, creating DIR (and its parents) if needed. The page is
// written to a temporary file in DIR and renamed: DIR/index.html is never half-written.
// Errors: Runtime, naming the path, when DIR cannot be created or is not a directory, or the
// file cannot be written.
Status WriteHtmlReport(const std::string& html, const std::string& dir);
// WriteHtmlReport of RenderVerifyHtml.
Status WriteVerifyHtml(const verify::VerifyReport& report, const std::string& dir);

}  // namespace ledgerdiff::report
