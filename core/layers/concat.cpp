#include "core/layers/concat.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/layers/axis.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

ConcatLayer::ConcatLayer(const LayerSpec& spec) : Layer(spec), axis_(options().get_or<int>("axis", 1)) {}

void ConcatLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& first = bottom[0]->shape();
  const auto axis = resolve_axis(axis_, first.rank());
  if (!axis)
    shape_error(fmt::format("axis {} is out of range for bottom[0] of shape {}", axis_, first.str()));
  std::vector<int64_t> dims = first.dims();
  for (size_t b = 1; b < bottom.size(); ++b) {
    const Shape& shape = bottom[b]->shape();
    bool fits = shape.rank() == first.rank();
    for (size_t d = 0; fits && d < first.rank(); ++d) fits = d == *axis || shape[d] == first[d];
    if (!fits)
      shape_error(
          fmt::format("bottom[{}] has shape {}, which does not match bottom[0] ({}) except on axis {}", b,
                      shape.str(), first.str(), *axis));
    dims[*axis] += shape[*axis];
  }
  resolved_axis_ = *axis;
  outer_ = first.count(0, *axis);
  inner_ = first.count_from(*axis + 1);
  top[0]->reshape(Shape(dims));
}

void ConcatLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const int64_t top_row = top[0]->shape()[resolved_axis_] * inner_;
  float* out = top[0]->data().ptr();
  int64_t offset = 0;
  for (Blob* b : bottom) {
    const int64_t row = b->shape()[resolved_axis_] * inner_;
    const float* in = b->data().ptr();
    for (int64_t o = 0; o < outer_; ++o) std::copy_n(in + o * row, row, out + o * top_row + offset);
    offset += row;
  }
}

void ConcatLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                           const BlobVec& bottom) {
  const int64_t top_row = top[0]->shape()[resolved_axis_] * inner_;
  const float* grad = top[0]->diff().ptr();
  int64_t offset = 0;
  for (size_t i = 0; i < bottom.size(); ++i) {
    const int64_t row = bottom[i]->shape()[resolved_axis_] * inner_;
    if (propagate_down[i]) {
      float* diff = bottom[i]->diff().ptr();
      for (int64_t o = 0; o < outer_; ++o) std::copy_n(grad + o * top_row + offset, row, diff + o * row);
    }
    offset += row;
  }
}

TAIHU_REGISTER_LAYER("Concat", ConcatLayer);

}  // namespace taihu
