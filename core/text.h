#pragma once
// Text forms every room shares: ledger intervals for people and shell words for commands that
// a person (or /bin/sh) runs again.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"

namespace ledgerdiff {

// Intervals for people: {[12,15], [40,40]} -> "12-15, 40". The order is kept as given.
std::string FormatIntervals(const std::vector<LedgerRange>& intervals);

// `value` between `quote` characters, each `quote` inside doubled: SQL identifiers ("), SQL
// standard-conforming literals (') and CSV fields (") all escape this one way.
std::string QuoteByDoubling(std::string_view value, char quote);

// One character and what it becomes in an escaped text.
struct CharEscape {
  char from;
  std::string_view to;
};
// Appends `text` to `out` with every character that has an entry in `escapes` replaced by its
// `to`; every other character is copied as it is. The one escaping loop of the tool: PostgreSQL
// COPY text (pg::AppendCopyEscaped) and XML (XmlEscape) are each a table for it.
// REQUIRES: no two entries share `from`.
void AppendEscaped(std::string& out, std::string_view text, std::span<const CharEscape> escapes);

enum class ShellQuoting {
  kAlways,     // every value quoted, even "2" -> '2' (placeholders of an --ingest-cmd template)
  kWhenNeeded  // plain words ([A-Za-z0-9_./:=-]+) stay bare (commands printed for people)
};
// One word for /bin/sh: 'it'\''s' for it's. INVARIANT: sh -c "echo " + ShellQuote(s) prints s.
std::string ShellQuote(std::string_view word, ShellQuoting quoting = ShellQuoting::kAlways);

}  // namespace ledgerdiff
