#pragma once
// Help conventions every subcommand shares (examples, enum choices, "did you mean"), and the
// texts the man page and shell completions are generated from (cmd_docs.cc). One source: the
// CLI11 App definition plus the tables here, so --help, ledgerdiff(1) and completions agree.

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace ledgerdiff::cli {

// What the user meant by `typed` (3+ characters for a prefix): the only candidate it is a prefix
// of; else the candidate closest by edit distance (insertion, deletion, substitution, swap of two
// adjacent characters) when a plausible typo, distance <= max(1, min(3, |typed| / 3)); else the
// shortest candidate it is a prefix of; else "". Ties go to the earlier candidate.
std::string SuggestCommand(std::string_view typed, const std::vector<std::string>& candidates);

// Shows an option restricted to fixed choices as "a|b" in --help (instead of CLI11's
// "ENUM:value in {a->0,b->1} OR {0,1}"). Parsing is unchanged.
// REQUIRES: `choices` non-empty.
void FormatEnumOption(CLI::Option* opt, const std::vector<std::string>& choices);

// The choices of an option restricted by CLI::IsMember or CLI::CheckedTransformer, in the order
// its help shows them ("text|json" -> {text, json}); empty when the option is not an enum.
std::vector<std::string> EnumChoices(const CLI::Option& opt);

// Example command lines of a subcommand ("#" lines are comments); empty for unknown names.
const std::vector<std::string>& CommandExamples(std::string_view command);

struct HelpEntry {
  std::string name;
  std::string meaning;
};
// The process exit codes and the environment the tool reads, for --help and ledgerdiff(1).
const std::vector<HelpEntry>& ExitCodes();
const std::vector<HelpEntry>& EnvironmentVariables();

// Gives every visible subcommand an "Examples:" footer, the root an examples, exit-code and
// environment footer, every enum option the "a|b" form, and every unsigned option a check that
// refuses a sign (exit 2 naming the flag, never a wrapped 2^64 - N). A visible subcommand without
// examples is a programming error caught by tests/help_test.cc.
// REQUIRES: called once, after every subcommand and option is added, before parsing.
void ApplyHelpConventions(CLI::App& app);

// The one-line message for a usage error. Adds "did you mean X?" to an unknown command and lists
// the commands when none was given; names an enum's choices and what a number flag takes; a
// missing required option names its command and its --help ("verify-range: --left is required
// (ledgerdiff verify-range --help)"); otherwise CLI11's message. (An unknown option is
// UnknownOption's, checked before the parse.)
std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error, int argc, const char* const* argv);

// The one-line message for the first option the command does not know (a nested command:
// `manifest merge`, whose known options include those it falls through to), with the nearest
// known option when a typo is plausible (SuggestCommand): "verify-range: unknown option --lefft;
// did you mean --left?"; else "". The values an option takes are skipped as CLI11 takes them
// (`--ingest-cmd --x`: "--x" is a value); nothing after "--" is an option. Checked before
// parsing, so on every command an unknown option is named before any "--x is required".
std::string UnknownOption(const CLI::App& app, int argc, const char* const* argv);

// The one-line message when an option that takes a value is followed by another of the command's
// options instead ("--schema --range 2:9": CLI11 would take "--range" as the schema's name),
// else "". Checked before parsing.
std::string OptionMissingItsValue(const CLI::App& app, int argc, const char* const* argv);

}  // namespace ledgerdiff::cli
