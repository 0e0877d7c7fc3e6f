#include "core/layers/split.hpp"

#include "core/layers/registry.hpp"

namespace taihu {

void SplitLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  for (Blob* t : top) {
    t->data().share(bottom[0]->data());
    t->diff().reshape(bottom[0]->shape());
  }
}

void SplitLayer::forward(const BlobVec& bottom, const BlobVec& top) {}

void SplitLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                          const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  float* out = bottom[0]->diff().ptr();
  const int64_t n = bottom[0]->count();
  bottom[0]->diff().copy_from(top[0]->diff());
  for (size_t t = 1; t < top.size(); ++t) {
    const float* in = top[t]->diff().ptr();
    for (int64_t i = 0; i < n; ++i) out[i] += in[i];
  }
}

TAIHU_REGISTER_LAYER("Split", SplitLayer);

}  // namespace taihu
