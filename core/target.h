#pragma once
// Target: which database (or manifest file) a command works on, for people to see.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace ledgerdiff {

namespace pg {
class Connection;
}

// What a command works on, as its first line of progress and every report name it (issue 22):
// the server and database of a connection actually made (libpq's PQhost, PQport and PQdb, so
// PG* defaults and services show as what they resolved to) and the schemas; or a manifest file.
// Never a password, nor the user. Every string is scrubbed (core/redact.h) when rendered.
struct Target {
  std::string host;  // host name or address; for a Unix socket its directory ("/tmp/x")
  std::string port;
  std::string database;
  std::vector<std::string> schemas;
  bool embedded = false;         // the embedded server this process started (or reused: --keep-db)
  bool removed_on_exit = false;  // embedded, and removed when this process ends
  // With removed_on_exit: what keeps the cluster after all ("the run diverges or fails"), as a
  // command that may keep it says at the start, before it knows; "" when nothing does. Once the
  // command knows, its report's target is read again (removed_on_exit then says what happened).
  std::string kept_if;
  std::string manifest;          // a manifest side: its path (nothing else is set)

  static Target Manifest(std::string path);
  bool socket() const { return !host.empty() && host.front() == '/'; }
  // 'database ledgerdiff on socket /tmp/ledgerdiff-pg-abc:5433 (embedded, removed on exit),
  // schemas "ld_x_serial", "ld_x_parallel"' ('(embedded; removed on exit unless <kept_if>)' when
  // something may keep it); 'database prod on db1:5432, schema "public"'; "manifest base.ldm".
  std::string Describe() const;
  // "target: " + Describe(): the first line of progress and a line of each text report.
  std::string Line() const;
  // {"host", "port" (a number), "database", "schemas", "embedded"}; a manifest: {"manifest"}.
  nlohmann::json ToJson() const;
};

// The two sides of a comparison (diff, verify-range).
struct TargetPair {
  Target left, right;
  std::string Describe() const;   // "left: <Describe>; right: <Describe>"
  std::string Line() const;       // "target: " + Describe()
  nlohmann::json ToJson() const;  // {"left": {...}, "right": {...}}
};

// The target of an open session (Connection::endpoint), naming `schemas`.
Target TargetOf(const pg::Connection& conn, std::vector<std::string> schemas = {});
// Connects to `conninfo` and describes where the session went (a side the user named by
// conninfo: verify-range --left/--right, a diff side in another database). Errors: as
// pg::Connection::Open.
Result<Target> ConnectedTarget(const std::string& conninfo, std::vector<std::string> schemas = {});

}  // namespace ledgerdiff
