#include "core/redact.h"

#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>

#include "core/text.h"

namespace ledgerdiff {

namespace {

constexpr size_t kWholeTokenBelow = 4;

std::mutex g_mu;
std::set<std::string> g_secrets;  // GUARDED_BY(g_mu)
std::set<std::string> g_pieces;   // GUARDED_BY(g_mu): the 4-byte pieces of passwords (ScrubSecretPieces)
std::atomic<size_t> g_count{0};

constexpr size_t kPiece = 4;

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool StartsWithNoCase(std::string_view s, size_t pos, std::string_view prefix) {
  if (s.size() < pos + prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[pos + i])) != prefix[i]) return false;
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes `s`; "" when it holds a malformed escape (the raw form is kept by callers).
std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || HexValue(s[i + 1]) < 0 || HexValue(s[i + 2]) < 0) return "";
    out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
    i += 2;
  }
  return out;
}

std::string PercentEncode(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (IsAlnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    }
  }
  return out;
}

// A value as it is written between the quotes of a quoted key=value value.
constexpr EscapeTable kQuotedValueEscapes{{'\'', "\\'"}, {'\\', "\\\\"}};
std::string QuotedEscape(std::string_view v) { return Escaped(v, kQuotedValueEscapes); }

// A conninfo value as libpq's key=value syntax writes it: bare when it can be, else quoted.
std::string ConninfoQuote(std::string_view v) {
  bool bare = !v.empty() && std::none_of(v.begin(), v.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\'' || c == '\\';
  });
  if (bare) return std::string(v);
  return "'" + QuotedEscape(v) + "'";
}

// The keywords whose values are secrets.
bool IsSecretKeyword(std::string_view keyword) { return keyword == "password" || keyword == "sslpassword"; }

// Quotes, backslashes and spaces escaped with a backslash, as in a bare key=value value.
constexpr EscapeTable kBackslashEscapes{{'\'', "\\'"}, {'\\', "\\\\"}, {' ', "\\ "}};
std::string BackslashEscape(std::string_view v) { return Escaped(v, kBackslashEscapes); }

bool LooksLikeConninfo(std::string_view s) {
  return s.find('=') != std::string_view::npos || s.find('@') != std::string_view::npos ||
         s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

bool IsUri(std::string_view s) { return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0; }

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Whether `key` names a password: "password", "sslpassword", in any case, percent-encoded or not.
bool IsPasswordKey(std::string_view key) {
  std::string k(key);
  if (std::string d = PercentDecode(k); !d.empty()) k = d;
  return k.size() >= 8 && StartsWithNoCase(k, k.size() - 8, "password");
}

// Whether a recognised key followed by '=' (spaces allowed around it) starts at `pos` of `s`.
bool RecognisedKeyAt(std::string_view s, size_t pos) {
  for (const std::string& k : LibpqKeywords()) {
    if (s.compare(pos, k.size(), k) != 0) continue;
    size_t i = pos + k.size();
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i < s.size() && s[i] == '=') return true;
  }
  return false;
}

// Where the next recognised key (RecognisedKeyAt, after whitespace) starts in `s` from `from`,
// else s.size().
size_t NextRecognisedKey(std::string_view s, size_t from) {
  for (size_t i = from; i < s.size(); ++i)
    if (IsSpace(s[i]) && i + 1 < s.size() && !IsSpace(s[i + 1]) && RecognisedKeyAt(s, i + 1)) return i + 1;
  return s.size();
}

