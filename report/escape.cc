// Text hygiene shared by every renderer (contracts in escape.h).
#include "report/escape.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/report.h"
#include "core/text.h"

namespace ledgerdiff::report {

// Replaces invalid UTF-8 with U+FFFD and C0 control characters (except \t \n \r) with "\xNN",
// so the result is valid XML 1.0 character data once escaped.
std::string Clean(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

// Element content (XML and HTML).
std::string Esc(std::string_view s) { return XmlEscape(Clean(s)); }

// Attribute values: also keeps line breaks and tabs (attribute normalization would eat them).
std::string Attr(std::string_view s) {
  std::string out;
  for (char c : Esc(s)) {
    if (c == '\n') out += "&#10;";
    else if (c == '\r') out += "&#13;";
    else if (c == '\t') out += "&#9;";
    else out += c;
  }
  return out;
}

// Cuts a long value at a character boundary: "abc… (12,345 bytes)".
std::string Truncate(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return s.substr(0, cut) + fmt::format("\xe2\x80\xa6 ({} bytes)", FormatCount(s.size()));
}

// A SQL value as the text renderers show it: NULL, or quoted with \n and \t visible.
std::string ShowSql(const std::optional<std::string>& v, size_t max_bytes) {
  if (!v) return "NULL";
  std::string out = "'";
  for (char c : Truncate(*v, max_bytes)) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\'') out += "''";
    else out += c;
  }
  return out + "'";
}

std::string Plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", FormatCount(n), n == 1 ? one : many);
}

std::string Intervals(const std::vector<LedgerRange>& iv, size_t max_items) {
  if (iv.size() <= max_items) return FormatIntervals(iv);
  const std::vector<LedgerRange> shown(iv.begin(), iv.begin() + static_cast<std::ptrdiff_t>(max_items));
  return FormatIntervals(shown, iv.size());
}

// Inline code span that survives any content: backtick fence longer than any run inside, and
// `|` escaped for table cells. Newlines become spaces.
std::string MdCode(std::string_view s, bool in_table) {
  std::string v = Clean(s);
  for (auto& c : v)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (in_table) {
    std::string t;
    for (char c : v) {
      if (c == '|') t += "\\|";
      else t += c;
    }
    v = t;
  }
  size_t run = 0, longest = 0;
  for (char c : v) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(longest + 1, '`');
  bool pad = v.empty() || v.front() == '`' || v.back() == '`' || v.front() == ' ';
  return fence + (pad ? " " : "") + v + (pad ? " " : "") + fence;
}

// Plain text in Markdown: escapes what could turn into markup or HTML.
std::string MdText(std::string_view s) {
  std::string out;
  for (char c : Clean(s)) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n': out += ' '; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '#':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

// A fenced code block whose fence cannot be closed by its content.
std::string MdBlock(const std::string& lang, const std::string& body) {
  std::string b = Clean(body);
  size_t run = 0, longest = 0;
  for (char c : b) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(std::max<size_t>(3, longest + 1), '`');
  if (!b.empty() && b.back() != '\n') b += '\n';
  return fence + lang + "\n" + b + fence + "\n";
}

}  // namespace ledgerdiff::report
