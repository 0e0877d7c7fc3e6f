#pragma once
// Local response normalisation (Krizhevsky et al. 2012), with Caffe's formula:
//   scale = k + alpha / n * sum of x^2 over the window,   y = x * scale^-beta
// where n is the window's size: local_size channels (across_channels) or
// local_size x local_size positions, zero padded (within_channel).
//
//   [layer norm1]
//   type = LRN
//   local_size = 5          # odd
//   alpha = 1
//   beta = 0.75
//   k = 1
//   norm_region = across_channels | within_channel

#include "core/layers/layer.hpp"

namespace taihu {

class LrnLayer final : public Layer {
 public:
  explicit LrnLayer(const LayerSpec& spec);
  const char* type() const override { return "LRN"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                const BlobVec& bottom) override;

 private:
  // out[c] = sum of in[c'] over |c' - c| <= half, for each of `planes`
  // channel planes of `plane` values (one image).
  void channel_window_sum(const float* in, float* out, int64_t planes, int64_t plane) const;
  // out = sum of in over the zero-padded local_size^2 window, one H x W plane.
  void spatial_window_sum(const float* in, float* out, int64_t height, int64_t width);
  // out[i] = scale[i]^-beta.
  void negative_power(const float* scale, float* out, int64_t n) const;

  int local_size_;
  float alpha_;
  float beta_;
  float k_;
  bool across_channels_;
  int64_t num_ = 0, channels_ = 0, height_ = 0, width_ = 0;
  Tensor scale_;      // k + alpha/n * window sum of squares
  Tensor power_;      // scale^-beta
  Tensor work_;       // squares in forward, dy * y / scale in backward
  Tensor window_;     // window sums in backward
  Tensor row_sums_;   // within_channel: horizontal pass of the 2-D box sum
};

}  // namespace taihu
