#include "core/cavs/graph_metrics.hpp"

#include "core/cavs/executor.hpp"

namespace taihu::cavs {

void GraphMetrics::add(const Executor& executor, std::span<const InputGraph> graphs) {
  loss += executor.loss();
  labelled += executor.loss_vertices();
  samples += static_cast<int64_t>(graphs.size());
  for (size_t s = 0; s < graphs.size(); ++s) {
    const InputGraph& g = graphs[s];
    vertices += g.num_vertices();
    const auto sample = static_cast<int32_t>(s);
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      const int32_t label = g.label(v);
      if (label == InputGraph::none) continue;
      correct += executor.prediction(sample, v) == label;
    }
    // In every graph the loader builds, the last vertex is a root; DAGs may
    // have more, and those count too.
    for (int32_t root : g.roots()) {
      const int32_t label = g.label(root);
      if (label == InputGraph::none) continue;
      ++roots;
      root_correct += executor.prediction(sample, root) == label;
    }
  }
}

void GraphMetrics::merge(const GraphMetrics& other) {
  loss += other.loss;
  labelled += other.labelled;
  correct += other.correct;
  roots += other.roots;
  root_correct += other.root_correct;
  samples += other.samples;
  vertices += other.vertices;
}

int64_t count_labelled(std::span<const InputGraph> graphs) {
  int64_t n = 0;
  for (const auto& g : graphs)
    for (int32_t label : g.labels()) n += label != InputGraph::none;
  return n;
}

}  // namespace taihu::cavs
