#pragma once
// Gradient stages: a model's learnable parameters grouped by when their
// gradients become final during backward. The replicas (core/train) say what
// their stages are; the fusion buckets (collectives/buckets.hpp) group them
// into collectives, knowing stages and parameters only.

#include <string>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {

class Net;

// Parameters whose gradients become final together: a layer of a net, or all
// of a vertex function (its weight gradients are computed after backward).
struct GradientStage {
  std::string name;
  std::vector<Param*> params;  // learnable only
};

// One stage per layer, in order: layer i is stage i (layers without learnable
// parameters give empty stages).
std::vector<GradientStage> layer_stages(Net& net);

}  // namespace taihu
