#pragma once
// A layer in its place in a net: its blobs and what the net decided about it
// (which bottoms get gradients, whether backward runs, in which phases, and
// whether it computes as part of a fused run, core/net/fusion.hpp).

#include <memory>
#include <optional>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {

struct NetNode {
  std::unique_ptr<Layer> layer;
  BlobVec bottom;
  BlobVec top;
  std::vector<bool> propagate_down;
  float loss_weight = 0.0f;
  bool needs_backward = false;
  std::optional<Phase> only_in;
  int fused_run = -1;  // index into the net's fused runs; -1: computes alone
  bool active(Phase p) const { return !only_in || *only_in == p; }
};

}  // namespace taihu
