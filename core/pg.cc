#include "core/pg.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>

#include "core/embedded_pg.h"
#include "core/redact.h"
#include "core/text.h"

namespace ledgerdiff::pg {

namespace {

// Session settings that make COPY text output independent of server and client defaults, and
// row_security off (as pg_dump sets it): a row-level security policy that would hide rows from
// this role makes the statement fail instead of returning fewer rows than the table holds.
constexpr const char* kPinnedSettings =
    "SET DateStyle = 'ISO, YMD'; SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres'; "
    "SET extra_float_digits = 3; SET bytea_output = 'hex'; SET client_encoding = 'UTF8'; "
    "SET standard_conforming_strings = on; SET client_min_messages = warning; SET row_security = off;";
// What a read-only session adds: every transaction of it is read-only, whatever it runs.
constexpr const char* kReadOnlySettings = "SET default_transaction_read_only = on;";

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  // libpq messages may span lines ("FATAL: ...\nDETAIL: ..."): keep it one line.
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

void NoticeIgnore(void*, const char*) {}

// With row_security off, a statement that a policy would filter fails with 42501
// (insufficient_privilege) and this message: bad input (the role), not a runtime failure.
bool IsRowSecurityRefusal(const char* sqlstate, std::string_view message) {
  return IsInsufficientPrivilege(sqlstate) && message.find("row-level security policy") != std::string_view::npos;
}

}  // namespace

std::string QuoteIdent(std::string_view ident) { return QuoteByDoubling(ident, '"'); }

std::string QuoteLiteral(std::string_view value) { return QuoteByDoubling(value, '\''); }

std::string Qualified(std::string_view schema, std::string_view table) {
  return QuoteIdent(schema) + "." + QuoteIdent(table);
}

std::string RedactConninfo(std::string_view conninfo) { return ledgerdiff::RedactConninfo(conninfo); }

// ---- Rows ----

Rows::Rows(pg_result* res) : res_(res) {}
Rows::Rows(Rows&& o) noexcept : res_(o.res_) { o.res_ = nullptr; }
Rows& Rows::operator=(Rows&& o) noexcept {
  if (this != &o) {
    if (res_) PQclear(res_);
    res_ = o.res_;
    o.res_ = nullptr;
  }
  return *this;
}
Rows::~Rows() {
  if (res_) PQclear(res_);
}
int Rows::size() const { return res_ ? PQntuples(res_) : 0; }
int Rows::columns() const { return res_ ? PQnfields(res_) : 0; }
std::string_view Rows::Get(int row, int col) const {
  return {PQgetvalue(res_, row, col), static_cast<size_t>(PQgetlength(res_, row, col))};
}
bool Rows::IsNull(int row, int col) const { return PQgetisnull(res_, row, col) != 0; }
int64_t Rows::GetInt(int row, int col) const { return std::strtoll(PQgetvalue(res_, row, col), nullptr, 10); }
bool Rows::GetBool(int row, int col) const { return !IsNull(row, col) && TextIsTrue(Get(row, col)); }
int64_t Rows::AffectedRows() const {
  const char* n = res_ ? PQcmdTuples(res_) : "";
  return *n ? std::strtoll(n, nullptr, 10) : 0;
}

// ---- Connection ----

Connection::Connection(pg_conn* conn) : conn_(conn) {}
Connection::~Connection() {
  if (conn_) PQfinish(conn_);
}


std::vector<std::string> LibpqEnvironmentVariables() {
  std::vector<std::string> names;
  PQconninfoOption* options = PQconndefaults();
  if (!options) return names;
  for (const PQconninfoOption* o = options; o->keyword; ++o)
    if (o->envvar) names.emplace_back(o->envvar);
  PQconninfoFree(options);
  return names;
}

bool IsInsufficientPrivilege(const char* sqlstate) {
  return sqlstate != nullptr && std::string_view(sqlstate) == "42501";
}

Status Connection::Failure(const pg_result* res) const {
  const char* result_message = res ? PQresultErrorMessage(res) : nullptr;
  std::string msg = Trim(result_message && *result_message ? result_message : PQerrorMessage(conn_));
  // A server going down either sends its sessions a FATAL 57P0x or just closes them, and the
  // closed socket may not have been noticed yet: an error the server did not send (no SQLSTATE,
  // made by libpq itself) counts as a lost connection too.
  const char* sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  if (IsRowSecurityRefusal(sqlstate, msg)) {
    const char* role = PQuser(conn_);
    return Status::Usagef("{} (read as role \"{}\": a row-level security policy would hide rows from it, so nothing "
                          "it reads there can be compared; read as a role with BYPASSRLS or the table's owner)",
                          msg, role ? role : "");
  }
  bool server_going_down =
      sqlstate == nullptr || *sqlstate == '\0' || std::string_view(sqlstate).substr(0, 4) == "57P0";
  if (PQstatus(conn_) == CONNECTION_BAD || server_going_down) {
    const char* host = PQhost(conn_);
    if (std::string cause = host ? EmbeddedServerFailureCause(host) : ""; !cause.empty())
      msg += " (embedded server log: " + cause + ")";
  }
  // A privilege the role lacks ("permission denied for schema s") is the configuration's to fix:
  // no retry grants it.
  if (IsInsufficientPrivilege(sqlstate)) return Status::Usage(msg);
  return Status::Runtime(msg);
}

namespace {

// A connection attempt that no retry can cure: a conninfo libpq cannot parse, or a server that
// answered and refused who we are or what we asked for (authentication, an unknown role or
// database). Everything else (refused, unreachable, timed out, the server starting up or shutting
// down, too many clients) is a runtime failure a retry may cure.
bool ConnectErrorIsBadInput(const std::string& conninfo, const std::string& error) {
  char* parse_error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (options) PQconninfoFree(options);
  if (parse_error) PQfreemem(parse_error);
  if (!conninfo.empty() && options == nullptr) return true;
  static constexpr std::string_view kRefusals[] = {"password authentication failed",
                                                   "no pg_hba.conf entry",
                                                   "does not exist",  // role / database
                                                   "no password supplied",
                                                   "invalid connection option",
                                                   "invalid URI",
                                                   "missing \"=\"",
                                                   "invalid sslmode",
                                                   "certificate authentication failed",
                                                   "Peer authentication failed",
                                                   "Ident authentication failed",
                                                   "permission denied"};  // 42501: no CONNECT privilege
  for (std::string_view r : kRefusals)
    if (error.find(r) != std::string::npos) return true;
  return false;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& conninfo, const std::string& application_name,
                                                     Access access) {
  // Before anything can fail: libpq may echo the password (a malformed URI's token).
  RegisterConninfoSecrets(conninfo);
  RegisterEnvironmentSecrets();
  const char* keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* values[] = {conninfo.c_str(), application_name.c_str(), nullptr};
  pg_conn* raw = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (raw == nullptr) return Status::Runtime("cannot connect: out of memory");
  if (PQstatus(raw) != CONNECTION_OK) {
    std::string err = Trim(PQerrorMessage(raw));
    if (const char* host = PQhost(raw)) {
      if (std::string cause = EmbeddedServerFailureCause(host); !cause.empty())
        err += " (embedded server log: " + cause + ")";
    }
    PQfinish(raw);
    std::string target = conninfo.empty() ? std::string("(PG* environment defaults)") : RedactConninfo(conninfo);
    if (ConnectErrorIsBadInput(conninfo, err)) return Status::Usagef("cannot connect to database {}: {}", target, err);
    return Status::Runtimef("cannot connect to database {}: {}", target, err);
  }
  PQsetNoticeProcessor(raw, NoticeIgnore, nullptr);
  std::unique_ptr<Connection> conn(new Connection(raw));
  LD_RETURN_IF_ERROR(conn->Run(kPinnedSettings));
  if (access == Access::kReadOnly) LD_RETURN_IF_ERROR(conn->Run(kReadOnlySettings));
  return conn;
}

Status Connection::Run(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  Rows holder(res);
  auto st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Failure(res);
  }
  return Status::Ok();
}

Result<Rows> Connection::Exec(const std::string& sql, const std::vector<Param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PGresult* res =
      PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(), nullptr, nullptr, 0);
  Rows rows(res);
  auto st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return Failure(res);
  }
  return rows;
}

