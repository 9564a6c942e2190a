// JUnit, Markdown and HTML renderings of a verify report (text and JSON: render.cc).
//
// All three are pure functions of the report: no clock, no environment, no randomness, so the
// same report renders to the same bytes. Every string that comes from data (table and column
// names, row values, errors, schema names) is escaped for the target format; control
// characters and invalid UTF-8 are made visible rather than passed through.
//
// Vocabulary follows render.cc / diff.cc: the left side is "serial" (or "baseline" when a
// manifest stood in for it), the right side is "parallel"; "first divergent ledger",
// "divergent tables", "only serial / only parallel / changed" rows, "look again".

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "verify/verify.h"

namespace ledgerdiff::verify {

namespace {

// ---------------------------------------------------------------------------------------------
// Text hygiene shared by all formats.

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
  std::string out;
  for (size_t i = 0; i < iv.size() && i < max_items; ++i) {
    if (i) out += ", ";
    out += iv[i].from == iv[i].to ? fmt::format("{}", iv[i].from) : fmt::format("{}-{}", iv[i].from, iv[i].to);
  }
  if (iv.size() > max_items) out += fmt::format(", \xe2\x80\xa6 {} more intervals", FormatCount(iv.size() - max_items));
  return out;
}

// ---------------------------------------------------------------------------------------------
// The per-table view every format shows.

struct Sides {
  std::string left;   // "serial" or "baseline"
  std::string right;  // "parallel"
};

Sides SideNames(const VerifyReport& r) { return {r.baseline.empty() ? "serial" : "baseline", "parallel"}; }

struct TableLine {
  std::string table;
  int64_t left_rows = -1, right_rows = -1;  // -1: not known on that side
  uint64_t divergent_ledgers = 0;
  std::vector<LedgerRange> divergent;
  std::optional<Ledger> first;               // first divergent ledger of this table
  const diff::TableAtLedger* at_first = nullptr;  // rows at the report's first divergent ledger
  const diff::TableRowDiff* row_diff = nullptr;
  bool compared = true;
  bool differs = false;
};

std::vector<TableLine> TableLines(const VerifyReport& r) {
  const diff::DiffReport& d = r.diff;
  std::vector<TableLine> out;
  auto at_first = [&](const std::string& t) -> const diff::TableAtLedger* {
    for (const auto& x : d.divergent_tables)
      if (x.table == t) return &x;
    return nullptr;
  };
  auto row_diff = [&](const std::string& t) -> const diff::TableRowDiff* {
    for (const auto& x : d.rows)
      if (x.table == t) return &x;
    return nullptr;
  };
  if (!d.tables.empty()) {
    for (const auto& t : d.tables) {
      TableLine line;
      line.table = t.table;
      line.left_rows = static_cast<int64_t>(t.left_rows);
      line.right_rows = static_cast<int64_t>(t.right_rows);
      line.divergent_ledgers = t.divergent_ledgers;
      line.divergent = t.divergent;
      line.at_first = at_first(t.table);
      line.row_diff = row_diff(t.table);
      if (!t.divergent.empty()) line.first = t.divergent.front().from;
      else if (line.at_first) line.first = d.first_divergent_ledger;
      bool roots_differ = !t.left_root.empty() && !t.right_root.empty() && t.left_root != t.right_root;
      line.differs = !d.identical && (t.divergent_ledgers > 0 || line.at_first != nullptr || roots_differ ||
                                      t.left_rows != t.right_rows);
      out.push_back(std::move(line));
    }
    // A divergent table the comparison list does not name (defensive; should not happen).
    for (const auto& x : d.divergent_tables) {
      if (std::any_of(out.begin(), out.end(), [&](const TableLine& l) { return l.table == x.table; })) continue;
      TableLine line;
      line.table = x.table;
      line.at_first = &x;
      line.row_diff = row_diff(x.table);
      line.first = d.first_divergent_ledger;
      line.divergent_ledgers = 1;
      line.differs = true;
      out.push_back(std::move(line));
    }
    return out;
  }
  // Nothing compared (an ingestion failed): show what each side wrote.
  std::set<std::string> names;
  if (r.serial)
    for (const auto& [t, n] : r.serial->rows_per_table) names.insert(t);
  for (const auto& [t, n] : r.parallel.rows_per_table) names.insert(t);
  for (const auto& t : names) {
    TableLine line;
    line.table = t;
    line.compared = false;
    if (r.serial) {
      auto it = r.serial->rows_per_table.find(t);
      if (it != r.serial->rows_per_table.end()) line.left_rows = static_cast<int64_t>(it->second);
    }
    auto it = r.parallel.rows_per_table.find(t);
    if (it != r.parallel.rows_per_table.end()) line.right_rows = static_cast<int64_t>(it->second);
    out.push_back(std::move(line));
  }
  return out;
}

std::string TableStatus(const TableLine& t) {
  if (!t.compared) return "not compared";
  return t.differs ? "divergent" : "identical";
}

std::string CountOrDash(int64_t n) { return n >= 0 ? FormatCount(static_cast<uint64_t>(n)) : "\xe2\x80\x94"; }

double TotalSeconds(const VerifyReport& r) {
  double total = 0;
  for (const auto& p : r.phases) total += p.seconds;
  return total;
}

// Row diff of one table as plain text lines ("- only serial: ...", "+ only parallel: ...",
// "~ changed (key): col: old -> new"), at most `max_lines` row lines plus a summary line.
std::vector<std::string> RowDiffLines(const diff::TableRowDiff& rd, const Sides& sides, size_t max_lines,
                                      size_t max_value_bytes) {
  std::vector<std::string> lines;
  auto row_text = [&](const diff::RowValues& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < rd.columns.size(); ++i) {
      if (i) s += ", ";
      s += rd.columns[i] + "=" + ShowSql(v[i], max_value_bytes);
    }
    return s;
  };
  if (!rd.left_available || !rd.right_available)
    lines.push_back(fmt::format("(rows of the {} side are not available: it is a manifest)",
                                !rd.left_available ? sides.left : sides.right));
  uint64_t shown = 0;
  uint64_t total = rd.only_left_total + rd.only_right_total + rd.changed_total;
  for (const auto& v : rd.only_left) {
    if (shown >= max_lines) break;
    lines.push_back(fmt::format("- only {}: {}", sides.left, row_text(v)));
    ++shown;
  }
  for (const auto& v : rd.only_right) {
    if (shown >= max_lines) break;
    lines.push_back(fmt::format("+ only {}: {}", sides.right, row_text(v)));
    ++shown;
  }
  for (const auto& c : rd.changed) {
    if (shown >= max_lines) break;
    std::string key;
    for (size_t i = 0; i < c.key.size() && i < rd.key.size(); ++i) {
      if (i) key += ", ";
      key += rd.key[i] + "=" + ShowSql(c.key[i], max_value_bytes);
    }
    std::string changes;
    for (const auto& ch : c.changes) {
      if (!changes.empty()) changes += "; ";
      changes += ch.column + ": " + ShowSql(ch.left, max_value_bytes) + " -> " + ShowSql(ch.right, max_value_bytes);
    }
    lines.push_back(fmt::format("~ changed ({}): {}", key, changes));
    ++shown;
  }
  total = std::max(total, shown);
  if (total > shown)
    lines.push_back(fmt::format("... {} more differing rows ({} only {}, {} only {}, {} changed in all)",
                                FormatCount(total - shown), FormatCount(rd.only_left_total), sides.left,
                                FormatCount(rd.only_right_total), sides.right, FormatCount(rd.changed_total)));
  return lines;
}

}  // namespace

