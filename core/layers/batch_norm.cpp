#include "core/layers/batch_norm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/common/lane_sum.hpp"
#include "core/kernels/elementwise.hpp"
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

namespace {

// One channel's rows of the output: x_hat = (x - mean) * inv_std, then the
// epilogue's steps, each computed as its own layer computes it.
template <bool Affine, bool Relu>
void write_rows(const float* x, float* y, int64_t rows, int64_t stride, int64_t S, float mu, float scale,
                float gamma, float beta, float slope) {
  for (int64_t n = 0; n < rows; ++n) {
    const float* in = x + n * stride;
    float* out = y + n * stride;
    for (int64_t i = 0; i < S; ++i) {
      float v = (in[i] - mu) * scale;
      if constexpr (Affine) v = v * gamma + beta;
      if constexpr (Relu) v = kernels::relu_value(v, slope);
      out[i] = v;
    }
  }
}

template <bool Affine, bool Relu>
void write_rows_of(const BatchNormLayer::Epilogue& e, int64_t c, const float* x, float* y, int64_t rows,
                   int64_t stride, int64_t S, float mu, float scale) {
  write_rows<Affine, Relu>(x, y, rows, stride, S, mu, scale, Affine ? e.gamma[c] : 1.0f,
                           Affine && e.beta ? e.beta[c] : 0.0f, e.relu_slope);
}

}  // namespace

void BatchNormLayer::forward(const BlobVec& bottom, const BlobVec& top) { forward_with(*bottom[0], *top[0], {}); }

void BatchNormLayer::forward_with(const Blob& bottom, Blob& top, const Epilogue& then) {
  const float* x = bottom.data().ptr();
  float* y = top.data().ptr();
  float* mean = mean_.ptr();
  float* inv_std = inv_std_.ptr();
  float* running_mean = params()[0].blob->data().ptr();
  float* running_var = params()[1].blob->data().ptr();
  const int64_t C = channels_, N = outer_, S = inner_;
  last_forward_global_ = uses_global_stats();
  auto write = then.gamma ? (then.relu ? write_rows_of<true, true> : write_rows_of<true, false>)
                          : (then.relu ? write_rows_of<false, true> : write_rows_of<false, false>);

  // Channel by channel, on all threads: each channel's statistics and its
  // normalisation run back to back while its values are still in cache.
  const bool global = last_forward_global_;
  const int64_t m = N * S;
  parallel_ranges(C, parallel_grain() / std::max<int64_t>(m, 1), [&](int64_t begin, int64_t end) {
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
      write(then, c, x + c * S, y + c * S, N, C * S, S, mean[c], inv_std[c]);
    }
  });
}

void BatchNormLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                              const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  backward_with(*top[0], *bottom[0], &bottom[0]->diff(), {});
}

namespace {

// Backward of one channel through the epilogue and the normalisation. The
// epilogue's gradient (the ReLU's, then the Scale's) is recomputed row by row
// from the bottom, where the layers would read their stored blobs: the
// values are the same, and only x and dy are read from memory.
template <bool Affine, bool Relu>
struct ChannelBackward {
  const BatchNormLayer::Epilogue& e;
  int64_t c, N, stride, S;
  float mu, scale;
  bool global;
  const float* x;   // channel c of image 0; rows `stride` apart
  const float* dy;  // the output's gradient, laid out as x
  float* dx;        // null: no bottom gradient
  double count;     // N * S

  // The gradient reaching the Scale's output (the ReLU's bottom gradient):
  // the output's gradient itself without a ReLU, else computed into `buffer`.
  const float* chain_gradient(const float* in, const float* d, float* buffer) const {
    if constexpr (!Relu) {
      return d;
    } else {
      const float gamma = Affine ? e.gamma[c] : 1.0f, beta = Affine && e.beta ? e.beta[c] : 0.0f;
      for (int64_t i = 0; i < S; ++i) {
        float z = (in[i] - mu) * scale;
        if constexpr (Affine) z = z * gamma + beta;
        buffer[i] = kernels::relu_gradient(z, d[i], e.relu_slope);
      }
      return buffer;
    }
  }

