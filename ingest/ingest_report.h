#pragma once
// What an ingestion run did: jobs, attempts (the timeline), rows, failures. Rendered as text and
// JSON by report/ingest_text_json.h (JSON documented in ingest/README.md).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/target.h"
#include "ingest/job_rows.h"

namespace ledgerdiff::ingest {

struct IngestReport {
  std::string run_id;
  std::string schema;
  LedgerRange range;
  uint32_t workers = 0;
  uint32_t job_size = 0;
  uint32_t jobs = 0;
  bool ok = false;
  double wall_s = 0;
  uint64_t ledgers = 0;
  std::map<std::string, uint64_t> rows_per_table;
  uint64_t rows = 0;
  uint32_t attempts = 0;         // job attempts in all
  uint32_t retried_jobs = 0;     // jobs that needed more than one attempt
  uint32_t workers_replaced = 0;  // replacement workers started
  uint32_t workers_failed = 0;    // workers that ended with an error exit (e.g. a refused connection) or a signal
  std::vector<JobRow> failed_jobs;
  std::optional<LedgerRange> restart_range;
  std::vector<AttemptRow> timeline;  // every attempt, for reports
  std::string error;             // why the run failed
  std::string log_dir;           // external ingester: the run's per-job stdout/stderr logs; "" otherwise
  // The database and schema, set by the `ingest` command (text "target: ...", JSON "target"); unset
  // in a verify's side runs (the verify names its target once).
  std::optional<Target> target;

  double ledgers_per_s() const { return wall_s > 0 ? static_cast<double>(ledgers) / wall_s : 0; }
  double rows_per_s() const { return wall_s > 0 ? static_cast<double>(rows) / wall_s : 0; }
};

}  // namespace ledgerdiff::ingest