// =============================================================================================
// JUnit XML

std::string RenderVerifyJUnit(const VerifyReport& r) {
  const Sides sides = SideNames(r);
  const std::vector<TableLine> tables = TableLines(r);
  const bool errored = !r.error.empty();

  struct Case {
    std::string name;
    std::string kind;  // "" pass | "failure" | "error"
    std::string message;
    std::string body;
  };
  std::vector<Case> cases;
  if (errored) {
    std::string body = r.error + "\n";
    auto failed = [&](const char* side, const IngestReport& run) {
      for (const auto& j : run.failed_jobs)
        body += fmt::format("{} job {} [{}] failed after {}: {}\n", side, j.job_id, j.range.str(),
                            Plural(j.attempt, "attempt", "attempts"), j.error);
      if (run.restart_range) body += fmt::format("{} restart range: {}\n", side, run.restart_range->str());
    };
    if (r.serial) failed("serial", *r.serial);
    failed("parallel", r.parallel);
    cases.push_back({"ingest", "error", r.error, body});
  } else {
    for (const auto& t : tables) {
      Case c{t.table, "", "", ""};
      if (t.differs) {
        c.kind = "failure";
        std::string first = t.first ? fmt::format("first divergent ledger {}", *t.first) : "divergent";
        c.message = fmt::format("{}: {}; {} {} rows, {} {} rows; {}", t.table, first, sides.left,
                                CountOrDash(t.left_rows), sides.right, CountOrDash(t.right_rows),
                                Plural(t.divergent_ledgers, "divergent ledger", "divergent ledgers"));
        std::string& b = c.body;
        b += c.message + "\n";
        if (!t.divergent.empty()) b += "divergent ledgers: " + Intervals(t.divergent, 20) + "\n";
        if (t.at_first && r.diff.first_divergent_ledger)
          b += fmt::format("at ledger {}: {} {} rows, {} {} rows\n", *r.diff.first_divergent_ledger, sides.left,
                           FormatCount(t.at_first->left_rows), sides.right, FormatCount(t.at_first->right_rows));
        if (t.row_diff)
          for (const auto& line : RowDiffLines(*t.row_diff, sides, 5, 200)) b += "  " + line + "\n";
        if (!r.look_again.empty()) b += "look again: " + r.look_again + "\n";
      }
      cases.push_back(std::move(c));
    }
    // Divergent without a divergent table (schemas differ only): fail visibly anyway.
    if (!r.identical && std::none_of(cases.begin(), cases.end(), [](const Case& c) { return !c.kind.empty(); })) {
      std::string body;
      for (const auto& s : r.diff.schema_differences) body += "schema difference: " + s + "\n";
      for (const auto& n : r.diff.notes) body += "note: " + n + "\n";
      std::string msg = r.diff.schema_differences.empty() ? "the two sides differ"
                                                          : "schemas differ: " + r.diff.schema_differences.front();
      cases.push_back({"schema", "failure", msg, body});
    }
  }

  size_t failures = 0, errors = 0;
  for (const auto& c : cases) {
    if (c.kind == "failure") ++failures;
    if (c.kind == "error") ++errors;
  }
  const std::string time = fmt::format("{:.3f}", TotalSeconds(r));
  const std::string suite = "ledgerdiff verify " + r.range.str();

  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"ledgerdiff verify\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n",
                   cases.size(), failures, errors, time);
  x += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">\n",
                   Attr(suite), cases.size(), failures, errors, time);
  x += "    <properties>\n";
  auto prop = [&](std::string_view name, const std::string& value) {
    x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, Attr(value));
  };
  prop("verdict", r.verdict());
  prop("run_id", r.run_id);
  prop("range", r.range.str());
  prop("workers", std::to_string(r.workers));
  prop("job_size", std::to_string(r.job_size));
  std::string schemas = r.serial_schema.empty() ? r.parallel_schema : r.serial_schema + " " + r.parallel_schema;
  prop("schemas", schemas);
  if (!r.baseline.empty()) prop("baseline", r.baseline);
  prop("bug", r.bug);
  prop("speedup", fmt::format("{:.2f}", r.speedup));
  if (r.diff.first_divergent_ledger) prop("first_divergent_ledger", std::to_string(*r.diff.first_divergent_ledger));
  if (!r.look_again.empty()) prop("look_again", r.look_again);
  x += "    </properties>\n";
  for (const auto& c : cases) {
    x += fmt::format("    <testcase classname=\"ledgerdiff.verify\" name=\"{}\"", Attr(c.name));
    if (c.kind.empty()) {
      x += "/>\n";
      continue;
    }
    x += fmt::format(">\n      <{} message=\"{}\" type=\"{}\">{}</{}>\n    </testcase>\n", c.kind, Attr(c.message),
                     c.kind == "error" ? "error" : "divergent", Esc(c.body), c.kind);
  }
  x += "    <system-out>" + Esc(RenderVerifyText(r)) + "</system-out>\n";
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

