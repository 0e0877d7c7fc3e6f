#pragma once
// Internal: the vectorised single-pass kernels shared by the selectors and
// the compressor's fused accumulate-and-select pass.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/common/cpu_features.hpp"
#include "core/common/multiversion.hpp"
#include "core/compress/select.hpp"

#if TAIHU_X86_KERNELS
#include <immintrin.h>
#endif

namespace taihu::compress::detail {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

template <Key K>
inline float key_of(float v) {
  if constexpr (K == Key::magnitude) return std::fabs(v);
  if constexpr (K == Key::positive) return v;
  return -v;
}

// The AVX2 kernels run 4 × 8 lanes; the generic ones compute the same sums
// and maxima lane by lane, in the same order, so that the statistics (and so
// every threshold and selection) are the same bits on every CPU.
inline float max_ps(float a, float b) { return a > b ? a : b; }  // MAXPS: the second operand on ties and NaN
// MAXPS over 8 + 8 lanes, then the halving of horizontal_max below.
inline float horizontal_max(const float (&m)[16]) {
  float r[8], q[4];
  for (int l = 0; l < 8; ++l) r[l] = max_ps(m[l], m[8 + l]);
  for (int l = 0; l < 4; ++l) q[l] = max_ps(r[l], r[4 + l]);
  return max_ps(max_ps(q[0], q[2]), max_ps(q[1], q[3]));
}
// Lanes (s0 + s1) + (s2 + s3) of 4 × 8 float sums, then into double in lane order.
inline double horizontal_sum(const float (&s)[32]) {
  double total = 0;
  for (int l = 0; l < 8; ++l) total += (s[l] + s[8 + l]) + (s[16 + l] + s[24 + l]);
  return total;
}

#if TAIHU_X86_KERNELS
template <Key K>
TAIHU_TARGET_AVX2 inline __m256 key_of(__m256 v) {
  if constexpr (K == Key::magnitude) return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
  if constexpr (K == Key::positive) return v;
  return _mm256_xor_ps(_mm256_set1_ps(-0.0f), v);
}
TAIHU_TARGET_AVX2 inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}
TAIHU_TARGET_AVX2 inline double horizontal_sum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double s = 0;
  for (float f : lanes) s += f;
  return s;
}
TAIHU_TARGET_AVX2 inline std::size_t horizontal_sum(__m256i v) {
  alignas(32) std::uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  std::size_t s = 0;
  for (auto c : lanes) s += c;
  return s;
}
#endif

// Float lane sums run over at most 2^14 blocks of 32, then go into double:
// the mean stays accurate over 1e9 entries.
inline std::size_t lane_sum_end(std::size_t i, std::size_t n) {
  return std::min(n - (n - i) % 32, i + (std::size_t{32} << 14));
}

