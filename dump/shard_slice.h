#pragma once
// Which slice of a range a shard covers: the arithmetic both the partial manifest's format
// (dump/manifest.h, its header key "shard") and the sharded digest (dump/shard.h) stand on.
// Depends on core only, so that neither of those includes the other.

#include <cstdint>

#include "core/ledger_range.h"
#include "core/status.h"

namespace ledgerdiff::dump {

// A partial manifest (a shard of a sharded digest, dump/shard.h): its own range is the slice
// `index` of `count` of `full_range`. Absent on a manifest of a whole range.
struct ShardInfo {
  uint32_t index = 0;
  uint32_t count = 0;
  LedgerRange full_range;
};

// Slice `index` of `count` of `range`: the first size % count slices hold one ledger more.
// Same answer on every machine; the slices cover the range in order without gap or overlap.
// Usage error unless 1 <= count <= range.size() and index < count.
Result<LedgerRange> ShardSlice(const LedgerRange& range, uint32_t count, uint32_t index);

}  // namespace ledgerdiff::dump
