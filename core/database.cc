#include "core/database.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>

#include "core/process.h"
#include "core/redact.h"
#include "core/text.h"
#include "core/tempdir.h"

namespace ledgerdiff {

Result<std::unique_ptr<Database>> Database::Resolve(const DatabaseOptions& options) {
  std::unique_ptr<Database> db(new Database());
  // An empty PG* variable means "not set" to users, but libpq would honour it (PGSERVICE=""
  // names a service that does not exist): drop empty ones.
  for (const char* k : {"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE", "PGPASSWORD",
                        "PGOPTIONS", "PGSSLMODE", "LEDGERDIFF_DB"}) {
    if (const char* v = std::getenv(k); v && !*v) unsetenv(k);
  }
  RegisterConninfoSecrets(options.conninfo);
  if (const char* v = std::getenv("LEDGERDIFF_DB")) RegisterConninfoSecrets(v);
  RegisterEnvironmentSecrets();
  auto env = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v ? v : "";
  };
  // PG* variables that name a server (what makes a reader use the environment at all).
  const bool environment_names_server =
      !env("PGHOST").empty() || !env("PGDATABASE").empty() || !env("PGSERVICE").empty() || !env("PGPORT").empty();
  if (!options.conninfo.empty()) {
    db->conninfo_ = options.conninfo;
  } else if (!env("LEDGERDIFF_DB").empty()) {
    db->conninfo_ = env("LEDGERDIFF_DB");
  } else if (environment_names_server && !options.writes && options.keep_dir.empty()) {
    // A reader given --keep-db asked for that embedded cluster: the PG* environment yields to it.
    db->conninfo_ = "";  // libpq reads the PG* variables itself
  } else {
    std::vector<std::string> ignored;
    if (options.writes) {
      for (const std::string& name : pg::LibpqEnvironmentVariables())
        if (!env(name.c_str()).empty()) ignored.push_back(name);
      // Gone from the environment: workers, an --ingest-cmd and libpq itself see none of it.
      for (const std::string& name : ignored) unsetenv(name.c_str());
      std::sort(ignored.begin(), ignored.end());
    }
    const std::string ignored_list = fmt::format("{}", fmt::join(ignored, ", "));
    if (options.existing_only && options.keep_dir.empty())
      return Status::Usagef(
          "{}: no database given{}; its run lives in a database that outlives this process: pass --db "
          "CONNINFO, set LEDGERDIFF_DB, or keep an embedded cluster with --keep-db DIR",
          options.command,
          ignored.empty() ? ""
                          : fmt::format(" ({} ignored: a command that writes uses only --db or "
                                        "LEDGERDIFF_DB)",
                                        ignored_list));
    if (!ignored.empty())
      db->note_ = fmt::format(
          "{} set but ignored: {} writes, so it uses a database only when --db or LEDGERDIFF_DB "
          "names it (here: an embedded throwaway server). To write into the database PG* "
          "points at, pass it as --db \"host=... dbname=...\" or export LEDGERDIFF_DB.",
          ignored_list, options.command);
    LD_ASSIGN_OR_RETURN(db->embedded_,
                        EmbeddedPostgres::Start({.dir = options.keep_dir, .max_connections = options.max_connections}));
    db->conninfo_ = db->embedded_->conninfo();
    LD_ASSIGN_OR_RETURN(auto session, db->Connect());
    db->endpoint_ = TargetOf(*session);
    return db;
  }
  if (!options.keep_dir.empty())
    return Status::Usage(
        "--keep-db applies to the embedded server only; it cannot be combined with --db or LEDGERDIFF_DB");
  // Fail early and clearly when the database is unreachable (one line: nothing printed before).
  LD_ASSIGN_OR_RETURN(auto probe, db->Connect());
  db->endpoint_ = TargetOf(*probe);  // what the conninfo, PG* or a service resolved to
  ReapStaleTempDirsAndReport();  // the embedded path reaps in EmbeddedPostgres::Start
  return db;
}

Database::~Database() = default;

KeepDatabaseFn Database::Keeper() {
  if (!embedded_) return nullptr;
  EmbeddedPostgres* server = embedded_.get();
  return [server]() -> Result<KeptDatabase> {
    LD_RETURN_IF_ERROR(server->Keep());
    const std::string dir = ShellQuote(server->dir(), ShellQuoting::kWhenNeeded);
    return KeptDatabase{"--keep-db " + dir, server->dir(), "rm -rf " + dir};
  };
}

