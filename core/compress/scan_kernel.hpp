#pragma once
// Internal: the vectorised single-pass kernels shared by the selectors and
// the compressor's fused accumulate-and-select pass.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/compress/select.hpp"

namespace taihu::compress::detail {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

template <Key K>
inline float key_of(float v) {
  if constexpr (K == Key::magnitude) return std::fabs(v);
  if constexpr (K == Key::positive) return v;
  return -v;
}

#if defined(__AVX2__)
template <Key K>
inline __m256 key_of(__m256 v) {
  if constexpr (K == Key::magnitude) return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
  if constexpr (K == Key::positive) return v;
  return _mm256_xor_ps(_mm256_set1_ps(-0.0f), v);
}
inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}
inline double horizontal_sum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double s = 0;
  for (float f : lanes) s += f;
  return s;
}
inline std::size_t horizontal_sum(__m256i v) {
  alignas(32) std::uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  std::size_t s = 0;
  for (auto c : lanes) s += c;
  return s;
}
#endif

// One pass: returns #{key > t}; writes the first `cap` such (index, value)
// pairs; with Stats also sum(|x|) and max(key). The hits are rare, so the
// loop tests 32 entries at once and only walks the bits of a non-zero mask.
// The entries come from `produce(i)` (8 floats at i) and `produce1(i)` (one),
// which may compute and store them (fused accumulation); emitted values are
// then read back from `x`, which must hold them once produced.
template <Key K, bool Stats, class Produce, class Produce1>
std::size_t scan_kernel(const float* x, std::size_t n, float t, std::uint32_t* idx, float* val, std::size_t cap,
                        double* sum_abs, float* max_key, Produce&& produce, Produce1&& produce1) {
  std::size_t i = 0, count = 0;
  double sum = 0;
  float mx = neg_inf;
  auto emit = [&](std::size_t at) {
    if (count < cap) {
      idx[count] = static_cast<std::uint32_t>(at);
      val[count] = x[at];
    }
    ++count;
  };
#if defined(__AVX2__)
  const __m256 tv = _mm256_set1_ps(t);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m0 = _mm256_set1_ps(neg_inf), m1 = m0;
  while (i + 32 <= n) {
    // Float lane sums over at most 2^14 blocks, then into double: mean stays accurate on 1e9 entries.
    const std::size_t end = std::min(n - (n - i) % 32, i + (std::size_t{32} << 14));
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
    if constexpr (Stats)
      sum += horizontal_sum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  }
  if constexpr (Stats) mx = horizontal_max(_mm256_max_ps(m0, m1));
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

template <Key K, bool Stats>
std::size_t scan_kernel(const float* x, std::size_t n, float t, std::uint32_t* idx, float* val, std::size_t cap,
                        double* sum_abs, float* max_key) {
  return scan_kernel<K, Stats>(
      x, n, t, idx, val, cap, sum_abs, max_key,
#if defined(__AVX2__)
      [x](std::size_t i) { return _mm256_loadu_ps(x + i); },
#else
      [](std::size_t) { return 0; },
#endif
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
  for (std::size_t i = stride / 2; i < n; i += stride) {
    const float v = value(i);
    keys.push_back(key == Key::magnitude ? std::fabs(v) : key == Key::positive ? v : -v);
  }
  const auto h = static_cast<std::ptrdiff_t>(hits);
  std::nth_element(keys.begin(), keys.begin() + h, keys.end(), std::greater<float>());
  t = keys[static_cast<std::size_t>(h)];
  return std::isfinite(t);
}

}  // namespace taihu::compress::detail
