#include "core/layers/tanh.hpp"

#include "core/kernels/elementwise.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

void TanHLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  if (top[0] != bottom[0]) top[0]->reshape(bottom[0]->shape());
}

void TanHLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  kernels::tanh_forward(bottom[0]->count(), bottom[0]->data().ptr(), top[0]->data().ptr());
}

void TanHLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  kernels::tanh_backward(bottom[0]->count(), top[0]->data().ptr(), top[0]->diff().ptr(),
                         bottom[0]->diff().ptr());
}

TAIHU_REGISTER_LAYER("TanH", TanHLayer);

}  // namespace taihu
