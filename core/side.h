#pragma once
// The two sides of every comparison. "left" and "right" appear only where a side is shown or
// parsed (text, JSON); code compares the enum.

#include <string_view>

namespace ledgerdiff {

enum class Side { kLeft, kRight };

constexpr std::string_view ToString(Side side) {
  switch (side) {
    case Side::kLeft: return "left";
    case Side::kRight: return "right";
  }
  return "?";
}

// Sides kept in a pair (index 0 left, 1 right).
constexpr int SideIndex(Side side) { return side == Side::kLeft ? 0 : 1; }
constexpr Side SideAt(int index) { return index == 0 ? Side::kLeft : Side::kRight; }

}  // namespace ledgerdiff
