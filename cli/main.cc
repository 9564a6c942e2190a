// ledgerdiff: prove that a parallel ingestion of ledger history wrote exactly what a serial one
// writes. This file is the table of subcommands; each one lives in a cmd_*.cc file.

#include <fmt/format.h>

#include "cli/command.h"
#include "core/process.h"
#include "ledgerdiff/version.h"

namespace ledgerdiff::cli {

void AddDatabaseFlags(CLI::App* sub, DatabaseOptions& options) {
  sub->add_option("--db", options.conninfo,
                  "PostgreSQL conninfo (libpq URI or key=value). Default: $LEDGERDIFF_DB, then the PG* "
                  "environment, then an embedded throwaway server");
  sub->add_option("--keep-db", options.keep_dir,
                  "Embedded server: keep its cluster in DIR (reused when DIR already holds one)");
}

void AddFormatFlag(CLI::App* sub, OutputFormat& format) {
  sub->add_option("--format", format, "Output format")
      ->transform(CLI::CheckedTransformer(std::map<std::string, OutputFormat>{{"text", OutputFormat::kText},
                                                                              {"json", OutputFormat::kJson}},
                                          CLI::ignore_case));
}

void AddWorkloadFlags(CLI::App* sub, const WorkloadFlags& f) {
  sub->add_option("--workers", f.workers, "Worker processes of a parallel ingestion")->capture_default_str();
  sub->add_option("--job-size", f.job_size, "Ledgers per job (the last job may be shorter)")->capture_default_str();
  sub->add_option("--seed", f.seed, "Seed of the generator (and of chaos's fault schedule)")->capture_default_str();
  sub->add_option("--density", f.density, "Generated ledger density: stellar | flat")->capture_default_str();
  sub->add_option("--profile", f.table_profile, "Digest profile: horizon | auto | FILE.json")->capture_default_str();
}

int Fail(const Status& status) {
  // After Ctrl-C, failures are the interruption's echo: say what happened instead.
  if (TerminationInProgress()) {
    fmt::print(stderr, "ledgerdiff: interrupted; stopping workers and the embedded server\n");
    return 2;
  }
  fmt::print(stderr, "ledgerdiff: {}\n", status.message());
  return static_cast<int>(status.exit_code());
}

}  // namespace ledgerdiff::cli

int main(int argc, char** argv) {
  using namespace ledgerdiff;
  using namespace ledgerdiff::cli;
  InstallTerminationHandler();

  CLI::App app{"ledgerdiff: prove that a parallel ingestion of ledger history wrote exactly what a serial one writes"};
  app.set_version_flag("--version", std::string("ledgerdiff ") + kVersion);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 identical / success, 1 divergent / anomalies found, 2 usage or runtime error.");

  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (auto family : {IngestCommands, DigestCommands, VerifyCommands, ChaosCommands, SweepCommands}) {
    for (const Command& cmd : family()) {
      CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
      if (cmd.hidden) sub->group("");
      runners.emplace_back(sub, cmd.setup(sub));
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 with one line.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "ledgerdiff: {}\n", e.what());
    return 2;
  }
  int code = 2;
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) {
      code = run();
      break;
    }
  }
  // After Ctrl-C the command fails as its database goes away; the signal thread is still
  // stopping servers and removing directories, and ends the process itself (exit 128+signal).
  AwaitTerminationIfInProgress();
  return code;
}
