#pragma once
// Axis arithmetic shared by layers that work along one axis (softmax, concat).

#include <cstddef>
#include <optional>

namespace taihu {

// Resolves a possibly negative axis (-1 is the last) against `rank`;
// nullopt when it is out of range, so the caller can report it with its name.
inline std::optional<size_t> resolve_axis(int axis, size_t rank) {
  const int r = static_cast<int>(rank);
  const int resolved = axis < 0 ? axis + r : axis;
  if (resolved < 0 || resolved >= r) return std::nullopt;
  return static_cast<size_t>(resolved);
}

}  // namespace taihu
