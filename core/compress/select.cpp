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
      count = collect_above(x, key, t_lo, scratch.candidates, cap, nullptr);
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
  count_above_each(x, key, t, rounds, counts);
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
  collect_above(x, key, t[chosen], scratch.candidates, counts[chosen], nullptr);
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
      count_lo = collect_above(x, key, t_lo, cand, cap, &stats);
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
      count = collect_above(x, key, threshold_, out, cap, nullptr);
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
    std::size_t count = collect_above(x, key, strict, kept, 2 * k + 64, nullptr);
    ++st.full_passes;
    st.threshold = strict;
    if (count > 2 * k + 64) {
      collect_above(x, key, strict, kept, count, nullptr);
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
