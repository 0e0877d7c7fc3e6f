#pragma once
// Where every vertex of a mini-batch runs: rows and rounds (cavs.md §3.1).
//
// Batched: row order = vertices sorted by height (leaves first), so round r =
// the vertices of height r, contiguous rows, and the number of rounds is max
// height + 1 (the longest-path lower bound). Serial: one vertex per round,
// sample by sample in topological order — the one-vertex-at-a-time baseline.
//
// Children are kept as a CSR over rows; edge e of row i (its k-th child) is
// child_offsets[i] + k, so a round's edges are contiguous too. Built in O(V+E)
// into grow-only arrays (rebuild() reuses them).

#include <cstdint>
#include <span>
#include <vector>

#include "core/graph/input_graph.hpp"

namespace taihu::cavs {

struct Definition;

enum class LayoutKind { batched, serial };

class BatchLayout {
 public:
  // Checks the graphs against F (arity, tokens in the vocabulary, labels in
  // range) and lays them out; errors are DataErrors naming sample and vertex,
  // samples numbered from `first_sample` (where these graphs start in the
  // caller's mini-batch).
  void build(const Definition& f, std::span<const InputGraph> graphs, LayoutKind kind, int32_t first_sample = 0);

  LayoutKind kind() const { return kind_; }
  int32_t num_samples() const { return static_cast<int32_t>(sample_offsets_.size()) - 1; }
  int32_t num_rows() const { return static_cast<int32_t>(row_sample_.size()); }
  int32_t num_edges() const { return static_cast<int32_t>(child_rows_.size()); }
  int32_t num_rounds() const { return static_cast<int32_t>(round_offsets_.size()) - 1; }
  // Rows of round r: [round_begin(r), round_end(r)).
  int32_t round_begin(int32_t r) const { return round_offsets_[static_cast<size_t>(r)]; }
  int32_t round_end(int32_t r) const { return round_offsets_[static_cast<size_t>(r) + 1]; }
  // True when no row of round r has children (gathers read only zeros).
  bool leaf_round(int32_t r) const { return leaf_round_[static_cast<size_t>(r)] != 0; }
  // In the batched layout, rows [0, first_inner_row()) are exactly the leaves.
  int32_t first_inner_row() const { return first_inner_row_; }

  int32_t row(int32_t sample, int32_t vertex) const {
    return row_of_vertex_[static_cast<size_t>(sample_offsets_[static_cast<size_t>(sample)] + vertex)];
  }
  int32_t row_sample(int32_t row) const { return row_sample_[static_cast<size_t>(row)]; }
  int32_t row_vertex(int32_t row) const { return row_vertex_[static_cast<size_t>(row)]; }

  std::span<const int32_t> tokens() const { return tokens_; }  // by row, none = -1
  std::span<const int32_t> labels() const { return labels_; }  // by row, none = -1
  // CSR: edges of row i are [child_offsets()[i], child_offsets()[i+1]).
  std::span<const int32_t> child_offsets() const { return child_offsets_; }
  std::span<const int32_t> child_rows() const { return child_rows_; }    // by edge
  std::span<const int32_t> edge_parents() const { return edge_parents_; }  // by edge
  // Child row at a gather slot, or -1.
  int32_t child(int32_t row, int32_t slot) const {
    const int32_t e = child_offsets_[static_cast<size_t>(row)] + slot;
    return e < child_offsets_[static_cast<size_t>(row) + 1] ? child_rows_[static_cast<size_t>(e)] : -1;
  }
  // Maximal row ranges [begin, end) whose vertices have a token, ascending.
  std::span<const int32_t> token_runs() const { return token_runs_; }  // pairs begin, end

 private:
  // build's passes, in order.
  int32_t check_and_measure(const Definition& f, std::span<const InputGraph> graphs, int32_t first_sample);
  void order_by_height(int32_t max_height);
  void order_as_given(std::span<const InputGraph> graphs);
  void fill_rows(std::span<const InputGraph> graphs, int64_t total_edges);
  void find_token_runs();

  LayoutKind kind_ = LayoutKind::batched;
  std::vector<int32_t> sample_offsets_{0};
  std::vector<int32_t> round_offsets_{0};
  std::vector<uint8_t> leaf_round_;
  int32_t first_inner_row_ = 0;
  std::vector<int32_t> heights_;  // by global vertex (scratch)
  std::vector<int32_t> row_of_vertex_;
  std::vector<int32_t> row_sample_, row_vertex_;
  std::vector<int32_t> tokens_, labels_;
  std::vector<int32_t> child_offsets_, child_rows_, edge_parents_;
  std::vector<int32_t> token_runs_;
};

}  // namespace taihu::cavs
