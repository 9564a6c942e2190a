// Fuzzes secret redaction (core/redact.h): a conninfo that holds a password, in one of the forms a
// user can write it (below), is redacted (RedactConninfo), put raw into a Status (whose message is
// scrubbed of registered secrets, core/status.h), the password itself put into a Status, and the
// error the tool prints when libpq cannot parse the conninfo (pg::Connection::Open's "cannot
// connect to database <redacted>: <libpq's message>") is built. None of these texts may carry the
// password. A leak aborts, naming the form, the conninfo, the text and the piece of the password.
//
// Input: byte 0 picks the form, byte 1 flags, then fields separated by 0x1f: the password, then
// the user, host, dbname, application_name and options values around it (each optional; values
// holding "password" in any case are skipped: they would hold a second password).
//   flags & 3: how many of the other key=value pairs (or URI query parameters) come before the
//   password; (flags >> 2) & 3: junk after it (none, a token without "=", an unknown option, a
//   broken value: an unterminated quote, a malformed percent-escape); flags & 16: "postgres://"
//   instead of "postgresql://"; flags & 32: lower-case percent-escapes; (flags >> 6) & 3: the
//   spelling of the key in kUriQueryKey.
//
// What is a leak (the rule). The pieces of a secret are its substrings of 4 bytes; a secret of 3
// bytes is one piece, looked for as a whole token only (not next to a letter, digit or '*':
// core/redact.h scrubs secrets shorter than 4 bytes only as whole tokens, so that "ab" does not
// mangle "absent"); shorter secrets are not checked. The secrets: the password as intended, the
// password as written in the conninfo (escaped, percent-encoded), and every password and
// sslpassword libpq parses from it (also in a nested dbname conninfo). A piece leaks when a text
// holds it more often than the same text built with the password replaced by a filler of the
// same length (an upper-case letter that occurs nowhere else; built after the password's, so that
// both are scrubbed of the password's secrets), plus its occurrences in the conninfo's own text
// outside the password, plus, in the connect error, the redacted conninfo (checked on its own)
// and libpq's wording and what it quotes of the conninfo outside the password (not checked when
// the password holds a '"': libpq's quoting would be ambiguous). So text that is there whatever
// the password (keywords, the other values, libpq's wording) is never blamed on it, and a piece
// that shows up only because of the password is. Passwords and values never hold '*' or NUL
// (mapped to '_'), so a "***" put in by redaction cannot join two texts into a piece.
//
// The password's boundaries must be those the user meant: a bare value has no whitespace,
// backslash or leading quote; a raw URI password no '@' or '/' (libpq ends the user info at
// either), a raw query value no '&'. Everything else goes: quotes, backslashes, '%', '?', '#',
// '=', whitespace inside quotes and URIs, non-ASCII bytes.

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/redact.h"
#include "core/status.h"
#include "core/text.h"
#include "tests/fuzz/fuzz_util.h"

using namespace ledgerdiff;

