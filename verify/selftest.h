#pragma once
// The gate's self-test: a gate that never fails proves nothing.
//
// Ingests the range serially once, then runs a clean parallel verify and one parallel verify
// per bug kind (fixtures::BugKind), each against the same serial schema. A bug is caught when
// verify reports a divergence whose first divergent ledger is exactly the injected ledger;
// split-lookup (invisible to natural-key digests) when the lookup section reports the split
// account under several ids on the parallel side.
// Passes only when every bug is caught at its ledger and the clean run is identical.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/report.h"
#include "core/status.h"
#include "core/target.h"
#include "dump/canonical.h"
#include "dump/profile.h"
#include "ingest/plan.h"

namespace ledgerdiff::verify {

// The plan of every case's parallel side (bugs are the self-test's own); the serial side runs
// it with one worker.
struct SelftestOptions {
  SelftestOptions() { plan.range = {2, 2001}; }
  ingest::IngestPlan plan;
  std::string table_profile = "horizon";
  // table_profile's spec as the caller loaded it (VerifyOptions::profile_spec of every case);
  // nullptr: each case's verify loads it.
  std::shared_ptr<const dump::ProfileSpec> profile_spec;
  dump::DigestEngine engine = dump::kDefaultEngine;  // every case's digests
  // As VerifyOptions's: what an interrupt leaves behind is said with these.
  std::string reconnect_flags;
  bool database_removed_on_exit = false;
};

struct SelftestCase {
  std::string kind;             // "clean" or a bug kind
  Ledger ledger = 0;            // injected at (0 for clean)
  std::optional<Ledger> reported;  // first divergent ledger reported by verify
  std::vector<std::string> tables;  // divergent tables at the first divergent ledger, then divergent lookup tables
  bool caught = false;          // bug: reported == ledger (split-lookup: the split reported); clean: identical
  double seconds = 0;
  std::string error;
};

struct SelftestReport {
  LedgerRange range;
  std::string serial_schema;
  std::vector<SelftestCase> cases;
  double seconds = 0;
  // What the command worked on (Target::Line in text, "target" in JSON); unset: not shown.
  std::optional<Target> target;
  bool passed() const {
    for (const auto& c : cases)
      if (!c.caught) return false;
    return !cases.empty();
  }
};

Result<SelftestReport> RunSelftest(const std::string& conninfo, const SelftestOptions& options, Reporter& reporter);

// Picks, for every bug kind, a ledger of `range` whose generated content the bug can act on,
// spread over the range. Deterministic for (range, seed, density).
Result<std::vector<std::pair<std::string, Ledger>>> PlanSelftest(const SelftestOptions& options);

}  // namespace ledgerdiff::verify