// =============================================================================================
// Markdown

namespace {

// Inline code span that survives any content: backtick fence longer than any run inside, and
// `|` escaped for table cells. Newlines become spaces.
std::string MdCode(std::string_view s, bool in_table = false) {
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

}  // namespace

std::string RenderVerifyMarkdown(const VerifyReport& r) {
  const Sides sides = SideNames(r);
  const std::vector<TableLine> tables = TableLines(r);
  const std::string verdict = r.verdict();
  std::string m;
  const char* icon = verdict == "identical" ? "\xe2\x9c\x85" : verdict == "divergent" ? "\xe2\x9d\x8c" : "\xe2\x9a\xa0\xef\xb8\x8f";
  m += fmt::format("## {} ledgerdiff verify: {}\n\n", icon, verdict);
  if (verdict == "identical") {
    m += fmt::format("The parallel ingestion wrote exactly what the {} one wrote: {} ledgers, {} rows compared.\n\n",
                     sides.left, FormatCount(r.diff.ledgers_compared), FormatCount(r.diff.rows_compared_left));
  } else if (verdict == "divergent") {
    if (r.diff.first_divergent_ledger)
      m += fmt::format("**First divergent ledger: {}** ({} of {} ledgers compared differ)\n\n",
                       *r.diff.first_divergent_ledger, FormatCount(r.diff.divergent_ledgers),
                       FormatCount(r.diff.ledgers_compared));
    else
      m += "**The schemas differ**; the data of the common ledgers is identical.\n\n";
  } else {
    m += "**Error:** " + MdText(r.error) + "\n\n";
  }

  m += fmt::format("- range: {} ({} ledgers)\n", MdCode(r.range.str()), FormatCount(r.range.size()));
  m += fmt::format("- workers: {}, jobs of {} ledgers\n", r.workers, FormatCount(r.job_size));
  m += fmt::format("- run: {}\n", MdCode(r.run_id));
  if (!r.baseline.empty()) m += fmt::format("- baseline: {}\n", MdCode(r.baseline));
  if (!r.bug.empty()) m += fmt::format("- injected bug: {}\n", MdCode(r.bug));
  if (r.schemas_kept)
    m += fmt::format("- schemas kept: {}{}\n", r.serial_schema.empty() ? "" : MdCode(r.serial_schema) + ", ",
                     MdCode(r.parallel_schema));
  m += "\n";

  if (!r.phases.empty()) {
    m += "| phase | time |\n|---|---:|\n";
    for (const auto& p : r.phases) m += fmt::format("| {} | {} |\n", MdText(p.name), FormatDuration(p.seconds));
    if (r.speedup > 0) m += fmt::format("| **parallel speed-up** | **{:.2f}x** |\n", r.speedup);
    m += "\n";
  }

  if (!tables.empty()) {
    m += fmt::format("| table | {} rows | {} rows | divergent ledgers | status |\n", sides.left, sides.right);
    m += "|---|---:|---:|---:|---|\n";
    for (const auto& t : tables) {
      std::string status = !t.compared ? "\xe2\x80\x94 not compared"
                           : t.differs ? "\xe2\x9d\x8c divergent"
                                       : "\xe2\x9c\x85 identical";
      m += fmt::format("| {} | {} | {} | {} | {} |\n", MdCode(t.table, true), CountOrDash(t.left_rows),
                       CountOrDash(t.right_rows), t.compared ? FormatCount(t.divergent_ledgers) : "\xe2\x80\x94",
                       status);
    }
    m += "\n";
  }

  if (verdict == "divergent") {
    std::vector<std::string> names;
    for (const auto& t : r.diff.divergent_tables) names.push_back(MdCode(t.table));
    if (!names.empty() && r.diff.first_divergent_ledger)
      m += fmt::format("Divergent tables at ledger {}: {}\n\n", *r.diff.first_divergent_ledger,
                       fmt::join(names, ", "));
    for (const auto& s : r.diff.schema_differences) m += "- schema difference: " + MdText(s) + "\n";
    if (!r.diff.schema_differences.empty()) m += "\n";
    for (const auto& rd : r.diff.rows) {
      const diff::TableAtLedger* at = nullptr;
      for (const auto& t : r.diff.divergent_tables)
        if (t.table == rd.table) at = &t;
      m += fmt::format("<details><summary>Row diff of {} at ledger {}{}</summary>\n\n", Esc(rd.table),
                       r.diff.first_divergent_ledger.value_or(0),
                       at ? fmt::format(" ({} {} rows, {} {} rows)", sides.left, FormatCount(at->left_rows),
                                        sides.right, FormatCount(at->right_rows))
                          : "");
      std::string body;
      for (const auto& line : RowDiffLines(rd, sides, 10, 120)) body += line + "\n";
      m += MdBlock("diff", body) + "\n</details>\n\n";
    }
    for (const auto& t : tables)
      if (t.divergent.size() > 1)
        m += fmt::format("- {} diverges at ledgers {}\n", MdCode(t.table), MdText(Intervals(t.divergent, 10)));
    m += "\n";
  }
  if (!r.error.empty()) {
    auto failed = [&](const std::string& side, const IngestReport& run) {
      for (const auto& j : run.failed_jobs)
        m += fmt::format("- {} job {} {} failed after {}: {}\n", side, j.job_id, MdCode(j.range.str()),
                         Plural(j.attempt, "attempt", "attempts"), MdText(j.error));
      if (run.restart_range) m += fmt::format("- {} restart range: {}\n", side, MdCode(run.restart_range->str()));
    };
    if (r.serial) failed("serial", *r.serial);
    failed("parallel", r.parallel);
    m += "\n";
  }
  if (!r.look_again.empty()) m += "Look again:\n\n" + MdBlock("sh", r.look_again) + "\n";
  return m;
}

// =============================================================================================
// HTML

namespace {

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
.banner.error{background:linear-gradient(90deg,#9a6700,#bf8700)}
.banner .word{font-size:30px;font-weight:800;letter-spacing:.06em}
.banner .what{font-size:15px;opacity:.95;line-height:1.45}
.banner .what code{background:rgba(255,255,255,.18);color:#fff}
h2{font-size:17px;margin:34px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:22px 0 8px}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(230px,1fr));gap:10px 28px;margin:18px 0 0;padding:14px 18px;background:var(--soft);border:1px solid var(--line);border-radius:8px}
.facts div{min-width:0}
.facts dt{font-size:11px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:28px}
@media (max-width:900px){.cols{grid-template-columns:1fr}}
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
figure{margin:6px 0 0}figure svg{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:var(--muted);margin-top:4px}
footer{margin-top:44px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px}
)css";

const char* OutcomeColor(const std::string& outcome) {
  if (outcome == "done") return "#2da44e";
  if (outcome == "failed") return "#cf222e";
  if (outcome == "lost") return "#f0883e";
  if (outcome == "fenced") return "#8250df";
  if (outcome == "interrupted") return "#8c959f";
  if (outcome == "running") return "#0969da";
  return "#57606a";
}

constexpr const char* kOutcomes[] = {"done", "failed", "lost", "fenced", "interrupted", "running"};

// Compact, deterministic SVG coordinates.
std::string N(double v) {
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over `span`.
double NiceStep(double span, int target) {
  if (span <= 0) return 1;
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw * 0.999) return m * mag;
  return 10 * mag;
}

std::string TickLabel(double v, double step) {
  int decimals = step >= 1 ? 0 : std::min(3, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", v, decimals);
}

std::string RateLabel(double v) {
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.0f}k", v / 1e3);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  if (v >= 10 || v == 0) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

// Lane of a worker name: "w2" and its replacements "w2.1", "w2.2" share lane 2; names of
// another shape (external workers) get a lane of their own after the numbered ones.
struct LaneKey {
  int slot;          // INT32_MAX for other names
  std::string name;  // the slot's base name ("w2") or the whole other name
  bool operator<(const LaneKey& o) const { return std::tie(slot, name) < std::tie(o.slot, o.name); }
};

LaneKey LaneOf(const std::string& worker) {
  if (worker.size() >= 2 && worker[0] == 'w') {
    size_t i = 1;
    while (i < worker.size() && std::isdigit(static_cast<unsigned char>(worker[i]))) ++i;
    bool ok = i > 1 && i - 1 <= 6;
    if (ok && i < worker.size()) {
      ok = worker[i] == '.' && i + 1 < worker.size();
      for (size_t k = i + 1; ok && k < worker.size(); ++k) ok = std::isdigit(static_cast<unsigned char>(worker[k])) != 0;
    }
    if (ok) return {std::stoi(worker.substr(1, i - 1)), worker.substr(0, i)};
  }
  return {INT32_MAX, worker};
}

double EndOf(const AttemptRow& a, double tmax) { return a.end_s >= 0 ? a.end_s : tmax; }

double TimeSpan(const IngestReport& run) {
  double t = run.wall_s;
  for (const auto& a : run.timeline) t = std::max({t, a.start_s, a.end_s});
  return t > 0 ? t : 1;
}

// Attempts beyond this many are drawn with neighbouring done attempts of a lane merged when
// they are closer than a pixel (failed, lost, fenced and interrupted ones stay individual).
constexpr size_t kDetailedAttempts = 1500;

constexpr double kSvgWidth = 1180;
constexpr double kPlotLeft = 92;
constexpr double kPlotRight = 18;

struct XAxis {
  double tmax;
  double scale;  // px per second
  double X(double t) const { return kPlotLeft + t * scale; }
};

// Vertical grid and second ticks along the bottom of a plot spanning [top, bottom].
std::string TimeAxis(const XAxis& ax, double top, double bottom) {
  std::string s;
  double step = NiceStep(ax.tmax, 10);
  s += fmt::format("<g class=\"axis\" font-size=\"11\" fill=\"#59636e\">\n");
  for (int i = 0;; ++i) {
    double t = i * step;
    if (t > ax.tmax * 1.0001) break;
    double x = ax.X(t);
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#d1d9e0\" stroke-width=\"1\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{0}\" y2=\"{3}\" stroke=\"#59636e\"/>"
        "<text x=\"{0}\" y=\"{4}\" text-anchor=\"middle\">{5}</text>\n",
        N(x), N(top), N(bottom), N(bottom + 5), N(bottom + 18), TickLabel(t, step));
  }
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#59636e\"/>\n", N(kPlotLeft), N(bottom),
                   N(ax.X(ax.tmax)), N(bottom));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">seconds since run start</text>\n</g>\n",
                   N(ax.X(ax.tmax)), N(bottom + 34));
  return s;
}

