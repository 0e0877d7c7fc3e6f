#pragma once
// Synthetic tree shapes for dynamic-network tests and benchmarks, each
// deterministic given the Rng state: SST-like binary trees (lengths from the
// SST train histogram, Beta(alpha, alpha) splits, which reproduce SST's
// heights, see ../shared/reference/cavs.md §7.2), complete binary trees
// (Tree-FC) and combs (the worst case for wavefront batching).

#include <cstdint>
#include <span>

#include "core/common/random.hpp"
#include "core/graph/input_graph.hpp"

namespace taihu {

// Sentence-length counts of SST train (length 2..52), cavs.md §7.1.
std::span<const int32_t> sst_train_length_counts();  // index = length
// A length drawn from that histogram.
int32_t sample_sst_length(Rng& rng);

// A Beta(alpha, alpha) draw in [0, 1] (from two gamma draws in log space, so
// small alphas do not underflow; 0 and 1 occur when one draw dwarfs the other).
double sample_beta(Rng& rng, double alpha);

struct RandomTreeOptions {
  double alpha = 0.25;
  // Probability that the subtree with fewer leaves goes left; SST's left
  // children are leaves more often than right ones (0.5 = no bias).
  double smaller_left_probability = 0.63;
  int32_t vocabulary_size = 0;  // leaves get uniform tokens in [0, size); 0 = no tokens
  int32_t num_classes = 0;      // every vertex gets a uniform label; 0 = no labels
};

// A binary tree with `leaves` leaves, split recursively: a node with n leaves
// gives 1 + min(n - 2, floor(f (n - 1))) leaves to one side, f ~ Beta(alpha, alpha).
InputGraph random_binary_tree(Rng& rng, int32_t leaves, const RandomTreeOptions& options = {});
// An SST-like tree: length from the SST train histogram, then random_binary_tree.
InputGraph sst_like_tree(Rng& rng, const RandomTreeOptions& options = {});

// 2^depth leaves, every internal node with two children, height = depth.
// Leaves get tokens 0, 1, ... when vocabulary_size is 0, else token i % size.
InputGraph complete_binary_tree(int32_t depth, int32_t vocabulary_size = 0);

// A left comb: each internal node has the previous subtree as its left child
// and a fresh leaf as its right child; height = leaves - 1.
InputGraph left_comb_tree(int32_t leaves);

}  // namespace taihu
