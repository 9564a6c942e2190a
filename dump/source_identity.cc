#include "dump/source_identity.h"

#include <fmt/format.h>

#include "dump/bounded_json.h"

namespace ledgerdiff::dump {

Result<SourceIdentity> ReadSourceIdentity(pg::Connection& conn, const std::string& schema) {
  SourceIdentity id;
  LD_ASSIGN_OR_RETURN(pg::Rows may, conn.Exec("SELECT has_function_privilege('pg_control_system()', 'EXECUTE')"));
  if (may.GetBool(0, 0)) {
    LD_ASSIGN_OR_RETURN(pg::Rows sys, conn.Exec("SELECT system_identifier::text FROM pg_control_system()"));
    id.system_identifier = std::string(sys.Get(0, 0));
  }
  LD_ASSIGN_OR_RETURN(pg::Rows r, conn.Exec("SELECT current_database(), (SELECT oid::bigint FROM pg_namespace WHERE "
                                            "nspname = $1)",
                                            {schema}));
  id.database = std::string(r.Get(0, 0));
  id.schema = schema;
  if (!r.IsNull(0, 1)) id.schema_oid = static_cast<uint32_t>(r.GetInt(0, 1));
  return id;
}

nlohmann::json SourceIdentityToJson(const SourceIdentity& id) {
  return {{"system_identifier", id.system_identifier ? nlohmann::json(*id.system_identifier) : nlohmann::json()},
          {"database", id.database},
          {"schema", id.schema},
          {"schema_oid", id.schema_oid ? nlohmann::json(*id.schema_oid) : nlohmann::json()}};
}

SourceIdentity SourceIdentityFromJson(const nlohmann::json& j, const std::string& where) {
  SourceIdentity id;
  id.system_identifier = JsonNullableString(j, where, "system_identifier");
  id.database = JsonString(j, where, "database");
  id.schema = JsonString(j, where, "schema");
  if (auto oid = JsonNullableUnsigned(j, where, "schema_oid", UINT32_MAX)) id.schema_oid = static_cast<uint32_t>(*oid);
  return id;
}

namespace {

std::string Oid(const std::optional<uint32_t>& oid) { return oid ? std::to_string(*oid) : std::string("none"); }

}  // namespace

std::optional<IdentityDifference> CompareSourceIdentity(const SourceIdentity& a, const SourceIdentity& b) {
  if (a.system_identifier && b.system_identifier && *a.system_identifier != *b.system_identifier)
    return IdentityDifference{"system identifier " + *a.system_identifier, "system identifier " + *b.system_identifier};
  if (a.database != b.database)
    return IdentityDifference{fmt::format("database \"{}\"", a.database), fmt::format("database \"{}\"", b.database)};
  if (a.schema != b.schema)
    return IdentityDifference{fmt::format("schema \"{}\"", a.schema), fmt::format("schema \"{}\"", b.schema)};
  if (a.schema_oid != b.schema_oid)
    return IdentityDifference{fmt::format("schema \"{}\" of oid {}", a.schema, Oid(a.schema_oid)),
                              fmt::format("schema \"{}\" of oid {}", b.schema, Oid(b.schema_oid))};
  return std::nullopt;
}

SourceIdentity JoinSourceIdentity(const SourceIdentity& a, const SourceIdentity& b) {
  SourceIdentity j = a;
  if (!j.system_identifier) j.system_identifier = b.system_identifier;
  return j;
}

std::string DescribeSourceIdentity(const SourceIdentity& id) {
  return fmt::format("database \"{}\", schema \"{}\" (oid {}), system identifier {}", id.database, id.schema,
                     Oid(id.schema_oid), id.system_identifier ? *id.system_identifier : std::string("not readable"));
}

}  // namespace ledgerdiff::dump