std::string AttemptTitle(const AttemptRow& a, double tmax) {
  double end = EndOf(a, tmax);
  std::string t = fmt::format("job {} [{}] attempt {}, {:.1f}s, {}", a.job_id, a.range.str(), a.attempt,
                              std::max(0.0, end - a.start_s), a.outcome);
  t += fmt::format("\nworker {}, {:.1f}s \xe2\x86\x92 {}", a.worker, a.start_s,
                   a.end_s >= 0 ? fmt::format("{:.1f}s", a.end_s) : std::string("still running"));
  if (!a.error.empty()) t += "\n" + Truncate(a.error, 300);
  return t;
}

// The timeline of one ingestion run: one lane per worker slot, one bar per attempt.
std::string TimelineSvg(const IngestReport& run) {
  const auto& tl = run.timeline;
  const double tmax = TimeSpan(run);
  const XAxis ax{tmax, (kSvgWidth - kPlotLeft - kPlotRight) / tmax};

  // Lanes, and the attempts of each in time order.
  std::map<LaneKey, std::vector<const AttemptRow*>> lanes;
  std::map<LaneKey, std::map<std::string, double>> replacements;  // lane -> replacement -> first start
  for (const auto& a : tl) {
    LaneKey k = LaneOf(a.worker);
    lanes[k].push_back(&a);
    if (a.worker != k.name) {
      auto [it, fresh] = replacements[k].emplace(a.worker, a.start_s);
      if (!fresh) it->second = std::min(it->second, a.start_s);
    }
  }
  // Jobs that needed more than one attempt (by attempt number or by attempt rows).
  std::map<uint32_t, uint32_t> rows_per_job;
  for (const auto& a : tl) ++rows_per_job[a.job_id];
  auto retried = [&](const AttemptRow& a) {
    auto it = rows_per_job.find(a.job_id);
    return a.attempt > 1 || (it != rows_per_job.end() && it->second > 1);
  };
  for (auto& [k, v] : lanes)
    std::stable_sort(v.begin(), v.end(), [](const AttemptRow* x, const AttemptRow* y) {
      return std::tie(x->start_s, x->job_id, x->attempt) < std::tie(y->start_s, y->job_id, y->attempt);
    });

  const double lane_h = lanes.size() > 24 ? 16 : lanes.size() > 12 ? 22 : 30;
  const double bar_h = lane_h - (lane_h >= 30 ? 10 : 4);
  const double top = 10;
  const double bottom = top + lane_h * static_cast<double>(lanes.size());
  const double height = bottom + 44;
  const bool detailed = tl.size() <= kDetailedAttempts;

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"timeline of {} attempts on {} worker lanes\" "
      "font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\">\n",
      N(kSvgWidth), N(height), N(kSvgWidth), N(height), tl.size(), lanes.size());
  s += TimeAxis(ax, top, bottom);

  size_t lane_index = 0;
  for (const auto& [key, attempts] : lanes) {
    double y0 = top + lane_h * static_cast<double>(lane_index);
    double yb = y0 + (lane_h - bar_h) / 2;
    s += fmt::format("<g class=\"lane\" data-lane=\"{}\">\n", Attr(key.name));
    if (lane_index % 2 == 1)
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f8fa\" opacity=\"0.7\"/>\n",
                       N(kPlotLeft), N(y0), N(kSvgWidth - kPlotLeft - kPlotRight), N(lane_h));
    // Lane label: the slot, and its replacement workers when any.
    const auto& reps = replacements[key];
    std::string label = Truncate(key.name, 14);
    if (reps.empty()) {
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"12\" font-weight=\"600\" "
                       "fill=\"#1f2328\">{}</text>\n",
                       N(kPlotLeft - 10), N(y0 + lane_h / 2 + 4), Esc(label));
    } else {
      std::string more = fmt::format("+{} replaced", reps.size());
      s += fmt::format("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" font-size=\"12\" font-weight=\"600\" "
                       "fill=\"#1f2328\">{2}<tspan x=\"{0}\" dy=\"{3}\" font-size=\"9\" font-weight=\"400\" "
                       "fill=\"#9a6700\">{4}</tspan></text>\n",
                       N(kPlotLeft - 10), N(y0 + lane_h / 2 - (lane_h >= 22 ? 1 : 0)), Esc(label),
                       lane_h >= 22 ? "10" : "8", Esc(more));
    }

    // Bars.
    size_t i = 0;
    while (i < attempts.size()) {
      const AttemptRow& a = *attempts[i];
      double x = ax.X(a.start_s);
      double w = std::max(1.0, ax.X(EndOf(a, tmax)) - x);
      if (!detailed && a.outcome == "done" && !retried(a)) {
        // Merge a run of done attempts closer than a pixel.
        size_t j = i + 1;
        double xe = x + w;
        double t_end = EndOf(a, tmax);
        uint32_t jmin = a.job_id, jmax = a.job_id;
        while (j < attempts.size()) {
          const AttemptRow& b = *attempts[j];
          if (b.outcome != "done" || retried(b) || ax.X(b.start_s) > xe + 1.0) break;
          xe = std::max(xe, std::max(ax.X(b.start_s) + 1.0, ax.X(EndOf(b, tmax))));
          t_end = std::max(t_end, EndOf(b, tmax));
          jmin = std::min(jmin, b.job_id);
          jmax = std::max(jmax, b.job_id);
          ++j;
        }
        if (j > i + 1) {
          s += fmt::format(
              "<rect class=\"att done merged\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
              "<title>{} done attempts, jobs {} to {}, {:.1f}s to {:.1f}s</title></rect>\n",
              N(x), N(yb), N(xe - x), N(bar_h), OutcomeColor("done"), j - i, jmin, jmax, a.start_s, t_end);
          i = j;
          continue;
        }
      }
      bool re = retried(a);
      if (a.outcome != "done") w = std::max(w, 3.0);  // keep every failure visible
      // Thin bars keep their colour; wider ones of retried jobs get an outline.
      std::string stroke = re && w >= 6 ? " stroke=\"#1f2328\" stroke-width=\"1.5\"" : "";
      std::string extra = a.end_s < 0 ? " fill-opacity=\"0.55\"" : "";
      s += fmt::format("<rect class=\"att {}{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"{}\"{}{}>",
                       Attr(a.outcome), re ? " retried" : "", N(x), N(yb), N(w), N(bar_h), OutcomeColor(a.outcome),
                       stroke, extra);
      s += "<title>" + Esc(AttemptTitle(a, tmax)) + "</title></rect>\n";
      if (detailed && bar_h >= 14) {
        std::string text;
        std::string retry = a.attempt > 1 ? fmt::format(" \xe2\x86\xbb{}", a.attempt) : "";
        if (w >= 130) text = fmt::format("job {} [{}]{}", a.job_id, a.range.str(), retry);
        else if (w >= 64) text = fmt::format("job {}{}", a.job_id, a.attempt > 1 ? fmt::format(" \xe2\x86\xbb{}", a.attempt) : "");
        else if (w >= 40) text = fmt::format("{}{}", a.job_id, a.attempt > 1 ? fmt::format(" \xe2\x86\xbb{}", a.attempt) : "");
        else if (w >= 18) text = fmt::format("{}", a.job_id);
        if (!text.empty())
          s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" font-weight=\"600\" fill=\"#fff\" "
                           "pointer-events=\"none\">{}</text>\n",
                           N(x + 4), N(yb + bar_h / 2 + 3.5), Esc(text));
      }
      ++i;
    }
    // Where a replacement worker took over the lane.
    for (const auto& [name, start] : reps) {
      double x = ax.X(start);
      s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#9a6700\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"3 2\"><title>{3} replaces a dead or frozen worker at {4:.1f}s</title>"
                       "</line>\n",
                       N(x - 1), N(y0 + 1), N(y0 + lane_h - 1), Esc(name), start);
    }
    s += "</g>\n";
    ++lane_index;
  }
  s += "</svg>\n";
  return s;
}