// `v` (trimmed), its whitespace-separated words (libpq echoes a malformed token up to whitespace)
// and its prefixes ending at a word's end. `split_keys`: also each word's text before and after its first '=' (libpq reads
// "ter=2Q" after "password=Hun" as an option and names "ter" in its error).
void AddWithWords(std::string_view v, std::vector<std::string>& out, bool split_keys = false) {
  while (!v.empty() && IsSpace(v.front())) v.remove_prefix(1);
  while (!v.empty() && IsSpace(v.back())) v.remove_suffix(1);
  if (v.empty()) return;
  out.emplace_back(v);
  for (size_t i = 0; i < v.size();) {
    while (i < v.size() && IsSpace(v[i])) ++i;
    size_t j = i;
    while (j < v.size() && !IsSpace(v[j])) ++j;
    const std::string_view word = v.substr(i, j - i);
    if (!word.empty() && word.size() < v.size()) out.emplace_back(word);
    // And the text up to each word's end: where the value ends may be before words that are
    // not the password's (junk up to the next key), with the whitespace inside it kept.
    if (!word.empty() && j < v.size()) out.emplace_back(v.substr(0, j));
    if (const size_t eq = word.find('='); split_keys && eq != std::string_view::npos) {
      out.emplace_back(word.substr(0, eq));
      out.emplace_back(word.substr(eq + 1));
    }
    i = j;
  }
}

// URI-shaped user info, whatever the rest of the text (no libpq parse; the malformed forms
// "postgresql:/user:pw@host", "postgresql//user:pw@host", "postgres:user:pw@host",
// "user:pw@host"): for every '@', the text from each ':' before it (but a scheme's "://") up to
// it, unless a recognised key=value lies between (that is key=value text, not user info); each
// whole, its whitespace-separated words and their parts around '=' (libpq echoes a malformed
// token up to whitespace or '='). A user name alone ("postgresql://bob@host") is no secret.
void ScanUserinfo(std::string_view s, std::vector<std::string>& out) {
  constexpr size_t kMaxSpans = 256;  // past it, each '@' adds its widest span only (it masks the rest)
  size_t spans = 0;
  std::vector<size_t> seps;
  for (size_t at = s.find('@'); at != std::string_view::npos; at = s.find('@', at + 1)) {
    seps.clear();
    for (size_t c = at; c-- > 0;) {
      if (IsSpace(s[c]) && RecognisedKeyAt(s, c + 1)) break;
      if (s[c] == ':' && s.compare(c + 1, 2, "//") != 0) seps.push_back(c);  // not a scheme's "://"
    }
    for (size_t k = 0; k < seps.size(); ++k) {
      if (spans >= kMaxSpans && k + 1 < seps.size()) continue;
      ++spans;
      AddWithWords(s.substr(seps[k] + 1, at - seps[k] - 1), out, /*split_keys=*/true);
    }
  }
}

// The passwords of a URI `u` (from its scheme on) as libpq reads them, however malformed the rest:
// the user info's, which libpq ends at the first '@' or '/' (so a '?' or '#' is part of the
// password), and the one up to the last '@' before the first '/' (a raw '@' in a password); and
// the value of every query parameter whose key is a password key (IsPasswordKey: libpq
// percent-decodes keys, so "pass%77ord=" is a password), up to the next '&' (a value may hold
// whitespace: libpq takes it).
void ScanUri(std::string_view u, std::vector<std::string>& out) {
  const size_t start = u.find("://") + 3;
  const size_t end = u.find('/', start);
  std::string_view authority = u.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  size_t colon = authority.find(':');
  size_t first_at = authority.find('@');
  size_t last_at = authority.rfind('@');
  if (colon != std::string_view::npos && first_at != std::string_view::npos && colon < first_at)
    out.emplace_back(authority.substr(colon + 1, first_at - colon - 1));
  if (colon != std::string_view::npos && last_at != std::string_view::npos && colon < last_at)
    out.emplace_back(authority.substr(colon + 1, last_at - colon - 1));
  // Any '?' or '&' may start a parameter (a '?' may also be part of a password before the query).
  for (size_t p = u.find_first_of("?&", start); p != std::string_view::npos; p = u.find_first_of("?&", p + 1)) {
    std::string_view param = u.substr(p + 1);
    param = param.substr(0, param.find('&'));
    size_t eq = param.find('=');
    if (eq != std::string_view::npos && IsPasswordKey(param.substr(0, eq))) out.emplace_back(param.substr(eq + 1));
  }
}

