#include "core/layers/softmax.hpp"

#include <fmt/format.h>

#include "core/kernels/elementwise.hpp"
#include "core/layers/axis.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

SoftmaxLayer::SoftmaxLayer(const LayerSpec& spec) : Layer(spec), axis_(options().get_or<int>("axis", 1)) {}

void SoftmaxLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  const auto axis = resolve_axis(axis_, shape.rank());
  if (!axis) shape_error(fmt::format("axis {} is out of range for input shape {}", axis_, shape.str()));
  outer_ = shape.count(0, *axis);
  channels_ = shape[*axis];
  inner_ = shape.count_from(*axis + 1);
  top[0]->reshape(shape);
  scratch_.reshape(Shape{inner_});
}

void SoftmaxLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  kernels::softmax_forward(outer_, channels_, inner_, bottom[0]->data().ptr(), top[0]->data().ptr(),
                           scratch_.ptr());
}

void SoftmaxLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  kernels::softmax_backward(outer_, channels_, inner_, top[0]->data().ptr(), top[0]->diff().ptr(),
                            bottom[0]->diff().ptr(), scratch_.ptr());
}

TAIHU_REGISTER_LAYER("Softmax", SoftmaxLayer);

}  // namespace taihu
