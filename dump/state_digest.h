#pragma once
// One side's state (issue 45), read in one REPEATABLE READ READ ONLY snapshot: the ledger its
// state tables are at (StateLedgerSource) and, per state table, an order-independent digest per
// bucket of the key's hash, then the rows of the buckets that differ. The ledger and the rows
// come from the same snapshot, so they agree.
//
// Bucket of a row: the first 28 bits of md5 over its key's canonical text (ROW(k_1::text, ...)::
// text over the key columns' canonical expressions) mod kStateBuckets, computed by the server;
// md5 is the same on every platform and version, so a key falls in the same bucket on both sides.
// Per bucket: the row count and the multiset sum of the rows' hashes, the same row encoding and
// sums as the history digest (dump/canonical.h): the text engine hashes each row's canonical COPY
// text on the client (RowMultiset: lo/hi are one sum mod 2^128), the server-hash engine lets the
// server hash and sum (lo/hi: the two sums mod 2^64) and ships one line per bucket. Buckets of two
// sides compare equal only under one engine.
//
// Sub-buckets (splitting a large differing bucket, data-diff's idea with the server's hashing): a
// bucket's path is the hex digits of that md5 from the 6th on, two more per depth. A depth-0 path
// is the bucket number in two hex digits (digits 6-7 are the 28 bits' last 8: the same bucket), a
// depth-d path 2 + 2d digits, so each split divides a bucket in up to 256. Sub-bucket digests are
// always the server's (server-hash sums, one line per sub-bucket), whatever the engine of the
// table's digest: both sides compute them the same way, and no row crosses the wire for them.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "dump/canonical.h"
#include "dump/profile.h"

namespace ledgerdiff::dump {

inline constexpr uint32_t kStateBuckets = 256;
// md5 has 32 hex digits; paths start at the 6th, so a path holds at most 27: depth 12 at most.
inline constexpr uint32_t kStateMaxPathDepth = 12;
// The depth-0 path of bucket `b` (< kStateBuckets): two hex digits.
std::string StateBucketPath(uint32_t b);

struct StateBucket {
  uint64_t rows = 0, lo = 0, hi = 0;
  bool operator==(const StateBucket&) const = default;
};

struct StateTableDigest {
  std::string table;
  uint64_t rows = 0;
  std::vector<StateBucket> buckets;  // kStateBuckets of them, by bucket number
  // XXH3-128 (hex) over every bucket's (rows, lo, hi), u64 LE each, in bucket order.
  std::string Hex() const;
};

// A state row: the COPY text fields of its table's canonical columns, in column order.
using StateRow = std::vector<std::string>;

// What one side shipped for a comparison: the rows (and their COPY bytes) read to be matched by
// key, and the digest statements run (table digests and sub-bucket digests).
struct StateTraffic {
  uint64_t rows = 0, bytes = 0;
  uint32_t digest_queries = 0;
};

class StateSnapshot {
 public:
  // Connects read-only to `conninfo`, opens the snapshot, reads the state ledger and resolves the
  // spec's state tables present in `schema`. Errors: unreachable (Runtime); a recorded state
  // ledger that is not a ledger number (Usage, naming table, key and value).
  static Result<std::unique_ptr<StateSnapshot>> Open(const std::string& conninfo, const std::string& schema,
                                                     const ProfileSpec& spec);
  ~StateSnapshot();

  // The ledger the state is at; nullopt when the side records none (no source in the profile,
  // no such table or row).
  const std::optional<Ledger>& ledger() const { return ledger_; }
  // The spec's state tables this side has, with their key, sorted by name.
  const std::vector<ResolvedTable>& tables() const { return tables_; }

  // Whether `table` holds any row.
  Result<bool> HasRows(const ResolvedTable& table);
  // The digest per bucket of `table` (one of tables(), possibly RestrictColumns'd).
  Result<StateTableDigest> Digest(const ResolvedTable& table, DigestEngine engine);
  // The digests of the sub-buckets one level below each of `paths` (bucket paths, each of at most
  // kStateMaxPathDepth - 1 depth), by path; an empty sub-bucket is absent. Server-hash sums under
  // either engine (see above). REQUIRES: paths non-empty.
  Result<std::vector<std::pair<std::string, StateBucket>>> SubBucketDigests(const ResolvedTable& table,
                                                                            const std::vector<std::string>& paths);
  // The rows of `table` in the buckets `paths` (any depths), in no particular order.
  Result<std::vector<StateRow>> RowsIn(const ResolvedTable& table, const std::vector<std::string>& paths);

  // Whether the server can hash rows (PostgreSQL 14 or later: hash_record_extended); without it
  // SubBucketDigests is unavailable and differing buckets are read whole.
  bool server_hashes() const { return server_hashes_; }
  // What this side shipped so far (RowsIn's rows and bytes, Digest's and SubBucketDigests' statements).
  const StateTraffic& traffic() const { return traffic_; }

 private:
  StateSnapshot() = default;
  std::string BucketExpr(const ResolvedTable& table) const;
  std::string KeyHashExpr(const ResolvedTable& table) const;  // md5 over the key's canonical text

  StateTraffic traffic_;
  bool server_hashes_ = false;

  std::unique_ptr<pg::Connection> conn_;
  std::optional<pg::Transaction> tx_;
  std::string schema_;
  std::optional<Ledger> ledger_;
  std::vector<ResolvedTable> tables_;
};

}  // namespace ledgerdiff::dump
