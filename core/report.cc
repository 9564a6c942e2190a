#include "core/report.h"

#include "core/redact.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace ledgerdiff {

StderrReporter::StderrReporter(bool quiet) : tty_(isatty(2) != 0), quiet_(quiet) {}

void StderrReporter::ClearLive() {
  for (int i = 0; i < live_lines_; ++i) std::fputs("\x1b[1A\x1b[2K", stderr);
  if (live_lines_) std::fputs("\r", stderr);
  live_lines_ = 0;
}

void StderrReporter::Note(std::string_view line) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_) ClearLive();
  fmt::print(stderr, "{}\n", ScrubSecrets(std::string(line)));  // notes may quote foreign text
  std::fflush(stderr);
}

void StderrReporter::Update(const Progress& p) {
  if (!tty_ || quiet_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && p.done != p.total) return;
  last_draw_ = now;
  ClearLive();
  std::string head = fmt::format("{}: {} / {} {}", p.phase, FormatCount(p.done), FormatCount(p.total), p.unit);
  if (p.total) head += fmt::format(" ({:.1f}%)", 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total));
  if (p.rate_per_s > 0) head += fmt::format(", {:.0f} {}/s", p.rate_per_s, p.unit);
  if (p.eta_s >= 0) head += ", ETA " + FormatDuration(p.eta_s);
  fmt::print(stderr, "{}\n", head);
  live_lines_ = 1;
  for (const auto& w : p.workers) {
    fmt::print(stderr, "  {}\n", w);
    ++live_lines_;
  }
  std::fflush(stderr);
}

void StderrReporter::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_) ClearLive();
}

std::string FormatDuration(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{} min {} s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{} h {} min", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
}

std::string FormatCount(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return out;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace ledgerdiff
