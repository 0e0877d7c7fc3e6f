#pragma once
// y = tanh(x); backward uses 1 - y^2, so it needs only the output and
// works in place.

#include "core/layers/layer.hpp"

namespace taihu {

class TanHLayer final : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "TanH"; }
  bool supports_in_place() const override { return true; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  bool backward_reads_bottom(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;
};

}  // namespace taihu
