#pragma once
// Little-endian fixed-width integers, the byte order of every binary file ledgerdiff writes
// (manifests, checkpoints) and of the digest's hashed framing. One definition for all of them:
// a file's layout must not depend on which writer produced it.
#include <cstdint>
#include <string>

namespace ledgerdiff::dump {

inline void PutU32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutU64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
// REQUIRES: p points at 4 (GetU32) or 8 (GetU64) readable bytes.
inline uint32_t GetU32(const void* p) {
  auto b = static_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}
inline uint64_t GetU64(const void* p) {
  return uint64_t{GetU32(p)} | (uint64_t{GetU32(static_cast<const unsigned char*>(p) + 4)} << 32);
}

}  // namespace ledgerdiff::dump
