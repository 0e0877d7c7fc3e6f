#pragma once
// The benchmark workloads of ../shared/reference/cavs.md §8.3, built in
// memory (bench/make_tree_workload writes them with tree_workload_io), each
// deterministic given its seed.

#include <cstdint>

#include "core/graph/bracket_tree_reader.hpp"
#include "core/graph/text_reader.hpp"
#include "core/graph/tree_workload_io.hpp"

namespace taihu {

inline constexpr int32_t sst_num_classes = 5;

// (a) SST-like synthetic trees: SST train lengths, Beta(0.25) splits, uniform
// leaf tokens and uniform labels on every vertex.
TreeWorkload sst_like_workload(int32_t trees, uint64_t seed, int32_t vocabulary_size = 20000,
                               int32_t num_classes = sst_num_classes);

// (b) A bracket treebank (SST) as it was read: tokens at the leaves, labels
// everywhere, vocabulary size = the bank's vocabulary (with <unk>).
TreeWorkload treebank_workload(const TreeBank& bank, std::string name);

// (c) Tree-FC: complete binary trees with 2^depth leaves, uniform random leaf
// tokens and labels on every vertex.
TreeWorkload complete_tree_workload(int32_t trees, int32_t depth, uint64_t seed, int32_t vocabulary_size = 20000,
                                    int32_t num_classes = sst_num_classes);

// (d) Language-model chains, one per sentence: a sentence w1 .. wn <eos> (as
// TextCorpus stores it) becomes n + 1 vertices with tokens <eos> w1 .. wn and
// labels w1 .. wn <eos> (each vertex predicts the next word; the leading
// <eos> marks the sentence start). classes = vocabulary = max(the corpus's
// vocabulary, min_vocabulary), so a model can keep PTB's 10,000 outputs.
TreeWorkload chain_workload(const TextCorpus& corpus, std::string name, int32_t min_vocabulary = 10000);

// (e) Left combs with `leaves` leaves (height leaves - 1), random tokens and labels.
TreeWorkload comb_workload(int32_t trees, int32_t leaves, uint64_t seed, int32_t vocabulary_size = 20000,
                           int32_t num_classes = sst_num_classes);

}  // namespace taihu
