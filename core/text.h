#pragma once
// Text forms every room shares: ledger intervals for people and shell words for commands that
// a person (or /bin/sh) runs again.

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"

namespace ledgerdiff {

// Intervals for people: {[12,15], [40,40]} -> "12-15, 40". The order is kept as given.
std::string FormatIntervals(const std::vector<LedgerRange>& intervals);
// The same, for the first intervals of `total` (a capped list): "12-15, 40 and 3 more ranges".
std::string FormatIntervals(const std::vector<LedgerRange>& intervals, uint64_t total);
// "DIVERGENT" for "divergent": ASCII letters upper-cased, the rest kept.
std::string UpperAscii(std::string_view text);

// `value` between `quote` characters, each `quote` inside doubled: SQL identifiers ("), SQL
// standard-conforming literals (') and CSV fields (") all escape this one way.
std::string QuoteByDoubling(std::string_view value, char quote);

// One character and what it becomes in an escaped text.
struct CharEscape {
  char from;
  std::string_view to;
};
// What each character becomes in an escaped text, looked up in one step; a character without an
// entry stays as it is. REQUIRES: every `to` is non-empty; no two entries share `from`.
class EscapeTable {
 public:
  constexpr EscapeTable(std::initializer_list<CharEscape> escapes) {
    for (const CharEscape& e : escapes) to_[static_cast<unsigned char>(e.from)] = e.to;
  }
  // "" when `c` stays as it is.
  constexpr std::string_view operator[](char c) const { return to_[static_cast<unsigned char>(c)]; }

 private:
  std::array<std::string_view, 256> to_{};
};
// Appends `text` to `out` with every character that has an entry in `table` replaced. The one
// escaping loop of the tool: PostgreSQL COPY text (pg::AppendCopyEscaped), XML (XmlEscape) and
// the conninfo forms of a secret (core/redact.h) are each a table for it.
void AppendEscaped(std::string& out, std::string_view text, const EscapeTable& table);
// `text` with every character that has an entry in `table` replaced (AppendEscaped).
std::string Escaped(std::string_view text, const EscapeTable& table);

enum class ShellQuoting {
  kAlways,     // every value quoted, even "2" -> '2' (placeholders of an --ingest-cmd template)
  kWhenNeeded  // plain words ([A-Za-z0-9_./:=-]+) stay bare (commands printed for people)
};
// One word for /bin/sh: 'it'\''s' for it's. INVARIANT: sh -c "echo " + ShellQuote(s) prints s.
std::string ShellQuote(std::string_view word, ShellQuoting quoting = ShellQuoting::kAlways);

}  // namespace ledgerdiff
