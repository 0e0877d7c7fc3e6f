#pragma once
// LSTM and GRU language models as Cavs vertex functions over chains
// (cavs.md §2.3): vertex t pulls token t, gathers step t-1's state (zeros at
// t = 0) and predicts token t+1 with a softmax over the vocabulary, which is
// lazy (runs once over all steps after the last round). Fixed-length LMs are
// chains cut to equal lengths; variable-length ones one chain per sentence.

#include <cstdint>
#include <span>

#include "core/cavs/function.hpp"
#include "core/graph/input_graph.hpp"

namespace taihu::cavs {

struct ChainLmOptions {
  int32_t vocabulary = 0;
  int32_t embedding = 512;
  int32_t hidden = 512;
  float embedding_scale = 0.1f;
  uint64_t seed = 0;
};

VertexFunction make_lstm_language_model(const ChainLmOptions& options);
VertexFunction make_gru_language_model(const ChainLmOptions& options);

// A chain over tokens[0 .. n-2] whose vertex t is labelled tokens[t+1]
// (n >= 2), so the loss is next-token prediction over the whole sequence.
InputGraph language_model_chain(std::span<const int32_t> tokens);

}  // namespace taihu::cavs
