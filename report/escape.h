#pragma once
// Text hygiene shared by every renderer of report/: making data safe for XML, HTML and text.
//
// Every string that comes from data (table and column names, row values, errors, schema names)
// goes through one of these before it reaches a report. All are pure functions.
//
// One escaper per language, and every renderer of report/ uses it:
// - XML and HTML (JUnit, the HTML pages, SVG): Esc for element content, Attr for attribute
//   values. Never core's plain XmlEscape: it keeps control characters and invalid UTF-8, which
//   make the document ill-formed; Esc cleans them first.
// - Markdown: MdCode (code spans), MdText (plain text), MdBlock (fenced blocks); inside the raw
//   HTML Markdown passes through (a <details> summary), Esc.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger_range.h"

namespace ledgerdiff::report {

// Replaces invalid UTF-8 with U+FFFD and C0 control characters (except \t \n \r) and DEL with
// "\xNN". INVARIANT: the result is valid UTF-8 and valid XML 1.0 character data once escaped.
std::string Clean(std::string_view s);

// Element content (XML and HTML): Clean, then XmlEscape.
std::string Esc(std::string_view s);

// Attribute values: Esc, and line breaks and tabs as character references (attribute
// normalization would eat them).
std::string Attr(std::string_view s);

// Cuts a value longer than `max_bytes` at a UTF-8 character boundary: "abc… (12,345 bytes)".
std::string Truncate(const std::string& s, size_t max_bytes);

// A SQL value as the text renderers show it: NULL, or single-quoted ('' inside) with \n, \t, \r
// visible, truncated to `max_bytes`.
std::string ShowSql(const std::optional<std::string>& v, size_t max_bytes);

// "1 row", "12,044 rows".
std::string Plural(uint64_t n, std::string_view one, std::string_view many);

// Ledger intervals as "2, 7-9, 12"; beyond `max_items`: " and N more ranges" (core/text.h).
std::string Intervals(const std::vector<LedgerRange>& intervals,
                      size_t max_items = std::numeric_limits<size_t>::max());

// Markdown: an inline code span no content can close (`|` escaped in table cells, newlines
// become spaces); plain text with markup characters escaped; a fenced block no content closes.
std::string MdCode(std::string_view s, bool in_table = false);
std::string MdText(std::string_view s);
std::string MdBlock(const std::string& lang, const std::string& body);

}  // namespace ledgerdiff::report
