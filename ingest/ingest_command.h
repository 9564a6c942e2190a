#pragma once
// External ingesters (--ingest-cmd): one shell command per job, from a template.
//
// The template's placeholders {from} {to} {schema} {db} {worker} {job} are replaced by their
// values, each shell-quoted; the command runs under /bin/sh in the worker's process group (a
// signal to the worker's group reaches it too) with the database in its environment.

#include <map>
#include <string>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::ingest {

// Expands an --ingest-cmd template: {from} {to} {schema} {db} {worker} {job}, each value
// shell-quoted. An unknown {lowercase_word} is an error (a typo of a placeholder); every other
// brace is literal, so shell code such as ${VAR}, { a; b; } or awk '{print $1}' passes
// through; "{{" and "}}" write one brace.
Result<std::string> ExpandIngestCommand(const std::string& tmpl, const std::map<std::string, std::string>& values);
// Checks a template's placeholders without values (a Usage error naming the unknown one).
Status CheckIngestCommand(const std::string& tmpl);

// Environment for an external ingester: DATABASE_URL (the conninfo as given), PGHOST, PGPORT,
// PGUSER, PGDATABASE, PGPASSWORD, PGSSLMODE (from the conninfo) and PGOPTIONS with
// search_path = schema.
std::map<std::string, std::string> IngesterEnvironment(const std::string& conninfo, const std::string& schema);

// What one run of the command is about.
struct IngestCommandJob {
  std::string conninfo;
  std::string schema;
  std::string worker;
  uint32_t job_id = 0;
  LedgerRange range;
};
// Runs the expanded command to completion; an error names how it ended ("exit 3").
Status RunIngestCommand(const std::string& tmpl, const IngestCommandJob& job);

}  // namespace ledgerdiff::ingest
