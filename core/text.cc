#include "core/text.h"

#include <fmt/format.h>

namespace ledgerdiff {

std::string FormatIntervals(const std::vector<LedgerRange>& intervals) {
  std::string s;
  for (const auto& r : intervals) {
    if (!s.empty()) s += ", ";
    s += r.from == r.to ? fmt::format("{}", r.from) : fmt::format("{}-{}", r.from, r.to);
  }
  return s;
}

std::string FormatIntervals(const std::vector<LedgerRange>& intervals, uint64_t total) {
  std::string s = FormatIntervals(intervals);
  if (total > intervals.size()) s += fmt::format(" and {} more ranges", total - intervals.size());
  return s;
}

std::string UpperAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

void AppendEscaped(std::string& out, std::string_view text, const EscapeTable& table) {
  size_t plain_from = 0;  // start of the run of characters not yet appended, none escaped
  for (size_t i = 0; i < text.size(); ++i) {
    const std::string_view to = table[text[i]];
    if (to.empty()) continue;
    out.append(text.substr(plain_from, i - plain_from));
    out.append(to);
    plain_from = i + 1;
  }
  out.append(text.substr(plain_from));
}

std::string Escaped(std::string_view text, const EscapeTable& table) {
  std::string out;
  AppendEscaped(out, text, table);
  return out;
}

std::string ShellQuote(std::string_view word, ShellQuoting quoting) {
  constexpr std::string_view kPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=";
  if (quoting == ShellQuoting::kWhenNeeded && !word.empty() && word.find_first_not_of(kPlain) == std::string_view::npos)
    return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string QuoteByDoubling(std::string_view value, char quote) {
  std::string out(1, quote);
  for (char c : value) {
    if (c == quote) out += quote;
    out += c;
  }
  out += quote;
  return out;
}

}  // namespace ledgerdiff
