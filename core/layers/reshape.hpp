#pragma once
// Gives the bottom a new shape without copying (the top shares data and
// diff). As in Caffe, `shape` replaces the input axes [axis, axis + num_axes)
// (default: all of them); in `shape`, 0 copies the corresponding input
// extent and one -1 is inferred from the element count. A negative axis
// counts from the end, -1 meaning "after the last axis".

#include <cstdint>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {

class ReshapeLayer final : public Layer {
 public:
  explicit ReshapeLayer(const LayerSpec& spec);
  const char* type() const override { return "Reshape"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override {}
  bool backward_reads_bottom(size_t) const override { return false; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
  }

 private:
  std::vector<int64_t> shape_;
  int axis_;
  int num_axes_;
};

}  // namespace taihu
