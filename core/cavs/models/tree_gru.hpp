#pragma once
// A binary Tree-GRU: gates from the vertex's embedding x and [h_l; h_r],
//   z = sigmoid(x W_z + [h_l; h_r] U_z + b_z)              (H wide)
//   r = sigmoid(x W_r + [h_l; h_r] U_r + b_r)              (2H wide, one per child)
//   n = tanh(x W_n + (r * [h_l; h_r]) U_n + b_n)
//   h = (1 - z) * n + z * (h_l + h_r)
// with a per-vertex softmax classifier on h.

#include <cstdint>

#include "core/cavs/function.hpp"

namespace taihu::cavs {

struct TreeGruOptions {
  int32_t vocabulary = 0;
  int32_t embedding = 300;
  int32_t hidden = 150;
  int32_t classes = 5;
  float embedding_scale = 0.1f;
  uint64_t seed = 0;
};

VertexFunction make_tree_gru(const TreeGruOptions& options);

}  // namespace taihu::cavs
