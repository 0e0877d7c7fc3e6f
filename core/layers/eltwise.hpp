#pragma once
// Combines two or more bottoms of identical shape element by element:
//   operation = sum   y = sum_i coeff_i * x_i   (coeff: one per bottom, default 1)
//   operation = prod  y = prod_i x_i
//   operation = max   y = max_i x_i             (the first bottom wins ties)

#include <cstdint>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {

class EltwiseLayer final : public Layer {
 public:
  enum class Operation { sum, prod, max };

  explicit EltwiseLayer(const LayerSpec& spec);
  const char* type() const override { return "Eltwise"; }
  int min_bottoms() const override { return 2; }
  int max_bottoms() const override { return 1 << 20; }
  void setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

 private:
  Operation operation_;
  std::vector<float> coeffs_;
  std::vector<int32_t> argmax_;  // max: which bottom supplied each output
};

}  // namespace taihu
