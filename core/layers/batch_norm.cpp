#include "core/layers/batch_norm.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/lane_sum.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

BatchNormLayer::BatchNormLayer(const LayerSpec& spec) : Layer(spec) {
  momentum_ = options().get_or<float>("momentum", 0.9f);
  if (!(momentum_ >= 0.0f && momentum_ <= 1.0f))
    throw options().error("momentum", "must lie in [0, 1]");
  eps_ = options().get_or<float>("eps", 1e-5f);
  if (!(eps_ > 0.0f)) throw options().error("eps", "must be positive");
  if (options().has("use_global_stats")) use_global_stats_ = options().get<bool>("use_global_stats");
}

void BatchNormLayer::setup(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  if (shape.rank() < 2) shape_error("expected N x C x ..., got " + shape.str());
  channels_ = shape[1];
  // Running statistics start as the identity transform: mean 0, variance 1.
  add_param("mean", Shape{channels_}, false).data().fill(0.0f);
  add_param("variance", Shape{channels_}, false).data().fill(1.0f);
  mean_.reshape(Shape{channels_});
  inv_std_.reshape(Shape{channels_});
}

void BatchNormLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  if (shape.rank() < 2 || shape[1] != channels_)
    shape_error("expected N x " + std::to_string(channels_) + " x ..., got " + shape.str());
  if (top[0] == bottom[0]) shape_error("cannot work in place");
  outer_ = shape[0];
  inner_ = shape.count_from(2);
  top[0]->reshape(shape);
}

void BatchNormLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const float* x = bottom[0]->data().ptr();
  float* y = top[0]->data().ptr();
  float* mean = mean_.ptr();
  float* inv_std = inv_std_.ptr();
  float* running_mean = params()[0].blob->data().ptr();
  float* running_var = params()[1].blob->data().ptr();
  const int64_t C = channels_, N = outer_, S = inner_;
  last_forward_global_ = uses_global_stats();

  // Channel by channel, on all threads: each channel's statistics and its
  // normalisation run back to back while its values are still in cache.
  const bool global = last_forward_global_;
  const int64_t m = N * S;
  parallel_ranges(C, parallel_grain / std::max<int64_t>(m, 1), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      if (global) {
        mean[c] = running_mean[c];
        inv_std[c] = 1.0f / std::sqrt(running_var[c] + eps_);
      } else {
        // Two passes (mean, then centred squares) for accuracy; each row of S
        // values is summed in float lanes (vectorised) and the rows in double.
        double sum = 0.0;
        for (int64_t n = 0; n < N; ++n) {
          const float* row = x + (n * C + c) * S;
          sum += detail::lane_sum(S, [&](int64_t i) { return row[i]; });
        }
        const float mu = static_cast<float>(sum / static_cast<double>(m));
        double squares = 0.0;
        for (int64_t n = 0; n < N; ++n) {
          const float* row = x + (n * C + c) * S;
          squares += detail::lane_sum(S, [&](int64_t i) {
            const float d = row[i] - mu;
            return d * d;
          });
        }
        const double var = squares / static_cast<double>(m);
        mean[c] = mu;
        inv_std[c] = static_cast<float>(1.0 / std::sqrt(var + eps_));
        const double unbiased = m > 1 ? squares / static_cast<double>(m - 1) : var;
        running_mean[c] = momentum_ * running_mean[c] + (1.0f - momentum_) * mu;
        running_var[c] = momentum_ * running_var[c] + (1.0f - momentum_) * static_cast<float>(unbiased);
      }
      const float mu = mean[c], scale = inv_std[c];
      for (int64_t n = 0; n < N; ++n) {
        const float* in = x + (n * C + c) * S;
        float* out = y + (n * C + c) * S;
        for (int64_t i = 0; i < S; ++i) out[i] = (in[i] - mu) * scale;
      }
    }
  });
}

void BatchNormLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                              const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const float* dy = top[0]->diff().ptr();
  const float* x = bottom[0]->data().ptr();
  float* dx = bottom[0]->diff().ptr();
  const float* mean = mean_.ptr();
  const float* inv_std = inv_std_.ptr();
  const int64_t C = channels_, N = outer_, S = inner_;

  // Through the batch statistics, with x_hat = (x - mean) * inv_std:
  //   dx = inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
  // x_hat is recomputed from the bottom because the top may have been
  // overwritten by an in-place successor. With fixed statistics the map is
  // affine: dx = inv_std * dy. Channels run in parallel, each in one go.
  const bool global = last_forward_global_;
  const double m = static_cast<double>(N * S);
  parallel_ranges(C, parallel_grain / std::max<int64_t>(N * S, 1), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float mu = mean[c], scale = inv_std[c];
      float mean_dy = 0.0f, mean_dy_xhat = 0.0f;
      if (!global) {
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t n = 0; n < N; ++n) {
          const float* g = dy + (n * C + c) * S;
          const float* in = x + (n * C + c) * S;
          float s1, s2;
          detail::lane_sum2(
              S, [&](int64_t i) { return g[i]; }, [&](int64_t i) { return g[i] * (in[i] - mu); }, s1, s2);
          sum_dy += s1;
          sum_dy_xhat += s2;
        }
        mean_dy = static_cast<float>(sum_dy / m);
        mean_dy_xhat = static_cast<float>(sum_dy_xhat * scale / m);
      }
      for (int64_t n = 0; n < N; ++n) {
        const float* g = dy + (n * C + c) * S;
        const float* in = x + (n * C + c) * S;
        float* out = dx + (n * C + c) * S;
        if (global) {
          for (int64_t i = 0; i < S; ++i) out[i] = g[i] * scale;
        } else {
          for (int64_t i = 0; i < S; ++i) {
            const float xhat = (in[i] - mu) * scale;
            out[i] = scale * (g[i] - mean_dy - xhat * mean_dy_xhat);
          }
        }
      }
    }
  });
}

TAIHU_REGISTER_LAYER("BatchNorm", BatchNormLayer);

}  // namespace taihu
