#pragma once
// Reporting: the library never prints. Long-running work talks to a Reporter (progress and
// notes for people, on stderr); each command returns a result value that the CLI renders as
// text, JSON, JUnit, Markdown or HTML with the renderers of its room.

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ledgerdiff {

enum class OutputFormat { kText, kJson };

struct Progress {
  std::string phase;            // "serial ingest", "digest left", ...
  uint64_t done = 0;            // units done
  uint64_t total = 0;           // units in all (0: unknown)
  std::string unit = "ledgers";
  double rate_per_s = 0;        // units per second since the phase started
  double eta_s = -1;            // seconds left, -1 unknown
  std::vector<std::string> workers;  // what each worker does now ("w1 job 3 [201-300]")
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // A note for a log: one line, no trailing newline.
  virtual void Note(std::string_view line) = 0;
  // A progress update; may be called often (the reporter throttles).
  virtual void Update(const Progress& progress) = 0;
  // Ends the live progress display (before final output).
  virtual void Done() {}
  // True when progress is shown live (a terminal): then per-job notes are not needed.
  virtual bool live() const { return false; }
};

// Writes notes to stderr; on a terminal, progress is one live status block redrawn at most
// 10 times a second, otherwise progress updates are dropped and notes are the log.
class StderrReporter : public Reporter {
 public:
  explicit StderrReporter(bool quiet = false);
  void Note(std::string_view line) override;
  void Update(const Progress& progress) override;
  void Done() override;
  bool live() const override { return tty_ && !quiet_; }

 private:
  void ClearLive();
  bool tty_;
  bool quiet_;
  std::mutex mu_;
  int live_lines_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

class NullReporter : public Reporter {
 public:
  void Note(std::string_view) override {}
  void Update(const Progress&) override {}
};

// "1.2 s", "3 min 4 s"
std::string FormatDuration(double seconds);
// 1234567 -> "1,234,567"
std::string FormatCount(uint64_t n);

// Escapes text for XML/HTML attribute and element content.
std::string XmlEscape(std::string_view s);

// Seconds since `start` on the steady clock.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ledgerdiff
