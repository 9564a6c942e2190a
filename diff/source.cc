// The sides of a comparison as the user names them (diff.h Source).
#include <fmt/format.h>

#include "core/pg.h"
#include "diff/diff.h"

namespace ledgerdiff::diff {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string Describe(const Source& source) {
  if (const auto* m = std::get_if<ManifestSource>(&source)) return "manifest " + m->path;
  const auto& s = std::get<SchemaSource>(source);
  return fmt::format("schema \"{}\" ({})", s.schema, pg::RedactConninfo(s.conninfo));
}

bool SourceNeedsDefaultDatabase(const std::string& t) {
  if (t.rfind("file:", 0) == 0 || EndsWith(t, ".ldm")) return false;
  if ((t.rfind("postgresql://", 0) == 0 || t.rfind("postgres://", 0) == 0) && t.find('#') != std::string::npos)
    return false;
  return t.find("::") == std::string::npos;
}

Result<Source> ParseSource(const std::string& t, const std::optional<std::string>& default_database) {
  if (t.empty()) return Status::Usage("empty side: give a schema, file:PATH or CONNINFO::SCHEMA");
  if (t.rfind("file:", 0) == 0) return Source{ManifestSource{t.substr(5)}};
  if (EndsWith(t, ".ldm")) return Source{ManifestSource{t}};
  if (t.rfind("postgresql://", 0) == 0 || t.rfind("postgres://", 0) == 0) {
    size_t hash = t.rfind('#');
    if (hash != std::string::npos) {
      if (hash + 1 == t.size()) return Status::Usagef("side \"{}\": no schema after '#'", pg::RedactConninfo(t));
      return Source{SchemaSource{t.substr(0, hash), t.substr(hash + 1)}};
    }
  }
  size_t sep = t.rfind("::");
  if (sep != std::string::npos) {
    if (sep + 2 == t.size()) return Status::Usagef("side \"{}\": no schema after '::'", pg::RedactConninfo(t));
    return Source{SchemaSource{t.substr(0, sep), t.substr(sep + 2)}};
  }
  if (!default_database)
    return Status::Usagef("side \"{}\": a schema needs a database (--db, LEDGERDIFF_DB or the PG* environment)", t);
  return Source{SchemaSource{*default_database, t}};
}

}  // namespace ledgerdiff::diff
