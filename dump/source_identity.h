#pragma once
// Who a digested schema is, without any secret. One declaration of that fact for everything that
// must recognise a source again: a resume checkpoint (dump/checkpoint.h, its job's "source" /
// "left" / "right") and a manifest (dump/manifest.h, header key "source_identity"), so that
// `manifest merge` refuses parts digested from different sources.
//
// The fields are exactly those a physical replica shares with its primary, so that a digest
// sharded over hot standbys still merges: the cluster's system identifier, the database name,
// the schema name and the schema's OID (a dropped and re-created schema is another schema).
// Nothing host-specific (host, port, user), never a conninfo or a password.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/pg.h"
#include "core/status.h"

namespace ledgerdiff::dump {

struct SourceIdentity {
  // pg_control_system().system_identifier as decimal text; nullopt when the role may not execute
  // pg_control_system() (it is not readable: then it is not compared).
  std::optional<std::string> system_identifier;
  std::string database;               // current_database()
  std::string schema;                 // the schema's name
  std::optional<uint32_t> schema_oid;  // nullopt: no such schema when the identity was read
  bool operator==(const SourceIdentity&) const = default;
};

// Reads the identity of `schema` over `conn`.
Result<SourceIdentity> ReadSourceIdentity(pg::Connection& conn, const std::string& schema);

// JSON form (manifests, checkpoints): {"system_identifier": "..." | null, "database": "...",
// "schema": "...", "schema_oid": N | null}.
nlohmann::json SourceIdentityToJson(const SourceIdentity& id);
// The inverse, strict: a missing key, a wrong type or an out-of-bounds value throws
// JsonFormatError (dump/bounded_json.h) naming `where`.KEY.
SourceIdentity SourceIdentityFromJson(const nlohmann::json& j, const std::string& where);

// Where `a` and `b` name different sources: the first differing field in each one's words, e.g.
// {"database \"new\"", "database \"old\""}; nullopt when they are the same source. The system
// identifier is compared only when both hold one.
struct IdentityDifference {
  std::string a, b;
};
std::optional<IdentityDifference> CompareSourceIdentity(const SourceIdentity& a, const SourceIdentity& b);

// The identity of the same source known from several readings (parts of one sharded run): the
// system identifier of whichever holds one. REQUIRES: !CompareSourceIdentity(a, b).
SourceIdentity JoinSourceIdentity(const SourceIdentity& a, const SourceIdentity& b);

// "database \"d\", schema \"s\" (oid 16385), system 7301...": for `manifest show`.
std::string DescribeSourceIdentity(const SourceIdentity& id);

}  // namespace ledgerdiff::dump
