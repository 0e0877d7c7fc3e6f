#pragma once
// Vertex functions by name, from an application config's [model] section;
// the vocabulary and the number of classes come from the data set.
//
//   [model]
//   type = tree_lstm            # binary N-ary Tree-LSTM (Tai et al.)
//        | child_sum_tree_lstm  # Tree-LSTM over any arity
//        | tree_gru             # binary Tree-GRU
//        | tree_fc              # relu(concat(l, r) W) over binary trees (no embedding key)
//        | lstm | gru           # language models over chains (labels = next tokens)
//        | gated_graph          # gated graph network over DAGs (no embedding key)
//   embedding = 300             # token embedding width (default: 300 for trees, 512 for lstm/gru)
//   hidden = 150                # state width (default: 150 trees, 512 lstm/gru/tree_fc, 128 gated_graph)
//   embedding_scale = 0.1       # embeddings start uniform in (-s, s)

#include <cstdint>
#include <string>
#include <vector>

#include "core/cavs/function.hpp"
#include "core/config/config.hpp"
#include "core/graph/graph_dataset.hpp"

namespace taihu::cavs {

// The model types build_model() knows.
const std::vector<std::string>& model_types();

// Throws ConfigError unless `type` names a known model (call before the
// data are loaded, so that a typo is reported first).
void check_model_type(const config::Section& model);

// What the model type takes of a graph (its vertex function's arity), known
// before the data load so that the data are checked as they are read.
GraphLimits model_limits(const config::Section& model);

// Reads every key of `model` that applies to its type.
VertexFunction build_model(const config::Section& model, const GraphDataset& data, uint64_t seed);

}  // namespace taihu::cavs
