#pragma once
// Elementwise and softmax kernels on contiguous float arrays. They are plain
// loops that the compiler vectorises, built for AVX2 and for the baseline
// (core/common/multiversion.hpp); transcendental
// functions use a polynomial exp that vectorises where std::exp would not.
//
// Unless a comment says otherwise, an output may be the same array as an input
// (in-place use) but must not partially overlap one.

#include <bit>
#include <cmath>
#include <cstdint>

namespace taihu::kernels {

namespace detail {
// Always a fused multiply-add, correctly rounded on every CPU: an instruction
// in the AVX2 version of a loop (and with -march=native), a call to libm's
// fmaf in the baseline version. Either way the same bits.
inline float madd(float a, float b, float c) { return std::fma(a, b, c); }
}  // namespace detail

// exp(x) within about 2 ulp for every float x (overflows to inf above ~88.72,
// flushes to 0 below ~-103.9, propagates NaN). Inline so that loops calling it
// vectorise: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, a degree-7
// polynomial for exp(r), and 2^n built from the exponent bits in two halves so
// that both ends of the range stay exact.
inline float fast_exp(float x) {
  constexpr float log2e = 1.44269504088896341f;
  constexpr float ln2_hi = 0.693359375f;
  constexpr float ln2_lo = -2.12194440e-4f;
  constexpr float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  const float shifted = detail::madd(x, log2e, round_magic);
  const float n = shifted - round_magic;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(round_magic);
  float r = detail::madd(n, -ln2_hi, x);
  r = detail::madd(n, -ln2_lo, r);
  float p = 1.9875691500e-4f;
  p = detail::madd(p, r, 1.3981999507e-3f);
  p = detail::madd(p, r, 8.3334519073e-3f);
  p = detail::madd(p, r, 4.1665795894e-2f);
  p = detail::madd(p, r, 1.6666665459e-1f);
  p = detail::madd(p, r, 5.0000001201e-1f);
  p = detail::madd(p, r * r, r + 1.0f);
  const int32_t half = ni >> 1;
  const float scale_a = std::bit_cast<float>((half + 127) << 23);
  const float scale_b = std::bit_cast<float>((ni - half + 127) << 23);
  return p * scale_a * scale_b;
}

// 1 / (1 + exp(-x)), without overflow for large |x|.
inline float fast_sigmoid(float x) {
  const float e = fast_exp(-std::fabs(x));
  const float numerator = x >= 0.0f ? 1.0f : e;
  return numerator / (1.0f + e);
}

// tanh(x): an odd Taylor polynomial near 0 (where 1 - exp(-2|x|) would cancel),
// (1 - e) / (1 + e) with e = exp(-2|x|) elsewhere.
inline float fast_tanh(float x) {
  const float a = std::fabs(x);
  const float e = fast_exp(-2.0f * a);
  const float far = (1.0f - e) / (1.0f + e);
  const float x2 = a * a;
  float p = 62.0f / 2835.0f;
  p = detail::madd(p, x2, -17.0f / 315.0f);
  p = detail::madd(p, x2, 2.0f / 15.0f);
  p = detail::madd(p, x2, -1.0f / 3.0f);
  const float near = detail::madd(p * x2, a, a);
  // near and far agree within a factor of 2, so far + (near - far) == near.
  // Blend and set the sign with bit masks: a plain ?: between two computed
  // values keeps GCC from vectorising the calling loop.
  const uint32_t use_near = a < 0.125f ? ~0u : 0u;
  const uint32_t t = (std::bit_cast<uint32_t>(near) & use_near) | (std::bit_cast<uint32_t>(far) & ~use_near);
  return std::bit_cast<float>(t | (std::bit_cast<uint32_t>(x) & 0x80000000u));
}

// y = a + b, y = a - b, y = a * b.
void add(int64_t n, const float* a, const float* b, float* y);
void sub(int64_t n, const float* a, const float* b, float* y);
void mul(int64_t n, const float* a, const float* b, float* y);
// y = alpha * x.
void scale(int64_t n, float alpha, const float* x, float* y);
// y += alpha * x.
void axpy(int64_t n, float alpha, const float* x, float* y);
// y = alpha * x + beta * y.
void axpby(int64_t n, float alpha, const float* x, float beta, float* y);
// y = exp(x).
void exp(int64_t n, const float* x, float* y);

// Sum and maximum (-inf for n == 0), with independent partial results so the
// reductions vectorise.
float sum(int64_t n, const float* x);
float max(int64_t n, const float* x);

// One element of relu_forward and relu_backward: the loops below and the
// fused layers (core/net/fusion.hpp) share these expressions, so both give
// the same bits. Selecting between constants (not between computed values)
// lets the compiler turn the branch into a blend. NaN passes through (x < 0
// is false), so a diverging run is not masked as a healthy one.
inline float relu_value(float x, float slope) {
  if (slope == 0.0f) return x < 0.0f ? 0.0f : x;
  const float pos = x > 0.0f ? x : 0.0f;
  const float neg = x > 0.0f ? 0.0f : x;
  return pos + slope * neg;
}
inline float relu_gradient(float sign, float dy, float slope) {
  const float pass = sign > 0.0f ? dy : 0.0f;
  const float leak = sign > 0.0f ? 0.0f : dy;
  return pass + slope * leak;
}

// y = x > 0 ? x : slope * x.
void relu_forward(int64_t n, float slope, const float* x, float* y);
// dx = dy * (sign > 0 ? 1 : slope). `sign` is the ReLU's input, or its output
// when slope >= 0 (they are positive at the same places), which is what makes
// in-place backward work.
void relu_backward(int64_t n, float slope, const float* sign, const float* dy, float* dx);
// y = sigmoid(x); dx = dy * y * (1 - y).
void sigmoid_forward(int64_t n, const float* x, float* y);
void sigmoid_backward(int64_t n, const float* y, const float* dy, float* dx);
// y = tanh(x); dx = dy * (1 - y^2).
void tanh_forward(int64_t n, const float* x, float* y);
void tanh_backward(int64_t n, const float* y, const float* dy, float* dx);

// Softmax over the middle extent of an (outer, channels, inner) array:
// y[o, :, i] = softmax(x[o, :, i]), computed as exp(x - max) / sum. `scratch`
// holds `inner` floats. y may be x.
void softmax_forward(int64_t outer, int64_t channels, int64_t inner, const float* x, float* y,
                     float* scratch);
// dx = y * (dy - sum_c(dy * y)) along the channels. dx may be dy; not y.
void softmax_backward(int64_t outer, int64_t channels, int64_t inner, const float* y, const float* dy,
                      float* dx, float* scratch);

}  // namespace taihu::kernels
