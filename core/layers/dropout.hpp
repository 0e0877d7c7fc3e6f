#pragma once
// Inverted dropout: in training each unit is kept with probability
// 1 - dropout_ratio and scaled by 1 / (1 - dropout_ratio), so the test phase
// is the identity. Masks come from the layer's rng(), which checkpoints store.

#include "core/layers/layer.hpp"

namespace taihu {

class DropoutLayer final : public Layer {
 public:
  explicit DropoutLayer(const LayerSpec& spec);
  const char* type() const override { return "Dropout"; }
  bool supports_in_place() const override { return true; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward applies the mask it kept: no value.
  bool backward_reads_bottom(size_t) const override { return false; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

  float ratio() const { return ratio_; }
  // The last training mask: 0 for dropped units, 1 / (1 - ratio) for kept ones.
  const Tensor& mask() const { return mask_; }

 private:
  float ratio_;
  Tensor mask_;
};

}  // namespace taihu