Status Connection::CopyOut(const std::string& copy_sql, const std::function<Status(std::string_view line)>& on_line) {
  {
    PGresult* res = PQexec(conn_, copy_sql.c_str());
    Rows holder(res);
    if (PQresultStatus(res) != PGRES_COPY_OUT) return Failure(res);
  }
  Status callback_status;
  for (;;) {
    char* buf = nullptr;
    int n = PQgetCopyData(conn_, &buf, 0);
    if (n == -1) break;  // done
    if (n == -2) return Failure(nullptr).With("COPY failed");
    if (callback_status.ok()) {
      std::string_view line(buf, static_cast<size_t>(n));
      if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
      callback_status = on_line(line);
      if (!callback_status.ok()) Cancel();
    }
    PQfreemem(buf);
  }
  // Collect the final result(s).
  Status final_status;
  while (PGresult* res = PQgetResult(conn_)) {
    Rows holder(res);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && final_status.ok()) final_status = Failure(res);
  }
  if (!callback_status.ok()) return callback_status;
  return final_status;
}

Status Connection::BeginCopyIn(const std::string& copy_sql) {
  PGresult* res = PQexec(conn_, copy_sql.c_str());
  Rows holder(res);
  if (PQresultStatus(res) != PGRES_COPY_IN) return Failure(res);
  return Status::Ok();
}

