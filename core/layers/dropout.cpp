#include "core/layers/dropout.hpp"

#include <cmath>

#include "core/kernels/elementwise.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

DropoutLayer::DropoutLayer(const LayerSpec& spec)
    : Layer(spec), ratio_(options().get_or<float>("dropout_ratio", 0.5f)) {
  if (!(ratio_ >= 0.0f && ratio_ < 1.0f)) throw options().error("dropout_ratio", "must be in [0, 1)");
}

void DropoutLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  if (top[0] != bottom[0]) top[0]->reshape(bottom[0]->shape());
  mask_.reshape(bottom[0]->shape());
}

void DropoutLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const int64_t n = bottom[0]->count();
  if (phase() != Phase::train) {
    top[0]->data().copy_from(bottom[0]->data());  // no-op in place
    return;
  }
  // Each 64-bit draw decides two units: keep a unit iff its 32 random bits are
  // >= ratio * 2^32, which happens with probability 1 - ratio.
  const auto threshold = static_cast<uint64_t>(std::llround(static_cast<double>(ratio_) * 4294967296.0));
  const float kept = 1.0f / (1.0f - ratio_);
  float* mask = mask_.ptr();
  Rng& random = rng();
  int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    const uint64_t bits = random();
    mask[i] = (bits >> 32) >= threshold ? kept : 0.0f;
    mask[i + 1] = (bits & 0xffffffffu) >= threshold ? kept : 0.0f;
  }
  if (i < n) mask[i] = (random() >> 32) >= threshold ? kept : 0.0f;
  kernels::mul(n, bottom[0]->data().ptr(), mask, top[0]->data().ptr());
}

void DropoutLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (phase() != Phase::train) {
    bottom[0]->diff().copy_from(top[0]->diff());
    return;
  }
  kernels::mul(bottom[0]->count(), top[0]->diff().ptr(), mask_.ptr(), bottom[0]->diff().ptr());
}

TAIHU_REGISTER_LAYER("Dropout", DropoutLayer);

}  // namespace taihu
