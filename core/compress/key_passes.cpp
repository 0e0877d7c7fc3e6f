#include "core/compress/select.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/compress/scan_kernel.hpp"

// The read passes over a gradient that the selectors (select.cpp) are built
// from: counting the keys above one threshold or several, collecting them,
// the statistics of x. Vectorised where the CPU allows; a count is exact, and
// sums and maxima follow the AVX2 lanes (scan_kernel.hpp), so every pass gives
// the same bits on every CPU.

namespace taihu::compress {
namespace detail {
namespace {

#if TAIHU_X86_KERNELS
// #{key > t}: compare and subtract the all-ones mask (= add 1) per lane;
// returns where it stopped.
template <Key K>
TAIHU_TARGET_AVX2 std::size_t count_blocks_avx2(const float* x, std::size_t n, float t, std::size_t& count) {
  std::size_t i = 0;
  const __m256 tv = _mm256_set1_ps(t);
  // Lane counters are 32-bit: flushed every 2^28 entries.
  while (i + 32 <= n) {
    const std::size_t end = std::min(n - (n - i) % 32, i + (std::size_t{1} << 28));
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
    for (; i + 32 <= end; i += 32) {
      c0 = _mm256_sub_epi32(c0, _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i)), tv, _CMP_GT_OQ)));
      c1 = _mm256_sub_epi32(c1,
                            _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i + 8)), tv, _CMP_GT_OQ)));
      c2 = _mm256_sub_epi32(c2,
                            _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i + 16)), tv, _CMP_GT_OQ)));
      c3 = _mm256_sub_epi32(c3,
                            _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i + 24)), tv, _CMP_GT_OQ)));
    }
    count += horizontal_sum(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)));
  }
  return i;
}

// Several thresholds (at most 8) in one pass.
template <Key K>
TAIHU_TARGET_AVX2 std::size_t count_multi_blocks_avx2(const float* x, std::size_t n, const float* t, int m,
                                                      std::size_t* counts) {
  constexpr int max_m = 8;
  std::size_t i = 0;
  __m256 tv[max_m];
  for (int j = 0; j < m; ++j) tv[j] = _mm256_set1_ps(t[j]);
  while (i + 8 <= n) {
    const std::size_t end = std::min(n - (n - i) % 8, i + (std::size_t{1} << 28));
    __m256i c[max_m];
    for (int j = 0; j < m; ++j) c[j] = _mm256_setzero_si256();
    for (; i + 8 <= end; i += 8) {
      const __m256 k = key_of<K>(_mm256_loadu_ps(x + i));
      for (int j = 0; j < m; ++j)
        c[j] = _mm256_sub_epi32(c[j], _mm256_castps_si256(_mm256_cmp_ps(k, tv[j], _CMP_GT_OQ)));
    }
    for (int j = 0; j < m; ++j) counts[j] += horizontal_sum(c[j]);
  }
  return i;
}
#endif

// Counts are exact, so the generic loops need not follow the AVX2 lanes.
template <Key K>
std::size_t count_kernel(const float* x, std::size_t n, float t) {
  std::size_t i = 0, count = 0;
#if TAIHU_X86_KERNELS
  if (cpu::use_avx2()) i = count_blocks_avx2<K>(x, n, t, count);
#endif
  for (; i < n; ++i) count += key_of<K>(x[i]) > t;
  return count;
}

// Several thresholds in one pass (trimmed top-k's rounds).
template <Key K>
void count_multi_kernel(const float* x, std::size_t n, const float* t, int m, std::size_t* counts) {
  for (int j = 0; j < m; ++j) counts[j] = 0;
  std::size_t i = 0;
#if TAIHU_X86_KERNELS
  if (cpu::use_avx2()) i = count_multi_blocks_avx2<K>(x, n, t, m, counts);
#endif
  for (; i < n; ++i) {
    const float k = key_of<K>(x[i]);
    for (int j = 0; j < m; ++j) counts[j] += k > t[j];
  }
}

}  // namespace

void count_above_each(std::span<const float> x, Key key, const float* t, int m, std::size_t* counts) {
  dispatch(key, [&](auto k) { count_multi_kernel<decltype(k)::value>(x.data(), x.size(), t, m, counts); });
}

std::size_t collect_above(std::span<const float> x, Key key, float t, Selection& out, std::size_t cap,
                          KeyStats* stats) {
  out.index.resize(cap);
  out.value.resize(cap);
  double sum = 0;
  float mx = neg_inf;
  const std::size_t count = dispatch(key, [&](auto k) {
    constexpr Key K = decltype(k)::value;
    if (stats != nullptr)
      return scan_kernel<K, true>(x.data(), x.size(), t, out.index.data(), out.value.data(), cap, &sum, &mx);
    return scan_kernel<K, false>(x.data(), x.size(), t, out.index.data(), out.value.data(), cap, nullptr, nullptr);
  });
  out.index.resize(std::min(count, cap));
  out.value.resize(std::min(count, cap));
  if (stats != nullptr) {
    stats->mean_abs = x.empty() ? 0.0 : sum / static_cast<double>(x.size());
    stats->max_key = mx;
  }
  return count;
}

}  // namespace detail

