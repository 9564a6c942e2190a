#include "core/target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/pg.h"
#include "core/redact.h"

namespace ledgerdiff {

Target Target::Manifest(std::string path) {
  Target t;
  t.manifest = std::move(path);
  return t;
}

std::string Target::Describe() const {
  if (!manifest.empty()) return ScrubSecrets("manifest " + manifest);
  // An IPv6 address takes brackets before its port.
  const std::string at = !socket() && host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::string out = fmt::format("database {} on {}{}:{}", database, socket() ? "socket " : "", at, port);
  if (embedded && !removed_on_exit) out += " (embedded)";
  else if (embedded && kept_if.empty()) out += " (embedded, removed on exit)";
  else if (embedded) out += " (embedded; removed on exit unless " + kept_if + ")";
  if (!schemas.empty()) {
    std::vector<std::string> quoted;
    for (const auto& s : schemas) quoted.push_back("\"" + s + "\"");
    out += fmt::format(", {} {}", schemas.size() == 1 ? "schema" : "schemas", fmt::join(quoted, ", "));
  }
  return ScrubSecrets(out);
}

std::string Target::Line() const { return "target: " + Describe(); }

nlohmann::json Target::ToJson() const {
  if (!manifest.empty()) return {{"manifest", ScrubSecrets(manifest)}};
  nlohmann::json names = nlohmann::json::array();
  for (const auto& s : schemas) names.push_back(ScrubSecrets(s));
  // The port as a number, as users write it; libpq reports text.
  nlohmann::json number = ScrubSecrets(port);
  if (!port.empty() && port.find_first_not_of("0123456789") == std::string::npos && port.size() < 10)
    number = std::stoi(port);
  return {{"host", ScrubSecrets(host)},
          {"port", number},
          {"database", ScrubSecrets(database)},
          {"schemas", names},
          {"embedded", embedded}};
}

std::string TargetPair::Describe() const { return "left: " + left.Describe() + "; right: " + right.Describe(); }
std::string TargetPair::Line() const { return "target: " + Describe(); }
nlohmann::json TargetPair::ToJson() const { return {{"left", left.ToJson()}, {"right", right.ToJson()}}; }

Target TargetOf(const pg::Connection& conn, std::vector<std::string> schemas) {
  const pg::Connection::Endpoint e = conn.endpoint();
  Target t;
  t.host = e.host;
  t.port = e.port;
  t.database = e.database;
  t.schemas = std::move(schemas);
  return t;
}

Result<Target> ConnectedTarget(const std::string& conninfo, std::vector<std::string> schemas) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo));
  return TargetOf(*conn, std::move(schemas));
}

}  // namespace ledgerdiff
