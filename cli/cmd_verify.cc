#include "cli/command.h"

namespace ledgerdiff::cli {

std::vector<Command> VerifyCommands() { return {}; }

}  // namespace ledgerdiff::cli
