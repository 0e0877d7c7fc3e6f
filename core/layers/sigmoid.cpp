#include "core/layers/sigmoid.hpp"

#include "core/kernels/elementwise.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

void SigmoidLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  if (top[0] != bottom[0]) top[0]->reshape(bottom[0]->shape());
}

void SigmoidLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  kernels::sigmoid_forward(bottom[0]->count(), bottom[0]->data().ptr(), top[0]->data().ptr());
}

void SigmoidLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  kernels::sigmoid_backward(bottom[0]->count(), top[0]->data().ptr(), top[0]->diff().ptr(),
                            bottom[0]->diff().ptr());
}

TAIHU_REGISTER_LAYER("Sigmoid", SigmoidLayer);

}  // namespace taihu
