#include "cli/command.h"

namespace ledgerdiff::cli {

std::vector<Command> IngestCommands() { return {}; }

}  // namespace ledgerdiff::cli
