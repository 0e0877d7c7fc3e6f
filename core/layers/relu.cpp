#include "core/layers/relu.hpp"

#include "core/kernels/elementwise.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

ReLULayer::ReLULayer(const LayerSpec& spec)
    : Layer(spec), negative_slope_(options().get_or<float>("negative_slope", 0.0f)) {}

void ReLULayer::setup(const BlobVec& bottom, const BlobVec& top) {
  // With a negative slope the output's sign no longer tells where the input
  // was positive, and in place the input is gone.
  if (top[0] == bottom[0] && negative_slope_ < 0.0f)
    throw options().error("negative_slope", "must be >= 0 when the layer works in place");
}

void ReLULayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  if (top[0] != bottom[0]) top[0]->reshape(bottom[0]->shape());
}

void ReLULayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const float* x = bottom[0]->data().ptr();
  float* y = top[0]->data().ptr();
  parallel_ranges(bottom[0]->count(), parallel_grain(), [&](int64_t begin, int64_t end) {
    kernels::relu_forward(end - begin, negative_slope_, x + begin, y + begin);
  });
}

void ReLULayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const float* sign = negative_slope_ >= 0.0f ? top[0]->data().ptr() : bottom[0]->data().ptr();
  const float* dy = top[0]->diff().ptr();
  float* dx = bottom[0]->diff().ptr();
  parallel_ranges(bottom[0]->count(), parallel_grain(), [&](int64_t begin, int64_t end) {
    kernels::relu_backward(end - begin, negative_slope_, sign + begin, dy + begin, dx + begin);
  });
}

TAIHU_REGISTER_LAYER("ReLU", ReLULayer);

}  // namespace taihu
