#pragma once
// Data sets of input graphs for dynamic networks, read from a config [data]
// section: one graph per sample, labels on its vertices.
//
//   [data]
//   source = sst | ptb | expression | sst-like | dag
//   # sst: PTB-bracket trees with a 0-4 label on every node (../shared/data/sst)
//   dir = ../../shared/data/sst     # relative to the config file
//   train = train.txt  dev = dev.txt  test = test.txt
//   # ptb: one sentence per line (../shared/data/ptb has valid.txt and test.txt
//   # only, so the shipped config trains on test.txt and evaluates on valid.txt)
//   layout = sentences | chunks     # a chain per sentence, or the token stream
//   chunk_length = 35               # cut into equal chains (layout = chunks)
//   # sst and ptb: the vocabulary is built from the training file
//   min_count = 1   max_vocabulary = 0   # 0 = no limit; <unk> takes the rest
//   # expression (arithmetic trees labelled with their value mod `classes`) and
//   # sst-like (SST-shaped random trees with random tokens and labels):
//   train_size = 8544  dev_size = 1101  test_size = 2210  classes = 5
//   vocabulary = 20000              # sst-like only
//   # dag (random DAGs, label = (token + children's labels) mod classes; see
//   # dag_generator.hpp): classes = 4  vocabulary = 8  min_vertices = 4
//   # max_vertices = 24  max_children = 3
//   # memory: graphs the caller hands over in the training process
//   # (taihu.Trainer(data=taihu.GraphData(...)), python/), checked here
//   limit_train = 0  limit_dev = 0  limit_test = 0       # first N only; 0 = all
//
// Language-model chains: vertex t reads token w_t and is labelled with the
// next token w_{t+1}; a sentence chain starts from <eos> (the previous
// sentence's end), so every word of the sentence, and its <eos>, is predicted.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/graph/input_graph.hpp"
#include "core/graph/vocabulary.hpp"

namespace taihu {

struct GraphDataset {
  std::string source;
  std::vector<InputGraph> train;
  std::vector<InputGraph> dev;   // may be empty
  std::vector<InputGraph> test;
  Vocabulary vocabulary;         // sst, ptb; generated sources leave it at <unk> only
  int32_t vocabulary_size = 0;   // token ids are in [0, vocabulary_size)
  int32_t num_classes = 0;       // vertex labels are in [0, num_classes)
  bool language_model = false;   // labels are next tokens (num_classes = vocabulary_size)

  int64_t train_vertices() const;
};

// What the model takes of a graph (from cavs::model_limits): a source read
// from files checks it as it reads, naming the file, line and column.
struct GraphLimits {
  int32_t max_children = 0;  // 0: any number
  std::string model;         // e.g. "model 'tree_lstm'"
};

// Reads every key of `data` that applies to its source; missing files raise
// DataError saying where the data comes from. `memory`: the graphs of
// source = memory (null elsewhere), checked against the model's limits and
// their own label and token ranges.
GraphDataset load_graph_dataset(const config::Document& doc, const config::Section& data, uint64_t seed,
                                const GraphLimits& limits = {}, const GraphDataset* memory = nullptr);

// Language-model chains over one sentence (ending in <eos>): see above.
InputGraph sentence_chain(std::span<const int32_t> sentence, int32_t eos);
// Equal chains of `length` vertices over a token stream; the tail that does
// not fill a chain (plus one label) is dropped.
std::vector<InputGraph> chunk_chains(std::span<const int32_t> stream, int32_t length);

}  // namespace taihu
