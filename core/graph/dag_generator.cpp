#include "core/graph/dag_generator.hpp"

#include <algorithm>
#include <vector>

#include "core/common/check.hpp"
#include "core/common/error.hpp"

namespace taihu {

InputGraph random_dag(Rng& rng, const RandomDagOptions& o) {
  require<Error>(o.min_vertices >= 1 && o.max_vertices >= o.min_vertices && o.max_children >= 0 && o.window >= 1 &&
                     o.vocabulary >= 1 && o.classes >= 2,
                 "random DAG: need 1 <= min_vertices <= max_vertices, max_children >= 0, window >= 1, "
                 "vocabulary >= 1 and classes >= 2");
  const auto n = static_cast<int32_t>(o.min_vertices + rng.below(static_cast<uint64_t>(o.max_vertices - o.min_vertices + 1)));
  InputGraph g;
  g.reserve(n, static_cast<int64_t>(n) * o.max_children);
  std::vector<int32_t> children;
  std::vector<int32_t> labels;
  labels.reserve(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    children.clear();
    const int32_t lo = std::max(0, v - o.window);
    const int32_t available = v - lo;
    const auto count = static_cast<int32_t>(rng.below(static_cast<uint64_t>(std::min(o.max_children, available) + 1)));
    while (static_cast<int32_t>(children.size()) < count) {
      const auto c = static_cast<int32_t>(lo + rng.below(static_cast<uint64_t>(available)));
      if (std::find(children.begin(), children.end(), c) == children.end()) children.push_back(c);
    }
    std::sort(children.begin(), children.end());
    const auto token = static_cast<int32_t>(rng.below(static_cast<uint64_t>(o.vocabulary)));
    int32_t label = token;
    for (int32_t c : children) label += labels[static_cast<size_t>(c)];
    labels.push_back(label % o.classes);
    g.add_vertex(children, labels.back(), token);
  }
  return g;
}

std::vector<int32_t> dag_labels(const InputGraph& graph, int32_t classes) {
  std::vector<int32_t> labels(static_cast<size_t>(graph.num_vertices()));
  for (int32_t v = 0; v < graph.num_vertices(); ++v) {  // ids are topological
    int32_t label = graph.token(v);
    for (int32_t c : graph.children(v)) label += labels[static_cast<size_t>(c)];
    labels[static_cast<size_t>(v)] = label % classes;
  }
  return labels;
}

}  // namespace taihu
