#include "cli/command.h"

namespace ledgerdiff::cli {

std::vector<Command> ChaosCommands() { return {}; }

}  // namespace ledgerdiff::cli