Status Connection::PutCopyData(std::string_view data) {
  if (PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) != 1)
    return Failure(nullptr).With("COPY FROM failed");
  return Status::Ok();
}

Status Connection::EndCopyIn() {
  if (PQputCopyEnd(conn_, nullptr) != 1) return Failure(nullptr).With("COPY FROM failed");
  Status status;
  while (PGresult* res = PQgetResult(conn_)) {
    Rows holder(res);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && status.ok()) status = Failure(res);
  }
  return status;
}

Status Connection::AbortCopyIn(const std::string& reason) {
  PQputCopyEnd(conn_, reason.c_str());
  while (PGresult* res = PQgetResult(conn_)) PQclear(res);
  return Status::Ok();
}

Connection::Endpoint Connection::endpoint() const {
  auto text = [](const char* v) { return v ? std::string(v) : std::string(); };
  return {text(PQhost(conn_)), text(PQport(conn_)), text(PQdb(conn_))};
}

int Connection::BackendPid() const { return PQbackendPID(conn_); }

void Connection::Cancel() {
  if (PGcancel* c = PQgetCancel(conn_)) {
    char err[256];
    PQcancel(c, err, sizeof err);
    PQfreeCancel(c);
  }
}

bool Connection::Healthy() const { return PQstatus(conn_) == CONNECTION_OK; }

// ---- Transaction ----

Result<Transaction> Transaction::Begin(Connection& conn, const std::string& begin_sql) {
  LD_RETURN_IF_ERROR(conn.Run(begin_sql));
  return Transaction(&conn);
}
Transaction::Transaction(Transaction&& o) noexcept : conn_(o.conn_) { o.conn_ = nullptr; }
Transaction::~Transaction() {
  if (conn_ && conn_->Healthy()) (void)conn_->Run("ROLLBACK");
}
Status Transaction::Commit() {
  Connection* c = conn_;
  conn_ = nullptr;
  if (!c) return Status::Runtime("transaction already finished");
  // COMMIT of an aborted transaction reports ROLLBACK without an error: check the status.
  PGresult* res = PQexec(c->raw(), "COMMIT");
  Rows holder(res);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) return c->Failure(res);
  if (std::strcmp(PQcmdStatus(res), "COMMIT") != 0) return Status::Runtime("transaction was rolled back");
  return Status::Ok();
}

bool Ping(const std::string& conninfo) {
  const char* keys[] = {"dbname", nullptr};
  const char* values[] = {conninfo.c_str(), nullptr};
  return PQpingParams(keys, values, 1) == PQPING_OK;
}

void SplitCopyFields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      out.push_back(line.substr(start));
      return;
    }
    out.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

void AppendCopyEscaped(std::string& out, std::string_view value) {
  static constexpr EscapeTable kCopyText{{'\\', "\\\\"}, {'\t', "\\t"}, {'\n', "\\n"}, {'\r', "\\r"}};
  AppendEscaped(out, value, kCopyText);
}

}  // namespace ledgerdiff::pg
