#pragma once
// What the files of the soundness_test binary (soundness_test.cc, soundness_encoding_test.cc)
// share: SQL on a database by conninfo, a diff under the horizon profile, and the report's lookup
// and invariant facts. Included by test sources only.

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "core/pg.h"
#include "diff/diff.h"
#include "dump/profile.h"
#include "tests/harness.h"

namespace ledgerdiff::soundness_support {

// What every file of the binary uses of the harness, brought in with the helpers.
using testing::Connect;
using testing::LoadDump;
using testing::ScenarioDir;
using testing::TestConninfo;
using testing::UniqueName;

using testing::ExecSql;

inline int64_t QueryInt(const std::string& conninfo, const std::string& sql) {
  auto c = testing::Connect(conninfo);
  auto r = c->Exec(sql);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().message()) << "\n" << sql;
  if (!r.ok() || r->size() == 0 || r->IsNull(0, 0)) return -1;
  return r->GetInt(0, 0);
}

// Drops every foreign key of a loaded dump (tests renumber ids in several steps).
inline void DropForeignKeys(const std::string& conninfo) {
  ExecSql(conninfo, "DO $$ DECLARE r record; BEGIN FOR r IN SELECT conrelid::regclass::text AS t, conname FROM "
                    "pg_constraint WHERE contype = 'f' LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, "
                    "r.conname); END LOOP; END $$");
}

inline diff::Source Db(const std::string& conninfo, const std::string& schema = "public") {
  return diff::SchemaSource{conninfo, schema};
}

inline Result<diff::DiffReport> Diff(const diff::Source& a, const diff::Source& b, diff::DiffOptions o = {},
                              const dump::ProfileSpec& spec = dump::HorizonProfileSpec()) {
  NullReporter rep;
  return diff::DiffSources(a, b, spec, o, rep);
}

inline const diff::LookupComparison* Lookup(const diff::DiffReport& r, const std::string& table) {
  for (const auto& c : r.lookups)
    if (c.table == table) return &c;
  return nullptr;
}

inline uint64_t Violations(const diff::DiffReport& r, const std::string& name, const std::string& side) {
  for (const auto& v : r.invariants)
    if (v.name == name && ToString(v.side) == side) return v.violations;
  return 0;
}

}  // namespace ledgerdiff::soundness_support
