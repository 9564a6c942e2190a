#pragma once
// Internal to diff/: one side's coverage, built as the ledger walk goes.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ledger_range.h"
#include "diff/diff.h"

namespace ledgerdiff::diff {

// One side's coverage (SideCoverage), fed ledger by ledger in order over the compared range.
// Runs of ledgers without a ledger-table row are closed as they end: a run before the first held
// ledger or after the last one is missing only with an explicit range (else `not_held`); a run
// between held ledgers is a gap, always missing; with no ledger held at all the whole range is.
class CoverageBuilder {
 public:
  CoverageBuilder(bool explicit_range, std::vector<std::string> tables)
      : explicit_(explicit_range), tables_(std::move(tables)), orphans_(tables_.size()) {}

  // Ledgers `run` hold no row of any table (fed in order with Add).
  void AddEmpty(const LedgerRange& run) {
    if (absent_) absent_->to = run.to;
    else absent_ = run;
  }
  // `held`: the ledger table has a row at `l`. When not held, `counts(t)` is table t's rows at l.
  template <typename Counts>
  void Add(Ledger l, bool held, const Counts& counts) {
    if (held) {
      if (absent_) Close(/*trailing=*/false);
      if (!cov_.first) cov_.first = l;
      cov_.last = l;
      ++cov_.held;
      return;
    }
    AddEmpty({l, l});
    for (size_t t = 0; t < tables_.size(); ++t) {
      uint64_t c = counts(t);
      if (c == 0) continue;
      Orphan& o = orphans_[t];
      o.rows += c;
      ++o.ledgers;
      if (!o.at.empty() && o.at.back().to + 1 == l && o.extendable) o.at.back().to = l;
      else if (o.at.size() < kMaxCoverageRanges) o.at.push_back({l, l}), o.extendable = true;
      else o.extendable = false;
    }
  }

  SideCoverage Finish() {
    if (absent_) Close(/*trailing=*/true);
    for (size_t t = 0; t < tables_.size(); ++t)
      if (orphans_[t].rows) cov_.orphans.push_back({tables_[t], orphans_[t].rows, orphans_[t].ledgers, orphans_[t].at});
    return std::move(cov_);
  }

 private:
  struct Orphan {
    uint64_t rows = 0, ledgers = 0;
    std::vector<LedgerRange> at;
    bool extendable = true;  // at.back() may still grow (false once the list is full)
  };
  // Closes the current run of ledgers without a ledger-table row. Called before `l` updates
  // first/last: a run closed by a held ledger with none held before is leading.
  void Close(bool trailing) {
    const LedgerRange run = *absent_;
    absent_.reset();
    const bool leading = !trailing && !cov_.first;
    const bool beyond_data = leading || (trailing && cov_.first.has_value());  // outside first..last
    if (beyond_data && !explicit_) {
      cov_.not_held.push_back(run);
      return;
    }
    ++cov_.missing_ranges;
    cov_.missing_ledgers += run.size();
    if (cov_.missing.size() < kMaxCoverageRanges) cov_.missing.push_back(run);
  }

 private:
  bool explicit_;
  std::vector<std::string> tables_;
  std::vector<Orphan> orphans_;
  SideCoverage cov_;
  std::optional<LedgerRange> absent_;
};

}  // namespace ledgerdiff::diff
