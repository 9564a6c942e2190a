#pragma once
// Markdown: the pieces every Markdown report of report/ is built of (MdTable, MdDetails; the
// escapers are in escape.h), and a verify report as Markdown, for pull-request comments and CI
// step summaries (`verify --markdown FILE`).
//
// RenderVerifyMarkdown: verdict heading, run facts, phase times, one table row per compared
// table, and on a divergence the first divergent ledger with a collapsible row diff per table,
// the failed jobs of an errored run and the look-again command.
// INVARIANT: pure functions; data is put in code spans or fences that no content can close, and
// plain text is escaped, so data never turns into markup.

#include <string>
#include <string_view>
#include <vector>

#include "verify/verify.h"

namespace ledgerdiff::report {

// A table: the header row, the alignment row (`align` has a character per column: 'r' right,
// anything else left), a line per row, then a blank line. Cells are Markdown, inserted as is:
// the caller escapes data (MdCode(s, true), MdText).
std::string MdTable(const std::vector<std::string>& header, std::string_view align,
                    const std::vector<std::vector<std::string>>& rows);

// A collapsible section: `summary` is text (escaped here: the <summary> is raw HTML to
// Markdown), `body` is Markdown inserted as is; then a blank line.
std::string MdDetails(std::string_view summary, std::string_view body);

std::string RenderVerifyMarkdown(const verify::VerifyReport& report);
// A one-shot verify-range (`verify-range --markdown FILE`) with verify's pieces (issue 46): the
// verdict heading, the headline finding in bold (RangeHeadline), the counts, facts and coverage, one table row
// per table, on a divergence the collapsible row diff per table, the state comparison when there
// was one, the soundness findings and the look-again command.
std::string RenderVerifyRangeMarkdown(const verify::VerifyRangeReport& report);

}  // namespace ledgerdiff::report
