#include "core/report.h"

#include "core/atomic_file.h"
#include "core/redact.h"
#include "core/text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

namespace ledgerdiff {

void RecentRate::Add(const std::string& phase, double t_s, uint64_t done, uint64_t work_done) {
  if (phase != phase_ ||
      (!samples_.empty() && (done < samples_.back().done || work_done < samples_.back().work_done))) {
    phase_ = phase;
    samples_.clear();
  }
  samples_.push_back({t_s, done, work_done});
  // Keep one sample at or before the window's start so the window is always covered.
  while (samples_.size() > 2 && samples_[1].t_s <= t_s - window_s_) samples_.pop_front();
}

double RecentRate::PerSecond(uint64_t Sample::*of) const {
  if (samples_.size() < 2) return 0;
  const Sample& first = samples_.front();
  const Sample& last = samples_.back();
  if (last.t_s - first.t_s < 0.2 || last.*of <= first.*of) return 0;
  return static_cast<double>(last.*of - first.*of) / (last.t_s - first.t_s);
}

double RecentRate::rate() const { return PerSecond(&Sample::done); }

double RecentRate::work_rate() const { return PerSecond(&Sample::work_done); }

double RecentRate::Eta(uint64_t total, uint64_t work_total) const {
  if (samples_.empty()) return -1;
  const Sample& last = samples_.back();
  const bool by_work = work_total > 0;
  const uint64_t left_of = by_work ? work_total : total;
  const uint64_t done = by_work ? last.work_done : last.done;
  const double r = by_work ? work_rate() : rate();
  if (r <= 0 || left_of == 0) return -1;
  return done >= left_of ? 0 : static_cast<double>(left_of - done) / r;
}

std::string FormatProgressLine(const Progress& p, double rate, double eta_s) {
  std::string head = p.total ? fmt::format("{}: {} / {} {}", p.phase, FormatCount(p.done), FormatCount(p.total), p.unit)
                             : fmt::format("{}: {} {}", p.phase, FormatCount(p.done), p.unit);
  if (p.total) head += fmt::format(" ({:.1f}%)", 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total));
  if (rate > 0) head += fmt::format(", {:.0f} {}/s", rate, p.unit);
  if (eta_s >= 0 && p.done != p.total) head += ", ETA " + FormatDuration(eta_s);
  return head;
}

std::string FormatCommandProgress(std::string_view command, const CommandEstimate& e) {
  std::string line = fmt::format("{} {:.0f}%", command, 100 * e.fraction);
  if (e.index) line += fmt::format(" ({}, phase {} of {})", e.phase, e.index, e.count);
  if (e.eta_s >= 0) line += ", ETA " + FormatDuration(e.eta_s);
  return line;
}

std::string IsoTimeNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void LiveBlock::Update(const Progress& p, double rate, double eta_s) {
  auto at = std::find_if(phases_.begin(), phases_.end(), [&](const Entry& e) { return e.last.phase == p.phase; });
  if (p.total && p.done >= p.total) {
    if (at != phases_.end()) phases_.erase(at);
    return;
  }
  if (at == phases_.end()) at = phases_.insert(phases_.end(), Entry{});
  *at = Entry{p, rate, eta_s};
}

std::string LiveBlock::Frame() const {
  std::string frame;
  for (const Entry& e : phases_) {
    frame += FormatProgressLine(e.last, e.rate, e.eta_s) + "\n";
    for (const auto& w : e.last.workers) frame += "  " + w + "\n";
  }
  return frame;
}

StderrReporter::StderrReporter(bool quiet, double log_interval_s)
    : StderrReporter(quiet, isatty(2) != 0 ? Display::kLiveBlock : Display::kLogLines, log_interval_s, stderr) {}

StderrReporter::StderrReporter(bool quiet, Display display, double log_interval_s, std::FILE* out)
    : tty_(display == Display::kLiveBlock), quiet_(quiet), log_interval_s_(log_interval_s), out_(out) {}

