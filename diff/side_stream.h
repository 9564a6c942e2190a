#pragma once
// One side of a comparison while DiffSources runs (internal to diff/): the digest thread of a
// schema side (or the reader of a manifest side) streaming chunks to the comparator, and the
// digest's snapshot held open for the checks and the row diff of the first divergent ledger.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/concurrency.h"
#include "core/pg.h"
#include "diff/diff.h"
#include "dump/chunk.h"
#include "dump/digest.h"
#include "dump/manifest.h"

namespace ledgerdiff::diff {

// The digest's snapshot of a schema side, held open for the checks and the row diff.
// The digest thread publishes the snapshot id and waits until the comparator releases it.
class SnapshotGate {
 public:
  // Digest thread: publish and block until Release (DigestOptions::before_commit). `seen` and
  // `in_snapshot` (the digest's session, idle in the snapshot) stay valid until then.
  Status PublishAndWait(const std::string& id, const dump::SeenReferences& seen, pg::Connection& in_snapshot) {
    std::unique_lock<std::mutex> lock(mu_);
    id_ = id;
    seen_ = &seen;
    conn_ = &in_snapshot;
    published_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    return Status::Ok();
  }
  // Digest thread: the digest ended (also when it failed before publishing).
  void Finished() {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }
  // Comparator: the snapshot id, or std::nullopt when the digest ended without one (an error).
  std::optional<std::string> Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return published_ || finished_; });
    if (!published_) return std::nullopt;
    return id_;
  }
  // Comparator, after Wait() gave an id and before Release(): what the digest's client
  // resolution saw.
  const dump::SeenReferences& seen() const { return *seen_; }
  // Comparator, likewise: the digest's own session in the snapshot, the comparator's alone until
  // Release() (the digest thread waits meanwhile).
  pg::Connection& in_snapshot() const { return *conn_; }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string id_;
  const dump::SeenReferences* seen_ = nullptr;
  pg::Connection* conn_ = nullptr;
  bool published_ = false, released_ = false, finished_ = false;
};

// One side during a comparison: its profile, its stream of chunks, its summary.
// INVARIANT: the digest thread is owned: the destructor cancels the stream, releases the snapshot
// and joins, so no return path leaves a joinable thread behind.
struct SideStream {
  Source source;
  const char* name = "left";
  dump::ResolvedProfile profile;       // as resolved before the digest (schema) or from the header
  std::optional<LedgerRange> present;  // range present in the schema (none: empty) / the manifest's
  // Schema: the session its profile was resolved on, handed to its digest as the coordinator
  // (dump::DigestOptions::session); not used here once the digest began.
  std::shared_ptr<pg::Connection> session;
  std::unique_ptr<dump::ManifestReader> reader;
  BoundedQueue<dump::Chunk> queue{4};  // digest thread -> comparator
  SnapshotGate gate;
  dump::DigestSummary summary;  // schema: filled by the digest thread
  dump::Chunk chunk;            // current chunk
  size_t pos = 0;               // position in chunk.ledgers (Seek)
  bool have = false;
  std::vector<int> map;  // common table index -> this side's table index (-1 absent)
  std::jthread thread;   // declared last: joined first, while the members above are alive

  SideStream() = default;
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
  ~SideStream() { Stop(); }

  bool is_schema() const { return std::holds_alternative<SchemaSource>(source); }
  // REQUIRES: is_schema().
  const SchemaSource& db() const { return std::get<SchemaSource>(source); }
  // Cancels the digest (if still running), releases its snapshot and joins it.
  void Stop() {
    queue.Cancel();
    gate.Release();
    if (thread.joinable()) thread.join();
  }

  // Advances to the chunk holding `l`, and `pos` to its first listed ledger >= l. False at the
  // end of the stream.
  Result<bool> Seek(Ledger l);
  // The next ledger >= the sought one that this side lists, or its chunk's end + 1.
  uint64_t NextListed() const {
    return pos < chunk.ledgers.size() ? uint64_t{chunk.ledgers[pos]} : uint64_t{chunk.range.to} + 1;
  }
  // Reads a manifest to its end (checksum) after the compared range.
  Status Drain();
  // The digest's own session, inside its snapshot, once the digest has read everything (no
  // session of its own: a follower's cycle paid one per side for it); valid until the gate is
  // released. REQUIRES: is_schema(), the digest has started.
  Result<pg::Connection*> InSnapshot();
};

// One side's canonical rows of a table at one ledger, with which of them are stored flipped.
struct LedgerRows {
  std::vector<RowValues> rows;
  std::vector<bool> stored_flipped;  // parallel to rows
};

// REQUIRES: `conn` reads the side's snapshot (SideStream::InSnapshot).
Result<LedgerRows> FetchRows(pg::Connection& conn, const std::string& schema, const dump::ResolvedTable& table,
                             Ledger ledger);

}  // namespace ledgerdiff::diff
