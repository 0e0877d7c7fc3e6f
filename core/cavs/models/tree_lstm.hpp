#pragma once
// Tree-LSTMs (Tai et al. 2015) as Cavs vertex functions, with a per-vertex
// softmax classifier on h (labels at every vertex, as in SST).
//
// Binary N-ary: gates from x and U applied to [h_l; h_r], one forget gate per
// child (U_fl, U_fr), written gate by gate so that the compiler merges the
// four x-matmuls (eager, over all vertices) and the five U-matmuls (one GEMM
// per round). Child-sum: any number of children, h~ = sum of the children's
// h, one forget gate per child computed on the edge domain.

#include <cstdint>

#include "core/cavs/function.hpp"

namespace taihu::cavs {

struct TreeLstmOptions {
  int32_t vocabulary = 0;
  int32_t embedding = 300;
  int32_t hidden = 150;
  int32_t classes = 5;
  float embedding_scale = 0.1f;  // embedding init: uniform(-s, s)
  uint64_t seed = 0;
};

VertexFunction make_binary_tree_lstm(const TreeLstmOptions& options);
VertexFunction make_child_sum_tree_lstm(const TreeLstmOptions& options);

}  // namespace taihu::cavs