// An unquoted key=value password that held a space ("password=Hun ter2Q"): libpq ends the value
// at the space and rejects what follows (`missing "=" after "ter2Q"`), echoing the rest of the
// password. From `end` (just past the bare value that starts the key at `key`), every following
// word that is not a key (no '=' in it, and no '=' after it) is a candidate on its own, and so is
// the whole text from the value's start through the last such word, as written.
void ScanUnquotedContinuation(std::string_view s, size_t key, size_t end, std::vector<std::string>& out) {
  const size_t value_start = s.find('=', key) + 1;
  size_t last = end;
  for (size_t i = end;;) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i >= s.size()) break;
    size_t j = i;
    while (j < s.size() && !IsSpace(s[j]) && s[j] != '=') ++j;
    size_t k = j;
    while (k < s.size() && IsSpace(s[k])) ++k;
    if ((j < s.size() && s[j] == '=') || (k < s.size() && s[k] == '=')) break;  // the next key
    out.emplace_back(s.substr(i, j - i));
    last = j;
    i = j;
  }
  if (last == end) return;
  std::string_view whole = s.substr(value_start, last - value_start);
  while (!whole.empty() && IsSpace(whole.front())) whole.remove_prefix(1);
  out.emplace_back(whole);
}

// What a lenient scan finds where libpq's grammar may not: `password` keys in any case (also
// sslpassword) with their values, bare, quoted, or quoted inside a quoted dbname conninfo
// (dbname='password=\'a b\''), with or without valid escapes; and the passwords of a URI, also
// of one given as a dbname value (ScanUri).
void ScanPasswords(std::string_view s, std::vector<std::string>& out) {
  const bool uri = IsUri(s);
  if (uri) ScanUri(s, out);
  // A URI inside a key=value conninfo (dbname=postgresql://... or dbname='postgresql://...'):
  // its text up to the end of that value, with the value's escapes removed.
  for (std::string_view scheme : {"postgresql://", "postgres://"}) {
    for (size_t q = s.find(scheme, 1); q != std::string_view::npos; q = s.find(scheme, q + 1)) {
      const bool quoted = s[q - 1] == '\'';
      std::string value;
      for (size_t i = q; i < s.size() && !(quoted ? s[i] == '\'' : IsSpace(s[i])); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        value += s[i];
      }
      ScanUri(value, out);
    }
  }
  for (size_t pos = 0; (pos = [&] {
         for (size_t i = pos; i < s.size(); ++i)
           if (StartsWithNoCase(s, i, "password")) return i;
         return std::string_view::npos;
       }()) != std::string_view::npos;) {
    size_t i = pos + 8;
    pos = i;
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i >= s.size() || s[i] != '=') continue;
    ++i;
    while (i < s.size() && IsSpace(s[i])) ++i;
    std::string raw, value;
    if (i < s.size() && s[i] == '\'') {
      for (++i; i < s.size() && s[i] != '\''; ++i) {
        raw += s[i];
        if (s[i] == '\\' && i + 1 < s.size()) raw += s[++i];
        value += s[i];
      }
      out.push_back(raw);
      out.push_back(value);
      continue;
    }
    if (i + 1 < s.size() && s[i] == '\\' && s[i + 1] == '\'') {
      // Either a bare value that starts with an escaped quote, or a value quoted inside a quoted
      // value (dbname='password=\'a b\''): both are candidates. Quoted inside, every character
      // carries one more level of escapes, and the value ends at an unescaped \' (or at the
      // outer value's end, an unescaped ').
      bool escaped = false;
      for (size_t j = i + 2; j < s.size();) {
        size_t width = 1;
        char c = s[j];
        if (c == '\\' && j + 1 < s.size()) {
          c = s[j + 1];
          width = 2;
        } else if (c == '\'') {
          break;
        }
        if (!escaped && c == '\'') break;
        escaped = !escaped && c == '\\';
        raw.append(s.substr(j, width));
        if (!escaped) value += c;
        j += width;
      }
      out.push_back(raw);
      out.push_back(value);
      raw.clear();
      value.clear();
    }
    // Bare: a URI's value ends at '&' only (libpq takes whitespace into it), a key=value one at
    // whitespace.
    for (; i < s.size() && !(uri ? s[i] == '&' : IsSpace(s[i])); ++i) {
      raw += s[i];
      if (s[i] == '\\' && i + 1 < s.size()) raw += s[++i];
      value += s[i];
    }
    out.push_back(raw);
    out.push_back(value);
    if (!uri) {
      ScanUnquotedContinuation(s, pos - 8, i, out);
      // Whatever libpq makes of it: the value runs up to the next recognised key ("password=Hun
      // ter=2Q" is one value), and, in a malformed URI's query, up to the next '&'.
      const size_t start = s.find('=', pos) + 1;
      std::string_view rest = s.substr(start, NextRecognisedKey(s, start) - start);
      AddWithWords(rest, out, /*split_keys=*/true);
      AddWithWords(rest.substr(0, rest.find('&')), out);
    }
  }
}

