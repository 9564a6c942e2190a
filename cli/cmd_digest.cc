#include "cli/command.h"

namespace ledgerdiff::cli {

std::vector<Command> DigestCommands() { return {}; }

}  // namespace ledgerdiff::cli
