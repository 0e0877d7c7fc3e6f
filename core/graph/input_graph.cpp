#include "core/graph/input_graph.hpp"

#include <algorithm>
#include <numeric>

#include "core/common/check.hpp"

namespace taihu {

int32_t InputGraph::add_vertex(std::span<const int32_t> children, int32_t label, int32_t token) {
  const int32_t id = num_vertices();
  for (int32_t child : children) {
    require<DataError>(child >= 0 && child < id,
                       "input graph: vertex {} names child {}, which does not exist yet "
                       "(children must be added before their parents)",
                       id, child);
  }
  children_.insert(children_.end(), children.begin(), children.end());
  offsets_.push_back(static_cast<int32_t>(children_.size()));
  labels_.push_back(label);
  tokens_.push_back(token);
  return id;
}

int32_t InputGraph::num_leaves() const {
  int32_t n = 0;
  for (int32_t v = 0; v < num_vertices(); ++v) n += is_leaf(v);
  return n;
}

int32_t InputGraph::max_arity() const {
  int32_t m = 0;
  for (int32_t v = 0; v < num_vertices(); ++v) m = std::max(m, arity(v));
  return m;
}

std::vector<int32_t> InputGraph::parent_counts() const {
  std::vector<int32_t> counts(labels_.size(), 0);
  for (int32_t child : children_) ++counts[child];
  return counts;
}

std::vector<int32_t> InputGraph::roots() const {
  std::vector<int32_t> result;
  const auto counts = parent_counts();
  for (int32_t v = 0; v < num_vertices(); ++v)
    if (counts[v] == 0) result.push_back(v);
  return result;
}

std::vector<int32_t> InputGraph::heights() const {
  std::vector<int32_t> h(labels_.size(), 0);
  for (int32_t v = 0; v < num_vertices(); ++v)  // ids are topological
    for (int32_t child : children(v)) h[v] = std::max(h[v], h[child] + 1);
  return h;
}

int32_t InputGraph::height() const {
  const auto h = heights();
  return h.empty() ? -1 : *std::max_element(h.begin(), h.end());
}

std::vector<std::vector<int32_t>> InputGraph::levels() const {
  const auto h = heights();
  std::vector<std::vector<int32_t>> result(h.empty() ? 0 : *std::max_element(h.begin(), h.end()) + 1);
  for (int32_t v = 0; v < num_vertices(); ++v) result[h[v]].push_back(v);
  return result;
}

std::vector<int32_t> InputGraph::topological_order() const {
  std::vector<int32_t> order(labels_.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

void InputGraph::reserve(int32_t vertices, int64_t edges) {
  offsets_.reserve(static_cast<size_t>(vertices) + 1);
  labels_.reserve(vertices);
  tokens_.reserve(vertices);
  children_.reserve(edges);
}

InputGraph InputGraph::chain(std::span<const int32_t> tokens) {
  InputGraph graph;
  graph.reserve(static_cast<int32_t>(tokens.size()), static_cast<int64_t>(tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t previous = static_cast<int32_t>(i) - 1;
    if (i == 0)
      graph.add_leaf(tokens[i]);
    else
      graph.add_vertex(std::span<const int32_t>(&previous, 1), none, tokens[i]);
  }
  return graph;
}

}  // namespace taihu
