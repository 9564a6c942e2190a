#pragma once
// PostgreSQL access over libpq: connections, queries with parameters, COPY streaming.
//
// libpqxx 6.4 can only COPY whole tables (no COPY (query) TO STDOUT) and marks its raw-line
// streams deprecated, so the hot paths use libpq's COPY API directly through this wrapper.
// Every call returns a Status/Result; nothing here throws.
//
// Every connection pins the session settings that change how values print (DateStyle, TimeZone,
// IntervalStyle, extra_float_digits, bytea_output, client_encoding), so COPY text output is the
// same whatever the server's or the user's defaults are.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct pg_conn;
struct pg_result;

namespace ledgerdiff::pg {

// Quotes an identifier for SQL text: always quoted, embedded quotes doubled.
std::string QuoteIdent(std::string_view ident);
// Quotes a string literal for SQL text (standard_conforming_strings on).
std::string QuoteLiteral(std::string_view value);
// "schema"."table"
std::string Qualified(std::string_view schema, std::string_view table);

// SQLSTATE 42501 (insufficient_privilege: "permission denied for schema s", "must be owner of
// table t"): the role lacks a privilege, which no retry grants. Connection errors with it are
// Status::Usage (exit 2); every other server error is Status::Runtime (exit 3).
bool IsInsufficientPrivilege(const char* sqlstate);

// Same as ledgerdiff::RedactConninfo (core/redact.h): the conninfo without its password.
std::string RedactConninfo(std::string_view conninfo);

// A query result. Values are text; IsNull distinguishes NULL from ''.
class Rows {
 public:
  Rows() = default;
  explicit Rows(pg_result* res);
  Rows(Rows&&) noexcept;
  Rows& operator=(Rows&&) noexcept;
  ~Rows();

  int size() const;
  int columns() const;
  std::string_view Get(int row, int col) const;
  bool IsNull(int row, int col) const;
  int64_t GetInt(int row, int col) const;  // REQUIRES: the value is an integer
  // A boolean column in PostgreSQL's text form ("t"/"f"); NULL reads false.
  bool GetBool(int row, int col) const;
  int64_t AffectedRows() const;  // for INSERT/UPDATE/DELETE

 private:
  pg_result* res_ = nullptr;
};

// A boolean in PostgreSQL's text output form (a field of COPY ... TO STDOUT or of a text result):
// "t" is true, anything else ("f", "\\N") false.
inline bool TextIsTrue(std::string_view field) { return field == "t"; }

// Parameters for Exec: std::nullopt is SQL NULL; everything else is passed as text.
using Param = std::optional<std::string>;

// What a session may do. A session that reads a source (digest, diff, dump, verify-range) is
// kReadOnly: every transaction it runs is read-only (default_transaction_read_only).
enum class Access { kReadWrite, kReadOnly };

class Connection {
 public:
  // Connects and pins the session settings (row_security off for every session: a policy that
  // would hide rows is an error, exit 2 naming the table and the role, never a short read).
  // `application_name` shows in pg_stat_activity. Errors name the target with the password
  // redacted.
  static Result<std::unique_ptr<Connection>> Open(const std::string& conninfo,
                                                  const std::string& application_name = "ledgerdiff",
                                                  Access access = Access::kReadWrite);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements without parameters (simple protocol).
  Status Run(const std::string& sql);
  // Runs one statement with text parameters ($1, $2, ...) and returns its rows.
  Result<Rows> Exec(const std::string& sql, const std::vector<Param>& params = {});

  // COPY (...) TO STDOUT: calls `on_line` for every line (text format, without the trailing
  // newline). A non-ok Status from `on_line` cancels the COPY and is returned.
  Status CopyOut(const std::string& copy_sql, const std::function<Status(std::string_view line)>& on_line);

  // COPY ... FROM STDIN: BeginCopyIn, any number of PutCopyData (whole lines, each ending in
  // '\n', may be batched), then EndCopyIn (or AbortCopyIn).
  Status BeginCopyIn(const std::string& copy_sql);
  Status PutCopyData(std::string_view data);
  Status EndCopyIn();
  Status AbortCopyIn(const std::string& reason);

  // The server process id of this session (for pg_terminate_backend and logs).
  int BackendPid() const;
  // Where this session is connected, as libpq resolved it (PQhost, PQport, PQdb): a PG*
  // default or a service shows as what it named. `host` is a Unix socket's directory when the
  // session came over one.
  struct Endpoint {
    std::string host, port, database;
  };
  Endpoint endpoint() const;
  // Sends a cancel request for the running statement (safe from another thread).
  void Cancel();
  // True when the connection is still usable.
  bool Healthy() const;

  pg_conn* raw() { return conn_; }

 private:
  explicit Connection(pg_conn* conn);
  // An error Status from a libpq result message (or the connection's message when empty);
  // when the server went away and it is an embedded one, the cause from its log is added.
  Status Failure(const pg_result* res) const;
  friend class Transaction;
  pg_conn* conn_;
};

// A transaction scope: BEGIN on construction via Begin(), ROLLBACK on destruction unless
// Commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> Begin(Connection& conn, const std::string& begin_sql = "BEGIN");
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Status Commit();

 private:
  explicit Transaction(Connection* conn) : conn_(conn) {}
  Connection* conn_;
};

// The environment variables libpq reads for connection defaults (PGHOST, PGPORT, PGOPTIONS,
// PGSSLMODE, ...), from PQconndefaults: the whole list of the linked libpq.
std::vector<std::string> LibpqEnvironmentVariables();

// Server reachability check (PQping) without a full connection.
bool Ping(const std::string& conninfo);

// Splits a COPY text-format line into its fields (still escaped; "\N" is NULL).
// REQUIRES: `line` has no trailing newline.
void SplitCopyFields(std::string_view line, std::vector<std::string_view>& out);

// Appends `value` to `out` escaped for COPY text format (backslash, tab, newline, CR).
void AppendCopyEscaped(std::string& out, std::string_view value);

}  // namespace ledgerdiff::pg
