#pragma once
// Classification accuracy: the fraction of labelled positions whose label is
// among the top_k scores along the axis. Ties rank the lower class index
// first, so a prediction is never counted right by luck of ordering. Labels
// equal to ignore_label do not count. No gradient.

#include <optional>

#include "core/layers/layer.hpp"

namespace taihu {

class AccuracyLayer final : public Layer {
 public:
  explicit AccuracyLayer(const LayerSpec& spec);
  const char* type() const override { return "Accuracy"; }
  int min_bottoms() const override { return 2; }
  int max_bottoms() const override { return 2; }
  bool has_backward() const override { return false; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

 private:
  int top_k_;
  int axis_;
  std::optional<int> ignore_label_;
  int64_t outer_ = 0, channels_ = 0, inner_ = 0;
};

}  // namespace taihu
