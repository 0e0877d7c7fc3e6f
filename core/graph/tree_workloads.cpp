#include "core/graph/tree_workloads.hpp"

#include <algorithm>
#include <utility>

#include "core/common/check.hpp"
#include "core/common/random.hpp"
#include "core/graph/tree_generators.hpp"

namespace taihu {
namespace {

// Replaces the leaves' tokens and every label with uniform draws.
void randomize(InputGraph& tree, Rng& rng, int32_t vocabulary_size, int32_t num_classes) {
  for (int32_t v = 0; v < tree.num_vertices(); ++v) {
    if (tree.is_leaf(v)) tree.set_token(v, static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary_size))));
    tree.set_label(v, static_cast<int32_t>(rng.below(static_cast<uint64_t>(num_classes))));
  }
}

void require_sizes(int32_t trees, int32_t vocabulary_size, int32_t num_classes) {
  require<ConfigError>(trees >= 0, "tree workload: the tree count must not be negative, got {}", trees);
  require<ConfigError>(vocabulary_size > 0 && num_classes > 0,
                       "tree workload: vocabulary ({}) and classes ({}) must be positive", vocabulary_size,
                       num_classes);
}

TreeWorkload empty_workload(std::string name, int32_t vocabulary_size, int32_t num_classes) {
  TreeWorkload w;
  w.name = std::move(name);
  w.vocabulary_size = vocabulary_size;
  w.num_classes = num_classes;
  return w;
}

}  // namespace

TreeWorkload sst_like_workload(int32_t trees, uint64_t seed, int32_t vocabulary_size, int32_t num_classes) {
  require_sizes(trees, vocabulary_size, num_classes);
  TreeWorkload w = empty_workload("sst-like", vocabulary_size, num_classes);
  Rng rng(seed);
  const RandomTreeOptions options{.vocabulary_size = vocabulary_size, .num_classes = num_classes};
  w.trees.reserve(static_cast<size_t>(trees));
  for (int32_t t = 0; t < trees; ++t) w.trees.push_back(sst_like_tree(rng, options));
  return w;
}

TreeWorkload treebank_workload(const TreeBank& bank, std::string name) {
  TreeWorkload w = empty_workload(std::move(name), bank.vocabulary.size(), sst_num_classes);
  w.trees = bank.trees;
  for (const auto& tree : w.trees)
    for (int32_t label : tree.labels()) w.num_classes = std::max(w.num_classes, label + 1);
  return w;
}

TreeWorkload complete_tree_workload(int32_t trees, int32_t depth, uint64_t seed, int32_t vocabulary_size,
                                    int32_t num_classes) {
  require_sizes(trees, vocabulary_size, num_classes);
  TreeWorkload w = empty_workload("complete-" + std::to_string(1 << std::clamp(depth, 0, 24)), vocabulary_size, num_classes);
  Rng rng(seed);
  const InputGraph shape = complete_binary_tree(depth);
  w.trees.assign(static_cast<size_t>(trees), shape);
  for (auto& tree : w.trees) randomize(tree, rng, vocabulary_size, num_classes);
  return w;
}

TreeWorkload chain_workload(const TextCorpus& corpus, std::string name, int32_t min_vocabulary) {
  const int32_t size = std::max(corpus.vocabulary.size(), min_vocabulary);
  TreeWorkload w = empty_workload(std::move(name), size, size);
  const int32_t eos = corpus.vocabulary.id(end_of_sentence_token);
  w.trees.reserve(corpus.sentences.size());
  std::vector<int32_t> tokens;
  for (const auto& sentence : corpus.sentences) {
    tokens.assign(1, eos);
    tokens.insert(tokens.end(), sentence.begin(), sentence.end() - (sentence.empty() ? 0 : 1));
    InputGraph chain = InputGraph::chain(tokens);
    // Labels are the next words: w1 .. wn <eos>, i.e. the sentence as stored.
    for (int32_t v = 0; v < chain.num_vertices(); ++v)
      chain.set_label(v, static_cast<size_t>(v) < sentence.size() ? sentence[static_cast<size_t>(v)] : eos);
    w.trees.push_back(std::move(chain));
  }
  return w;
}

TreeWorkload comb_workload(int32_t trees, int32_t leaves, uint64_t seed, int32_t vocabulary_size,
                           int32_t num_classes) {
  require_sizes(trees, vocabulary_size, num_classes);
  TreeWorkload w = empty_workload("comb-" + std::to_string(leaves), vocabulary_size, num_classes);
  Rng rng(seed);
  const InputGraph shape = left_comb_tree(leaves);
  w.trees.assign(static_cast<size_t>(trees), shape);
  for (auto& tree : w.trees) randomize(tree, rng, vocabulary_size, num_classes);
  return w;
}

}  // namespace taihu
