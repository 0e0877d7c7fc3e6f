#pragma once
// Per-channel affine map y = x * gamma (+ beta), Caffe's Scale layer.
//
//   [layer scale1]
//   type = Scale
//   axis = 1              # first axis gamma spans
//   num_axes = 1          # how many axes gamma spans; -1: all from axis on
//   bias_term = false     # adds a learnable "bias" (bias_filler, constant 0)
//   weight_filler = constant 1
//
// With one bottom, gamma is the learnable parameter "weight" with shape
// bottom.shape[axis, axis + num_axes). With two bottoms, bottom[1] is gamma
// (its shape must match bottom[0] from `axis` on) and receives a gradient;
// num_axes is then ignored.

#include "core/layers/filler.hpp"
#include "core/layers/layer.hpp"

namespace taihu {

class ScaleLayer final : public Layer {
 public:
  explicit ScaleLayer(const LayerSpec& spec);
  const char* type() const override { return "Scale"; }
  int max_bottoms() const override { return 2; }
  void setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward reads x (gamma's gradient) and gamma, never y.
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                const BlobVec& bottom) override;

  // For fusion into a BatchNorm (core/net/fusion.hpp): the learned gamma and
  // beta (null where absent; gamma is null with two bottoms), and the view of
  // the bottom at the last reshape, outer x dim x inner.
  Blob* learned_gamma() { return learned_scale_ ? params()[weight_index_].blob.get() : nullptr; }
  Blob* beta() { return bias_index_ >= 0 ? params()[bias_index_].blob.get() : nullptr; }
  int64_t outer() const { return outer_; }
  int64_t dim() const { return dim_; }
  int64_t inner() const { return inner_; }

 private:
  // The shape gamma must have, for these bottoms.
  Shape scale_shape(const BlobVec& bottom) const;
  const Blob& gamma(const BlobVec& bottom) const;

  int axis_option_;
  int num_axes_;
  bool bias_term_;
  Filler weight_filler_;
  Filler bias_filler_;
  bool learned_scale_ = true;
  int weight_index_ = -1;
  int bias_index_ = -1;
  // x viewed as outer x dim x inner; gamma and beta have dim elements.
  int64_t outer_ = 0;
  int64_t dim_ = 0;
  int64_t inner_ = 0;
};

}  // namespace taihu