void AddForms(std::string_view secret, std::set<std::string>& forms) {
  if (secret.empty()) return;
  forms.emplace(secret);
  if (std::string d = PercentDecode(secret); !d.empty()) forms.insert(d);
  forms.insert(PercentEncode(secret));
  forms.insert(BackslashEscape(secret));
  forms.insert(QuotedEscape(secret));  // inside a longer quoted value (a nested conninfo)
  forms.insert(ConninfoQuote(secret));
}

// `text` with every occurrence of every secret replaced by "***" (those shorter than
// `whole_token_below` bytes only as whole tokens, where a masked neighbour counts as a boundary).
// Occurrences are found in the text as given and masked together, each run of overlapping or
// adjacent ones as one "***": replacing one secret after the other would let the first
// replacement break an overlapping occurrence of another (secrets "password=x" and "x@h" in
// "password=x@h") and leave part of it in the text.
std::string MaskAll(const std::string& text, std::vector<std::string> secrets, size_t whole_token_below) {
  std::stable_sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<bool> masked(text.size(), false);
  auto whole_token = [&](size_t pos, size_t len) {
    return (pos == 0 || !IsAlnum(text[pos - 1]) || masked[pos - 1]) &&
           (pos + len >= text.size() || !IsAlnum(text[pos + len]) || masked[pos + len]);
  };
  bool any = false;
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + 1)) {
      if (secret.size() < whole_token_below && !whole_token(pos, secret.size())) continue;
      std::fill(masked.begin() + pos, masked.begin() + pos + secret.size(), true);
      any = true;
    }
  }
  if (!any) return text;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!masked[i])
      out += text[i];
    else if (i == 0 || !masked[i - 1])
      out += "***";
  }
  return out;
}

}  // namespace

namespace {

// The passwords libpq parses from `conninfo` (also in a nested dbname conninfo): what a child
// given this conninfo is told as PGPASSWORD.
void ParsedPasswords(std::string_view conninfo, std::vector<std::string>& out, int depth = 0) {
  std::string s(conninfo);
  char* err = nullptr;
  if (PQconninfoOption* opts = PQconninfoParse(s.c_str(), &err)) {
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      if (!o->val) continue;
      if (IsSecretKeyword(o->keyword)) out.emplace_back(o->val);
      if (std::string_view(o->keyword) == "dbname" && LooksLikeConninfo(o->val) && std::string_view(o->val) != conninfo &&
          depth < 8)
        ParsedPasswords(o->val, out, depth + 1);
    }
    PQconninfoFree(opts);
  }
  if (err) PQfreemem(err);
}

