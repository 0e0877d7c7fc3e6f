#pragma once
// Caffe-style batch normalisation: per-channel (axis 1) normalisation only,
// without an affine transform (a Scale layer with bias_term follows in nets).
//
//   [layer bn1]
//   type = BatchNorm
//   momentum = 0.9          # running = momentum * running + (1 - momentum) * batch
//   eps = 1e-5
//   use_global_stats = ...  # absent: batch statistics in train, running ones in test
//
// Statistics are taken over the batch and every spatial position. The running
// mean and (unbiased) variance are non-learnable parameters "mean" and
// "variance" (starting at 0 and 1): model state that checkpoints store and
// the solver never touches.

#include <optional>

#include "core/layers/layer.hpp"

namespace taihu {

class BatchNormLayer final : public Layer {
 public:
  explicit BatchNormLayer(const LayerSpec& spec);
  const char* type() const override { return "BatchNorm"; }
  void setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward recomputes the normalised values from the bottom, never the top
  // (an in-place successor may have overwritten it).
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                const BlobVec& bottom) override;

  // Whether the next forward normalises with the running statistics.
  bool uses_global_stats() const {
    return use_global_stats_ ? *use_global_stats_ : phase() == Phase::test;
  }

  // What the net may run in the same pass as the normalisation, channel by
  // channel (core/net/fusion.hpp): the per-channel affine map of a Scale
  // layer, then a ReLU. Forward writes only the last one's output; backward
  // takes that output's gradient, accumulates gamma's and beta's, and writes
  // the bottom's. The results equal the layers' own, bit for bit: the same
  // expressions in the same order, one pass over memory per direction
  // instead of one per layer.
  struct Epilogue {
    const float* gamma = nullptr;  // per channel; null: no affine map
    const float* beta = nullptr;   // per channel; null: none (with gamma: + 0)
    float* gamma_diff = nullptr;   // null: not wanted
    float* beta_diff = nullptr;
    bool relu = false;
    float relu_slope = 0.0f;
  };
  int64_t channels() const { return channels_; }
  int64_t spatial_size() const { return inner_; }
  void forward_with(const Blob& bottom, Blob& out, const Epilogue& then);
  // bottom_diff null: the bottom needs no gradient (only gamma's and beta's).
  void backward_with(const Blob& out, const Blob& bottom, Tensor* bottom_diff, const Epilogue& then);

 private:
  float momentum_;
  float eps_;
  std::optional<bool> use_global_stats_;
  int64_t channels_ = 0;
  int64_t outer_ = 0;  // batch size
  int64_t inner_ = 0;  // spatial positions per channel
  // Per channel, from the last forward: the mean subtracted and 1/sqrt(var + eps).
  Tensor mean_;
  Tensor inv_std_;
  bool last_forward_global_ = false;
};

}  // namespace taihu