namespace {

enum Form {
  kQuoted,          // password='p\'w'
  kBare,            // password=pw
  kBareEscaped,     // password=p\ w
  kSpaced,          // password = 'pw'
  kUpperKey,        // PASSWORD='pw' (not a libpq option: unparseable)
  kUnterminated,    // password='pw   (at the end, no closing quote: unparseable)
  kSslPassword,     // sslpassword='pw'
  kUriUserinfo,     // postgresql://user:p%20w@host/db
  kUriUserinfoRaw,  // postgresql://user:p w@host/db
  kUriQuery,        // postgresql://host/db?password=p%20w
  kUriQueryRaw,     // postgresql://host/db?password=p w
  kUriQueryKey,     // postgresql://host/db?pass%77ord=p%20w (and other spellings of the key)
  kNestedKv,        // dbname='user=u password=\'pw\''
  kNestedUri,       // dbname='postgresql://user:pw@host/db'
  kUriNoUser,       // postgresql://:pw@host/db
  // Issue 44: forms libpq parses as something else or refuses, masked by rules that need no parse.
  kBareToKey,       // password=Hun ter=2Q user=u (unquoted, spaces and '=' up to the next recognised key;
                    // the key spelled password=, PASSWORD=, Password = or sslpassword=)
  kMalformedUri,    // postgresql:/u:pw@h/db, postgresql//u:pw@h/db, postgres:u:pw@h/db, u:pw@h/db
  kForms
};
const char* const kFormNames[] = {"quoted",        "bare",          "bare-escaped", "spaced",           "upper-key",
                                  "unterminated",  "sslpassword",   "uri-userinfo", "uri-userinfo-raw", "uri-query",
                                  "uri-query-raw", "uri-query-key", "nested-kv",    "nested-uri",       "uri-no-user",
                                  "bare-to-key",   "malformed-uri"};

bool IsKv(int form) { return form <= kSslPassword || form == kNestedKv || form == kNestedUri || form == kBareToKey; }

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A value as written between the quotes of a quoted key=value value.
constexpr EscapeTable kKvEscapes{{'\'', "\\'"}, {'\\', "\\\\"}};
std::string KvEscape(std::string_view v) { return Escaped(v, kKvEscapes); }
std::string KvQuote(std::string_view v) { return "'" + KvEscape(v) + "'"; }

std::string Pct(std::string_view v, bool lower) {
  const char* hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  std::string out;
  for (char c : v) {
    if (IsAlnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += hex[static_cast<unsigned char>(c) >> 4];
      out += hex[static_cast<unsigned char>(c) & 15];
    }
  }
  return out;
}

bool ContainsNoCase(std::string_view s, std::string_view lower_needle) {
  auto it = std::search(s.begin(), s.end(), lower_needle.begin(), lower_needle.end(),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return it != s.end();
}

struct Values {
  std::string user, host, dbname, app, options;
};

// The password as this form can hold it unambiguously.
std::string Normalize(int form, std::string pw) {
  for (char& c : pw) {
    if (c == '\0' || c == '*') c = '_';
    if ((form == kBare) && (IsSpace(c) || c == '\\')) c = '_';
    if (form == kUriUserinfoRaw && (c == '@' || c == '/')) c = '_';
    if (form == kUriQueryRaw && c == '&') c = '_';
    // Bare up to the next key: no escapes; a malformed URI: its user info up to an '@'.
    if (form == kBareToKey && c == '\\') c = '_';
    if (form == kMalformedUri && (c == '@' || c == '/' || c == '\\')) c = '_';
  }
  if ((form == kBare || form == kBareToKey) && !pw.empty() && pw[0] == '\'') pw[0] = '_';
  if (form == kBareToKey || form == kMalformedUri) {
    // Whitespace at either end is the separator's, not the password's; a recognised key after
    // whitespace would start the next pair (that is where the user's password ends).
    while (!pw.empty() && IsSpace(pw.front())) pw.front() = '_';
    while (!pw.empty() && IsSpace(pw.back())) pw.back() = '_';
    for (size_t i = 1; i < pw.size(); ++i) {
      if (!IsSpace(pw[i - 1])) continue;
      for (const std::string& k : LibpqKeywords()) {
        if (pw.compare(i, k.size(), k) != 0) continue;
        size_t j = i + k.size();
        while (j < pw.size() && IsSpace(pw[j])) ++j;
        if (j < pw.size() && pw[j] == '=') pw[j] = '_';
      }
    }
  }
  return pw;
}

// A conninfo: prefix + written + suffix, where `written` is the password as it is written there.
struct Built {
  std::string prefix, written, suffix;
  std::string text() const { return prefix + written + suffix; }
};

Built Build(int form, unsigned flags, const std::string& pw, const Values& v) {
  const bool lower = flags & 32;
  const size_t before = flags & 3;
  const unsigned junk = (flags >> 2) & 3;
  const std::string scheme = (flags & 16) ? "postgres://" : "postgresql://";
  Built b;
  if (IsKv(form)) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& [k, val] : std::vector<std::pair<std::string, std::string>>{{"user", v.user},
                                                                                 {"host", v.host},
                                                                                 {"dbname", v.dbname},
                                                                                 {"application_name", v.app},
                                                                                 {"options", v.options}})
      if (!val.empty() && !((form == kNestedKv || form == kNestedUri) && k == "dbname")) pairs.emplace_back(k, val);
    const size_t n = form == kUnterminated ? pairs.size() : std::min(before, pairs.size());
    std::string pre, post;
    for (size_t i = 0; i < pairs.size(); ++i)
      (i < n ? pre : post) += (i < n ? "" : " ") + pairs[i].first + "=" + KvQuote(pairs[i].second) + (i < n ? " " : "");
    std::string open, close;
    switch (form) {
      case kQuoted:
        open = "password='", b.written = KvEscape(pw), close = "'";
        break;
      case kBare:
        open = "password=", b.written = pw;
        break;
      case kBareEscaped:
        open = "password=";
        for (char c : pw) {
          if (IsSpace(c) || c == '\\' || c == '\'') b.written += '\\';
          b.written += c;
        }
        break;
      case kSpaced:
        open = "password = '", b.written = KvEscape(pw), close = "'";
        break;
      case kUpperKey:
        open = "PASSWORD='", b.written = KvEscape(pw), close = "'";
        break;
      case kUnterminated:
        open = "password='", b.written = KvEscape(pw);
        break;
      case kSslPassword:
        open = "sslpassword='", b.written = KvEscape(pw), close = "'";
        break;
      case kBareToKey: {
        static const char* const kKeys[] = {"password=", "PASSWORD=", "Password =", "sslpassword="};
        open = kKeys[(flags >> 6) & 3], b.written = pw;
        break;
      }
      case kNestedKv:
        open = "dbname='" + KvEscape("user=" + KvQuote(v.user) + " password='");
        b.written = KvEscape(KvEscape(pw));
        close = KvEscape("'") + "'";
        break;
      case kNestedUri:
        open = "dbname='" + KvEscape(scheme + Pct(v.user, lower) + ":");
        b.written = KvEscape(Pct(pw, lower));
        close = KvEscape("@" + Pct(v.host, lower) + "/" + Pct(v.dbname, lower)) + "'";
        break;
    }
    if (form == kUnterminated) {
      b.prefix = pre + open;
      return b;
    }
    static const char* const kJunk[] = {"", " junk", " bogus_option=1", " host='open"};
    b.prefix = pre + open;
    b.suffix = close + post + kJunk[junk];
    return b;
  }
  if (form == kMalformedUri) {
    static const char* const kSchemes[] = {"postgresql:/", "postgresql//", "postgres:", ""};
    static const char* const kJunk[] = {"", "?application_name=x", " junk", "?bogus=1"};
    b.prefix = std::string(kSchemes[(flags >> 6) & 3]) + v.user + ":";
    b.written = pw;
    b.suffix = "@" + v.host + "/" + v.dbname + kJunk[junk];
    return b;
  }
  // URIs.
  std::vector<std::string> params;
  if (!v.app.empty()) params.push_back("application_name=" + Pct(v.app, lower));
  if (!v.options.empty()) params.push_back("options=" + Pct(v.options, lower));
  const std::string path = "/" + Pct(v.dbname, lower);
  static const char* const kJunk[] = {"", "application_name=%zz", "noeq", "bogus=1"};
  auto query = [&](const std::vector<std::string>& ps) {
    std::string q;
    for (const auto& p : ps) q += (q.empty() ? "?" : "&") + p;
    return q;
  };
  std::vector<std::string> tail = params;
  if (junk) tail.push_back(kJunk[junk]);
  if (form == kUriUserinfo || form == kUriUserinfoRaw || form == kUriNoUser) {
    b.prefix = scheme + (form == kUriNoUser ? "" : Pct(v.user, lower)) + ":";
    b.written = form == kUriUserinfoRaw ? pw : Pct(pw, lower);
    b.suffix = "@" + Pct(v.host, lower) + path + query(tail);
    return b;
  }
  static const char* const kKeys[] = {"pass%77ord=", "%70%61%73%73%77%6f%72%64=", "PASSWORD=", "sslpassword="};
  const std::string key = form == kUriQueryKey ? kKeys[(flags >> 6) & 3] : "password=";
  const size_t n = std::min(before, params.size());
  std::vector<std::string> pre(params.begin(), params.begin() + n);
  std::vector<std::string> post(params.begin() + n, params.end());
  if (junk) post.push_back(kJunk[junk]);
  std::string q = query(pre);
  b.prefix = scheme + (v.user.empty() ? "" : Pct(v.user, lower) + "@") + Pct(v.host, lower) + path +
             (q.empty() ? "?" : q + "&") + key;
  b.written = form == kUriQueryRaw ? pw : Pct(pw, lower);
  for (const auto& p : post) b.suffix += "&" + p;
  return b;
}

