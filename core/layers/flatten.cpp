#include "core/layers/flatten.hpp"

#include <fmt/format.h>

#include "core/layers/axis.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

FlattenLayer::FlattenLayer(const LayerSpec& spec)
    : Layer(spec),
      axis_(options().get_or<int>("axis", 1)),
      end_axis_(options().get_or<int>("end_axis", -1)) {}

void FlattenLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  const auto first = resolve_axis(axis_, shape.rank());
  const auto last = resolve_axis(end_axis_, shape.rank());
  if (!first || !last || *first > *last)
    shape_error(fmt::format("cannot flatten axes {} to {} of input shape {}", axis_, end_axis_, shape.str()));
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().begin() + static_cast<std::ptrdiff_t>(*first));
  dims.push_back(shape.count(*first, *last + 1));
  dims.insert(dims.end(), shape.dims().begin() + static_cast<std::ptrdiff_t>(*last + 1), shape.dims().end());
  // Share first (the bottom may have been reallocated), then relabel the shape;
  // the element count is unchanged, so no storage is allocated.
  top[0]->share(*bottom[0]);
  top[0]->reshape(Shape(dims));
}

TAIHU_REGISTER_LAYER("Flatten", FlattenLayer);

}  // namespace taihu
