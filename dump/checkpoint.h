#pragma once
// Checkpoints of a resumable digest (`digest --out FILE`) or verify-range (`verify-range --out
// FILE`): FILE.partial, next to the output, written durably as chunks complete, so that an
// interrupted run (Ctrl-C, SIGTERM, SIGKILL, a lost connection) can be continued with --resume
// without digesting again what is already in it. Format and contract: dump/README.md
// ("Resumable runs").
//
// Layout (integers little-endian): magic "LDGRCKPT" | u32 version (kCheckpointVersion), then
// records: u32 payload length | payload | XXH3-128 of the payload (16 bytes, canonical order).
// The first payload is 'H' + the header JSON ({"format", "version", "sides", "range", "job"});
// then 'C' chunk records (u8 side, u32 from, u32 to, u32 tables, then per ledger holding a row:
// the LEB128 count of empty ledgers before it, then per table a LEB128 row count and, when not 0,
// the 16-byte digest: the entries of a full manifest, dump/manifest.h) and 'R'
// resume markers (u64 ledgers: every side's records past range.from + ledgers - 1 are void).
// INVARIANT: per side, the live chunk records are consecutive from range.from.
// Every record is fdatasync'ed before Append returns. The file is locked (flock, exclusive) for
// the life of the Checkpoint object: a second run on the same checkpoint is refused.
// Never holds a conninfo or a password: a source is named by its SourceIdentity
// (dump/source_identity.h).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/status.h"
#include "dump/digest.h"
#include "dump/source_identity.h"

namespace ledgerdiff::dump {

// Version 2: chunk records list only the ledgers holding a row (Chunk::ledgers).
constexpr uint32_t kCheckpointVersion = 2;

// The checkpoint of output `out`: out + ".partial".
std::string CheckpointPath(const std::string& out);

class Checkpoint {
 public:
  // Starts a fresh checkpoint at `path` for `job` (the parameters a resume must match) over
  // `range`, with `sides` chunk streams. An existing file that holds no ledger yet is replaced;
  // one that does is a Usage error that says to add --resume (or delete it); a locked one is
  // in use by another run (Usage).
  static Result<std::unique_ptr<Checkpoint>> Create(const std::string& path, const nlohmann::json& job,
                                                    const LedgerRange& range, int sides);
  // Opens the checkpoint at `path` to continue it. Usage errors, one line each: no such file;
  // locked by another run; corrupted (a checksum, an impossible record), except a torn last
  // record, which is dropped; written for another job (names the first differing parameter,
  // both values). At most `max_resumed` ledgers are taken from it (the rest is digested again).
  static Result<std::unique_ptr<Checkpoint>> Resume(const std::string& path, const nlohmann::json& job,
                                                    const LedgerRange& range, int sides,
                                                    uint64_t max_resumed = UINT64_MAX);
  // Closes (and unlocks) the file. A checkpoint that holds no ledger is deleted then (and on
  // SIGINT/SIGTERM/SIGHUP); one that does is kept for --resume.
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  const std::string& path() const { return path_; }
  // Ledgers range.from .. range.from + resumed_ledgers() - 1 are in the checkpoint for every side.
  uint64_t resumed_ledgers() const { return resumed_; }
  // The ledgers still to digest; nullopt when every ledger was resumed.
  std::optional<LedgerRange> remainder() const;
  // True when Resume dropped a torn last record.
  bool dropped_torn_record() const { return torn_; }
  // Replays side's resumed chunks (full) in ledger order; `tables` (when not 0) is checked.
  Status Replay(int side, size_t tables, const ChunkSink& sink) const;
  // Appends a full chunk of `side`, durably. REQUIRES: consecutive per side. Thread-safe.
  // Test hook: $LEDGERDIFF_TEST_CHUNK_DELAY_MS (test-only) sleeps that long after each append.
  Status Append(int side, const Chunk& chunk);
  // A runtime `failure` (a lost connection, a server error) with, when the checkpoint keeps
  // ledgers for a resume, how to continue appended to its one line ("... (checkpoint P keeps N
  // ledgers: rerun with --resume to continue)"). Other statuses are returned as they are.
  Status Explain(const Status& failure) const;
  // After the output is complete: deletes the checkpoint.
  Status Remove();

 private:
  struct Record {
    uint64_t offset = 0;  // of the payload
    uint32_t length = 0;
    Ledger from = 0, to = 0;
  };
  Checkpoint() = default;
  static Result<std::unique_ptr<Checkpoint>> OpenLocked(const std::string& path, bool create);
  Status Scan(bool verify_job, const nlohmann::json& job, uint64_t* ledgers_in_file);
  // Scan's record kinds. A record is the payload `p` of record number n; each returns the
  // corruption it finds, or takes the record into records_/next_ (a header: sides_/range_).
  Status ScanHeaderRecord(const std::string& p, bool verify_job, const nlohmann::json& job);
  Status ScanChunkRecord(const std::string& p, size_t n, uint64_t offset, size_t& tables);
  Status ScanResumeRecord(const std::string& p, size_t n);
  Status Corrupt(const std::string& what) const;
  Status WriteRecord(const std::string& payload);
  // Removes the file when it holds no ledger yet; says what it did (for an interruption's line).
  std::string DeleteIfEmpty();

  std::string path_;
  int fd_ = -1;
  int cleanup_ = 0;
  LedgerRange range_;
  int sides_ = 1;
  uint64_t resumed_ = 0;
  bool torn_ = false;
  bool removed_ = false;
  std::vector<std::vector<Record>> records_;  // per side, as scanned (Replay stops at resumed_)
  std::vector<uint64_t> next_;                // per side: ledgers written from range.from
  uint64_t end_ = 0;                          // file offset after the last valid record
  mutable std::mutex mu_;
  bool holds_ledgers_ = false;  // guarded by mu_ (the cleanup reads it from its own thread)
};

}  // namespace ledgerdiff::dump
