#pragma once
// Softmax along one axis (default 1, the channels); dimensions after the axis
// are independent positions (a per-pixel softmax for NCHW input).

#include "core/layers/layer.hpp"

namespace taihu {

class SoftmaxLayer final : public Layer {
 public:
  explicit SoftmaxLayer(const LayerSpec& spec);
  const char* type() const override { return "Softmax"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward uses y alone.
  bool backward_reads_bottom(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

 private:
  int axis_;
  int64_t outer_ = 0, channels_ = 0, inner_ = 0;
  Tensor scratch_;  // one value per inner position
};

}  // namespace taihu
