#pragma once
// Enums whose values exist as text only at the edges (SQL, JSON, text, flags). Each names its
// values with a ToString(Enum) whose switch has no default, so -Wswitch names every enum whose
// names lack a new value; ParseEnum is the inverse of every such ToString.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace ledgerdiff {

// The value of `values` whose ToString is `text`; nullopt when none is. ToString is the one
// argument-dependent lookup finds for Enum (declared in the enum's namespace).
template <typename Enum, size_t N>
constexpr std::optional<Enum> ParseEnum(const std::array<Enum, N>& values, std::string_view text) {
  for (Enum e : values)
    if (ToString(e) == text) return e;
  return std::nullopt;
}

}  // namespace ledgerdiff
