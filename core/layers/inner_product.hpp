#pragma once
// A fully connected layer ("InnerProduct"): top = bottom * weight^T + bias.
//
//   num_output = 10          # required
//   axis = 1                 # dimensions from `axis` on are flattened into K
//   bias_term = true
//   weight_filler = xavier
//   bias_filler = constant 0
//
// Parameters: weight (num_output x K), bias (num_output). The top has the
// bottom's dimensions before `axis`, then num_output.

#include <cstdint>

#include "core/layers/filler.hpp"
#include "core/layers/layer.hpp"

namespace taihu {

class InnerProductLayer final : public Layer {
 public:
  explicit InnerProductLayer(const LayerSpec& spec);
  const char* type() const override { return "InnerProduct"; }
  void setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward reads the input (for the weights' gradient), not the output.
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

 private:
  int64_t num_output_ = 0;
  int axis_option_ = 1;
  size_t axis_ = 1;
  bool bias_term_ = true;
  Filler weight_filler_;
  Filler bias_filler_;
  int64_t inputs_ = 0;  // K
  int64_t rows_ = 0;    // M: product of the dimensions before axis
  Tensor ones_;
};

}  // namespace taihu
