#pragma once
// Class labels arrive as float blobs (one value per sample and position).

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "core/common/error.hpp"
#include "core/layers/axis.hpp"
#include "core/layers/layer.hpp"

namespace taihu {

// The class index stored in `value`, or -1 if it equals `ignore`. Throws a
// DataError naming the layer when the value is not an integer in [0, classes).
inline int64_t class_label(const Layer& layer, float value, int64_t classes, const std::optional<int>& ignore,
                           int64_t position) {
  if (ignore && value == static_cast<float>(*ignore)) return -1;
  // Compared as floats first: converting NaN or a huge value to an integer is undefined.
  if (!(value >= 0.0f && value < static_cast<float>(classes)) || value != std::floor(value))
    throw DataError(fmt::format("layer '{}' ({}): label {} at position {} is not a class index in [0, {})",
                                layer.name(), layer.type(), value, position, classes));
  return static_cast<int64_t>(value);
}

// Scores split at the class axis: outer x channels (classes) x inner positions.
struct ClassGeometry {
  int64_t outer = 0;
  int64_t channels = 0;
  int64_t inner = 0;
};

// Resolves `axis` for `scores` and checks that `labels` holds one label per
// sample and position; throws a ShapeError naming the layer otherwise.
inline ClassGeometry class_geometry(const Layer& layer, int axis, const Shape& scores, const Shape& labels) {
  const auto resolved = resolve_axis(axis, scores.rank());
  if (!resolved)
    layer.shape_error(fmt::format("axis {} is out of range for scores of shape {}", axis, scores.str()));
  const ClassGeometry g{scores.count(0, *resolved), scores[*resolved], scores.count_from(*resolved + 1)};
  if (labels.count() != g.outer * g.inner)
    layer.shape_error(fmt::format("scores of shape {} need {} labels (one per sample and position), got shape {}",
                                  scores.str(), g.outer * g.inner, labels.str()));
  return g;
}

}  // namespace taihu
