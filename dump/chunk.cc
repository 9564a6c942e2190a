#include "dump/chunk.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <cstring>

#include <fmt/format.h>

#include "dump/byte_order.h"

namespace ledgerdiff::dump {

namespace {

void PutStr(std::string& s, const std::string& v) {
  PutU64(s, v.size());
  s += v;
}

std::string HexBytes(const unsigned char* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
  return s;
}

}  // namespace

void Chunk::Append(Ledger l, const uint64_t* counts_of_l, const Digest128* digests_of_l) {
  ledgers.push_back(l);
  counts.insert(counts.end(), counts_of_l, counts_of_l + tables);
  digests.insert(digests.end(), digests_of_l, digests_of_l + tables);
  combined.push_back(CombinedDigest(l, counts_of_l, digests_of_l, tables));
}

Chunk Chunk::Empty(const LedgerRange& r, size_t tables, bool full) {
  Chunk c;
  c.range = r;
  c.tables = tables;
  c.full = full;
  return c;
}

Digest128 CombinedDigest(Ledger ledger, const uint64_t* counts, const Digest128* digests, size_t tables) {
  std::string buf;
  buf.reserve(4 + tables * 24);
  PutU32(buf, ledger);
  for (size_t t = 0; t < tables; ++t) {
    PutU64(buf, counts[t]);
    buf.append(reinterpret_cast<const char*>(digests[t].bytes.data()), 16);
  }
  XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size());
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Digest128 d;
  std::memcpy(d.bytes.data(), c.digest, 16);
  return d;
}

RootBuilder::RootBuilder(const ResolvedProfile& profile) : profile_(profile) {
  for (size_t i = 0; i < profile.tables.size(); ++i) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    ctx_.push_back(ctx);
  }
}

RootBuilder::~RootBuilder() {
  for (void* c : ctx_) EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(c));
}

void RootBuilder::Add(const Chunk& chunk) {
  std::string buf;
  for (size_t t = 0; t < chunk.tables; ++t) {
    buf.clear();
    for (size_t i = 0; i < chunk.ledgers.size(); ++i) {
      const size_t e = chunk.At(i, t);
      if (chunk.counts[e] == 0) continue;
      PutU32(buf, chunk.ledgers[i]);
      PutU64(buf, chunk.counts[e]);
      buf.append(reinterpret_cast<const char*>(chunk.digests[e].bytes.data()), 16);
    }
    if (!buf.empty()) EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_[t]), buf.data(), buf.size());
  }
}

void RootBuilder::Finish(const LedgerRange& range, std::vector<std::string>& table_roots, std::string& root) {
  std::string all = "ledgerdiff-root-v2";
  all.push_back('\0');
  PutU32(all, range.from);
  PutU32(all, range.to);
  PutStr(all, profile_.name);
  table_roots.clear();
  for (size_t t = 0; t < ctx_.size(); ++t) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_[t]), md, &n);
    table_roots.push_back(HexBytes(md, n));
    const ResolvedTable& table = profile_.tables[t];
    PutStr(all, table.name);
    PutU64(all, table.columns.size());
    for (const auto& c : table.columns) {
      PutStr(all, c.name);
      PutStr(all, ColumnClassName(c.cls));
    }
    all.append(reinterpret_cast<const char*>(md), n);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(all.data(), all.size(), md, &n, EVP_sha256(), nullptr);
  root = HexBytes(md, n);
}

}  // namespace ledgerdiff::dump
