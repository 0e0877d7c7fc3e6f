#pragma once
// Softmax followed by the multinomial logistic loss, fused for a stable
// gradient (p - onehot). Bottoms: scores and labels (float class indices, one
// per sample and position after the axis). Top: the scalar loss
// sum(-log p[label]) / normalizer, where normalization is
//   valid       the number of labels not equal to ignore_label (default)
//   full        every position, ignored or not
//   batch_size  the extent before the axis
//   none        1
// Labels get no gradient.

#include <optional>

#include "core/layers/layer.hpp"

namespace taihu {

class SoftmaxWithLossLayer final : public Layer {
 public:
  explicit SoftmaxWithLossLayer(const LayerSpec& spec);
  const char* type() const override { return "SoftmaxWithLoss"; }
  int min_bottoms() const override { return 2; }
  int max_bottoms() const override { return 2; }
  float default_loss_weight() const override { return 1.0f; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward reads the probabilities it kept and the labels, not the scores.
  bool backward_reads_bottom(size_t i) const override { return i == 1; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

  // The probabilities of the last forward pass.
  const Tensor& probabilities() const { return prob_; }

 private:
  enum class Normalization { valid, full, batch_size, none };

  int axis_;
  std::optional<int> ignore_label_;
  Normalization normalization_;
  int64_t outer_ = 0, channels_ = 0, inner_ = 0;
  float normalizer_ = 1.0f;  // of the last forward pass
  Tensor prob_;
  Tensor scratch_;
};

}  // namespace taihu
