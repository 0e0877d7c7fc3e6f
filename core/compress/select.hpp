#pragma once
// Communication-set selection for residual gradient compression (RedSync,
// DGC; ../shared/reference/redsync.md §2.5). Every selector reads a float
// vector x and writes the chosen (index, value) pairs, indices ascending,
// values copied from x unchanged (signed).
//
// The key ranks the entries: |x| normally; x or -x under sign-alternating
// quantization (k largest positive / k most negative). Statistics used by the
// threshold selectors: mean = mean(|x|), max = max(key), and
// count(t) = #{i : key_i > t}; a ratio r in [0, 1] names the threshold
// mean + r·(max - mean).
//
// Speed: the threshold selectors estimate, from a strided sample, a threshold
// t_lo that keeps a few k entries, then make ONE read pass over x computing
// mean and max and collecting the entries above t_lo. The search then runs
// on those candidates: every threshold it tries at or above t_lo has its exact
// count there, and one below t_lo keeps at least count(t_lo) ≥ 2k entries, so
// its decision ("too many") is known too. The result is the same as the
// plain multi-pass search (tested). A wrong estimate falls back to passes
// over x.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/common/random.hpp"

namespace taihu::compress {

enum class Key : std::uint8_t { magnitude, positive, negative };

// Indices ascending; value[i] = x[index[i]].
struct Selection {
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  std::size_t size() const { return index.size(); }
  void clear() {
    index.clear();
    value.clear();
  }
};

// What a selector did, for logs and benchmarks.
struct SelectInfo {
  float threshold = 0;    // keys > threshold were kept (threshold selectors)
  int full_passes = 0;    // read passes over the whole of x
  int probes = 0;         // thresholds tried (search steps)
  bool fallback = false;  // ended with an exact top-k or extra passes
};

// ---------------------------------------------------------------- primitives

struct KeyStats {
  double mean_abs = 0;  // mean(|x|)
  float max_key = 0;    // max(key); -inf for an empty x
};
KeyStats key_stats(std::span<const float> x, Key key);
// #{i : key_i > t}
std::size_t count_above(std::span<const float> x, Key key, float t);
// The threshold of a ratio: mean + ratio·(max - mean), rounded to float once.
float ratio_threshold(const KeyStats& stats, double ratio);
// Replaces out with every i where key_i > t (a count pass, then a filter pass).
void filter_above(std::span<const float> x, Key key, float t, Selection& out);
// Sum of the passes a read costs (the bandwidth floor the selectors are measured against).
float sum_pass(std::span<const float> x);
float max_abs_pass(std::span<const float> x);

// The number of entries a density keeps: ceil(density·n), at most n.
std::size_t count_for_density(std::size_t n, double density);

// ---------------------------------------------------------------- selectors

// Scratch buffers the selectors reuse, so a steady state allocates nothing.
struct SelectScratch {
  Selection candidates;
  std::vector<float> keys;
  std::vector<std::uint32_t> order;
};

// The result of a pass made before selecting (the compressor fuses it with
// accumulating the residual): scratch.candidates holds the first `cap` entries
// with key > t_lo in index order, `count` how many there were in all, and
// `stats` the stats of all of x.
struct Prescan {
  float t_lo = 0;
  std::size_t count = 0;
  std::size_t cap = 0;
  KeyStats stats;
};
// The t_lo and cap a selector wants from a prescan for k of n entries:
// false when x is too small for sampling (then select without a prescan).
// `value(i)` is x[i] (as it will be after the fused pass).
enum class PrescanFor : std::uint8_t { exact, search };
std::size_t prescan_cap(PrescanFor what, std::size_t k);

// Exactly min(k, n) entries: the k largest keys, ties won by the lower index.
void exact_topk(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
                SelectInfo* info = nullptr, const Prescan* pre = nullptr);
// Reference: nth_element over all n keys (slow; tests and the benchmark).
void exact_topk_reference(std::span<const float> x, std::size_t k, Key key, Selection& out);

// Trimmed top-k (TH8 Algorithm 11): the highest of the ratios 0.8, 0.6, 0.4,
// 0.2, 0 that keeps at least k entries (counted together in one pass), then the
// exact top-k of those survivors. Same result as exact_topk.
void trimmed_topk(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
                  SelectInfo* info = nullptr);

// Threshold binary search (TH8 Algorithm 12) with the corrected rule: bisect
// the ratio in [0, 1] until k <= count < 2k (accept), count < k lowering and
// count >= 2k raising the threshold, while r - l > eps. If that fails (ties,
// heavy tails, k > count(mean)), falls back to exact_topk. So the result has
// k <= size < 2k entries (exactly k after a fallback; all n when k >= n).
void threshold_search(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
                      double eps = 1e-4, SelectInfo* info = nullptr, const Prescan* pre = nullptr);
// The same search with count passes over all of x (reference for the fast path).
void threshold_search_plain(std::span<const float> x, std::size_t k, Key key, Selection& out,
                            double eps = 1e-4, SelectInfo* info = nullptr);

// Threshold reuse (TH8 §2.5c): a corrected binary search every `interval`
// iterations; between them, one filtering pass with the cached threshold. A
// cached threshold that keeps fewer than k/2 or more than 4k entries forces a
// new search (a taihu guard). interval <= 1 searches every time.
class ThresholdReuse {
 public:
  explicit ThresholdReuse(int interval = 5, double eps = 1e-4) : interval_(interval), eps_(eps) {}
  // With `pre` made at threshold() (when reusing() said so), no pass over x.
  void select(std::span<const float> x, std::size_t k, Key key, Selection& out, SelectScratch& scratch,
              SelectInfo* info = nullptr, const Prescan* pre = nullptr);
  // Whether the next select of k of n entries filters with the cached threshold.
  bool reusing(std::size_t n, std::size_t k) const {
    return has_threshold_ && since_search_ < interval_ - 1 && k > 0 && k < n;
  }
  bool has_threshold() const { return has_threshold_; }
  float threshold() const { return threshold_; }
  void reset() { has_threshold_ = false; }

  // The cached threshold and where the interval stands (for checkpoints).
  struct State {
    int since_search = 0;
    bool has_threshold = false;
    float threshold = 0;
    template <class Archive>
    void serialize(Archive& archive) {
      archive(since_search, has_threshold, threshold);
    }
  };
  State state() const { return {since_search_, has_threshold_, threshold_}; }
  void restore(const State& s) {
    since_search_ = s.since_search;
    has_threshold_ = s.has_threshold;
    threshold_ = s.threshold;
  }

 private:
  int interval_;
  double eps_;
  int since_search_ = 0;
  bool has_threshold_ = false;
  float threshold_ = 0;
};

// DGC-style sampling (reference §2.5d): strided sample (>= 1% of n and >= 2/D
// entries, random start), threshold = the ceil(D·samples)-th largest sampled
// key; keep key >= threshold; adapt up to 10 times (> 1.3k: exact top-k of the
// kept; < 0.8k: threshold·0.8); finally at most k entries (the first in index
// order). Between 0.8k and k entries except after 10 failed loosenings.
void dgc_sample_select(std::span<const float> x, std::size_t k, Key key, Rng& rng, Selection& out,
                       SelectScratch& scratch, SelectInfo* info = nullptr);

// Random-k: one uniformly random index in each of k equal strata (distinct,
// ascending, each index with probability ~k/n). Deterministic given rng, so
// workers sharing a seed choose the same indices.
void random_k(std::span<const float> x, std::size_t k, Rng& rng, Selection& out);

}  // namespace taihu::compress
