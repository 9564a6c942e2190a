// Fuzzes the manifest reader (dump/manifest.h): the input is the bytes of a .ldm file, read the
// ways the tool reads one: whole (ReadManifestInfo: manifest show, diff, baselines, then
// rendered as `manifest show` does), streamed in small chunks (diff), and as the one part of a
// `manifest merge` (dump/shard.h MergeManifests, when the header claims a shard).
//
// The harness rewrites the last 32 bytes with the SHA-256 of the bytes before them, as anyone who
// crafts a file would: the checksum is no defence against a crafted file, and without a valid one
// every mutated input would stop at it, never reaching the trailer. (The checksum check itself is
// in tests/manifest_test.cc.)
//
// Properties (any violation aborts): no crash, no sanitizer report, no allocation beyond
// libFuzzer's -malloc_limit_mb; a bad file is a usage error (exit 2) naming the file; the whole
// and the streaming reader give the same verdict and message; a streamed chunk holds consecutive
// ledgers of the header's range with its tables, at most kMaxManifestChunkEntries entries; a
// merge that fails writes nothing, one that succeeds writes a manifest that reads back.

#include <openssl/evp.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dump/manifest.h"
#include "dump/shard.h"
#include "tests/fuzz/fuzz_util.h"
#include "report/dump_text_json.h"

using namespace ledgerdiff;
using namespace ledgerdiff::dump;

namespace {

// `data` with its last 32 bytes replaced by the SHA-256 of the rest (inputs shorter than that as is).
std::string WithValidChecksum(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size < 32) return bytes;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), size - 32, md, &n, EVP_sha256(), nullptr);
  std::memcpy(bytes.data() + size - 32, md, 32);
  return bytes;
}

// Reads `path` in chunks of at most `max_ledgers` ledgers, checking every chunk; the final status.
Status Stream(const std::string& path, uint32_t max_ledgers) {
  LD_ASSIGN_OR_RETURN(auto reader, ManifestReader::Open(path));
  const ManifestHeader& h = reader->header();
  const size_t tables = h.profile.tables.size();
  LD_FUZZ_CHECK(tables >= 1 && tables <= kMaxManifestTables, "a header of {} tables was accepted", tables);
  LD_FUZZ_CHECK(h.range.from <= h.range.to && h.range.to <= kMaxManifestLedger, "header range {} accepted",
                h.range.str());
  uint64_t next = h.range.from;
  bool ended = false;
  Chunk c;
  for (;;) {
    LD_ASSIGN_OR_RETURN(bool more, reader->Next(c, max_ledgers));
    if (!more) break;
    LD_FUZZ_CHECK(!ended, "a chunk after the range's last ledger");
    LD_FUZZ_CHECK(c.range.from == next && c.range.to >= c.range.from && c.range.to <= h.range.to,
                  "chunk {} after ledger {} of range {}", c.range.str(), next, h.range.str());
    const size_t n = c.ledgers.size();
    LD_FUZZ_CHECK(n <= max_ledgers && (n <= 1 || n * tables <= kMaxManifestChunkEntries),
                  "chunk listing {} ledgers x {} tables (max_ledgers {})", n, tables, max_ledgers);
    for (size_t i = 0; i < n; ++i)
      LD_FUZZ_CHECK(c.range.contains(c.ledgers[i]) && (i == 0 || c.ledgers[i - 1] < c.ledgers[i]),
                    "chunk {} lists ledger {} out of order", c.range.str(), c.ledgers[i]);
    LD_FUZZ_CHECK(c.tables == tables && c.counts.size() == n * tables && c.combined.size() == n &&
                      (c.full ? c.digests.size() : c.tags.size()) == n * tables &&
                      c.full == (h.detail == ManifestDetail::kFull),
                  "chunk {} has inconsistent sizes", c.range.str());
    next = uint64_t{c.range.to} + 1;
    ended = c.range.to == h.range.to;
  }
  LD_FUZZ_CHECK(ended, "the reader ended before ledger {} of range {}", next, h.range.str());
  LD_FUZZ_CHECK(reader->summary().tables.size() == tables, "a trailer of {} tables for {} in the header",
                reader->summary().tables.size(), tables);
  LD_FUZZ_CHECK(reader->comparison().has_value() == h.comparison, "comparison outcome without its header key");
  return Status::Ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::ScratchDir() + "/input.ldm";
  static const std::string merged = fuzz::ScratchDir() + "/merged.ldm";
  const std::string bytes = WithValidChecksum(data, size);
  fuzz::WriteFile(path, bytes.data(), bytes.size());

  // The whole reader, then what `manifest show` prints of it.
  auto info = ReadManifestInfo(path);
  if (info.ok()) {
    LD_FUZZ_CHECK(info->summary.tables.size() == info->header.profile.tables.size(), "summary of {} tables for {}",
                  info->summary.tables.size(), info->header.profile.tables.size());
    (void)report::RenderManifestText(*info);
    (void)report::ManifestInfoToJson(*info).dump();
  } else {
    fuzz::CheckBadInput(info.status(), path, "ReadManifestInfo");
  }

  // The streaming reader in small chunks: the same verdict.
  const uint32_t max_ledgers = 1 + static_cast<uint32_t>(size % 5);
  Status streamed = Stream(path, max_ledgers);
  LD_FUZZ_CHECK(streamed.ok() == info.ok() && streamed.message() == info.status().message(),
                "whole read: \"{}\", streamed by {} ledgers: \"{}\"", info.status().message(), max_ledgers,
                streamed.message());

  // As the one part of a merge.
  auto reader = ManifestReader::Open(path);
  if (reader.ok() && (*reader)->header().shard) {
    reader = Status::Usage("closed");  // MergeManifests opens the part itself
    std::error_code ec;
    std::filesystem::remove(merged, ec);
    auto m = MergeManifests({path}, merged, ManifestDetail::kCompact);
    if (m.ok()) {
      auto back = ReadManifestInfo(merged);
      LD_FUZZ_CHECK(back.ok(), "a merged manifest does not read back: {}", back.status().message());
      LD_FUZZ_CHECK(back->summary.root == m->summary.root, "merged root {} reads back as {}", m->summary.root,
                    back->summary.root);
    } else {
      fuzz::CheckBadInput(m.status(), "", "MergeManifests");  // e.g. "missing shard 1 (ledgers ...)"
      LD_FUZZ_CHECK(!std::filesystem::exists(merged), "a failed merge left {} behind", merged);
    }
    std::filesystem::remove(merged, ec);
  }
  return 0;
}