void StderrReporter::ClearLive() {
  for (int i = 0; i < live_lines_; ++i) std::fputs("\x1b[1A\x1b[2K", out_);
  if (live_lines_) std::fputs("\r", out_);
  live_lines_ = 0;
}

void StderrReporter::Note(std::string_view line) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_) ClearLive();
  fmt::print(out_, "{}\n", ScrubSecrets(std::string(line)));  // notes may quote foreign text
  std::fflush(out_);
}

void StderrReporter::Update(const Progress& p) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  Phase& phase = phases_[p.phase];
  const double t_s = std::chrono::duration<double>(now - start_).count();
  phase.rate.Add(p.phase, t_s, p.done, p.work_done);
  phase.last = p;
  overall_.Update(p, t_s, phase.rate.Eta(p.total, p.work_total));
  if (!tty_) {
    // A log: one line per interval in all, a phase's first once it has run an interval (a short
    // phase stays out of the log; its notes say what happened).
    const auto interval = std::chrono::duration<double>(log_interval_s_);
    if (!phase.logged) {
      phase.logged = true;
      phase.last_line = now;
      return;
    }
    if (now - phase.last_line < interval || now - last_log_line_ < interval) return;
    // Phases at once (left and right digests) take turns: the one longest without a line.
    Phase* due = &phase;
    for (auto& [name, other] : phases_) {
      const bool finished = other.last.total && other.last.done >= other.last.total;
      if (other.logged && !finished && other.last_line < due->last_line) due = &other;
    }
    due->last_line = last_log_line_ = now;
    const Progress& shown = due->last;
    const double rate = due->rate.rate() > 0 ? due->rate.rate() : shown.rate_per_s;
    // Planned: one ETA, the command's; else the phase's own.
    const std::string line =
        overall_.planned()
            ? FormatProgressLine(shown, rate, -1) + "; " + FormatCommandProgress(command_, overall_.Estimate(t_s, &shown))
            : FormatProgressLine(shown, rate, due->rate.Eta(shown.total, shown.work_total));
    fmt::print(out_, "{} {}\n", IsoTimeNow(), line);
    std::fflush(out_);
    return;
  }
  const bool finished = p.total && p.done >= p.total;
  live_.Update(p, phase.rate.rate() > 0 ? phase.rate.rate() : p.rate_per_s, phase.rate.Eta(p.total, p.work_total));
  if (now - last_draw_ < std::chrono::milliseconds(100) && !finished) return;
  last_draw_ = now;
  ClearLive();
  std::string frame = live_.Frame();
  if (overall_.planned() && !frame.empty()) frame = FormatCommandProgress(command_, overall_.Estimate(t_s)) + "\n" + frame;
  std::fputs(frame.c_str(), out_);
  live_lines_ = static_cast<int>(std::count(frame.begin(), frame.end(), '\n'));
  std::fflush(out_);
}

void StderrReporter::Event(std::string_view line) {
  if (quiet_ || tty_) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_log_line_ < std::chrono::duration<double>(log_interval_s_)) return;
  last_log_line_ = now;
  fmt::print(out_, "{}\n", ScrubSecrets(std::string(line)));
  std::fflush(out_);
}

void StderrReporter::Plan(std::string_view command, const CommandPlan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  command_ = command;
  overall_ = CommandEta(plan);
}

void StderrReporter::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_) ClearLive();
}

