#pragma once
// The rows the job table (ingest/job_table.h) hands out, as plain values: what reports and
// renderers need from a run without the SQL protocol that produces them.

#include <cstdint>
#include <optional>
#include <string>

#include "core/ledger_range.h"
#include "ingest/detector.h"

namespace ledgerdiff::ingest {

struct JobRow {
  uint32_t job_id;
  LedgerRange range;
  std::string state;  // pending | running | done | failed | cancelled
  uint32_t attempt;
  std::string worker;
  int worker_pid;
  int backend_pid;
  std::string error;  // the last attempt's error (a failed job: why it failed)
  int64_t rows;       // rows the job committed (done jobs), 0 otherwise
  std::string stage;  // last stage the worker reported ("hold:<table>" while held)
  // ListJobs only: seconds since the last heartbeat by the database clock (-1: none), and
  // whether the claiming session (backend_pid) still exists.
  double heartbeat_age_s = -1;
  bool session_alive = true;
  // RequeueLost only: what caught the lost attempt.
  std::optional<Detector> detector;
};

struct AttemptRow {
  uint32_t job_id;
  uint32_t attempt;
  std::string worker;
  double start_s;  // seconds since the run's creation
  double end_s;    // -1 while running
  std::string outcome;  // running | done | failed | lost | fenced | interrupted
  std::string error;
  LedgerRange range;
  int slot = 0;  // the worker's lane 1..N (a replacement keeps its lane); 0 when not recorded
  std::optional<Detector> detector;  // what caught a failed attempt (none: done, stopped or running)
};

}  // namespace ledgerdiff::ingest
