// Fuzzes the checkpoint scan (dump/checkpoint.h): the input is the bytes of a FILE.partial that
// `digest --out FILE --resume` / `verify-range --out FILE --resume` continues (Checkpoint::Resume,
// then Replay of every side, then one Append), and that a fresh run looks at before it replaces
// it (Checkpoint::Create).
//
// Every record carries an XXH3-128 of its payload. The harness rewrites each record's checksum to
// match its payload (a crafted file would have valid ones; without them mutated inputs would
// stop at the first record), except in one input of five (size % 5 == 0), scanned as written so
// that torn and corrupted records are reached too. Resume is given the job, range and sides that
// the file's own header record states (so the scan goes past the job check), except when
// size % 7 == 3: then another job, which only a file written for that job may pass.
//
// Properties: no crash, no sanitizer report, no allocation beyond -malloc_limit_mb; a bad file is
// a usage error (exit 2) naming the file; a resumed checkpoint replays exactly its resumed
// ledgers per side, in consecutive full chunks of one table count; the remainder starts after
// them.

#include <xxhash.h>

#include <cstring>
#include <string>

#include "dump/bounded_json.h"
#include "dump/checkpoint.h"
#include "dump/manifest.h"
#include "tests/fuzz/fuzz_util.h"

using namespace ledgerdiff;
using namespace ledgerdiff::dump;

namespace {

uint32_t GetU32(const std::string& s, size_t at) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data() + at);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}

// Rewrites every whole record's checksum (records start at offset 12: u32 length, payload, 16 bytes).
void FixChecksums(std::string& bytes) {
  for (uint64_t off = 12; off + 4 <= bytes.size();) {
    const uint64_t len = GetU32(bytes, off);
    if (off + 4 + len + 16 > bytes.size()) break;
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(bytes.data() + off + 4, len));
    std::memcpy(bytes.data() + off + 4 + len, c.digest, 16);
    off += 4 + len + 16;
  }
}

// What a run that wrote this checkpoint would pass to Resume: the header record's job, range and
// sides, when it has them.
struct Job {
  nlohmann::json job;
  LedgerRange range{1, 1};
  int sides = 1;
};

Job JobOf(const std::string& bytes) {
  Job j;
  if (bytes.size() < 16) return j;
  const uint64_t len = GetU32(bytes, 12);
  if (len < 1 || len > (1u << 20) || 16 + len > bytes.size() || bytes[16] != 'H') return j;
  auto parsed = ParseBoundedJson(std::string_view(bytes).substr(17, len - 1));
  if (!parsed.ok() || !parsed->is_object()) return j;
  const nlohmann::json& h = *parsed;
  if (h.contains("job")) j.job = h["job"];
  if (h.contains("sides") && h["sides"].is_number_unsigned() && h["sides"] >= 1 && h["sides"] <= 2)
    j.sides = h["sides"].get<int>();
  if (h.contains("range") && h["range"].is_object()) {
    const auto& r = h["range"];
    if (r.contains("from") && r.contains("to") && r["from"].is_number_unsigned() && r["to"].is_number_unsigned()) {
      const uint64_t from = r["from"].get<uint64_t>(), to = r["to"].get<uint64_t>();
      if (from <= to && to <= kMaxManifestLedger) j.range = {static_cast<Ledger>(from), static_cast<Ledger>(to)};
    }
  }
  return j;
}