// Every password and sslpassword libpq parses from `conninfo`, also in a nested dbname conninfo.
void Parsed(const std::string& conninfo, std::vector<std::string>& out, int depth = 0) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  if (!opts) return;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string_view k = o->keyword;
    if (k == "password" || k == "sslpassword") out.emplace_back(o->val);
    if (k == "dbname" && depth < 2 &&
        (std::string_view(o->val).find('=') != std::string_view::npos ||
         std::string_view(o->val).rfind("postgres", 0) == 0))
      Parsed(o->val, out, depth + 1);
  }
  PQconninfoFree(opts);
}

// libpq's message when it cannot parse `conninfo` ("" when it can).
std::string LibpqError(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  std::string msg = err ? err : "";
  if (err) PQfreemem(err);
  if (opts) PQconninfoFree(opts);
  while (!msg.empty() && IsSpace(msg.back())) msg.pop_back();
  return msg;
}

// What libpq's message `msg` holds whatever the password: its own wording (outside "quotes"),
// and the quoted parts that quote the conninfo outside the password (a keyword, a token).
std::string LibpqWording(const std::string& msg, const Built& b) {
  std::string out, quoted;
  bool in = false;
  for (char c : msg) {
    if (c == '"') {
      if (in && (b.prefix.find(quoted) != std::string::npos || b.suffix.find(quoted) != std::string::npos))
        out += quoted;
      in = !in;
      quoted.clear();
      out += '\x01';
    } else if (in) {
      quoted += c;
    } else {
      out += c;
    }
  }
  return out;
}

