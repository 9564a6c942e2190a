#pragma once
// Canonical dumps: the canonical rows of every compared table (ids resolved, excluded columns
// left out, canonical order), as JSON lines or CSV. Two schemas with the same content give
// byte-identical dumps, so they can also be compared with ordinary tools (diff, sha256sum).
//
// JSON lines: one object per row, keys in canonical column order: "ledger" first, then every
// canonical column; values are the PostgreSQL text forms (pinned session settings) as strings,
// SQL NULL as null. To stdout every object also starts with "table".
// CSV: a header line (ledger, columns), RFC 4180 quoting; NULL is an empty unquoted field, the
// empty string is "". To stdout, a line "# table NAME" precedes each table's header.

#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/report.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

enum class DumpFormat { kJsonl, kCsv };

struct DumpOptions {
  std::optional<LedgerRange> range;  // default: the range present in the schema
  DumpFormat format = DumpFormat::kJsonl;
  // "-": stdout; else a directory, one file per table, written atomically: the files are staged
  // in a sibling OUT.tmpXXXXXX and moved into OUT only when every table is written; a failure
  // or an interrupt (SIGINT/SIGTERM/SIGHUP) removes the sibling and leaves OUT as it was.
  std::string out = "-";
};

struct DumpSummary {
  LedgerRange range;
  std::vector<std::pair<std::string, uint64_t>> tables;  // table, rows written
  std::vector<std::string> files;
  std::vector<std::string> excluded_columns;
};

// Reads in one REPEATABLE READ READ ONLY transaction. Writes to stdout only when out is "-".
// Usage error unless every file a dump of `tables` writes into the existing directory `out` can be
// written there (CheckWriteTarget: not a symbolic link, not a FIFO). Nothing when `out` is "-" or
// does not exist yet.
Status CheckDumpTargets(const std::string& out, const std::vector<std::string>& tables, DumpFormat format);

Result<DumpSummary> DumpSchema(const std::string& conninfo, const std::string& schema, const ProfileSpec& spec,
                               const DumpOptions& options, Reporter& reporter);

}  // namespace ledgerdiff::dump