// Ledgers per second over time, from the done attempts: each done attempt's ledgers are spread
// over its duration and summed per time bucket.
std::string ThroughputSvg(const IngestReport& run, const std::optional<IngestReport>& serial) {
  const double tmax = TimeSpan(run);
  const XAxis ax{tmax, (kSvgWidth - kPlotLeft - kPlotRight) / tmax};
  constexpr int kBuckets = 60;
  const double bw = tmax / kBuckets;
  std::vector<double> ledgers(kBuckets, 0);
  uint64_t done_ledgers = 0;
  for (const auto& a : run.timeline) {
    if (a.outcome != "done" || a.end_s < 0) continue;
    double n = static_cast<double>(a.range.size());
    done_ledgers += a.range.size();
    double s0 = std::max(0.0, a.start_s), s1 = std::max(s0, a.end_s);
    if (s1 - s0 < 1e-9) {
      int b = std::clamp(static_cast<int>(s1 / bw), 0, kBuckets - 1);
      ledgers[b] += n;
      continue;
    }
    int b0 = std::clamp(static_cast<int>(s0 / bw), 0, kBuckets - 1);
    int b1 = std::clamp(static_cast<int>(s1 / bw), 0, kBuckets - 1);
    for (int b = b0; b <= b1; ++b) {
      double lo = std::max(s0, b * bw), hi = std::min(s1, (b + 1) * bw);
      if (hi > lo) ledgers[b] += n * (hi - lo) / (s1 - s0);
    }
  }
  std::vector<double> rate(kBuckets);
  double peak = 0;
  for (int b = 0; b < kBuckets; ++b) {
    rate[b] = ledgers[b] / bw;
    peak = std::max(peak, rate[b]);
  }
  double avg = run.wall_s > 0 ? static_cast<double>(done_ledgers) / run.wall_s : 0;
  double serial_avg = serial && serial->ok ? serial->ledgers_per_s() : 0;
  double ymax_raw = std::max({peak, avg, serial_avg, 1.0}) * 1.08;
  double ystep = NiceStep(ymax_raw, 4);
  double ymax = std::ceil(ymax_raw / ystep) * ystep;

  const double top = 14, plot_h = 190, bottom = top + plot_h, height = bottom + 44;
  auto Y = [&](double v) { return bottom - v / ymax * plot_h; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"throughput\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"ledgers per second over time\" "
      "font-family=\"-apple-system,Segoe UI,Helvetica,Arial,sans-serif\">\n",
      N(kSvgWidth), N(height), N(kSvgWidth), N(height));
  // Y axis.
  s += "<g class=\"yaxis\" font-size=\"11\" fill=\"#59636e\">\n";
  for (double v = 0; v <= ymax * 1.0001; v += ystep) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#eaeef2\"/>"
                     "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
                     N(kPlotLeft), N(Y(v)), N(ax.X(tmax)), N(kPlotLeft - 8), N(Y(v) + 4), RateLabel(v));
  }
  s += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">ledgers/s</text>\n",
                   N((top + bottom) / 2));
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#59636e\"/>\n</g>\n", N(kPlotLeft),
                   N(top), N(bottom));
  s += TimeAxis(ax, top, bottom);
  // The rate as a step area.
  std::string path = fmt::format("M{} {}", N(ax.X(0)), N(bottom));
  for (int b = 0; b < kBuckets; ++b)
    path += fmt::format(" L{} {} L{} {}", N(ax.X(b * bw)), N(Y(rate[b])), N(ax.X((b + 1) * bw)), N(Y(rate[b])));
  path += fmt::format(" L{} {} Z", N(ax.X(tmax)), N(bottom));
  s += fmt::format("<path class=\"rate\" d=\"{}\" fill=\"#0969da\" fill-opacity=\"0.18\" stroke=\"#0969da\" "
                   "stroke-width=\"1.6\" stroke-linejoin=\"round\"/>\n",
                   path);
  for (int b = 0; b < kBuckets; ++b)
    if (rate[b] > 0)
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\"><title>{:.1f}s to "
                       "{:.1f}s: {} ledgers/s</title></rect>\n",
                       N(ax.X(b * bw)), N(Y(rate[b])), N(ax.X((b + 1) * bw) - ax.X(b * bw)), N(bottom - Y(rate[b])),
                       b * bw, (b + 1) * bw, RateLabel(rate[b]));
  auto hline = [&](double v, const char* color, const std::string& label, bool label_below) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"1.3\" "
                     "stroke-dasharray=\"6 4\"/><text x=\"{4}\" y=\"{5}\" text-anchor=\"end\" font-size=\"11\" "
                     "font-weight=\"600\" fill=\"{3}\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">"
                     "{6}</text>\n",
                     N(kPlotLeft), N(Y(v)), N(ax.X(tmax)), color, N(ax.X(tmax) - 4),
                     N(label_below ? Y(v) + 14 : Y(v) - 5), Esc(label));
  };
  if (avg > 0) hline(avg, "#0550ae", fmt::format("parallel average {} ledgers/s", RateLabel(avg)), false);
  if (serial_avg > 0)
    hline(serial_avg, "#6e7781", fmt::format("serial average {} ledgers/s", RateLabel(serial_avg)),
          std::abs(Y(serial_avg) - Y(avg)) < 16 && serial_avg < avg);
  s += "</svg>\n";
  return s;
}

