#include "core/compress/select.hpp"

#include "core/compress/scan_kernel.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace taihu::compress {
namespace {

using namespace detail;

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
      c1 = _mm256_sub_epi32(c1, _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i + 8)), tv, _CMP_GT_OQ)));
      c2 = _mm256_sub_epi32(c2, _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i + 16)), tv, _CMP_GT_OQ)));
      c3 = _mm256_sub_epi32(c3, _mm256_castps_si256(_mm256_cmp_ps(key_of<K>(_mm256_loadu_ps(x + i + 24)), tv, _CMP_GT_OQ)));
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
      for (int j = 0; j < m; ++j) c[j] = _mm256_sub_epi32(c[j], _mm256_castps_si256(_mm256_cmp_ps(k, tv[j], _CMP_GT_OQ)));
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

float key_value(float v, Key key) {
  return dispatch(key, [&](auto k) { return key_of<decltype(k)::value>(v); });
}

// Scan into out (capacity cap), resizing out to min(count, cap).
std::size_t scan(std::span<const float> x, Key key, float t, Selection& out, std::size_t cap, KeyStats* stats) {
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

void select_all(std::span<const float> x, Selection& out) {
  out.index.resize(x.size());
  out.value.assign(x.begin(), x.end());
  for (std::size_t i = 0; i < x.size(); ++i) out.index[i] = static_cast<std::uint32_t>(i);
}

// The k best of `from` (index ascending) by (key desc, index asc), into out.
void topk_of(const Selection& from, std::size_t k, Key key, Selection& out, SelectScratch& scratch) {
  const std::size_t m = from.size();
  if (k >= m) {
    if (&from != &out) out = from;
    return;
  }
  auto& keys = scratch.keys;
  auto& order = scratch.order;
  keys.resize(m);
  order.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    keys[i] = key_value(from.value[i], key);
    order[i] = static_cast<std::uint32_t>(i);
  }
  // Positions are index-ascending, so comparing positions compares indices.
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return keys[a] > keys[b] || (keys[a] == keys[b] && a < b); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  // from may alias out: positions ascend, so compacting in place is safe.
  Selection& dst = out;
  if (&from != &out) {
    dst.index.resize(k);
    dst.value.resize(k);
  }
  for (std::size_t j = 0; j < k; ++j) {
    dst.index[j] = from.index[order[j]];
    dst.value[j] = from.value[order[j]];
  }
  dst.index.resize(k);
  dst.value.resize(k);
}

bool sample_threshold(std::span<const float> x, std::size_t keep, Key key, std::vector<float>& keys, float& t) {
  return sample_threshold_of(x.size(), keep, key, keys, t, [&](std::size_t i) { return x[i]; });
}

// The corrected bisection over ratios; count(t) may report any value >= 2k
// for a threshold it only knows to keep "too many".
template <class Count>
bool bisect(const KeyStats& stats, std::size_t k, double eps, Count&& count, float& accepted, int& probes) {
  double l = 0.0, r = 1.0;
  while (r - l > eps) {
    const double ratio = (l + r) / 2;
    const float t = ratio_threshold(stats, ratio);
    const std::size_t nnz = count(t);
    ++probes;
    if (nnz >= k && nnz < 2 * k) {
      accepted = t;
      return true;
    }
    if (nnz < k)
      r = ratio;  // too few: lower the threshold
    else
      l = ratio;  // too many: raise it
  }
  return false;
}

