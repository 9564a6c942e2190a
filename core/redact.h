#pragma once
// Secrets never reach output: the one redaction path.
//
// Every password the process learns (from --db, LEDGERDIFF_DB, PGPASSWORD, any conninfo handed
// to pg::Connection::Open or RedactConninfo) is registered here, in every form it can be echoed
// in: as written, percent-decoded, percent-encoded and conninfo-escaped. ScrubSecrets replaces
// each registered form with "***". Status (core/status.h) scrubs every message it is built
// with, so no error message can carry a registered password to stderr, JSON, JUnit, Markdown
// or HTML. Text that reaches output without passing through a Status (a rendered conninfo,
// a child's captured output) must go through RedactConninfo or ScrubSecrets.
//
// INVARIANT: registered secrets are never forgotten for the life of the process.
// Secrets shorter than 4 bytes are scrubbed only as whole tokens (bounded by characters other
// than letters and digits), so that a one-letter password does not mangle every message.

#include <string>
#include <string_view>
#include <vector>

namespace ledgerdiff {

// Every password `conninfo` may hold (password and sslpassword): the value libpq parses (URI or
// key=value, also in a nested dbname conninfo), plus what lenient scans find whether or not libpq
// can parse it (upper-case PASSWORD=, malformed percent-encoding, unterminated quotes, a '?' in a
// URI password, a percent-encoded query key such as pass%77ord, a value quoted inside a quoted
// dbname conninfo, a URI given as dbname), and two rules that need no parse at all: a URI-shaped
// user info, malformed or not ("postgresql:/u:pw@h", "postgresql//u:pw@h", "postgres:u:pw@h",
// "u:pw@h"), is everything between a ':' (not a scheme's "://") and the '@' after it (unless a recognised
// key=value lies between); a password or sslpassword value runs up to the next recognised key
// (one of libpq's keywords followed by '='), so "password=Hun ter=2Q" is one value. Raw forms only.
std::vector<std::string> ConninfoPasswords(std::string_view conninfo);

// Registers `secret` (and its percent-encoded/-decoded and escaped forms). Empty: no-op.
void RegisterSecret(std::string_view secret);
// Registers every password of `conninfo` (ConninfoPasswords).
void RegisterConninfoSecrets(std::string_view conninfo);
// Registers PGPASSWORD from the environment.
void RegisterEnvironmentSecrets();

// `text` with every registered secret replaced by "***".
std::string ScrubSecrets(std::string text);

// Foreign text (an external ingester's output, which may show part of a password): ScrubSecrets,
// and also every run of text that holds a 4-byte piece of a password libpq parsed from a
// registered conninfo or of PGPASSWORD (in any of its registered forms), masked as "***". Not for
// the tool's own messages: a password such as "ledger" would mask every word that holds "ledg".
std::string ScrubSecretPieces(std::string text);

// Tests and fuzzers only (tests/fuzz/redact_fuzz.cc registers millions of passwords, one input
// after the other): forgets every registered secret. Never called by the tool: it would break the
// INVARIANT above.
void ForgetSecretsForTesting();

// `conninfo` for display and for look-again commands: when libpq parses it, rebuilt in
// key=value form without the password and sslpassword (usable as --db with the password given by
// PGPASSWORD or ~/.pgpass); otherwise the text with every password candidate replaced by "***".
// Registers the passwords it removes.
std::string RedactConninfo(std::string_view conninfo);

// The keywords libpq recognises (PQconndefaults: its own list, not a parse of any text): what
// ends an unquoted password.
const std::vector<std::string>& LibpqKeywords();

}  // namespace ledgerdiff
