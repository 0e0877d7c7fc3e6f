#pragma once
// Merges the axes axis..end_axis (default 1..-1) into one: NxCxHxW becomes
// Nx(C*H*W). The top shares the bottom's data and diff, so nothing is copied.

#include "core/layers/layer.hpp"

namespace taihu {

class FlattenLayer final : public Layer {
 public:
  explicit FlattenLayer(const LayerSpec& spec);
  const char* type() const override { return "Flatten"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override {}
  bool backward_reads_bottom(size_t) const override { return false; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override {
  }

 private:
  int axis_;
  int end_axis_;
};

}  // namespace taihu
