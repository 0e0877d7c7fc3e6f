#include "core/layers/relu.hpp"

#include "core/kernels/elementwise.hpp"
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
  kernels::relu_forward(bottom[0]->count(), negative_slope_, bottom[0]->data().ptr(), top[0]->data().ptr());
}

void ReLULayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const float* sign = negative_slope_ >= 0.0f ? top[0]->data().ptr() : bottom[0]->data().ptr();
  kernels::relu_backward(bottom[0]->count(), negative_slope_, sign, top[0]->diff().ptr(),
                         bottom[0]->diff().ptr());
}

TAIHU_REGISTER_LAYER("ReLU", ReLULayer);

}  // namespace taihu
