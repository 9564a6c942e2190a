#pragma once
// A digest's unit of output: the entries of a span of consecutive ledgers (dump/digest.h has the
// format: per ledger and table a row count and a multiset digest, per ledger a combined digest),
// and the roots accumulated over them in ledger order.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/ledger_range.h"
#include "core/status.h"
#include "dump/canonical.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

// The entries of a span of consecutive ledgers (`range`), listed for its non-empty ledgers only:
// a ledger of `range` absent from `ledgers` has no row in any table (each table: count 0,
// EmptyDigest()). Entry of listed ledger i (its position in `ledgers`), table t: At(i, t).
// INVARIANT: ledgers strictly ascending within range, each with a non-zero count in some table;
//            counts.size() == ledgers.size() * tables; combined.size() == ledgers.size();
//            full: digests has counts.size() entries (tags empty, derived);
//            !full (compact manifest): tags has counts.size() entries, digests empty.
struct Chunk {
  LedgerRange range;
  size_t tables = 0;
  bool full = true;
  std::vector<Ledger> ledgers;
  std::vector<uint64_t> counts;
  std::vector<Digest128> digests;
  std::vector<uint32_t> tags;
  std::vector<Digest128> combined;

  size_t At(size_t i, size_t t) const { return i * tables + t; }
  uint32_t Tag(size_t i, size_t t) const { return full ? digests[At(i, t)].Tag() : tags[At(i, t)]; }
  // Lists ledger `l` (after every ledger listed so far) with its full entries and combined digest.
  // REQUIRES: full; l > ledgers.back(); some count non-zero.
  void Append(Ledger l, const uint64_t* counts_of_l, const Digest128* digests_of_l);
  // The empty chunk of `r` (no ledger listed).
  static Chunk Empty(const LedgerRange& r, size_t tables, bool full = true);
};

// Combined digest of one ledger. REQUIRES: counts and digests hold `tables` entries.
Digest128 CombinedDigest(Ledger ledger, const uint64_t* counts, const Digest128* digests, size_t tables);

// Consumes chunks in ledger order. A non-ok Status stops the digest and is returned.
using ChunkSink = std::function<Status(const Chunk&)>;

// Accumulates table roots and the overall root from full chunks in ledger order.
class RootBuilder {
 public:
  explicit RootBuilder(const ResolvedProfile& profile);
  ~RootBuilder();
  RootBuilder(const RootBuilder&) = delete;
  RootBuilder& operator=(const RootBuilder&) = delete;
  // REQUIRES: chunk.full, chunks consecutive. Costs O(listed ledgers x tables).
  void Add(const Chunk& chunk);
  // Table roots (hex, profile order) and the overall root (hex). Call once.
  void Finish(const LedgerRange& range, std::vector<std::string>& table_roots, std::string& root);

 private:
  const ResolvedProfile& profile_;
  std::vector<void*> ctx_;  // EVP_MD_CTX*
};

}  // namespace ledgerdiff::dump
