#pragma once
// A digest's summary (rows, ledgers with rows, roots per table, the overall root) built from its
// chunks in ledger order: the one computation DigestSchema, a manifest's reader, the merge and
// verify-range share, so their roots agree by construction.

#include <memory>
#include <string>

#include "core/ledger_range.h"
#include "dump/chunk.h"
#include "dump/digest.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// Rows, ledgers with rows and roots per table and the overall root of a manifest's entries, from
// its chunks in ledger order, as DigestSchema computes them (the merge and verify-range use it).
class SummaryBuilder {
 public:
  SummaryBuilder(const ResolvedProfile& profile, const LedgerRange& range, std::string source);
  // REQUIRES: chunk.full, chunks consecutive from range.from, with the profile's tables.
  void Add(const Chunk& chunk);
  // Call once, after the chunk holding range.to.
  DigestSummary Finish();

 private:
  DigestSummary summary_;
  std::unique_ptr<RootBuilder> roots_;  // refers to summary_.profile
};

}  // namespace ledgerdiff::dump
