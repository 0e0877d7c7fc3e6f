#pragma once
// Arithmetic-expression trees: a learnable task that needs no data set.
// Leaves are digits 0-9, internal nodes are +, - or x, and every vertex is
// labelled with its value mod `modulus` (a per-vertex classification target
// that a tree model can only learn by composing its children correctly).
// Shapes come from the Beta(alpha, alpha) random tree generator.

#include <cstdint>
#include <vector>

#include "core/common/random.hpp"
#include "core/graph/input_graph.hpp"

namespace taihu {

// Tokens: digit d is token d; operators follow the digits.
enum ExpressionToken : int32_t { expression_plus = 10, expression_minus = 11, expression_times = 12 };
inline constexpr int32_t expression_vocabulary_size = 13;

struct ExpressionTreeOptions {
  int32_t min_leaves = 2;
  int32_t max_leaves = 16;  // leaves uniform in [min_leaves, max_leaves]
  double alpha = 0.25;
  int32_t modulus = 10;  // labels in [0, modulus)
  bool multiply = true;  // include x among the operators
};

struct ExpressionTree {
  InputGraph graph;                // labels = value mod modulus
  std::vector<int32_t> values;     // value mod modulus per vertex, in [0, modulus)
};

ExpressionTree random_expression_tree(Rng& rng, const ExpressionTreeOptions& options = {});

// Recomputes every vertex's value mod `modulus` from the tokens (any arity:
// the operator folds left over the children).
std::vector<int32_t> evaluate_expression(const InputGraph& graph, int32_t modulus);

}  // namespace taihu