#if TAIHU_X86_KERNELS
// The blocks of 32 of scan_kernel, 8 lanes at a time; returns where it stopped.
template <Key K, bool Stats, class Produce, class Emit>
TAIHU_TARGET_AVX2 std::size_t scan_blocks_avx2(std::size_t n, float t, double& sum, float& mx, Produce& produce,
                                               Emit& emit) {
  std::size_t i = 0;
  const __m256 tv = _mm256_set1_ps(t);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m0 = _mm256_set1_ps(neg_inf), m1 = m0;
  while (i + 32 <= n) {
    const std::size_t end = lane_sum_end(i, n);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (; i + 32 <= end; i += 32) {
      const __m256 v0 = produce(i), v1 = produce(i + 8);
      const __m256 v2 = produce(i + 16), v3 = produce(i + 24);
      const __m256 k0 = key_of<K>(v0), k1 = key_of<K>(v1), k2 = key_of<K>(v2), k3 = key_of<K>(v3);
      if constexpr (Stats) {
        s0 = _mm256_add_ps(s0, _mm256_andnot_ps(sign, v0));
        s1 = _mm256_add_ps(s1, _mm256_andnot_ps(sign, v1));
        s2 = _mm256_add_ps(s2, _mm256_andnot_ps(sign, v2));
        s3 = _mm256_add_ps(s3, _mm256_andnot_ps(sign, v3));
        m0 = _mm256_max_ps(m0, _mm256_max_ps(k0, k1));
        m1 = _mm256_max_ps(m1, _mm256_max_ps(k2, k3));
      }
      const __m256 g0 = _mm256_cmp_ps(k0, tv, _CMP_GT_OQ), g1 = _mm256_cmp_ps(k1, tv, _CMP_GT_OQ);
      const __m256 g2 = _mm256_cmp_ps(k2, tv, _CMP_GT_OQ), g3 = _mm256_cmp_ps(k3, tv, _CMP_GT_OQ);
      const __m256 any = _mm256_or_ps(_mm256_or_ps(g0, g1), _mm256_or_ps(g2, g3));
      if (_mm256_testz_ps(any, any)) continue;
      std::uint32_t bits = static_cast<std::uint32_t>(_mm256_movemask_ps(g0)) |
                           static_cast<std::uint32_t>(_mm256_movemask_ps(g1)) << 8 |
                           static_cast<std::uint32_t>(_mm256_movemask_ps(g2)) << 16 |
                           static_cast<std::uint32_t>(_mm256_movemask_ps(g3)) << 24;
      while (bits != 0) {
        emit(i + static_cast<std::size_t>(std::countr_zero(bits)));
        bits &= bits - 1;
      }
    }
    if constexpr (Stats) sum += horizontal_sum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  }
  if constexpr (Stats) mx = horizontal_max(_mm256_max_ps(m0, m1));
  return i;
}
#endif

// The same blocks computed lane by lane from produce1.
template <Key K, bool Stats, class Produce1, class Emit>
std::size_t scan_blocks_generic(std::size_t n, float t, double& sum, float& mx, Produce1& produce1, Emit& emit) {
  std::size_t i = 0;
  float m[16];
  std::fill(std::begin(m), std::end(m), neg_inf);
  while (i + 32 <= n) {
    const std::size_t end = lane_sum_end(i, n);
    float s[32] = {};
    for (; i + 32 <= end; i += 32) {
      float v[32], k[32];
      for (int j = 0; j < 32; ++j) {
        v[j] = produce1(i + static_cast<std::size_t>(j));
        k[j] = key_of<K>(v[j]);
      }
      if constexpr (Stats) {
        for (int j = 0; j < 32; ++j) s[j] += std::fabs(v[j]);
        for (int l = 0; l < 8; ++l) {
          m[l] = max_ps(m[l], max_ps(k[l], k[8 + l]));
          m[8 + l] = max_ps(m[8 + l], max_ps(k[16 + l], k[24 + l]));
        }
      }
      for (int j = 0; j < 32; ++j)
        if (k[j] > t) emit(i + static_cast<std::size_t>(j));
    }
    if constexpr (Stats) sum += horizontal_sum(s);
  }
  if constexpr (Stats) mx = horizontal_max(m);
  return i;
}

