#pragma once
// What the files of the digest_test binary (digest_test.cc, digest_horizon_test.cc, digest_coverage_test.cc,
// digest_sparse_test.cc) share; defined in digest_test.cc.

#include <string>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "diff/diff.h"
#include "dump/digest.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"

namespace ledgerdiff::digest_support {

// What every file of the binary uses of dump and the harness, brought in with the helpers.
using dump::Chunk;
using testing::CliResult;
using testing::Connect;
using testing::DeleteLedger;
using testing::HasColumn;
using testing::LoadDump;
using testing::LoadableDumps;
using testing::Renumber;
using testing::RunCli;
using testing::TestConninfo;
using testing::UniqueName;

// A quoted SQL identifier.
std::string Q(const std::string& s);
using testing::ExecSql;
// Diffs two sources under the horizon profile.
Result<diff::DiffReport> Diff(const diff::Source& a, const diff::Source& b, diff::DiffOptions o = {});
diff::Source Db(const std::string& conninfo, const std::string& schema = "public");
// The unmodified kahuna dump, loaded once and never changed.
std::string& KahunaLeft();
// The ledgers of `conninfo`'s history_ledgers: min to max sequence.
LedgerRange HeldLedgers(const std::string& conninfo);

}  // namespace ledgerdiff::digest_support
