#pragma once
// The CLI is a thin shell: each subcommand parses its flags (CLI11) and calls one library
// function, then renders the result. One file per subcommand family (cmd_*.cc) defines its
// entries; main.cc holds the table.

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/database.h"
#include "core/report.h"
#include "core/status.h"

namespace ledgerdiff::cli {

// Runs a parsed subcommand and returns the process exit code.
using Runner = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  bool hidden;  // internal (worker processes)
  // Adds the subcommand's flags to `sub`; the returned Runner runs it after parsing.
  std::function<Runner(CLI::App* sub)> setup;
};

// Flags shared by every command that needs a database.
void AddDatabaseFlags(CLI::App* sub, DatabaseOptions& options);
// --format text|json
void AddFormatFlag(CLI::App* sub, OutputFormat& format);

// The generated workload and how it is compared, shared by verify, selftest and chaos:
// --workers, --job-size, --seed, --density (generator) and --profile (digest profile).
struct WorkloadFlags {
  uint32_t& workers;
  uint32_t& job_size;
  uint64_t& seed;
  std::string& density;
  std::string& table_profile;
};
void AddWorkloadFlags(CLI::App* sub, const WorkloadFlags& flags);

// Prints "ledgerdiff: <message>" on stderr and returns the status's exit code.
int Fail(const Status& status);

// Per-family command lists (cmd_*.cc).
std::vector<Command> IngestCommands();   // ingest, db, _worker
std::vector<Command> DigestCommands();   // digest, diff, dump
std::vector<Command> VerifyCommands();   // verify, verify-range, selftest
std::vector<Command> ChaosCommands();    // chaos
std::vector<Command> SweepCommands();    // sweep

}  // namespace ledgerdiff::cli
