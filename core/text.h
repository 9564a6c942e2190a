#pragma once
// Text forms every room shares: ledger intervals for people and shell words for commands that
// a person (or /bin/sh) runs again.

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

enum class ShellQuoting {
  kAlways,     // every value quoted, even "2" -> '2' (placeholders of an --ingest-cmd template)
  kWhenNeeded  // plain words ([A-Za-z0-9_./:=-]+) stay bare (commands printed for people)
};
// One word for /bin/sh: 'it'\''s' for it's. INVARIANT: sh -c "echo " + ShellQuote(s) prints s.
std::string ShellQuote(std::string_view word, ShellQuoting quoting = ShellQuoting::kAlways);

}  // namespace ledgerdiff
