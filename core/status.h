#pragma once
// Errors as values at module edges.
//
// A Status is either ok or an error with a kind and a one-line message that names what failed.
// Result<T> holds a T or an error Status. Exceptions (libpq errors surfaced by core/pg, std
// exceptions) never cross a module edge: they are caught and turned into a Status there.

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "core/redact.h"

namespace ledgerdiff {

// Process exit codes, like diff(1), plus one for failures that a retry may cure. A scheduler
// retries 3 (and signals) and never 1 or 2 (deploy/ encodes exactly that policy).
enum class ExitCode : int {
  kOk = 0,         // identical, or the command succeeded
  kDifferent = 1,  // divergent, incomplete, or anomalies found
  kUsage = 2,      // usage error or bad input: nothing was done, retrying will not help
  kRuntime = 3,    // runtime failure (connection refused or lost, server or I/O error): retrying may help
};

class [[nodiscard]] Status {
 public:
  enum class Kind {
    kOk,
    kUsage,      // bad input from the user: flags, ranges, names, files
    kRuntime,    // the environment failed: database, processes, I/O
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status Usage(std::string msg) { return Status(Kind::kUsage, std::move(msg)); }
  static Status Runtime(std::string msg) { return Status(Kind::kRuntime, std::move(msg)); }
  template <typename... Args>
  static Status Usagef(fmt::format_string<Args...> f, Args&&... args) {
    return Usage(fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  static Status Runtimef(fmt::format_string<Args...> f, Args&&... args) {
    return Runtime(fmt::format(f, std::forward<Args>(args)...));
  }

  bool ok() const { return kind_ == Kind::kOk; }
  Kind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  ExitCode exit_code() const {
    switch (kind_) {
      case Kind::kOk: return ExitCode::kOk;
      case Kind::kUsage: return ExitCode::kUsage;
      case Kind::kRuntime: return ExitCode::kRuntime;
    }
    return ExitCode::kRuntime;
  }
  // Prefixes the message with context ("digest schema \"a\": " + message).
  Status With(const std::string& context) const {
    if (ok()) return *this;
    return Status(kind_, context + ": " + message_);
  }

 private:
  // INVARIANT: a message never holds a registered secret (core/redact.h).
  Status(Kind kind, std::string message) : kind_(kind), message_(ScrubSecrets(std::move(message))) {}
  Kind kind_ = Kind::kOk;
  std::string message_;
};

// Result<T>: a value or an error Status (never an ok Status).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) std::abort();  // REQUIRES: status is an error
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ledgerdiff

// Propagates an error Status (or the Status of an error Result) to the caller.
#define LD_RETURN_IF_ERROR(expr)                        \
  do {                                                  \
    auto ld_status_ = (expr);                           \
    if (!ld_status_.ok()) return ld_status_;            \
  } while (0)

#define LD_CONCAT_INNER_(a, b) a##b
#define LD_CONCAT_(a, b) LD_CONCAT_INNER_(a, b)
// Declares `lhs` from a Result's value, or returns its error Status.
#define LD_ASSIGN_OR_RETURN(lhs, expr) \
  LD_ASSIGN_OR_RETURN_IMPL_(LD_CONCAT_(ld_result_, __LINE__), lhs, expr)
#define LD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
