#pragma once
// Markdown of a verify report, for pull-request comments and CI step summaries
// (`verify --markdown FILE`).
//
// Verdict heading, run facts, phase times, one table row per compared table, and on a
// divergence the first divergent ledger with a collapsible row diff per table, the failed jobs
// of an errored run and the look-again command.
// INVARIANT: a pure function of the report; data is put in code spans or fences that no content
// can close, and plain text is escaped, so data never turns into markup.

#include <string>

#include "verify/verify.h"

namespace ledgerdiff::report {

std::string RenderVerifyMarkdown(const verify::VerifyReport& report);

}  // namespace ledgerdiff::report