  void run(std::vector<float>& buffer) const {
    const float gamma = Affine ? e.gamma[c] : 1.0f;
    const bool scale_sums = Affine && (e.gamma_diff || e.beta_diff);
    const bool norm_sums = dx && !global;
    if (Relu && buffer.size() < static_cast<size_t>(S)) buffer.resize(static_cast<size_t>(S));
    const float* gy = nullptr;
    // gy -> the normalisation's output gradient, as the Scale writes it.
    auto g = [&](int64_t i) { return Affine ? gy[i] * gamma : gy[i]; };
    double sum_xy = 0.0, sum_y = 0.0, sum_dy = 0.0, sum_dy_xhat = 0.0;
    if (scale_sums || norm_sums)
      for (int64_t n = 0; n < N; ++n) {
        const float* in = x + n * stride;
        gy = chain_gradient(in, dy + n * stride, buffer.data());
        if (scale_sums) {
          sum_xy += detail::lane_sum(S, [&](int64_t i) { return gy[i] * ((in[i] - mu) * scale); });
          sum_y += detail::lane_sum(S, [&](int64_t i) { return gy[i]; });
        }
        if (norm_sums) {
          sum_dy += detail::lane_sum(S, g);
          sum_dy_xhat += detail::lane_sum(S, [&](int64_t i) { return g(i) * (in[i] - mu); });
        }
      }
    if (scale_sums) {
      if (e.gamma_diff) e.gamma_diff[c] += static_cast<float>(sum_xy);
      if (e.beta_diff) e.beta_diff[c] += static_cast<float>(sum_y);
    }
    if (!dx) return;
    // Through the batch statistics, with x_hat = (x - mean) * inv_std:
    //   dx = inv_std * (g - mean(g) - x_hat * mean(g * x_hat)).
    // With fixed statistics the map is affine: dx = inv_std * g.
    const float mean_dy = static_cast<float>(sum_dy / count);
    const float mean_dy_xhat = static_cast<float>(sum_dy_xhat * scale / count);
    for (int64_t n = 0; n < N; ++n) {
      const float* in = x + n * stride;
      float* out = dx + n * stride;
      gy = chain_gradient(in, dy + n * stride, buffer.data());
      if (global) {
        for (int64_t i = 0; i < S; ++i) out[i] = g(i) * scale;
      } else {
        for (int64_t i = 0; i < S; ++i) {
          const float xhat = (in[i] - mu) * scale;
          out[i] = scale * (g(i) - mean_dy - xhat * mean_dy_xhat);
        }
      }
    }
  }
};

template <bool Affine, bool Relu>
void backward_channel(const BatchNormLayer::Epilogue& e, int64_t c, int64_t N, int64_t C, int64_t S, float mu,
                      float scale, bool global, const float* x, const float* dy, float* dx,
                      std::vector<float>& buffer) {
  const ChannelBackward<Affine, Relu> channel{e, c, N, C * S, S, mu, scale, global,
                                              x + c * S, dy + c * S, dx ? dx + c * S : nullptr,
                                              static_cast<double>(N * S)};
  channel.run(buffer);
}

}  // namespace

void BatchNormLayer::backward_with(const Blob& out, const Blob& bottom, Tensor* bottom_diff, const Epilogue& then) {
  const float* dy = out.diff().ptr();
  const float* x = bottom.data().ptr();
  float* dx = bottom_diff ? bottom_diff->ptr() : nullptr;
  const float* mean = mean_.ptr();
  const float* inv_std = inv_std_.ptr();
  const int64_t C = channels_, N = outer_, S = inner_;
  auto channel = then.gamma ? (then.relu ? backward_channel<true, true> : backward_channel<true, false>)
                            : (then.relu ? backward_channel<false, true> : backward_channel<false, false>);
  // x_hat is recomputed from the bottom because the top may have been
  // overwritten by an in-place successor. Channels run in parallel, each in
  // one go while its rows are in cache.
  const bool global = last_forward_global_;
  parallel_ranges(C, parallel_grain() / std::max<int64_t>(N * S, 1), [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> buffer;  // one row of the chain's gradient
    for (int64_t c = begin; c < end; ++c)
      channel(then, c, N, C, S, mean[c], inv_std[c], global, x, dy, dx, buffer);
  });
}

TAIHU_REGISTER_LAYER("BatchNorm", BatchNormLayer);

}  // namespace taihu
