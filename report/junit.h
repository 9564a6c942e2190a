#pragma once
// JUnit XML: the one writer every JUnit report of report/ goes through (RenderJUnitXml), and a
// verify report as JUnit XML, for CI test views (`verify --junit FILE`).
//
// RenderVerifyJUnit: one <testcase> per compared table (failure: divergent, with its first
// divergent ledger, row counts and up to 5 row-diff lines); a failed ingestion is one errored
// case "ingest"; a divergence in the schemas only is one failing case "schema". The properties
// carry verdict, run id, range, workers, job size, schemas, baseline, bug, speed-up, first
// divergent ledger and look-again; <system-out> is the text rendering.
// INVARIANT: pure functions (same input, same bytes); every data string is escaped (Attr in
// attributes, Esc in content), so the output is well-formed XML for any input.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "verify/verify.h"

namespace ledgerdiff::report {

// One <testcase>. A passing case's `body` is its <system-out> (none when empty); a failing or
// errored case's is the text of its <failure> or <error> element, whose `message` and `type`
// attributes are `message` and `type`.
struct JUnitCase {
  enum class Kind { kPass, kFailure, kError };
  std::string name;
  Kind kind = Kind::kPass;
  std::string type;
  std::string message;
  std::string body;
};

// A document of one <testsuite> inside <testsuites>: the counts (tests, failures, errors,
// skipped 0) are the cases'; `seconds`, when set, is the time attribute of both; `system_out`
// is the suite's <system-out> (none when empty).
struct JUnitSuite {
  std::string suites_name;  // <testsuites name>
  std::string name;         // <testsuite name>
  std::string classname;    // every <testcase classname>
  std::optional<double> seconds;
  std::vector<std::pair<std::string, std::string>> properties;  // name, value; in order
  std::vector<JUnitCase> cases;
  std::string system_out;
};
std::string RenderJUnitXml(const JUnitSuite& suite);

std::string RenderVerifyJUnit(const verify::VerifyReport& report);
// A one-shot verify-range (`verify-range --junit FILE`) with verify's cases (issue 46): one per
// table (failure: divergent, with its first divergent ledger, counts and row-diff lines), the
// soundness problems, "coverage" (failing when a side lacks ledgers of the range, unless
// --allow-gaps) and "state" when it was compared (failing: divergent or incomplete). Properties:
// verdict, headline (RangeHeadline), target, range, sides, counts, coverage, look-again. The
// suite keeps the name the gate's JUnit gave it, "ledgerdiff.verify-range".
std::string RenderVerifyRangeJUnit(const verify::VerifyRangeReport& report);

}  // namespace ledgerdiff::report
