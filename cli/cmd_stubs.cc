// Families not built yet return empty lists.
#include "cli/command.h"
namespace ledgerdiff::cli {
std::vector<Command> IngestCommands() { return {}; }
std::vector<Command> DigestCommands() { return {}; }
std::vector<Command> VerifyCommands() { return {}; }
std::vector<Command> ChaosCommands() { return {}; }
}  // namespace ledgerdiff::cli
