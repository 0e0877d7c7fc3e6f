#pragma once
// One sample's input graph for dynamic networks: a sequence, a tree of any
// arity or a DAG. Vertices are stored in compressed form (one children array
// plus offsets) and every child must exist before its parent is added, so ids
// are already a topological order (children before parents) and cycles cannot
// be built.

#include <cstdint>
#include <span>
#include <vector>

namespace taihu {

class InputGraph {
 public:
  static constexpr int32_t none = -1;

  // Adds a vertex whose children are existing vertices; returns its id.
  // label and token are `none` when the vertex has none.
  int32_t add_vertex(std::span<const int32_t> children, int32_t label = none, int32_t token = none);
  int32_t add_leaf(int32_t token, int32_t label = none) { return add_vertex({}, label, token); }

  int32_t num_vertices() const { return static_cast<int32_t>(labels_.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(children_.size()); }
  std::span<const int32_t> children(int32_t v) const {
    return {children_.data() + offsets_[v], children_.data() + offsets_[v + 1]};
  }
  int32_t arity(int32_t v) const { return offsets_[v + 1] - offsets_[v]; }
  bool is_leaf(int32_t v) const { return arity(v) == 0; }
  int32_t label(int32_t v) const { return labels_[v]; }
  int32_t token(int32_t v) const { return tokens_[v]; }
  void set_label(int32_t v, int32_t label) { labels_[v] = label; }
  void set_token(int32_t v, int32_t token) { tokens_[v] = token; }
  std::span<const int32_t> labels() const { return labels_; }
  std::span<const int32_t> tokens() const { return tokens_; }

  int32_t num_leaves() const;
  int32_t max_arity() const;
  // Vertices that are nobody's child; a tree has exactly one, its last vertex.
  std::vector<int32_t> roots() const;
  // Number of parents of every vertex (more than one only in a DAG).
  std::vector<int32_t> parent_counts() const;
  // Longest path to a leaf in edges, per vertex (leaf = 0).
  std::vector<int32_t> heights() const;
  // Height of the graph: the largest vertex height (0 for one vertex, -1 if empty).
  int32_t height() const;
  // Vertices grouped by height, children before parents: the wavefronts a
  // batched runtime can run together. levels[h] lists the vertices of height h.
  std::vector<std::vector<int32_t>> levels() const;
  // A topological order: the ids in order (valid by construction).
  std::vector<int32_t> topological_order() const;

  void reserve(int32_t vertices, int64_t edges);

  // A chain over tokens: vertex i has vertex i-1 as its only child.
  static InputGraph chain(std::span<const int32_t> tokens);

  friend bool operator==(const InputGraph&, const InputGraph&) = default;

 private:
  std::vector<int32_t> offsets_{0};
  std::vector<int32_t> children_;
  std::vector<int32_t> labels_;
  std::vector<int32_t> tokens_;
};

}  // namespace taihu
