#include "core/layers/split.hpp"

#include <algorithm>

#include "core/kernels/parallel.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

void SplitLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  for (Blob* t : top) {
    t->share_data(*bottom[0]);
    t->diff().reshape(bottom[0]->shape());
  }
}

void SplitLayer::forward(const BlobVec& bottom, const BlobVec& top) {}

void SplitLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                          const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  float* out = bottom[0]->diff().ptr();
  const int64_t n = bottom[0]->count();
  // Block by block, all tops at once: each block of the sum is written once.
  parallel_ranges(n, parallel_grain(), [&](int64_t begin, int64_t end) {
    std::copy(top[0]->diff().ptr() + begin, top[0]->diff().ptr() + end, out + begin);
    for (size_t t = 1; t < top.size(); ++t) {
      const float* in = top[t]->diff().ptr();
      for (int64_t i = begin; i < end; ++i) out[i] += in[i];
    }
  });
}

TAIHU_REGISTER_LAYER("Split", SplitLayer);

}  // namespace taihu