Target Database::target(std::vector<std::string> schemas) const {
  Target t = endpoint_;
  t.schemas = std::move(schemas);
  t.embedded = embedded();
  t.removed_on_exit = ephemeral();
  return t;
}

Result<std::unique_ptr<pg::Connection>> Database::Connect(const std::string& application_name) const {
  return pg::Connection::Open(conninfo_, application_name);
}

Status ValidateSchemaName(const std::string& name) {
  if (name.empty()) return Status::Usage("schema name is empty");
  if (name.size() > 63) return Status::Usagef("schema name \"{}\" is longer than 63 bytes", name);
  if (name.find('\0') != std::string::npos) return Status::Usage("schema name contains a NUL byte");
  if (name.rfind("pg_", 0) == 0) return Status::Usagef("schema name \"{}\": the pg_ prefix is reserved", name);
  return Status::Ok();
}

Result<SchemaState> InspectSchema(pg::Connection& conn, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", {schema}));
  if (rows.size() == 0) return SchemaState::kAbsent;
  if (rows.IsNull(0, 0)) return SchemaState::kForeign;
  std::string_view comment = rows.Get(0, 0);
  return comment.rfind(kOwnershipMarkPrefix, 0) == 0 ? SchemaState::kOwned : SchemaState::kForeign;
}

Result<std::string> SchemaRunId(pg::Connection& conn, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(
      pg::Rows rows,
      conn.Exec("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", {schema}));
  if (rows.size() == 0 || rows.IsNull(0, 0)) return std::string();
  std::string comment(rows.Get(0, 0));
  if (comment.rfind(kOwnershipMarkPrefix, 0) != 0) return std::string();
  auto pos = comment.find("run=");
  return pos == std::string::npos ? std::string() : comment.substr(pos + 4);
}

Result<bool> CreateOwnedSchema(pg::Connection& conn, const std::string& schema, const std::string& run_id,
                               IfOwned if_owned, IfForeign if_foreign) {
  LD_RETURN_IF_ERROR(ValidateSchemaName(schema));
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, schema));
  if (state == SchemaState::kForeign) {
    if (if_foreign == IfForeign::kUse) return false;
    return Status::Usagef(
        "schema \"{}\" exists and was not created by ledgerdiff; refusing to touch it (use another --schema, or "
        "--force)",
        schema);
  }
  if (state == SchemaState::kOwned) {
    if (if_owned == IfOwned::kKeep) return false;
    LD_RETURN_IF_ERROR(DropOwnedSchema(conn, schema));
  }
  std::string sql = fmt::format("CREATE SCHEMA {0}; COMMENT ON SCHEMA {0} IS {1}", pg::QuoteIdent(schema),
                                pg::QuoteLiteral(fmt::format("{} run={}", kOwnershipMarkPrefix, run_id)));
  LD_RETURN_IF_ERROR(conn.Run(sql).With(fmt::format("create schema \"{}\"", schema)));
  return true;
}

Status DropOwnedSchema(pg::Connection& conn, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, schema));
  if (state == SchemaState::kAbsent) return Status::Ok();
  if (state == SchemaState::kForeign)
    return Status::Usagef("schema \"{}\" was not created by ledgerdiff; refusing to drop it", schema);
  return conn.Run("DROP SCHEMA " + pg::QuoteIdent(schema) + " CASCADE").With(fmt::format("drop schema \"{}\"", schema));
}

Status AnalyzeOwnedSchema(pg::Connection& conn, const std::string& schema) {
  LD_ASSIGN_OR_RETURN(SchemaState state, InspectSchema(conn, schema));
  if (state != SchemaState::kOwned) return Status::Ok();
  LD_ASSIGN_OR_RETURN(pg::Rows tables,
                      conn.Exec("SELECT c.relname FROM pg_class c WHERE c.relnamespace = to_regnamespace($1) AND "
                                "c.relkind = 'r' ORDER BY c.relname",
                                {pg::QuoteIdent(schema)}));
  for (int i = 0; i < tables.size(); ++i)
    LD_RETURN_IF_ERROR(conn.Run("ANALYZE " + pg::Qualified(schema, std::string(tables.Get(i, 0))))
                           .With(fmt::format("analyze schema \"{}\"", schema)));
  return Status::Ok();
}

std::string NewRunId() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::random_device rd;
  return fmt::format("{:04}{:02}{:02}_{:02}{:02}{:02}_{:04x}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, rd() & 0xffff);
}

}  // namespace ledgerdiff
