#pragma once
// Random DAGs with a learnable per-vertex target, for graph models (the
// gated graph network) without a data set: vertex v reads a token t_v and
// is labelled (t_v + sum of its children's labels) mod `classes`, so a model
// must combine the states of all its children — which are shared between
// parents, unlike in a tree.

#include <cstdint>

#include "core/common/random.hpp"
#include "core/graph/input_graph.hpp"

namespace taihu {

struct RandomDagOptions {
  int32_t min_vertices = 4;
  int32_t max_vertices = 24;   // uniform in [min, max]
  int32_t max_children = 3;    // each vertex draws 0..max_children distinct earlier vertices
  int32_t window = 8;          // ... among the `window` vertices just before it (keeps DAGs deep)
  int32_t vocabulary = 8;      // tokens uniform in [0, vocabulary)
  int32_t classes = 4;         // labels in [0, classes)
};

InputGraph random_dag(Rng& rng, const RandomDagOptions& options = {});

// The labels the recurrence above gives `graph`'s tokens.
std::vector<int32_t> dag_labels(const InputGraph& graph, int32_t classes);

}  // namespace taihu