// pg::Connection::Open's message around the redacted conninfo and libpq's message.
constexpr char kConnectFormat[] = "cannot connect to database {}: {}";

struct Texts {
  std::string redacted, status_raw, status_password, connect_error, libpq_error;
};

Texts Render(const Built& b, const std::string& pw) {
  const std::string conninfo = b.text();
  Texts t;
  t.redacted = RedactConninfo(conninfo);
  t.status_raw = Status::Runtime("cannot use " + conninfo).With("digest schema \"s\"").message();
  std::vector<std::string> effective;
  Parsed(conninfo, effective);
  std::string told = "<" + pw + ">";
  for (const auto& e : effective) told += "<" + e + ">";
  t.status_password = Status::Usage(told).message();
  t.libpq_error = LibpqError(conninfo);
  if (!t.libpq_error.empty())
    t.connect_error = Status::Usage(fmt::format(kConnectFormat, t.redacted, t.libpq_error)).message();
  return t;
}

bool TokenChar(char c) { return IsAlnum(c) || c == '*'; }

// Occurrences of `piece` in `text` (a 3-byte piece: as a whole token only).
size_t Count(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (size_t pos = text.find(piece); pos != std::string::npos; pos = text.find(piece, pos + 1)) {
    if (piece.size() < 4 && ((pos > 0 && TokenChar(text[pos - 1])) ||
                             (pos + piece.size() < text.size() && TokenChar(text[pos + piece.size()]))))
      continue;
    ++n;
  }
  return n;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    out += (c >= 0x20 && c < 0x7f && c != '\\') ? std::string(1, c) : fmt::format("\\x{:02x}", c);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int form = data[0] % kForms;
  const unsigned flags = data[1];
  std::vector<std::string> fields(1);
  for (size_t i = 2; i < size; ++i) {
    if (data[i] == 0x1f) {
      fields.emplace_back();
      continue;
    }
    fields.back() += static_cast<char>(data[i]);
  }
  fields.resize(std::max<size_t>(fields.size(), 6));
  const std::string pw = Normalize(form, fields[0].substr(0, 48));
  Values v;
  std::string* slots[] = {&v.user, &v.host, &v.dbname, &v.app, &v.options};
  for (size_t i = 0; i < 5; ++i) {
    std::string val = fields[i + 1].substr(0, 24);
    for (char& c : val)
      if (c == '\0' || c == '*' || c == '"') c = '_';
    if (ContainsNoCase(val, "password")) return 0;  // a second password
    *slots[i] = val;
  }

  // The filler: an upper-case letter found nowhere in the password or the values.
  char filler = 0;
  for (char c : std::string_view("QZXJKVWYGHFMNBDLPRTUCEIOAS")) {
    bool used = pw.find(c) != std::string::npos;
    for (std::string* s : slots) used = used || s->find(c) != std::string::npos;
    if (!used) {
      filler = c;
      break;
    }
  }
  if (!filler) return 0;

  // The password's texts first, then the baseline's with the password's secrets still
  // registered: text outside the password is scrubbed alike in both (a value that a short secret
  // turned into "***" is quoted alike), and the filler's secrets hold a letter found nowhere else.
  ForgetSecretsForTesting();
  const Built built = Build(form, flags, pw, v);
  const Texts out = Render(built, pw);
  const Texts base = Render(Build(form, flags, std::string(pw.size(), filler), v), std::string(pw.size(), filler));
  if (pw.size() < 3) return 0;  // never checked (see the rule above)

  // The secrets and their pieces.
  std::vector<std::string> secrets = {pw, built.written};
  Parsed(built.text(), secrets);
  std::set<std::string> pieces;
  for (const auto& s : secrets) {
    if (s.size() == 3) pieces.insert(s);
    for (size_t i = 0; i + 4 <= s.size(); ++i) pieces.insert(s.substr(i, 4));
  }
  // Text that is there whatever the password: the conninfo outside it, libpq's wording.
  const std::string outside = built.prefix + '\x01' + built.suffix;
  const bool quotes = pw.find('"') != std::string::npos || built.written.find('"') != std::string::npos;
  // The connect error less what libpq quotes of the password: the redacted conninfo is checked
  // on its own (RedactConninfo, above).
  const std::string wording = fmt::format(kConnectFormat, out.redacted, LibpqWording(out.libpq_error, built));

  const struct {
    const char* name;
    const std::string& leaked;
    const std::string& baseline;
  } checks[] = {
      {"RedactConninfo", out.redacted, base.redacted},
      {"a Status holding the conninfo", out.status_raw, base.status_raw},
      {"a Status holding the password", out.status_password, base.status_password},
      {"the connect error", out.connect_error, base.connect_error},
  };
  for (const auto& c : checks) {
    if (&c.leaked == &out.connect_error && quotes) continue;  // libpq's quoting would be ambiguous
    for (const auto& piece : pieces) {
      const size_t shown = Count(c.leaked, piece);
      if (shown == 0) continue;
      size_t allowed = Count(c.baseline, piece) + Count(outside, piece);
      if (&c.leaked == &out.connect_error) allowed += Count(wording, piece);
      LD_FUZZ_CHECK(shown <= allowed,
                    "password leak: form {} ({}), {} holds \"{}\" of password \"{}\" ({} times, {} allowed)\n"
                    "  conninfo: {}\n  text:     {}\n  baseline: {}",
                    form, kFormNames[form], c.name, Printable(piece), Printable(pw), shown, allowed,
                    Printable(built.text()), Printable(c.leaked), Printable(c.baseline));
    }
  }
  return 0;
}