std::string Legend(const IngestReport& run) {
  std::set<std::string> seen;
  for (const auto& a : run.timeline) seen.insert(a.outcome);
  std::string s = "<div class=\"legend\">";
  for (const char* o : kOutcomes)
    if (seen.count(o) || std::string_view(o) == "done" || std::string_view(o) == "failed" ||
        std::string_view(o) == "lost")
      s += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", OutcomeColor(o), o);
  for (const auto& o : seen)
    if (std::find(std::begin(kOutcomes), std::end(kOutcomes), o) == std::end(kOutcomes))
      s += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", OutcomeColor(o), Esc(o));
  s += "<span><i class=\"retried\"></i>job needed a retry (\xe2\x86\xbb attempt)</span>";
  s += "<span><i style=\"background:#9a6700;width:3px\"></i>replacement worker starts</span>";
  s += "</div>\n";
  return s;
}

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
  s += fmt::format("<h3><code>{}</code> at ledger {}", Esc(rd.table), r.diff.first_divergent_ledger.value_or(0));
  if (at)
    s += fmt::format(" <span class=\"muted\">&#183; {} {} rows, {} {} rows</span>", sides.left,
                     FormatCount(at->left_rows), sides.right, FormatCount(at->right_rows));
  s += "</h3>\n";
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
    auto emit = [&](const std::vector<diff::RowValues>& rows, const char* cls, const std::string& mark) {
      for (const auto& v : rows) {
        s += fmt::format("<tr class=\"{}\"><td class=\"mark\">{}</td>", cls, mark);
        for (size_t i = 0; i < rd.columns.size(); ++i)
          s += "<td>" + (i < v.size() ? HtmlValue(v[i]) : std::string()) + "</td>";
        s += "</tr>\n";
      }
    };
    emit(rd.only_left, "left", "\xe2\x88\x92 only " + sides.left);
    emit(rd.only_right, "right", "+ only " + sides.right);
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
      for (size_t i = 0; i < n; ++i) {
        s += "<tr>";
        if (i == 0) s += fmt::format("<td rowspan=\"{}\">{}</td>", n, key);
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

std::string RenderHtml(const VerifyReport& r) {
  const Sides sides = SideNames(r);
  const std::vector<TableLine> tables = TableLines(r);
  const std::string verdict = r.verdict();
  const std::string title = fmt::format("ledgerdiff verify {}: {}", r.range.str(), verdict);

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  h += "<title>" + Esc(title) + "</title>\n<style>" + std::string(kCss) + "</style>\n</head>\n<body>\n<main>\n";
  h += fmt::format("<div class=\"brand\"><b>ledgerdiff</b><span>verify &#183; serial vs parallel ingestion "
                   "&#183; run <code>{}</code></span></div>\n",
                   Esc(r.run_id));

  // Verdict banner.
  std::string what;
  if (verdict == "identical") {
    what = fmt::format("The parallel ingestion wrote exactly what the {} one wrote.<br/>{} ledgers ({}) and {} rows "
                       "compared in {}.",
                       sides.left, FormatCount(r.diff.ledgers_compared), Esc(r.range.str()),
                       FormatCount(r.diff.rows_compared_left), Plural(tables.size(), "table", "tables"));
  } else if (verdict == "divergent") {
    if (r.diff.first_divergent_ledger) {
      std::vector<std::string> names;
      for (const auto& t : r.diff.divergent_tables) names.push_back("<code>" + Esc(t.table) + "</code>");
      what = fmt::format("First divergent ledger <b>{}</b>{}.<br/>{} of {} ledgers compared differ.",
                         *r.diff.first_divergent_ledger,
                         names.empty() ? "" : fmt::format(" in {}", fmt::join(names, ", ")),
                         FormatCount(r.diff.divergent_ledgers), FormatCount(r.diff.ledgers_compared));
    } else {
      what = "The schemas differ; the data of the common ledgers is identical.";
    }
  } else {
    what = "The run did not finish: " + Esc(r.error);
  }
  std::string word = verdict == "identical" ? "IDENTICAL" : verdict == "divergent" ? "DIVERGENT" : "ERROR";
  h += fmt::format("<div class=\"banner {}\" id=\"verdict\"><div class=\"word\">{}</div><div class=\"what\">{}</div>"
                   "</div>\n",
                   verdict, word, what);

  // Run facts.
  h += "<dl class=\"facts\">\n";
  auto fact = [&](const std::string& k, const std::string& v_html) {
    h += "<div><dt>" + k + "</dt><dd>" + v_html + "</dd></div>\n";
  };
  fact("range", fmt::format("{} <span class=\"muted\">({} ledgers)</span>", Esc(r.range.str()),
                            FormatCount(r.range.size())));
  fact("workers", fmt::format("{} <span class=\"muted\">&#183; jobs of {} ledgers</span>", r.workers,
                              FormatCount(r.job_size)));
  if (r.speedup > 0) fact("parallel speed-up", fmt::format("{:.2f}x", r.speedup));
  fact("total time", Esc(FormatDuration(TotalSeconds(r))));
  if (!r.baseline.empty()) fact("baseline", "<code>" + Esc(r.baseline) + "</code>");
  if (!r.serial_schema.empty()) fact("serial schema", "<code>" + Esc(r.serial_schema) + "</code>");
  if (!r.parallel_schema.empty()) fact("parallel schema", "<code>" + Esc(r.parallel_schema) + "</code>");
  fact("schemas", r.schemas_kept ? "kept" : "dropped after the pass");
  if (!r.bug.empty()) fact("injected bug", "<code>" + Esc(r.bug) + "</code>");
  if (!r.saved_baseline.empty()) fact("baseline saved to", "<code>" + Esc(r.saved_baseline) + "</code>");
  if (!r.diff.profile.empty()) fact("table profile", Esc(r.diff.profile));
  h += "</dl>\n";

  // Error details.
  if (!r.error.empty()) {
    h += "<h2>Error</h2>\n<pre>" + Esc(r.error) + "</pre>\n";
    auto failed = [&](const std::string& side, const IngestReport& run) {
      if (run.failed_jobs.empty() && !run.restart_range) return;
      h += "<h3>Failed jobs of the " + side + " run</h3>\n<table><tr><th class=\"n\">job</th><th>range</th>"
           "<th class=\"n\">attempts</th><th>last error</th></tr>\n";
      for (const auto& j : run.failed_jobs)
        h += fmt::format("<tr><td class=\"n\">{}</td><td class=\"mono\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                         j.job_id, Esc(j.range.str()), j.attempt, Esc(j.error));
      h += "</table>\n";
      if (run.restart_range)
        h += fmt::format("<p>Restart range: <code>{}</code></p>\n", Esc(run.restart_range->str()));
    };
    if (r.serial) failed("serial", *r.serial);
    failed("parallel", r.parallel);
  }

  // Timings and runs.
  h += "<div class=\"cols\">\n<div>\n<h2>Phases</h2>\n";
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

  // Per-table comparison.
  h += "<h2>Tables</h2>\n";
  if (tables.empty()) {
    h += "<p class=\"muted\">No table was compared.</p>\n";
  } else {
    h += fmt::format("<table class=\"tables\"><tr><th>table</th><th class=\"n\">{} rows</th><th class=\"n\">{} rows"
                     "</th><th class=\"n\">&#916; rows</th><th class=\"n\">divergent ledgers</th><th>first divergent"
                     "</th><th>status</th></tr>\n",
                     sides.left, sides.right);
    for (const auto& t : tables) {
      std::string delta = "\xe2\x80\x94";
      if (t.left_rows >= 0 && t.right_rows >= 0) {
        int64_t d = t.right_rows - t.left_rows;
        delta = d == 0 ? "0" : fmt::format("{}{}", d > 0 ? "+" : "\xe2\x88\x92", FormatCount(static_cast<uint64_t>(std::llabs(d))));
      }
      std::string status = TableStatus(t);
      h += fmt::format("<tr class=\"{}\"><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"mono\">{}</td><td><span "
                       "class=\"pill {}\">{}</span></td></tr>\n",
                       t.differs ? "bad" : "ok", Esc(t.table), CountOrDash(t.left_rows), CountOrDash(t.right_rows),
                       delta, t.compared ? FormatCount(t.divergent_ledgers) : "\xe2\x80\x94",
                       t.first ? std::to_string(*t.first) : "", status == "not compared" ? "none" : status, status);
    }
    h += "</table>\n";
    if (!r.diff.excluded_columns.empty())
      h += fmt::format("<p class=\"muted\">Columns left out of the comparison by the table profile: {}</p>\n",
                       Esc(fmt::format("{}", fmt::join(r.diff.excluded_columns, ", "))));
  }

  // Divergence.
  if (verdict == "divergent") {
    h += "<h2>Divergence</h2>\n";
    for (const auto& d : r.diff.schema_differences) h += "<p class=\"note\">schema difference: " + Esc(d) + "</p>\n";
    if (r.diff.first_divergent_ledger) {
      h += fmt::format("<p>First divergent ledger <b>{}</b>: {} of {} ledgers compared differ.</p>\n",
                       *r.diff.first_divergent_ledger, FormatCount(r.diff.divergent_ledgers),
                       FormatCount(r.diff.ledgers_compared));
      if (!r.diff.left.empty() || !r.diff.right.empty())
        h += fmt::format("<p class=\"muted\">{}: {}<br/>{}: {}</p>\n", sides.left, Esc(r.diff.left), sides.right,
                         Esc(r.diff.right));
    }
    bool any_intervals = false;
    for (const auto& t : tables) any_intervals |= !t.divergent.empty();
    if (any_intervals) {
      h += "<table><tr><th>table</th><th>divergent ledgers</th></tr>\n";
      for (const auto& t : tables)
        if (!t.divergent.empty())
          h += fmt::format("<tr><td><code>{}</code></td><td class=\"mono\">{}</td></tr>\n", Esc(t.table),
                           Esc(Intervals(t.divergent, 40)));
      h += "</table>\n";
    }
    for (const auto& rd : r.diff.rows) h += RowDiffHtml(r, rd, sides);
  }
  for (const auto& n : r.diff.notes) h += "<p class=\"note\">" + Esc(n) + "</p>\n";
  if (!r.look_again.empty()) {
    h += "<h2>Look again</h2>\n<p class=\"muted\">The schemas were kept; this compares them again:</p>\n";
    h += "<pre class=\"look-again\">" + Esc(r.look_again) + "</pre>\n";
  }

  // Timeline and throughput of the parallel run.
  h += "<h2>Parallel run timeline</h2>\n";
  if (r.parallel.timeline.empty()) {
    h += "<p class=\"muted\">No job attempts were recorded for the parallel run.</p>\n";
  } else {
    std::set<std::string> slots;
    for (const auto& a : r.parallel.timeline) slots.insert(LaneOf(a.worker).name);
    h += Legend(r.parallel);
    h += "<figure>\n" + TimelineSvg(r.parallel);
    h += fmt::format("<figcaption>{} on {} over {}; {}, {}. Hover a bar for its job, ledger range, attempt, "
                     "duration and outcome.{}</figcaption>\n</figure>\n",
                     Plural(r.parallel.timeline.size(), "attempt", "attempts"),
                     Plural(slots.size(), "worker lane", "worker lanes"), Esc(FormatDuration(TimeSpan(r.parallel))),
                     Plural(r.parallel.retried_jobs, "job retried", "jobs retried"),
                     Plural(r.parallel.workers_replaced, "worker replaced", "workers replaced"),
                     r.parallel.timeline.size() > kDetailedAttempts
                         ? " Done attempts closer than a pixel are drawn as one bar."
                         : "");
    h += "<h2>Throughput</h2>\n<figure>\n" + ThroughputSvg(r.parallel, r.serial);
    h += "<figcaption>Ledgers per second of the parallel run: the ledgers of each done attempt, spread over its "
         "duration, per time bucket.</figcaption>\n</figure>\n";
  }
  if (r.serial && !r.serial->timeline.empty()) {
    h += "<details><summary>Serial run timeline</summary>\n" + Legend(*r.serial) + "<figure>\n" +
         TimelineSvg(*r.serial) + "</figure>\n</details>\n";
  }

  h += fmt::format("<footer>ledgerdiff verify &#183; run <code>{}</code> &#183; {} &#183; exit code {}</footer>\n",
                   Esc(r.run_id), Esc(title), verdict == "identical" ? 0 : verdict == "divergent" ? 1 : 2);
  h += "</main>\n</body>\n</html>\n";
  return h;
}

}  // namespace

Status WriteVerifyHtml(const VerifyReport& report, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Runtimef("create report directory {}: {}", dir, ec.message());
  if (!fs::is_directory(dir, ec)) return Status::Runtimef("report directory {} is not a directory", dir);
  const fs::path path = fs::path(dir) / "index.html";
  const fs::path tmp = fs::path(dir) / ".index.html.tmp";
  const std::string html = RenderHtml(report);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::Runtimef("write {}: cannot open", tmp.string());
    out.write(html.data(), static_cast<std::streamsize>(html.size()));
    out.close();
    if (!out) return Status::Runtimef("write {}: I/O error", tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) return Status::Runtimef("write {}: {}", path.string(), ec.message());
  return Status::Ok();
}

}  // namespace ledgerdiff::verify
