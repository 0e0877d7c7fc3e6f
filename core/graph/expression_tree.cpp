#include "core/graph/expression_tree.hpp"

#include "core/common/check.hpp"
#include "core/graph/tree_generators.hpp"

namespace taihu {

std::vector<int32_t> evaluate_expression(const InputGraph& graph, int32_t modulus) {
  require<ConfigError>(modulus >= 2, "expression tree: modulus must be >= 2, got {}", modulus);
  std::vector<int32_t> values(static_cast<size_t>(graph.num_vertices()));
  const int64_t m = modulus;
  for (int32_t v = 0; v < graph.num_vertices(); ++v) {  // children before parents
    const int32_t token = graph.token(v);
    const auto children = graph.children(v);
    if (children.empty()) {
      require<DataError>(token >= 0 && token <= 9, "expression tree: leaf {} has token {}, not a digit", v, token);
      values[v] = static_cast<int32_t>(token % m);
      continue;
    }
    require<DataError>(token >= expression_plus && token <= expression_times,
                       "expression tree: internal vertex {} has token {}, not an operator", v, token);
    int64_t acc = values[children[0]];
    for (size_t i = 1; i < children.size(); ++i) {
      const int64_t x = values[children[i]];
      acc = token == expression_plus ? acc + x : token == expression_minus ? acc - x : acc * x;
      acc = ((acc % m) + m) % m;
    }
    values[v] = static_cast<int32_t>(acc);
  }
  return values;
}

ExpressionTree random_expression_tree(Rng& rng, const ExpressionTreeOptions& options) {
  require<ConfigError>(options.min_leaves >= 1 && options.min_leaves <= options.max_leaves,
                       "expression tree: need 1 <= min_leaves <= max_leaves, got {} and {}", options.min_leaves,
                       options.max_leaves);
  const int32_t leaves =
      options.min_leaves + static_cast<int32_t>(rng.below(static_cast<uint64_t>(options.max_leaves - options.min_leaves + 1)));
  RandomTreeOptions shape;
  shape.alpha = options.alpha;
  shape.smaller_left_probability = 0.5;
  ExpressionTree tree{random_binary_tree(rng, leaves, shape), {}};
  const uint64_t operators = options.multiply ? 3 : 2;
  for (int32_t v = 0; v < tree.graph.num_vertices(); ++v)
    tree.graph.set_token(v, tree.graph.is_leaf(v) ? static_cast<int32_t>(rng.below(10))
                                                  : expression_plus + static_cast<int32_t>(rng.below(operators)));
  tree.values = evaluate_expression(tree.graph, options.modulus);
  for (int32_t v = 0; v < tree.graph.num_vertices(); ++v) tree.graph.set_label(v, tree.values[v]);
  return tree;
}

}  // namespace taihu
