#include "core/layers/scale.hpp"

#include <algorithm>

#include "core/common/lane_sum.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

ScaleLayer::ScaleLayer(const LayerSpec& spec) : Layer(spec) {
  axis_option_ = options().get_or<int>("axis", 1);
  num_axes_ = options().get_or<int>("num_axes", 1);
  if (num_axes_ < -1) throw options().error("num_axes", "must be -1 (all remaining axes) or >= 0");
  bias_term_ = options().get_or<bool>("bias_term", false);
  weight_filler_ = Filler::from_options(options(), "weight_filler", "constant 1");
  if (bias_term_) bias_filler_ = Filler::from_options(options(), "bias_filler", "constant 0");
}

Shape ScaleLayer::scale_shape(const BlobVec& bottom) const {
  const Shape& shape = bottom[0]->shape();
  const size_t axis = shape.axis(axis_option_);
  if (bottom.size() == 2) return bottom[1]->shape();
  const size_t end = num_axes_ < 0 ? shape.rank() : axis + static_cast<size_t>(num_axes_);
  if (end > shape.rank())
    shape_error("num_axes " + std::to_string(num_axes_) + " from axis " + std::to_string(axis) +
                " exceeds the bottom's rank: " + shape.str());
  return Shape(std::vector<int64_t>(shape.dims().begin() + axis, shape.dims().begin() + end));
}

void ScaleLayer::setup(const BlobVec& bottom, const BlobVec& top) {
  learned_scale_ = bottom.size() == 1;
  const Shape shape = scale_shape(bottom);
  if (learned_scale_) {
    weight_index_ = static_cast<int>(params().size());
    Blob& weight = add_param("weight", shape);
    weight_filler_.fill(weight.data(), rng(), 1, 1);
  }
  if (bias_term_) {
    bias_index_ = static_cast<int>(params().size());
    Blob& bias = add_param("bias", shape);
    bias_filler_.fill(bias.data(), rng(), 1, 1);
  }
}

const Blob& ScaleLayer::gamma(const BlobVec& bottom) const {
  return learned_scale_ ? *params()[weight_index_].blob : *bottom[1];
}

void ScaleLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  if (top[0] == bottom[0]) shape_error("cannot work in place");
  const size_t axis = shape.axis(axis_option_);
  const Shape expected = scale_shape(bottom);
  const Shape& have = learned_scale_ ? params()[weight_index_].blob->shape() : bottom[1]->shape();
  bool fits = axis + expected.rank() <= shape.rank();
  for (size_t i = 0; fits && i < expected.rank(); ++i) fits = expected[i] == shape[axis + i];
  if (!fits || have != expected)
    shape_error("scale of shape " + have.str() + " does not fit bottom " + shape.str() + " at axis " +
                std::to_string(axis));
  if (bias_index_ >= 0 && params()[bias_index_].blob->shape() != expected)
    shape_error("bias of shape " + params()[bias_index_].blob->shape().str() + " does not fit bottom " +
                shape.str());
  outer_ = shape.count(0, axis);
  dim_ = expected.count();
  inner_ = shape.count_from(axis + expected.rank());
  top[0]->reshape(shape);
}

void ScaleLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const float* x = bottom[0]->data().ptr();
  float* y = top[0]->data().ptr();
  const float* g = gamma(bottom).data().ptr();
  const float* b = bias_index_ >= 0 ? params()[bias_index_].blob->data().ptr() : nullptr;
  const int64_t D = dim_, I = inner_;
  if (I == 1) {  // e.g. N x C features: vectorise across channels
    for (int64_t o = 0; o < outer_; ++o) {
      const float* in = x + o * D;
      float* out = y + o * D;
      if (b != nullptr)
        for (int64_t d = 0; d < D; ++d) out[d] = in[d] * g[d] + b[d];
      else
        for (int64_t d = 0; d < D; ++d) out[d] = in[d] * g[d];
    }
    return;
  }
  parallel_ranges(outer_ * D, parallel_grain() / I, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t d = row % D;
      const float* in = x + row * I;
      float* out = y + row * I;
      const float scale = g[d], shift = b != nullptr ? b[d] : 0.0f;
      for (int64_t i = 0; i < I; ++i) out[i] = in[i] * scale + shift;
    }
  });
}

void ScaleLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                          const BlobVec& bottom) {
  const float* dy = top[0]->diff().ptr();
  const float* x = bottom[0]->data().ptr();
  const float* g = gamma(bottom).data().ptr();
  const int64_t D = dim_, I = inner_;

  // Gradient of gamma: accumulated into the parameter, overwritten in bottom[1].
  float* dgamma = nullptr;
  if (learned_scale_) {
    dgamma = params()[weight_index_].blob->diff().ptr();
  } else if (propagate_down[1]) {
    dgamma = bottom[1]->diff().ptr();
    bottom[1]->diff().zero();
  }
  float* dbeta = bias_index_ >= 0 ? params()[bias_index_].blob->diff().ptr() : nullptr;

  if (I == 1) {
    for (int64_t o = 0; o < outer_; ++o) {
      const float* gy = dy + o * D;
      const float* in = x + o * D;
      if (dgamma != nullptr)
        for (int64_t d = 0; d < D; ++d) dgamma[d] += gy[d] * in[d];
      if (dbeta != nullptr)
        for (int64_t d = 0; d < D; ++d) dbeta[d] += gy[d];
    }
    if (propagate_down[0]) {
      float* dx = bottom[0]->diff().ptr();
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t d = 0; d < D; ++d) dx[o * D + d] = dy[o * D + d] * g[d];
    }
    return;
  }

  // Per scale entry d, on all threads: its sums and its bottom gradient in
  // one sweep over its rows while they are in cache.
  float* dx = propagate_down[0] ? bottom[0]->diff().ptr() : nullptr;
  parallel_ranges(D, parallel_grain() / std::max<int64_t>(outer_ * I, 1), [&](int64_t begin, int64_t end) {
    for (int64_t d = begin; d < end; ++d) {
      double sum_xy = 0.0, sum_y = 0.0;
      const float scale = g[d];
      for (int64_t o = 0; o < outer_; ++o) {
        const float* gy = dy + (o * D + d) * I;
        if (dgamma != nullptr || dbeta != nullptr) {
          const float* in = x + (o * D + d) * I;
          float s1, s2;
          detail::lane_sum2(
              I, [&](int64_t i) { return gy[i] * in[i]; }, [&](int64_t i) { return gy[i]; }, s1, s2);
          sum_xy += s1;
          sum_y += s2;
        }
        if (dx != nullptr) {
          float* out = dx + (o * D + d) * I;
          for (int64_t i = 0; i < I; ++i) out[i] = gy[i] * scale;
        }
      }
      if (dgamma != nullptr) dgamma[d] += static_cast<float>(sum_xy);
      if (dbeta != nullptr) dbeta[d] += static_cast<float>(sum_y);
    }
  });
}

TAIHU_REGISTER_LAYER("Scale", ScaleLayer);

}  // namespace taihu
