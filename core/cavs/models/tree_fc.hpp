#pragma once
// Tree-FC (cavs.md §2.2): h = relu([h_l; h_r] * W^T + x), no bias, where x is
// the vertex's embedding (leaves' inputs; inner vertices usually have none),
// with a per-vertex softmax classifier on h.

#include <cstdint>

#include "core/cavs/function.hpp"

namespace taihu::cavs {

struct TreeFcOptions {
  int32_t vocabulary = 0;
  int32_t hidden = 512;
  int32_t classes = 2;
  float embedding_scale = 0.1f;
  uint64_t seed = 0;
};

VertexFunction make_tree_fc(const TreeFcOptions& options);

}  // namespace taihu::cavs
