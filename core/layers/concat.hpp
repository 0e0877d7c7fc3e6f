#pragma once
// Joins one or more bottoms along an axis (default 1, the channels); their
// shapes must agree on every other axis.

#include "core/layers/layer.hpp"

namespace taihu {

class ConcatLayer final : public Layer {
 public:
  explicit ConcatLayer(const LayerSpec& spec);
  const char* type() const override { return "Concat"; }
  int max_bottoms() const override { return 1 << 20; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward copies slices of the gradient: no value.
  bool backward_reads_bottom(size_t) const override { return false; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

 private:
  int axis_;
  size_t resolved_axis_ = 0;
  int64_t outer_ = 0;  // product of the extents before the axis
  int64_t inner_ = 0;  // product of the extents after it
};

}  // namespace taihu
