#pragma once
// External ingesters (--ingest-cmd): one shell command per job, from a template.
//
// Values never become shell code. The template's placeholders {from} {to} {schema} {db}
// {worker} {job} are replaced by references to environment variables (LEDGERDIFF_JOB_FROM ...
// LEDGERDIFF_JOB_ID) that carry the values; the shell expands them, and the result of an
// expansion is never parsed again: a schema named x$(touch /tmp/p) or with ` " ' stays data.
// The reference fits the quoting context the placeholder sits in, so the value arrives as
// written in every context:
//   unquoted         {schema}  ->  "${LEDGERDIFF_JOB_SCHEMA}"
//   inside "..."     {schema}  ->  ${LEDGERDIFF_JOB_SCHEMA}
//   inside '...'     {schema}  ->  '"${LEDGERDIFF_JOB_SCHEMA}"'   (closes and reopens the quote)
// (The context is tracked through '...', "...", backslash escapes and # comments.)
// A nested shell (sh -c '... {schema} ...') receives the value as text of its script: write
// "$LEDGERDIFF_JOB_SCHEMA" there instead (the variables are in its environment too).
//
// The command runs under /bin/sh in the worker's process group (a signal to the worker's group
// reaches it too) with the database in its environment, stdin from /dev/null, and its stdout
// and stderr appended to the job's log files in the run's log directory (never to ledgerdiff's
// own stdout or stderr): LOG_DIR/job-<id>.stdout.log and LOG_DIR/job-<id>.stderr.log, each
// attempt introduced by a header line.

#include <cstdint>
#include <map>
#include <string>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::ingest {

// Placeholder name -> the environment variable that carries its value.
const std::map<std::string, std::string>& PlaceholderVariables();

// Expands an --ingest-cmd template: each known {placeholder} becomes a reference to its
// variable, quoted for its context (see above). An unknown {lowercase_word} is an error (a typo
// of a placeholder); every other brace is literal, so shell code such as ${VAR}, { a; b; } or
// awk '{print $1}' passes through; "{{" and "}}" write one brace.
Result<std::string> ExpandIngestCommand(const std::string& tmpl);
// Checks a template's placeholders (a Usage error naming the unknown one).
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
  uint32_t attempt = 0;
  LedgerRange range;
  std::string log_dir;  // the run's log directory (RunLogDir); created when missing
};

// The placeholder values of `job`, as environment variables (PlaceholderVariables()).
std::map<std::string, std::string> PlaceholderEnvironment(const IngestCommandJob& job);

// The run's log directory: ROOT/RUN_ID, ROOT defaulting to TEMP/ledgerdiff-logs (TEMP: $TMPDIR,
// else /tmp). Every process of a run (orchestrator, local and remote workers) derives the same
// path from the run id, so a resumed run appends to the same logs.
Result<std::string> RunLogDir(const std::string& run_id, const std::string& root = "");
std::string JobStdoutLog(const std::string& log_dir, uint32_t job_id);
std::string JobStderrLog(const std::string& log_dir, uint32_t job_id);

// Runs the expanded command to completion. An error names how it ended ("exit 3"), the job's
// stderr log, and the last lines this attempt wrote to it (its stdout's when stderr is empty),
// scrubbed of secrets, on one line.
Status RunIngestCommand(const std::string& tmpl, const IngestCommandJob& job);

}  // namespace ledgerdiff::ingest
