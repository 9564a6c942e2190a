#include "dump/shard_slice.h"

#include <algorithm>

namespace ledgerdiff::dump {

Result<LedgerRange> ShardSlice(const LedgerRange& range, uint32_t count, uint32_t index) {
  if (count == 0) return Status::Usage("--shards must be at least 1");
  if (count > range.size())
    return Status::Usagef("--shards {} is more than the {} ledgers of range {}:{}", count, range.size(), range.from,
                          range.to);
  if (index >= count) return Status::Usagef("shard {} does not exist: --shards {} numbers them 0..{}", index, count, count - 1);
  const uint64_t base = range.size() / count, extra = range.size() % count;
  const uint64_t start = uint64_t{range.from} + index * base + std::min<uint64_t>(index, extra);
  const uint64_t size = base + (index < extra ? 1 : 0);
  return LedgerRange{static_cast<Ledger>(start), static_cast<Ledger>(start + size - 1)};
}

}  // namespace ledgerdiff::dump
