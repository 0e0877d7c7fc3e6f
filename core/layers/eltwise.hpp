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
  // A sum's backward reads no value; a product's reads the other inputs;
  // a max's, only the winners it kept.
  bool backward_reads_bottom(size_t) const override { return operation_ == Operation::prod; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

  Operation operation() const { return operation_; }
  // A sum followed by a ReLU with slope >= 0 in the same pass over memory
  // (core/net/fusion.hpp): forward writes only the ReLU's output `out`;
  // backward reads out's data (the ReLU's sign) and diff and writes the
  // bottoms' diffs. The same bits as the two layers, one pass instead of two.
  void forward_then_relu(const BlobVec& bottom, Blob& out, float slope);
  void backward_through_relu(const Blob& out, float slope, const std::vector<bool>& propagate_down,
                             const BlobVec& bottom);

 private:
  // out[begin, end) = the weighted sum of the bottoms there.
  void sum_range(const BlobVec& bottom, float* out, int64_t begin, int64_t end) const;
  // diff[begin, end) = coeff_b * grad[begin, end) for every bottom b that takes a gradient.
  void sum_gradient_range(const float* grad, const std::vector<bool>& propagate_down, const BlobVec& bottom,
                          int64_t begin, int64_t end) const;

  Operation operation_;
  std::vector<float> coeffs_;
  std::vector<int32_t> argmax_;  // max: which bottom supplied each output
};

}  // namespace taihu
