#pragma once
// Which database a command works on, and the schemas it owns.
//
// Every password in --db / LEDGERDIFF_DB / PGPASSWORD is registered for scrubbing
// (core/redact.h) before anything can fail. Resolving also reaps the leftovers of killed runs
// (core/tempdir.h).
//
// Database::Resolve: --db CONNINFO, else LEDGERDIFF_DB, else (for a command that only reads) the
// standard PG* environment (when PGHOST, PGDATABASE, PGSERVICE or PGPORT is set and no --keep-db
// names an embedded cluster), else the
// embedded default: a throwaway cluster that lives as long as the returned Database (or in
// --keep-db DIR).
// INVARIANT: a command that writes (creates schemas, a job table, rows) writes only into a
// database the user named for it (--db or LEDGERDIFF_DB). The PG* environment of an operator's
// shell often points at production: for a writer it is ignored, removed from the process's
// environment (so no worker, ingester or libpq default picks it up) and named in note().
//
// Ownership: a schema the tool creates carries the comment "ledgerdiff:owned run=<id>". The tool
// drops, truncates or writes only schemas with that mark, unless the user passes --force.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/embedded_pg.h"
#include "core/pg.h"
#include "core/status.h"
#include "core/target.h"

namespace ledgerdiff {

struct DatabaseOptions {
  std::string conninfo;  // --db; empty: environment, then embedded
  std::string keep_dir;  // --keep-db DIR (embedded only)
  // Embedded server only: its max_connections. <= 0: the default (kDefaultEmbeddedMaxConnections).
  // A command running N workers passes EmbeddedMaxConnectionsFor(N).
  int max_connections = 0;
  // The command (for messages) and what it does with the database (cli's command table):
  // `writes`: see the INVARIANT above. `existing_only`: it works on a run that must already be
  // in the database (worker, wait, runs, cancel), so with no database given at all (and no
  // --keep-db) it is a Usage error instead of a throwaway server that cannot hold the run.
  std::string command;
  bool writes = false;
  bool existing_only = false;
};

// Where a database that would have died with the process (the embedded default) was kept.
struct KeptDatabase {
  std::string reconnect_flags;  // e.g. "--keep-db /tmp/ledgerdiff-pg-x"
  std::string dir;              // the cluster directory
  std::string remove_command;   // e.g. "rm -rf /tmp/ledgerdiff-pg-x"
};
// Makes a database that dies with this process outlive it (called when something in it is to
// be kept: evidence, a run to resume) and says where it stays.
using KeepDatabaseFn = std::function<Result<KeptDatabase>()>;

class Database {
 public:
  // Resolves the target; starts the embedded server when nothing else is given.
  static Result<std::unique_ptr<Database>> Resolve(const DatabaseOptions& options);
  ~Database();

  const std::string& conninfo() const { return conninfo_; }
  bool embedded() const { return embedded_ != nullptr; }
  EmbeddedPostgres* embedded_server() { return embedded_.get(); }
  // What the caller should say once on stderr ("" for nothing): the PG* variables a writer
  // ignored and how to use them instead.
  const std::string& note() const { return note_; }
  // True when the database dies with this process: the embedded default without --keep-db.
  bool ephemeral() const { return embedded_ && !embedded_->kept(); }
  // Keeps an embedded cluster (EmbeddedPostgres::Keep; a --keep-db cluster is kept already) and
  // says how to reach and remove it, so that a hint names its --keep-db DIR; empty for a database
  // given by --db, LEDGERDIFF_DB or PG* (it outlives the process and is reached the same way).
  // The function refers to this Database: call it while this lives.
  KeepDatabaseFn Keeper();
  Result<std::unique_ptr<pg::Connection>> Connect(const std::string& application_name = "ledgerdiff") const;
  // What the command works on: the server and database Resolve connected to, naming `schemas`;
  // embedded and whether it is removed on exit as they stand now (Keeper() may have kept it).
  Target target(std::vector<std::string> schemas = {}) const;

 private:
  Database() = default;
  std::string conninfo_, note_;
  Target endpoint_;  // of Resolve's first connection (TargetOf)
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

// What CreateOwnedSchema does with a schema of that name that exists already.
enum class IfOwned { kKeep, kReplace };    // one ledgerdiff created: kept as is, or dropped and recreated
enum class IfForeign { kRefuse, kUse };    // one it did not: an error naming it, or used as is (--force), never dropped

// Creates `schema` marked as owned by `run_id`; an existing one is treated as `if_owned` and
// `if_foreign` say. Returns whether the schema was created fresh.
Result<bool> CreateOwnedSchema(pg::Connection& conn, const std::string& schema, const std::string& run_id,
                               IfOwned if_owned, IfForeign if_foreign);
// Drops `schema` only when it carries the ownership mark; a foreign schema is an error.
Status DropOwnedSchema(pg::Connection& conn, const std::string& schema);
// ANALYZEs every table of `schema` when it carries the ownership mark (nothing otherwise: the
// tool writes statistics only into its own schemas). After an ingest, the planner and a digest's
// work estimate (dump/digest.cc LedgerStatistics) then see the rows just written.
Status AnalyzeOwnedSchema(pg::Connection& conn, const std::string& schema);

// A fresh run id: UTC time plus random suffix, e.g. "20261130-142501-3f9a".
std::string NewRunId();

}  // namespace ledgerdiff
