#pragma once
// JUnit XML of a verify report, for CI test views (`verify --junit FILE`).
//
// One <testcase> per compared table (failure: divergent, with its first divergent ledger, row
// counts and up to 5 row-diff lines); a failed ingestion is one errored case "ingest"; a
// divergence in the schemas only is one failing case "schema". The properties carry verdict,
// run id, range, workers, job size, schemas, baseline, bug, speed-up, first divergent ledger
// and look-again; <system-out> is the text rendering.
// INVARIANT: a pure function of the report (same report, same bytes); every data string is
// escaped, so the output is well-formed XML for any input.

#include <string>

#include "verify/verify.h"

namespace ledgerdiff::report {

std::string RenderVerifyJUnit(const verify::VerifyReport& report);

}  // namespace ledgerdiff::report
