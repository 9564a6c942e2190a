#include "dump/summary_builder.h"

#include <utility>

namespace ledgerdiff::dump {

SummaryBuilder::SummaryBuilder(const ResolvedProfile& profile, const LedgerRange& range, std::string source) {
  summary_.source = std::move(source);
  summary_.range = range;
  summary_.profile = profile;
  for (const auto& t : summary_.profile.tables) summary_.tables.push_back({t.name, 0, 0, ""});
  roots_ = std::make_unique<RootBuilder>(summary_.profile);
}

void SummaryBuilder::Add(const Chunk& chunk) {
  roots_->Add(chunk);
  for (size_t i = 0; i < chunk.counts.size(); ++i) {
    auto& ts = summary_.tables[i % chunk.tables];
    ts.rows += chunk.counts[i];
    if (chunk.counts[i]) ++ts.ledgers_with_rows;
    summary_.rows += chunk.counts[i];
  }
}

DigestSummary SummaryBuilder::Finish() {
  std::vector<std::string> table_roots;
  roots_->Finish(summary_.range, table_roots, summary_.root);
  roots_.reset();
  for (size_t t = 0; t < table_roots.size(); ++t) summary_.tables[t].root = table_roots[t];
  return std::move(summary_);
}

}  // namespace ledgerdiff::dump
