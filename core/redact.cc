#include "core/redact.h"

#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>

namespace ledgerdiff {

namespace {

constexpr size_t kWholeTokenBelow = 4;

std::mutex g_mu;
std::set<std::string> g_secrets;  // GUARDED_BY(g_mu)
std::atomic<size_t> g_count{0};

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

// A conninfo value as libpq's key=value syntax writes it: bare when it can be, else quoted.
std::string ConninfoQuote(std::string_view v) {
  bool bare = !v.empty() && std::none_of(v.begin(), v.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\'' || c == '\\';
  });
  if (bare) return std::string(v);
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string BackslashEscape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\'' || c == '\\' || c == ' ') out += '\\';
    out += c;
  }
  return out;
}

bool LooksLikeConninfo(std::string_view s) {
  return s.find('=') != std::string_view::npos || s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

bool IsUri(std::string_view s) { return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0; }

// What a lenient scan finds where libpq's grammar may not: `password` keys in any case, URI
// user info and query parameters, with or without valid escapes.
void ScanPasswords(std::string_view s, std::vector<std::string>& out) {
  const bool uri = IsUri(s);
  if (uri) {
    size_t start = s.find("://") + 3;
    size_t end = s.find_first_of("/?", start);
    std::string_view authority = s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t colon = authority.find(':');
    size_t first_at = authority.find('@');
    size_t last_at = authority.rfind('@');
    if (colon != std::string_view::npos && first_at != std::string_view::npos && colon < first_at)
      out.emplace_back(authority.substr(colon + 1, first_at - colon - 1));
    if (colon != std::string_view::npos && last_at != std::string_view::npos && colon < last_at)
      out.emplace_back(authority.substr(colon + 1, last_at - colon - 1));
  }
  for (size_t pos = 0; (pos = [&] {
         for (size_t i = pos; i < s.size(); ++i)
           if (StartsWithNoCase(s, i, "password")) return i;
         return std::string_view::npos;
       }()) != std::string_view::npos;) {
    size_t i = pos + 8;
    pos = i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || s[i] != '=') continue;
    ++i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::string raw, value;
    if (i < s.size() && s[i] == '\'') {
      for (++i; i < s.size() && s[i] != '\''; ++i) {
        raw += s[i];
        if (s[i] == '\\' && i + 1 < s.size()) raw += s[++i];
        value += s[i];
      }
    } else {
      for (; i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && !(uri && s[i] == '&'); ++i) {
        raw += s[i];
        if (s[i] == '\\' && i + 1 < s.size()) raw += s[++i];
        value += s[i];
      }
    }
    out.push_back(raw);
    out.push_back(value);
  }
}

void AddForms(std::string_view secret, std::set<std::string>& forms) {
  if (secret.empty()) return;
  forms.emplace(secret);
  if (std::string d = PercentDecode(secret); !d.empty()) forms.insert(d);
  forms.insert(PercentEncode(secret));
  forms.insert(BackslashEscape(secret));
  forms.insert(ConninfoQuote(secret));
}

bool IsWholeToken(const std::string& text, size_t pos, size_t len) {
  return (pos == 0 || !IsAlnum(text[pos - 1])) && (pos + len >= text.size() || !IsAlnum(text[pos + len]));
}

}  // namespace

std::vector<std::string> ConninfoPasswords(std::string_view conninfo) {
  std::vector<std::string> out;
  std::string s(conninfo);
  char* err = nullptr;
  if (PQconninfoOption* opts = PQconninfoParse(s.c_str(), &err)) {
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      if (!o->val) continue;
      if (std::string_view(o->keyword) == "password") out.emplace_back(o->val);
      if (std::string_view(o->keyword) == "dbname" && LooksLikeConninfo(o->val) && std::string_view(o->val) != conninfo) {
        for (auto& p : ConninfoPasswords(o->val)) out.push_back(std::move(p));
      }
    }
    PQconninfoFree(opts);
  }
  if (err) PQfreemem(err);
  ScanPasswords(conninfo, out);
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
}

void RegisterEnvironmentSecrets() {
  if (const char* p = std::getenv("PGPASSWORD"); p && *p) RegisterSecret(p);
}

std::string ScrubSecrets(std::string text) {
  if (g_count.load(std::memory_order_relaxed) == 0 || text.empty()) return text;
  std::vector<std::string> secrets;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    secrets.assign(g_secrets.begin(), g_secrets.end());
  }
  // Longest first, so that a form containing another is replaced whole.
  std::stable_sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& secret : secrets) {
    size_t pos = 0;
    while ((pos = text.find(secret, pos)) != std::string::npos) {
      if (secret.size() < kWholeTokenBelow && !IsWholeToken(text, pos, secret.size())) {
        pos += 1;
        continue;
      }
      text.replace(pos, secret.size(), "***");
      pos += 3;
    }
  }
  return text;
}

std::string RedactConninfo(std::string_view conninfo) {
  RegisterConninfoSecrets(conninfo);
  std::string s(conninfo);
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(s.c_str(), &err);
  if (err) PQfreemem(err);
  if (!opts) {
    // libpq cannot parse it: mask every candidate in the text as written.
    std::vector<std::string> candidates = ConninfoPasswords(conninfo);
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& c : candidates) {
      for (size_t pos = 0; (pos = s.find(c, pos)) != std::string::npos; pos += 3) s.replace(pos, c.size(), "***");
    }
    return s;
  }
  std::string out;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val || std::string_view(o->keyword) == "password") continue;
    std::string value = o->val;
    if (std::string_view(o->keyword) == "dbname" && LooksLikeConninfo(value) && value != conninfo)
      value = RedactConninfo(value);
    out += (out.empty() ? "" : " ") + std::string(o->keyword) + "=" + ConninfoQuote(value);
  }
  PQconninfoFree(opts);
  return ScrubSecrets(out);
}

}  // namespace ledgerdiff
