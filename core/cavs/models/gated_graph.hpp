#pragma once
// A gated graph network over DAGs (Li et al. 2016, propagated once in
// topological order): every edge carries W_msg h_child, a vertex sums its
// incoming messages m (edge domain, any number of children, shared children
// allowed) and updates with a GRU cell whose input is its embedding x:
//   z = sigmoid(x W_z + m U_z + b_z),  r = sigmoid(x W_r + m U_r + b_r)
//   n = tanh(x W_n + (r * m) U_n + b_n),  h = (1 - z) * n + z * m
// with a per-vertex softmax classifier on h.

#include <cstdint>

#include "core/cavs/function.hpp"

namespace taihu::cavs {

struct GatedGraphOptions {
  int32_t vocabulary = 0;
  int32_t hidden = 128;
  int32_t classes = 2;
  float embedding_scale = 0.1f;
  uint64_t seed = 0;
};

VertexFunction make_gated_graph_network(const GatedGraphOptions& options);

}  // namespace taihu::cavs