void CheckResumed(Checkpoint& cp, const Job& job) {
  const uint64_t resumed = cp.resumed_ledgers();
  LD_FUZZ_CHECK(resumed <= job.range.size(), "{} ledgers resumed of range {}", resumed, job.range.str());
  const auto rest = cp.remainder();
  LD_FUZZ_CHECK(rest.has_value() == (resumed < job.range.size()), "remainder of {} resumed ledgers of {}", resumed,
                job.range.str());
  if (rest)
    LD_FUZZ_CHECK(rest->from == job.range.from + resumed && rest->to == job.range.to, "remainder {} after {} of {}",
                  rest->str(), resumed, job.range.str());
  size_t tables = 0;
  for (int side = 0; side < job.sides; ++side) {
    uint64_t next = job.range.from;
    Status s = cp.Replay(side, 0, [&](const Chunk& c) -> Status {
      LD_FUZZ_CHECK(c.full && c.range.from == next && c.range.to >= c.range.from,
                    "side {}: replayed chunk {} after ledger {}", side, c.range.str(), next);
      LD_FUZZ_CHECK(c.tables >= 1 && c.tables <= kMaxManifestTables && (tables == 0 || c.tables == tables),
                    "side {}: replayed chunk of {} tables (before: {})", side, c.tables, tables);
      const size_t n = c.ledgers.size();
      LD_FUZZ_CHECK(c.counts.size() == n * c.tables && c.digests.size() == n * c.tables && c.combined.size() == n,
                    "side {}: replayed chunk {} has inconsistent sizes", side, c.range.str());
      for (size_t i = 0; i < n; ++i) {
        LD_FUZZ_CHECK(c.range.contains(c.ledgers[i]) && (i == 0 || c.ledgers[i - 1] < c.ledgers[i]),
                      "side {}: replayed chunk {} lists ledger {} out of order", side, c.range.str(), c.ledgers[i]);
        bool any = false;
        for (size_t t = 0; t < c.tables; ++t) any = any || c.counts[c.At(i, t)] != 0;
        LD_FUZZ_CHECK(any, "side {}: replayed chunk {} lists ledger {} with no rows", side, c.range.str(), c.ledgers[i]);
      }
      tables = c.tables;
      next = uint64_t{c.range.to} + 1;
      return Status::Ok();
    });
    if (!s.ok()) {
      fuzz::CheckBadInput(s, cp.path(), "Checkpoint::Replay");
      return;
    }
    LD_FUZZ_CHECK(next - job.range.from == resumed, "side {} replayed {} ledgers, {} resumed", side,
                  next - job.range.from, resumed);
  }
  // The run continues: the next chunk of side 0 appends after the resumed ledgers.
  if (rest && tables) {
    Chunk c = Chunk::Empty({rest->from, rest->from}, tables);
    std::vector<uint64_t> counts(tables, 0);
    std::vector<Digest128> digests(tables, EmptyDigest());
    counts[0] = 1;
    c.Append(rest->from, counts.data(), digests.data());
    Status s = cp.Append(0, c);
    LD_FUZZ_CHECK(s.ok(), "append after a resume: {}", s.message());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::ScratchDir() + "/input.ldm.partial";
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size % 5 != 0) FixChecksums(bytes);
  const Job file_job = JobOf(bytes);
  Job job = file_job;
  const bool other_job = size % 7 == 3;
  if (other_job) job.job = {{"command", "digest"}, {"fuzz", "another run"}};

  fuzz::WriteFile(path, bytes.data(), bytes.size());
  {
    auto cp = Checkpoint::Resume(path, job.job, job.range, job.sides);
    if (cp.ok()) {
      LD_FUZZ_CHECK(!other_job || (file_job.job.is_object() && file_job.job.value("fuzz", "") == "another run"),
                    "resumed a checkpoint of job {} as job {}", file_job.job.dump(), job.job.dump());
      CheckResumed(**cp, job);
    } else {
      fuzz::CheckBadInput(cp.status(), path, "Checkpoint::Resume");
    }
  }

  // A fresh run finds the file: it replaces one that holds no ledger, refuses any other.
  fuzz::WriteFile(path, bytes.data(), bytes.size());
  {
    auto cp = Checkpoint::Create(path, job.job, job.range, job.sides);
    if (!cp.ok()) fuzz::CheckBadInput(cp.status(), path, "Checkpoint::Create");
  }
  return 0;
}
