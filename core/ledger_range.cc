#include "core/ledger_range.h"

#include <charconv>

#include "core/text.h"

namespace ledgerdiff {

std::string LedgerRange::str() const { return fmt::format("{}:{}", from, to); }

namespace {

constexpr uint64_t kMaxLedger = (uint64_t{1} << 31) - 1;

Result<Ledger> ParseLedger(std::string_view whole, std::string_view part, const char* which, RangeUse use) {
  if (part.empty()) return Status::Usagef("range \"{}\": {} is missing (expected FROM:TO)", whole, which);
  if (part.front() == '-') return Status::Usagef("range \"{}\": {} ({}) is negative", whole, which, part);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > kMaxLedger))
    return Status::Usagef("range \"{}\": {} ({}) is larger than {}", whole, which, part, kMaxLedger);
  if (ec != std::errc() || end != part.data() + part.size())
    return Status::Usagef("range \"{}\": {} (\"{}\") is not a number", whole, which, part);
  if (v == 0 && use == RangeUse::kIngest)
    return Status::Usagef("range \"{}\": {} is 0; ledgers to ingest start at 1", whole, which);
  return static_cast<Ledger>(v);
}

}  // namespace

Result<LedgerRange> ParseLedgerRange(std::string_view text, RangeUse use) {
  if (text.empty()) return Status::Usage("range is empty (expected FROM:TO, e.g. 2:5001)");
  auto colon = text.find(':');
  std::string_view from_s = colon == std::string_view::npos ? text : text.substr(0, colon);
  std::string_view to_s = colon == std::string_view::npos ? text : text.substr(colon + 1);
  LD_ASSIGN_OR_RETURN(Ledger from, ParseLedger(text, from_s, "FROM", use));
  LD_ASSIGN_OR_RETURN(Ledger to, ParseLedger(text, to_s, "TO", use));
  if (to < from) return Status::Usagef("range \"{}\": TO ({}) is before FROM ({})", text, to, from);
  return LedgerRange{from, to};
}

std::vector<LedgerRange> SplitJobs(const LedgerRange& range, uint32_t job_size) {
  std::vector<LedgerRange> jobs;
  for (uint64_t start = range.from; start <= range.to; start += job_size) {
    uint64_t end = std::min<uint64_t>(start + job_size - 1, range.to);
    jobs.push_back({static_cast<Ledger>(start), static_cast<Ledger>(end)});
  }
  return jobs;
}

std::vector<LedgerRange> ToIntervals(const std::vector<Ledger>& sorted) {
  std::vector<LedgerRange> out;
  for (Ledger l : sorted) {
    if (!out.empty() && (out.back().to == l || out.back().to + 1 == l)) {
      out.back().to = l;
    } else {
      out.push_back({l, l});
    }
  }
  return out;
}

std::string FormatIntervals(const std::vector<Ledger>& sorted) { return FormatIntervals(ToIntervals(sorted)); }

}  // namespace ledgerdiff
