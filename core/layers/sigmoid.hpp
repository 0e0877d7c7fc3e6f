#pragma once
// y = 1 / (1 + exp(-x)); backward uses y (1 - y), so it needs only the output and
// works in place.

#include "core/layers/layer.hpp"

namespace taihu {

class SigmoidLayer final : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Sigmoid"; }
  bool supports_in_place() const override { return true; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  bool backward_reads_bottom(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;
};

}  // namespace taihu