// Registers `password`'s 4-byte pieces (of every form it is written in) for ScrubSecretPieces.
void RegisterPieces(std::string_view password) {
  std::set<std::string> forms;
  AddForms(password, forms);
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& f : forms)
    for (size_t i = 0; i + kPiece <= f.size(); ++i) g_pieces.insert(f.substr(i, kPiece));
}

}  // namespace

std::vector<std::string> ConninfoPasswords(std::string_view conninfo) {
  std::vector<std::string> out;
  std::string s(conninfo);
  char* err = nullptr;
  if (PQconninfoOption* opts = PQconninfoParse(s.c_str(), &err)) {
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      if (!o->val) continue;
      if (IsSecretKeyword(o->keyword)) out.emplace_back(o->val);
      if (std::string_view(o->keyword) == "dbname" && LooksLikeConninfo(o->val) && std::string_view(o->val) != conninfo) {
        for (auto& p : ConninfoPasswords(o->val)) out.push_back(std::move(p));
      }
    }
    PQconninfoFree(opts);
  }
  if (err) PQfreemem(err);
  ScanPasswords(conninfo, out);
  ScanUserinfo(conninfo, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

void RegisterSecret(std::string_view secret) {
  if (secret.empty()) return;
  std::set<std::string> forms;
  AddForms(secret, forms);
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& f : forms)
    if (!f.empty()) g_secrets.insert(f);
  g_count = g_secrets.size();
}

void RegisterConninfoSecrets(std::string_view conninfo) {
  for (const auto& p : ConninfoPasswords(conninfo)) RegisterSecret(p);
  std::vector<std::string> parsed;
  ParsedPasswords(conninfo, parsed);
  for (const auto& p : parsed) RegisterPieces(p);
}

void RegisterEnvironmentSecrets() {
  if (const char* p = std::getenv("PGPASSWORD"); p && *p) {
    RegisterSecret(p);
    RegisterPieces(p);
  }
}

void ForgetSecretsForTesting() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_secrets.clear();
  g_pieces.clear();
  g_count = 0;
}

std::string ScrubSecrets(std::string text) {
  if (g_count.load(std::memory_order_relaxed) == 0 || text.empty()) return text;
  std::vector<std::string> secrets;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    secrets.assign(g_secrets.begin(), g_secrets.end());
  }
  return MaskAll(text, std::move(secrets), kWholeTokenBelow);
}

std::string ScrubSecretPieces(std::string text) {
  if (g_count.load(std::memory_order_relaxed) == 0 || text.empty()) return text;
  std::vector<std::string> secrets;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    secrets.assign(g_secrets.begin(), g_secrets.end());
    secrets.insert(secrets.end(), g_pieces.begin(), g_pieces.end());
  }
  return MaskAll(text, std::move(secrets), kWholeTokenBelow);
}

std::string RedactConninfo(std::string_view conninfo) {
  RegisterConninfoSecrets(conninfo);
  std::string s(conninfo);
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(s.c_str(), &err);
  if (err) PQfreemem(err);
  if (!opts) {
    // libpq cannot parse it: mask every candidate in the text as written.
    return MaskAll(s, ConninfoPasswords(conninfo), 0);
  }
  std::string out;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val || IsSecretKeyword(o->keyword)) continue;
    std::string value = o->val;
    if (std::string_view(o->keyword) == "dbname" && LooksLikeConninfo(value) && value != conninfo)
      value = RedactConninfo(value);
    out += (out.empty() ? "" : " ") + std::string(o->keyword) + "=" + ConninfoQuote(value);
  }
  PQconninfoFree(opts);
  return ScrubSecrets(out);
}

const std::vector<std::string>& LibpqKeywords() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    if (PQconninfoOption* opts = PQconndefaults()) {
      for (PQconninfoOption* o = opts; o->keyword; ++o) out.emplace_back(o->keyword);
      PQconninfoFree(opts);
    }
    return out;
  }();
  return keys;
}

}  // namespace ledgerdiff
