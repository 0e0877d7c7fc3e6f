#pragma once
// Copies one blob to several tops (sharing its data) and sums their gradients.
// The net inserts it wherever a blob has more than one reader.

#include "core/layers/layer.hpp"

namespace taihu {

class SplitLayer final : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Split"; }
  int max_tops() const override { return 1 << 20; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward sums the tops' gradients: no value.
  bool backward_reads_bottom(size_t) const override { return false; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                const BlobVec& bottom) override;
};

}  // namespace taihu