using namespace detail;

KeyStats key_stats(std::span<const float> x, Key key) {
  KeyStats stats;
  Selection none;
  collect_above(x, key, std::numeric_limits<float>::infinity(), none, 0, &stats);
  return stats;
}

std::size_t count_above(std::span<const float> x, Key key, float t) {
  return dispatch(key, [&](auto k) { return count_kernel<decltype(k)::value>(x.data(), x.size(), t); });
}

float ratio_threshold(const KeyStats& stats, double ratio) {
  return static_cast<float>(stats.mean_abs + ratio * (static_cast<double>(stats.max_key) - stats.mean_abs));
}

void filter_above(std::span<const float> x, Key key, float t, Selection& out) {
  collect_above(x, key, t, out, count_above(x, key, t), nullptr);
}

namespace {

#if TAIHU_X86_KERNELS
TAIHU_TARGET_AVX2 std::size_t sum_blocks_avx2(std::span<const float> x, double& total) {
  std::size_t i = 0;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (; i + 32 <= x.size(); i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x.data() + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x.data() + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_loadu_ps(x.data() + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_loadu_ps(x.data() + i + 24));
  }
  total = horizontal_sum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  return i;
}

TAIHU_TARGET_AVX2 std::size_t max_abs_blocks_avx2(std::span<const float> x, float& m) {
  std::size_t i = 0;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m0 = _mm256_setzero_ps(), m1 = m0, m2 = m0, m3 = m0;
  for (; i + 32 <= x.size(); i += 32) {
    m0 = _mm256_max_ps(m0, _mm256_andnot_ps(sign, _mm256_loadu_ps(x.data() + i)));
    m1 = _mm256_max_ps(m1, _mm256_andnot_ps(sign, _mm256_loadu_ps(x.data() + i + 8)));
    m2 = _mm256_max_ps(m2, _mm256_andnot_ps(sign, _mm256_loadu_ps(x.data() + i + 16)));
    m3 = _mm256_max_ps(m3, _mm256_andnot_ps(sign, _mm256_loadu_ps(x.data() + i + 24)));
  }
  m = horizontal_max(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  return i;
}
#endif

// The generic blocks follow the AVX2 lanes (scan_kernel.hpp), for the same bits.
std::size_t sum_blocks_generic(std::span<const float> x, double& total) {
  std::size_t i = 0;
  float s[32] = {};
  for (; i + 32 <= x.size(); i += 32)
    for (int j = 0; j < 32; ++j) s[j] += x[i + static_cast<std::size_t>(j)];
  total = horizontal_sum(s);
  return i;
}

std::size_t max_abs_blocks_generic(std::span<const float> x, float& m) {
  std::size_t i = 0;
  // Lanes m0 … m3 of 8; horizontal_max takes max(m0, m1) and max(m2, m3) as its two halves.
  float lanes[32] = {};
  for (; i + 32 <= x.size(); i += 32)
    for (int j = 0; j < 32; ++j) lanes[j] = max_ps(lanes[j], std::fabs(x[i + static_cast<std::size_t>(j)]));
  float halves[16];
  for (int l = 0; l < 8; ++l) {
    halves[l] = max_ps(lanes[l], lanes[8 + l]);
    halves[8 + l] = max_ps(lanes[16 + l], lanes[24 + l]);
  }
  m = horizontal_max(halves);
  return i;
}

}  // namespace

float sum_pass(std::span<const float> x) {
  double blocks = 0;
#if TAIHU_X86_KERNELS
  std::size_t i = cpu::use_avx2() ? sum_blocks_avx2(x, blocks) : sum_blocks_generic(x, blocks);
#else
  std::size_t i = sum_blocks_generic(x, blocks);
#endif
  auto total = static_cast<float>(blocks);
  for (; i < x.size(); ++i) total += x[i];
  return total;
}

float max_abs_pass(std::span<const float> x) {
  float m = 0;
#if TAIHU_X86_KERNELS
  std::size_t i = cpu::use_avx2() ? max_abs_blocks_avx2(x, m) : max_abs_blocks_generic(x, m);
#else
  std::size_t i = max_abs_blocks_generic(x, m);
#endif
  for (; i < x.size(); ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

std::size_t count_for_density(std::size_t n, double density) {
  if (density <= 0) return 0;
  const double k = std::ceil(density * static_cast<double>(n) - 1e-9);
  return std::min(n, static_cast<std::size_t>(std::max(0.0, k)));
}

}  // namespace taihu::compress