// One pass: returns #{key > t}; writes the first `cap` such (index, value)
// pairs; with Stats also sum(|x|) and max(key). The hits are rare, so the
// AVX2 loop tests 32 entries at once and only walks the bits of a non-zero
// mask. The entries come from `produce(i)` (8 floats at i, an AVX2 function)
// and `produce1(i)` (one), which may compute and store them (fused
// accumulation); emitted values are then read back from `x`, which must hold
// them once produced.
template <Key K, bool Stats, class Produce, class Produce1>
std::size_t scan_kernel(const float* x, std::size_t n, float t, std::uint32_t* idx, float* val, std::size_t cap,
                        double* sum_abs, float* max_key, Produce&& produce, Produce1&& produce1) {
  std::size_t count = 0;
  double sum = 0;
  float mx = neg_inf;
  auto emit = [&](std::size_t at) {
    if (count < cap) {
      idx[count] = static_cast<std::uint32_t>(at);
      val[count] = x[at];
    }
    ++count;
  };
#if TAIHU_X86_KERNELS
  std::size_t i = cpu::use_avx2() ? scan_blocks_avx2<K, Stats>(n, t, sum, mx, produce, emit)
                                  : scan_blocks_generic<K, Stats>(n, t, sum, mx, produce1, emit);
#else
  std::size_t i = scan_blocks_generic<K, Stats>(n, t, sum, mx, produce1, emit);
#endif
  for (; i < n; ++i) {
    const float xi = produce1(i);
    const float k = key_of<K>(xi);
    if constexpr (Stats) {
      sum += std::fabs(xi);
      mx = std::max(mx, k);
    }
    if (k > t) emit(i);
  }
  if constexpr (Stats) {
    *sum_abs = sum;
    *max_key = mx;
  }
  return count;
}

// The 8 floats at x + i, for scan_kernel's AVX2 loop.
struct Load8 {
  const float* x;
#if TAIHU_X86_KERNELS
  TAIHU_TARGET_AVX2 __m256 operator()(std::size_t i) const { return _mm256_loadu_ps(x + i); }
#else
  int operator()(std::size_t) const { return 0; }
#endif
};

template <Key K, bool Stats>
std::size_t scan_kernel(const float* x, std::size_t n, float t, std::uint32_t* idx, float* val, std::size_t cap,
                        double* sum_abs, float* max_key) {
  return scan_kernel<K, Stats>(x, n, t, idx, val, cap, sum_abs, max_key, Load8{x},
                               [x](std::size_t i) { return x[i]; });
}

template <class F>
decltype(auto) dispatch(Key key, F&& f) {
  switch (key) {
    case Key::magnitude: return f(std::integral_constant<Key, Key::magnitude>{});
    case Key::positive: return f(std::integral_constant<Key, Key::positive>{});
    default: return f(std::integral_constant<Key, Key::negative>{});
  }
}

inline float key_value(float v, Key key) {
  return dispatch(key, [&](auto k) { return key_of<decltype(k)::value>(v); });
}

// The passes of key_passes.cpp that the selectors use beside select.hpp's:
// #{i : key_i > t[j]} for m <= 8 thresholds, in one pass;
void count_above_each(std::span<const float> x, Key key, const float* t, int m, std::size_t* counts);
// every i with key_i > t into out, the first `cap` of them (out holds min(count, cap));
// returns how many there were in all, and with `stats`, x's statistics from the same pass.
std::size_t collect_above(std::span<const float> x, Key key, float t, Selection& out, std::size_t cap,
                          KeyStats* stats);

// Targets for the sampled estimate of t_lo: about `keep` entries above it,
// from a strided sample in which ~64 exceed it (relative error ~1/8).
inline std::size_t prescan_keep(PrescanFor what, std::size_t k) { return (what == PrescanFor::exact ? 3 : 5) * k; }

// A key value that roughly `keep` of n entries exceed, from a strided sample
// of value(i); false when n is too small for sampling to pay.
template <class Value>
bool sample_threshold_of(std::size_t n, std::size_t keep, Key key, std::vector<float>& keys, float& t, Value&& value) {
  constexpr double hits = 64;
  const double wanted = hits * static_cast<double>(n) / static_cast<double>(std::max<std::size_t>(keep, 1));
  if (n < 65536 || wanted * 8 > static_cast<double>(n)) return false;
  const std::size_t stride = n / static_cast<std::size_t>(wanted);
  keys.clear();
  for (std::size_t i = stride / 2; i < n; i += stride) keys.push_back(key_value(value(i), key));
  const auto h = static_cast<std::ptrdiff_t>(hits);
  std::nth_element(keys.begin(), keys.begin() + h, keys.end(), std::greater<float>());
  t = keys[static_cast<std::size_t>(h)];
  return std::isfinite(t);
}

}  // namespace taihu::compress::detail
