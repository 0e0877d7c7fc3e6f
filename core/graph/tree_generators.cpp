#include "core/graph/tree_generators.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "core/common/check.hpp"

namespace taihu {
namespace {

constexpr std::array<int32_t, 53> sst_length_counts = {
    0,   0,   40,  96,  152, 154, 231, 218, 228, 265, 298, 305, 308, 319, 334, 353, 334, 327,
    342, 351, 325, 312, 317, 296, 290, 259, 238, 223, 226, 171, 157, 158, 151, 124, 123, 99,
    69,  54,  61,  38,  31,  40,  24,  24,  20,  18,  11,  3,   8,   8,   4,   4,   3};

// Uniform in (0, 1), never 0, with 53 bits.
double open_uniform(Rng& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

double standard_normal(Rng& rng) {
  return std::sqrt(-2.0 * std::log(open_uniform(rng))) * std::cos(6.283185307179586 * open_uniform(rng));
}

// log of a Gamma(a, 1) draw (Marsaglia-Tsang; a < 1 boosted by U^(1/a)).
double log_gamma_sample(Rng& rng, double a) {
  if (a < 1.0) return log_gamma_sample(rng, a + 1.0) + std::log(open_uniform(rng)) / a;
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    const double x = standard_normal(rng);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    if (std::log(open_uniform(rng)) < 0.5 * x * x + d - d * v + d * std::log(v)) return std::log(d * v);
  }
}

struct TreeBuilder {
  Rng& rng;
  const RandomTreeOptions& options;
  InputGraph graph;

  int32_t label() { return options.num_classes > 0 ? static_cast<int32_t>(rng.below(options.num_classes)) : -1; }

  int32_t leaf() {
    const int32_t token =
        options.vocabulary_size > 0 ? static_cast<int32_t>(rng.below(options.vocabulary_size)) : -1;
    return graph.add_leaf(token, label());
  }

  // Leaf counts of the left and right subtrees of a node with n >= 2 leaves.
  std::pair<int32_t, int32_t> split(int32_t n) {
    const double f = sample_beta(rng, options.alpha);
    const int32_t first = 1 + std::min<int32_t>(n - 2, static_cast<int32_t>(std::floor(f * (n - 1))));
    const int32_t smaller = std::min(first, n - first), larger = n - smaller;
    const bool smaller_left = open_uniform(rng) < options.smaller_left_probability;
    return smaller_left ? std::pair{smaller, larger} : std::pair{larger, smaller};
  }

  // Post-order with an explicit stack: Beta(0.25) trees are nearly as deep
  // as they are long, too deep for recursion on long inputs.
  int32_t build(int32_t n) {
    struct Frame {
      int32_t left_leaves, right_leaves, left = -1;
    };
    std::vector<Frame> stack;
    // The vertex id if m is a leaf; otherwise opens a frame and returns -1.
    auto start = [&](int32_t m) -> int32_t {
      if (m == 1) return leaf();
      const auto [l, r] = split(m);
      stack.push_back({l, r});
      return -1;
    };
    int32_t done = start(n);
    while (!stack.empty()) {
      if (done < 0) {  // descend into the top frame's next child
        const Frame& top = stack.back();
        done = start(top.left < 0 ? top.left_leaves : top.right_leaves);
        continue;
      }
      Frame& top = stack.back();
      if (top.left < 0) {
        top.left = done;
        done = -1;
        continue;
      }
      const std::array<int32_t, 2> children{top.left, done};
      stack.pop_back();
      done = graph.add_vertex(children, label());
    }
    return done;
  }
};

}  // namespace

std::span<const int32_t> sst_train_length_counts() { return sst_length_counts; }

int32_t sample_sst_length(Rng& rng) {
  static const int64_t total = std::accumulate(sst_length_counts.begin(), sst_length_counts.end(), int64_t{0});
  int64_t r = static_cast<int64_t>(rng.below(static_cast<uint64_t>(total)));
  for (size_t length = 0; length < sst_length_counts.size(); ++length) {
    r -= sst_length_counts[length];
    if (r < 0) return static_cast<int32_t>(length);
  }
  return static_cast<int32_t>(sst_length_counts.size() - 1);
}

double sample_beta(Rng& rng, double alpha) {
  require<ConfigError>(alpha > 0.0, "Beta distribution: alpha must be positive, got {}", alpha);
  const double log_x = log_gamma_sample(rng, alpha), log_y = log_gamma_sample(rng, alpha);
  return 1.0 / (1.0 + std::exp(log_y - log_x));
}

InputGraph random_binary_tree(Rng& rng, int32_t leaves, const RandomTreeOptions& options) {
  require<ConfigError>(leaves >= 1, "random tree: needs at least one leaf, got {}", leaves);
  TreeBuilder builder{rng, options, {}};
  builder.graph.reserve(2 * leaves - 1, 2 * static_cast<int64_t>(leaves) - 2);
  builder.build(leaves);
  return std::move(builder.graph);
}

InputGraph sst_like_tree(Rng& rng, const RandomTreeOptions& options) {
  return random_binary_tree(rng, sample_sst_length(rng), options);
}

InputGraph complete_binary_tree(int32_t depth, int32_t vocabulary_size) {
  require<ConfigError>(depth >= 0 && depth <= 24, "complete binary tree: depth must be in [0, 24], got {}", depth);
  const int32_t leaves = 1 << depth;
  InputGraph graph;
  graph.reserve(2 * leaves - 1, 2 * static_cast<int64_t>(leaves) - 2);
  for (int32_t i = 0; i < leaves; ++i) graph.add_leaf(vocabulary_size > 0 ? i % vocabulary_size : i);
  // Each level pairs up the previous level's vertices, which are contiguous.
  int32_t level_begin = 0, level_size = leaves;
  while (level_size > 1) {
    for (int32_t i = 0; i < level_size; i += 2) {
      const std::array<int32_t, 2> children{level_begin + i, level_begin + i + 1};
      graph.add_vertex(children);
    }
    level_begin += level_size;
    level_size /= 2;
  }
  return graph;
}

InputGraph left_comb_tree(int32_t leaves) {
  require<ConfigError>(leaves >= 1, "comb tree: needs at least one leaf, got {}", leaves);
  InputGraph graph;
  int32_t spine = graph.add_leaf(0);
  for (int32_t i = 1; i < leaves; ++i) {
    const std::array<int32_t, 2> children{spine, graph.add_leaf(i)};
    spine = graph.add_vertex(children);
  }
  return graph;
}

}  // namespace taihu