bool trivial(std::span<const float> x, std::size_t k, Selection& out) {
  if (k == 0) {
    out.clear();
    return true;
  }
  if (k >= x.size()) {
    select_all(x, out);
    return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------- primitives

KeyStats key_stats(std::span<const float> x, Key key) {
  KeyStats stats;
  Selection none;
  scan(x, key, std::numeric_limits<float>::infinity(), none, 0, &stats);
  return stats;
}

std::size_t count_above(std::span<const float> x, Key key, float t) {
  return dispatch(key, [&](auto k) { return count_kernel<decltype(k)::value>(x.data(), x.size(), t); });
}

float ratio_threshold(const KeyStats& stats, double ratio) {
  return static_cast<float>(stats.mean_abs + ratio * (static_cast<double>(stats.max_key) - stats.mean_abs));
}

void filter_above(std::span<const float> x, Key key, float t, Selection& out) {
  scan(x, key, t, out, count_above(x, key, t), nullptr);
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

// ---------------------------------------------------------------- selectors

void exact_topk_reference(std::span<const float> x, std::size_t k, Key key, Selection& out) {
  if (trivial(x, k, out)) return;
  std::vector<float> keys(x.size());
  std::vector<std::uint32_t> order(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    keys[i] = key_value(x[i], key);
    order[i] = static_cast<std::uint32_t>(i);
  }
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return keys[a] > keys[b] || (keys[a] == keys[b] && a < b); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  out.index = order;
  out.value.resize(k);
  for (std::size_t j = 0; j < k; ++j) out.value[j] = x[order[j]];
}

std::size_t prescan_cap(PrescanFor what, std::size_t k) {
  return what == PrescanFor::exact ? 8 * k + 1024 : 12 * k + 1024;
}

void exact_topk(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
                SelectInfo* info, const Prescan* pre) {
  SelectInfo local;
  SelectInfo& st = info != nullptr ? *info : local;
  st = {};
  if (trivial(x, k, out)) return;
  float t_lo = 0;
  if (pre != nullptr || sample_threshold(x, prescan_keep(PrescanFor::exact, k), key, scratch.keys, t_lo)) {
    std::size_t cap = prescan_cap(PrescanFor::exact, k), count = 0;
    if (pre != nullptr) {
      t_lo = pre->t_lo;
      cap = pre->cap;
      count = pre->count;
    } else {
      count = scan(x, key, t_lo, scratch.candidates, cap, nullptr);
      st.full_passes = 1;
    }
    st.threshold = t_lo;
    if (count >= k && count <= cap) {
      topk_of(scratch.candidates, k, key, out, scratch);
      return;
    }
  }
  st.fallback = true;
  st.full_passes += 1;
  exact_topk_reference(x, k, key, out);
}

void trimmed_topk(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
                  SelectInfo* info) {
  SelectInfo local;
  SelectInfo& st = info != nullptr ? *info : local;
  st = {};
  if (trivial(x, k, out)) return;
  const KeyStats stats = key_stats(x, key);
  constexpr int rounds = 5;
  float t[rounds];
  std::size_t counts[rounds];
  for (int j = 0; j < rounds; ++j) t[j] = ratio_threshold(stats, 0.8 - 0.2 * j);
  dispatch(key, [&](auto kk) { count_multi_kernel<decltype(kk)::value>(x.data(), x.size(), t, rounds, counts); });
  st.full_passes = 3;
  int chosen = -1;
  for (int j = 0; j < rounds && chosen < 0; ++j) {
    ++st.probes;
    if (counts[j] >= k) chosen = j;
  }
  if (chosen < 0) {  // fewer than k above the mean: the survivors are everything
    st.fallback = true;
    exact_topk_reference(x, k, key, out);
    return;
  }
  st.threshold = t[chosen];
  scan(x, key, t[chosen], scratch.candidates, counts[chosen], nullptr);
  topk_of(scratch.candidates, k, key, out, scratch);
}

void threshold_search_plain(std::span<const float> x, std::size_t k, Key key, Selection& out, double eps,
                            SelectInfo* info) {
  SelectInfo local;
  SelectInfo& st = info != nullptr ? *info : local;
  st = {};
  if (trivial(x, k, out)) return;
  const KeyStats stats = key_stats(x, key);
  st.full_passes = 1;
  float t = 0;
  const bool ok = bisect(stats, k, eps, [&](float th) { ++st.full_passes; return count_above(x, key, th); }, t,
                         st.probes);
  if (!ok) {
    st.fallback = true;
    exact_topk_reference(x, k, key, out);
    return;
  }
  st.threshold = t;
  out.clear();
  filter_above(x, key, t, out);
  ++st.full_passes;
}

void threshold_search(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
                      double eps, SelectInfo* info, const Prescan* pre) {
  SelectInfo local;
  SelectInfo& st = info != nullptr ? *info : local;
  st = {};
  if (trivial(x, k, out)) return;
  float t_lo = 0;
  KeyStats stats;
  bool have_stats = false;
  if (pre != nullptr || sample_threshold(x, prescan_keep(PrescanFor::search, k), key, scratch.keys, t_lo)) {
    std::size_t cap = prescan_cap(PrescanFor::search, k), count_lo = 0;
    Selection& cand = scratch.candidates;
    if (pre != nullptr) {
      t_lo = pre->t_lo;
      cap = pre->cap;
      count_lo = pre->count;
      stats = pre->stats;
    } else {
      count_lo = scan(x, key, t_lo, cand, cap, &stats);
      st.full_passes = 1;
    }
    have_stats = true;
    if (count_lo >= 2 * k && count_lo <= cap) {
      // Exact counts from the candidates for t >= t_lo; below t_lo at least count_lo >= 2k.
      auto count = [&](float t) -> std::size_t {
        if (t < t_lo) return count_lo;
        std::size_t c = 0;
        for (float v : cand.value) c += key_value(v, key) > t;
        return c;
      };
      float t = 0;
      if (bisect(stats, k, eps, count, t, st.probes)) {
        st.threshold = t;
        out.clear();
        for (std::size_t j = 0; j < cand.size(); ++j)
          if (key_value(cand.value[j], key) > t) {
            out.index.push_back(cand.index[j]);
            out.value.push_back(cand.value[j]);
          }
        return;
      }
      // No ratio fits the window: the k best are among the candidates (count_lo >= k).
      st.fallback = true;
      topk_of(cand, k, key, out, scratch);
      return;
    }
  }
  // Sampling missed (or x is small): the plain search, reusing the stats.
  st.fallback = have_stats;
  if (!have_stats) {
    stats = key_stats(x, key);
    st.full_passes = 1;
  }
  float t = 0;
  if (!bisect(stats, k, eps, [&](float th) { ++st.full_passes; return count_above(x, key, th); }, t, st.probes)) {
    st.fallback = true;
    exact_topk(x, k, key, out, scratch);
    return;
  }
  st.threshold = t;
  out.clear();
  filter_above(x, key, t, out);
  ++st.full_passes;
}

void ThresholdReuse::select(std::span<const float> x, std::size_t k, Key key, Selection& out,
                            SelectScratch& scratch, SelectInfo* info, const Prescan* pre) {
  SelectInfo local;
  SelectInfo& st = info != nullptr ? *info : local;
  if (reusing(x.size(), k)) {
    st = {};
    const std::size_t cap = 4 * k;
    std::size_t count = 0;
    if (pre != nullptr && pre->t_lo == threshold_ && pre->cap >= cap) {
      count = pre->count;
      if (count <= cap) out = scratch.candidates;
    } else {
      count = scan(x, key, threshold_, out, cap, nullptr);
      st.full_passes = 1;
    }
    st.threshold = threshold_;
    if (2 * count >= k && count <= cap) {
      ++since_search_;
      return;
    }
  }
  // A prescan at the cached threshold also serves the search when it kept 2k..cap.
  threshold_search(x, k, key, out, scratch, eps_, &st, pre);
  since_search_ = 0;
  has_threshold_ = out.size() > 0 && k < x.size();
  if (st.fallback) {
    // The search may have ended in an exact top-k: cache the threshold just
    // below its smallest kept key, which reproduces it.
    float lowest = std::numeric_limits<float>::infinity();
    for (float v : out.value) lowest = std::min(lowest, key_value(v, key));
    st.threshold = std::nextafter(lowest, neg_inf);
  }
  threshold_ = st.threshold;
}

void dgc_sample_select(std::span<const float> x, std::size_t k, Key key, Rng& rng, Selection& out,
                       SelectScratch& scratch, SelectInfo* info) {
  SelectInfo local;
  SelectInfo& st = info != nullptr ? *info : local;
  st = {};
  if (trivial(x, k, out)) return;
  const std::size_t n = x.size();
  const double density = static_cast<double>(k) / static_cast<double>(n);
  const auto samples = static_cast<std::size_t>(
      std::max(std::ceil(0.01 * static_cast<double>(n)), std::ceil(2.0 / density)));
  auto& keys = scratch.keys;
  keys.clear();
  if (samples >= n) {
    for (float v : x) keys.push_back(key_value(v, key));
  } else {
    const std::size_t stride = n / samples;
    for (std::size_t i = rng.below(stride); i < n; i += stride) keys.push_back(key_value(x[i], key));
  }
  const std::size_t top = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(density * keys.size())), 1,
                                                  keys.size());
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(top - 1), keys.end(),
                   std::greater<float>());
  float t = keys[top - 1];
  Selection& kept = out;
  for (int round = 0; round < 10; ++round) {
    ++st.probes;
    // key >= t, as key > the next float below t.
    const float strict = std::nextafter(t, neg_inf);
    std::size_t count = scan(x, key, strict, kept, 2 * k + 64, nullptr);
    ++st.full_passes;
    st.threshold = strict;
    if (count > 2 * k + 64) {
      scan(x, key, strict, kept, count, nullptr);
      ++st.full_passes;
    }
    if (10 * count > 13 * k) {
      topk_of(kept, k, key, kept, scratch);
      break;
    }
    if (count > k) break;
    if (10 * count < 8 * k) {
      t *= 0.8f;
      continue;
    }
    break;
  }
  if (kept.size() > k) {
    kept.index.resize(k);
    kept.value.resize(k);
  }
}

void random_k(std::span<const float> x, std::size_t k, Rng& rng, Selection& out) {
  if (trivial(x, k, out)) return;
  const std::size_t n = x.size();
  out.index.resize(k);
  out.value.resize(k);
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t lo = j * n / k, hi = (j + 1) * n / k;
    const std::size_t i = lo + rng.below(hi - lo);
    out.index[j] = static_cast<std::uint32_t>(i);
    out.value[j] = x[i];
  }
}

}  // namespace taihu::compress