namespace {

// GitHub workflow command escaping: data may not contain %, CR or LF; properties also not : or ,.
std::string GithubData(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}
std::string GithubProperty(std::string_view s) {
  std::string out;
  for (char c : GithubData(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

// The step summary is a file the CI runner owns and appends to: append, never through a link.
Status AppendToFile(const std::string& path, const std::string& content) {
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Usagef("cannot write {}: {}", path, std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return Status::Runtimef("cannot write {}: {}", path, std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Status::Runtimef("cannot write {}: {}", path, std::strerror(errno));
  return Status::Ok();
}

}  // namespace

CiEnvironment CiEnvironment::FromEnvironment() {
  CiEnvironment ci;
  const char* gha = std::getenv("GITHUB_ACTIONS");
  ci.github_annotations = gha && std::string_view(gha) == "true";
  if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY")) ci.step_summary = summary;
  return ci;
}

std::vector<std::string> GithubAnnotations(const GateSummary& s) {
  std::vector<std::string> out;
  bool failing_check = false;
  for (const auto& c : s.checks) {
    if (c.state == GateCheck::State::kPass) continue;
    const bool warning = c.state == GateCheck::State::kWarning;
    failing_check = failing_check || !warning;
    out.push_back(fmt::format("::{} title={}::{}", warning ? "warning" : "error",
                              GithubProperty("ledgerdiff " + s.command + ": " + c.name),
                              GithubData(c.message.empty() ? c.name : c.message)));
  }
  if (!s.passed && !failing_check) {
    std::string message = "verdict " + s.verdict;
    for (const auto& [label, command] : s.next_steps) message += "\n" + label + ": " + command;
    out.push_back(fmt::format("::error title={}::{}", GithubProperty("ledgerdiff " + s.command), GithubData(message)));
  } else if (!s.passed) {
    // The failing checks say what; this says what to run next.
    for (const auto& [label, command] : s.next_steps)
      out.push_back(fmt::format("::notice title={}::{}", GithubProperty("ledgerdiff " + s.command + ": " + label),
                                GithubData(command)));
  }
  return out;
}

namespace {
// The metrics file a previous run wrote ("" when there is none or it cannot be read: then only
// the carried last-success time is lost). Only a regular file is read.
std::string ReadPreviousMetrics(const std::string& path) {
  int open_errno = 0;
  auto fd = OpenRegularFile(path, "metrics " + path, O_RDONLY, &open_errno);
  if (!fd.ok()) return "";
  std::string content;
  char buf[8192];
  for (ssize_t n; (n = ::read(*fd, buf, sizeof buf)) > 0 && content.size() < (1u << 20);) content.append(buf, n);
  ::close(*fd);
  return content;
}
}  // namespace

Status EmitGateReports(const GateReports& r, const ReportFiles& files, const CiEnvironment& ci,
                       std::FILE* annotations_out) {
  // Every sink is tried: one that cannot be written does not cost the others (nor the verdict,
  // which the caller prints first). The failures are returned together.
  std::vector<std::string> failed;
  auto note = [&failed](const Status& s) {
    if (!s.ok()) failed.push_back(s.message());
  };
  if (!files.junit.empty() && r.junit) note(WriteFileAtomic(files.junit, r.junit()));
  std::string markdown;
  if ((!files.markdown.empty() || !ci.step_summary.empty()) && r.markdown) markdown = r.markdown();
  if (!files.markdown.empty() && r.markdown) note(WriteFileAtomic(files.markdown, markdown));
  if (!files.report_dir.empty() && r.html) note(r.html(files.report_dir));
  if (!files.metrics.empty() && r.metrics) note(WriteFileAtomic(files.metrics, r.metrics(ReadPreviousMetrics(files.metrics), std::time(nullptr))));
  if (ci.github_annotations) {
    for (const auto& line : GithubAnnotations(r.summary)) fmt::print(annotations_out, "{}\n", ScrubSecrets(line));
    std::fflush(annotations_out);
  }
  if (!ci.step_summary.empty() && !markdown.empty()) note(AppendToFile(ci.step_summary, markdown + "\n"));
  if (failed.empty()) return Status::Ok();
  std::string message;
  for (const auto& m : failed) message += (message.empty() ? "" : "; ") + m;
  return Status::Runtime(message);
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

std::string FormatCountOf(uint64_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  return plural.empty() ? fmt::format("{} {}s", FormatCount(n), noun) : fmt::format("{} {}", FormatCount(n), plural);
}

std::string XmlEscape(std::string_view s) {
  static constexpr EscapeTable kXml{{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
  std::string out;
  out.reserve(s.size());
  AppendEscaped(out, s, kXml);
  return out;
}

}  // namespace ledgerdiff
