#pragma once
// The two sides of every comparison. "left" and "right" appear only where a side is shown or
// parsed (text, JSON); code compares the enum.

#include <optional>
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

// Which sides a finding concerns (the scrub's changed ledger, ledgers gone): one, or both;
// kNone where no side is named (a divergence in new ledgers is the two sides' rows together).
enum class SideSet { kNone, kLeft, kRight, kBoth };

constexpr std::string_view ToString(SideSet sides) {
  switch (sides) {
    case SideSet::kNone: return "";
    case SideSet::kLeft: return "left";
    case SideSet::kRight: return "right";
    case SideSet::kBoth: return "both";
  }
  return "?";
}

// The text ToString gives ("" for kNone); nullopt for any other.
constexpr std::optional<SideSet> ParseSideSet(std::string_view text) {
  for (SideSet s : {SideSet::kNone, SideSet::kLeft, SideSet::kRight, SideSet::kBoth})
    if (ToString(s) == text) return s;
  return std::nullopt;
}

// `sides` with `side` added.
constexpr SideSet With(SideSet sides, Side side) {
  const SideSet one = side == Side::kLeft ? SideSet::kLeft : SideSet::kRight;
  return sides == SideSet::kNone || sides == one ? one : SideSet::kBoth;
}

}  // namespace ledgerdiff
