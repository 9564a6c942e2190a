// Fuzzes the range parser (core/ledger_range.h ParseLedgerRange: every `--range A:B`), for both
// uses (ingest: FROM >= 1; compare: FROM >= 0).
//
// Properties: no crash, no sanitizer report; a rejected text is a usage error (exit 2) that
// starts with "range"; an accepted one is decimal digits with at most one colon, gives
// FROM <= TO < 2^31 (FROM >= 1 to ingest), reads back from its own FROM:TO form, and splits
// (SplitJobs) into jobs that cover it exactly, in order.

#include <string>
#include <string_view>

#include "core/ledger_range.h"
#include "tests/fuzz/fuzz_util.h"

using namespace ledgerdiff;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (RangeUse use : {RangeUse::kIngest, RangeUse::kCompare}) {
    const char* name = use == RangeUse::kIngest ? "ingest" : "compare";
    auto r = ParseLedgerRange(text, use);
    if (!r.ok()) {
      fuzz::CheckBadInput(r.status(), "", name);
      LD_FUZZ_CHECK(r.status().message().rfind("range", 0) == 0, "{}: error does not name the range: {}", name,
                    r.status().message());
      continue;
    }
    size_t colons = 0;
    for (char c : text) {
      LD_FUZZ_CHECK(c == ':' || (c >= '0' && c <= '9'), "{}: accepted \"{}\" holds '{}'", name, text, c);
      colons += c == ':';
    }
    LD_FUZZ_CHECK(colons <= 1, "{}: accepted \"{}\"", name, text);
    LD_FUZZ_CHECK(r->from <= r->to && r->to <= 2147483647u, "{}: \"{}\" gave {}", name, text, r->str());
    LD_FUZZ_CHECK(use == RangeUse::kCompare || r->from >= 1, "{}: \"{}\" gave {}", name, text, r->str());
    auto again = ParseLedgerRange(r->str(), use);
    LD_FUZZ_CHECK(again.ok() && *again == *r, "{}: {} does not read back", name, r->str());
    // At most 64 jobs, whatever the range's width.
    const uint64_t jobs_wanted = 1 + (size % 64);
    const uint32_t job_size = static_cast<uint32_t>((r->size() + jobs_wanted - 1) / jobs_wanted);
    uint64_t next = r->from;
    const auto jobs = SplitJobs(*r, job_size);
    for (const LedgerRange& j : jobs) {
      LD_FUZZ_CHECK(j.from == next && j.to >= j.from && j.size() <= job_size, "{}: job {} after ledger {} of {}", name,
                    j.str(), next, r->str());
      next = uint64_t{j.to} + 1;
    }
    LD_FUZZ_CHECK(!jobs.empty() && next == uint64_t{r->to} + 1, "{}: jobs of {} end at {}", name, r->str(), next);
  }
  return 0;
}
