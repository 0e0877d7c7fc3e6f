#pragma once
// Rectified linear unit, optionally leaky: y = x > 0 ? x : negative_slope * x.
// Works in place: backward reads the sign from the output, which for a slope
// >= 0 is positive exactly where the input was.

#include "core/layers/layer.hpp"

namespace taihu {

class ReLULayer final : public Layer {
 public:
  explicit ReLULayer(const LayerSpec& spec);
  const char* type() const override { return "ReLU"; }
  bool supports_in_place() const override { return true; }
  void setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // The gradient's sign comes from y for a slope >= 0, from x otherwise.
  bool backward_reads_bottom(size_t) const override { return negative_slope_ < 0.0f; }
  bool backward_reads_top(size_t) const override { return negative_slope_ >= 0.0f; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;
  float negative_slope() const { return negative_slope_; }

 private:
  float negative_slope_;
};

}  // namespace taihu
