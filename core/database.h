#pragma once
// Which database a command works on, and the schemas it owns.
//
// Every password in --db / LEDGERDIFF_DB / PGPASSWORD is registered for scrubbing
// (core/redact.h) before anything can fail. Resolving also reaps the leftovers of killed runs
// (core/tempdir.h).
//
// ResolveDatabase: --db CONNINFO, else LEDGERDIFF_DB, else the standard PG* environment (when
// PGHOST, PGDATABASE, PGSERVICE or PGPORT is set), else the embedded default: a throwaway
// cluster that lives as long as the returned Database (or in --keep-db DIR).
//
// Ownership: a schema the tool creates carries the comment "ledgerdiff:owned run=<id>". The tool
// drops, truncates or writes only schemas with that mark, unless the user passes --force.

#include <memory>
#include <string>

#include "core/embedded_pg.h"
#include "core/pg.h"
#include "core/status.h"

namespace ledgerdiff {

struct DatabaseOptions {
  std::string conninfo;  // --db; empty: environment, then embedded
  std::string keep_dir;  // --keep-db DIR (embedded only)
  // Embedded server only: its max_connections. <= 0: the default (kDefaultEmbeddedMaxConnections).
  // A command running N workers passes EmbeddedMaxConnectionsFor(N).
  int max_connections = 0;
};

class Database {
 public:
  // Resolves the target; starts the embedded server when nothing else is given.
  static Result<std::unique_ptr<Database>> Resolve(const DatabaseOptions& options);
  ~Database();

  const std::string& conninfo() const { return conninfo_; }
  bool embedded() const { return embedded_ != nullptr; }
  EmbeddedPostgres* embedded_server() { return embedded_.get(); }
  Result<std::unique_ptr<pg::Connection>> Connect(const std::string& application_name = "ledgerdiff") const;

 private:
  Database() = default;
  std::string conninfo_;
  std::unique_ptr<EmbeddedPostgres> embedded_;
};

constexpr const char* kOwnershipMarkPrefix = "ledgerdiff:owned";

// Validates a schema name given by a user: non-empty, at most 63 bytes, no NUL. Any other
// character is allowed (names are always quoted).
Status ValidateSchemaName(const std::string& name);

enum class SchemaState { kAbsent, kOwned, kForeign };
Result<SchemaState> InspectSchema(pg::Connection& conn, const std::string& schema);
// The run id in an owned schema's mark ("" when absent or foreign).
Result<std::string> SchemaRunId(pg::Connection& conn, const std::string& schema);

// Creates `schema` marked as owned by `run_id`. When it exists: owned -> dropped and recreated
// only if `replace_owned`; foreign -> an error naming it, unless `force` (then it is used as is,
// never dropped). Returns whether the schema was created fresh.
Result<bool> CreateOwnedSchema(pg::Connection& conn, const std::string& schema, const std::string& run_id,
                               bool replace_owned, bool force);
// Drops `schema` only when it carries the ownership mark; a foreign schema is an error.
Status DropOwnedSchema(pg::Connection& conn, const std::string& schema);

// A fresh run id: UTC time plus random suffix, e.g. "20261130-142501-3f9a".
std::string NewRunId();

}  // namespace ledgerdiff
