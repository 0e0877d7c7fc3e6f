#include "core/kernels/elementwise.hpp"

#include <algorithm>
#include <limits>

#include "core/common/multiversion.hpp"

namespace taihu::kernels {

// Every kernel here is built for AVX2 too (core/common/multiversion.hpp).

namespace {
// Reductions keep this many partial results, one per SIMD lane and register,
// so the loop has no serial dependence (and needs no -ffast-math).
constexpr int64_t lanes = 32;
}  // namespace

TAIHU_MULTIVERSION void add(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

TAIHU_MULTIVERSION void sub(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i];
}

TAIHU_MULTIVERSION void mul(int64_t n, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

TAIHU_MULTIVERSION void scale(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

TAIHU_MULTIVERSION void axpy(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

TAIHU_MULTIVERSION void axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] + beta * y[i];
}

TAIHU_MULTIVERSION void exp(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_exp(x[i]);
}

TAIHU_MULTIVERSION float sum(int64_t n, const float* x) {
  if (n < 2 * lanes) {
    float total = 0.0f;
    for (int64_t i = 0; i < n; ++i) total += x[i];
    return total;
  }
  float partial[lanes] = {};
  const int64_t blocked = n / lanes * lanes;
  for (int64_t i = 0; i < blocked; i += lanes)
    for (int64_t j = 0; j < lanes; ++j) partial[j] += x[i + j];
  float total = 0.0f;
  for (int64_t i = blocked; i < n; ++i) total += x[i];
  for (int64_t j = 0; j < lanes; ++j) total += partial[j];
  return total;
}

TAIHU_MULTIVERSION float max(int64_t n, const float* x) {
  constexpr float lowest = -std::numeric_limits<float>::infinity();
  if (n < 2 * lanes) {
    float best = lowest;
    for (int64_t i = 0; i < n; ++i) best = x[i] > best ? x[i] : best;
    return best;
  }
  float partial[lanes];
  std::fill_n(partial, lanes, lowest);
  const int64_t blocked = n / lanes * lanes;
  for (int64_t i = 0; i < blocked; i += lanes)
    for (int64_t j = 0; j < lanes; ++j) partial[j] = x[i + j] > partial[j] ? x[i + j] : partial[j];
  float best = lowest;
  for (int64_t i = blocked; i < n; ++i) best = x[i] > best ? x[i] : best;
  for (int64_t j = 0; j < lanes; ++j) best = partial[j] > best ? partial[j] : best;
  return best;
}

TAIHU_MULTIVERSION void relu_forward(int64_t n, float slope, const float* x, float* y) {
  // The slope test is taken out of the loop, which then vectorises.
  if (slope == 0.0f) {
    for (int64_t i = 0; i < n; ++i) y[i] = relu_value(x[i], 0.0f);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = relu_value(x[i], slope);
  }
}

TAIHU_MULTIVERSION void relu_backward(int64_t n, float slope, const float* sign, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = relu_gradient(sign[i], dy[i], slope);
}

TAIHU_MULTIVERSION void sigmoid_forward(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_sigmoid(x[i]);
}

TAIHU_MULTIVERSION void sigmoid_backward(int64_t n, const float* y, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

TAIHU_MULTIVERSION void tanh_forward(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_tanh(x[i]);
}

TAIHU_MULTIVERSION void tanh_backward(int64_t n, const float* y, const float* dy, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

TAIHU_MULTIVERSION void softmax_forward(int64_t outer, int64_t channels, int64_t inner, const float* x, float* y,
                     float* scratch) {
  const int64_t plane = channels * inner;
  if (inner == 1 && channels < 64) {
    // Short rows (10 classes): vector loops over one row would be mostly
    // remainder, so shift every row by its maximum, then exponentiate the
    // whole array in one long loop.
    for (int64_t o = 0; o < outer; ++o) {
      const float top = max(channels, x + o * plane);
      for (int64_t c = 0; c < channels; ++c) y[o * plane + c] = x[o * plane + c] - top;
    }
    exp(outer * plane, y, y);
    for (int64_t o = 0; o < outer; ++o)
      scale(channels, 1.0f / sum(channels, y + o * plane), y + o * plane, y + o * plane);
    return;
  }
  if (inner == 1) {
    // Long contiguous rows: vectorise along the channels.
    for (int64_t o = 0; o < outer; ++o) {
      const float* in = x + o * plane;
      float* out = y + o * plane;
      const float top = max(channels, in);
      for (int64_t c = 0; c < channels; ++c) out[c] = fast_exp(in[c] - top);
      const float inv = 1.0f / sum(channels, out);
      for (int64_t c = 0; c < channels; ++c) out[c] *= inv;
    }
    return;
  }
  // Spatial softmax: vectorise along the inner positions, one channel row at a
  // time; scratch holds first the running maximum, then the running sum.
  for (int64_t o = 0; o < outer; ++o) {
    const float* in = x + o * plane;
    float* out = y + o * plane;
    std::copy_n(in, inner, scratch);
    for (int64_t c = 1; c < channels; ++c) {
      const float* row = in + c * inner;
      for (int64_t i = 0; i < inner; ++i) scratch[i] = row[i] > scratch[i] ? row[i] : scratch[i];
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float* row = in + c * inner;
      float* dst = out + c * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] = fast_exp(row[i] - scratch[i]);
    }
    std::copy_n(out, inner, scratch);
    for (int64_t c = 1; c < channels; ++c) add(inner, scratch, out + c * inner, scratch);
    for (int64_t i = 0; i < inner; ++i) scratch[i] = 1.0f / scratch[i];
    for (int64_t c = 0; c < channels; ++c) mul(inner, out + c * inner, scratch, out + c * inner);
  }
}

TAIHU_MULTIVERSION void softmax_backward(int64_t outer, int64_t channels, int64_t inner, const float* y, const float* dy,
                      float* dx, float* scratch) {
  const int64_t plane = channels * inner;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const float* p = y + o * plane;
      const float* g = dy + o * plane;
      float* out = dx + o * plane;
      float partial[lanes] = {};
      const int64_t blocked = channels / lanes * lanes;
      for (int64_t c = 0; c < blocked; c += lanes)
        for (int64_t j = 0; j < lanes; ++j) partial[j] += p[c + j] * g[c + j];
      float dot = 0.0f;
      for (int64_t c = blocked; c < channels; ++c) dot += p[c] * g[c];
      for (int64_t j = 0; j < lanes; ++j) dot += partial[j];
      for (int64_t c = 0; c < channels; ++c) out[c] = p[c] * (g[c] - dot);
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    const float* p = y + o * plane;
    const float* g = dy + o * plane;
    float* out = dx + o * plane;
    std::fill_n(scratch, inner, 0.0f);
    for (int64_t c = 0; c < channels; ++c) {
      const float* pr = p + c * inner;
      const float* gr = g + c * inner;
      for (int64_t i = 0; i < inner; ++i) scratch[i] += pr[i] * gr[i];
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float* pr = p + c * inner;
      const float* gr = g + c * inner;
      float* dr = out + c * inner;
      for (int64_t i = 0; i < inner; ++i) dr[i] = pr[i] * (gr[i] - scratch[i]);
    }
  }
}

}  // namespace taihu::kernels
