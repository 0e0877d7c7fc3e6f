#include "core/cavs/batch_layout.hpp"

#include <algorithm>

#include "core/cavs/function.hpp"
#include "core/common/check.hpp"

namespace taihu::cavs {

void BatchLayout::build(const Definition& f, std::span<const InputGraph> graphs, LayoutKind kind,
                        int32_t first_sample) {
  kind_ = kind;
  const int32_t samples = static_cast<int32_t>(graphs.size());
  sample_offsets_.resize(static_cast<size_t>(samples) + 1);
  sample_offsets_[0] = 0;
  int64_t total = 0, total_edges = 0;
  for (int32_t s = 0; s < samples; ++s) {
    total += graphs[static_cast<size_t>(s)].num_vertices();
    total_edges += graphs[static_cast<size_t>(s)].num_edges();
    require<DataError>(total < (int64_t{1} << 31) && total_edges < (int64_t{1} << 31),
                       "cavs schedule: more than 2^31 vertices or edges in one mini-batch");
    sample_offsets_[static_cast<size_t>(s) + 1] = static_cast<int32_t>(total);
  }
  const int32_t max_height = check_and_measure(f, graphs, first_sample);
  // Rows: a counting sort by height (batched) or the identity (serial).
  row_of_vertex_.resize(static_cast<size_t>(total));
  row_sample_.resize(static_cast<size_t>(total));
  row_vertex_.resize(static_cast<size_t>(total));
  if (kind == LayoutKind::batched)
    order_by_height(max_height);
  else
    order_as_given(graphs);
  fill_rows(graphs, total_edges);
  find_token_runs();
}

// Validates every vertex against F and computes its height (children come
// before parents in an InputGraph); returns the largest.
int32_t BatchLayout::check_and_measure(const Definition& f, std::span<const InputGraph> graphs, int32_t first_sample) {
  const int32_t samples = static_cast<int32_t>(graphs.size());
  const int32_t max_arity = f.options.max_arity;
  const bool slots_only = f.num_slots > 0 && !f.reads_all_children;
  heights_.resize(static_cast<size_t>(sample_offsets_.back()));
  int32_t max_height = -1;
  for (int32_t s = 0; s < samples; ++s) {
    const InputGraph& g = graphs[static_cast<size_t>(s)];
    int32_t* h = heights_.data() + sample_offsets_[static_cast<size_t>(s)];
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      const auto ch = g.children(v);
      const auto arity = static_cast<int32_t>(ch.size());
      if (max_arity >= 0)
        require<DataError>(arity <= max_arity,
                           "cavs schedule: sample {}, vertex {} has {} children, but F allows at most {}",
                           first_sample + s, v, arity, max_arity);
      if (slots_only)
        require<DataError>(arity <= f.num_slots,
                           "cavs schedule: sample {}, vertex {} has {} children, but F gathers only child slots "
                           "0..{} (an out-of-range gather)",
                           first_sample + s, v, arity, f.num_slots - 1);
      const int32_t token = g.token(v);
      if (f.vocabulary >= 0)
        require<DataError>(token == InputGraph::none || (token >= 0 && token < f.vocabulary),
                           "cavs schedule: sample {}, vertex {}: token {} is outside the vocabulary [0, {})",
                           first_sample + s, v, token, f.vocabulary);
      const int32_t label = g.label(v);
      if (f.num_classes >= 0)
        require<DataError>(label == InputGraph::none || (label >= 0 && label < f.num_classes),
                           "cavs schedule: sample {}, vertex {}: label {} is outside [0, {})", first_sample + s, v,
                           label, f.num_classes);
      int32_t height = 0;
      for (int32_t c : ch) {
        require<DataError>(c >= 0 && c < v,
                           "cavs schedule: sample {}, vertex {}: child {} is missing (children must precede "
                           "their parents; a cycle cannot be scheduled)",
                           first_sample + s, v, c);
        height = std::max(height, h[c] + 1);
      }
      h[v] = height;
      max_height = std::max(max_height, height);
    }
  }
  return max_height;
}

// Batched: rows grouped by height, round by round, samples in order within one.
void BatchLayout::order_by_height(int32_t max_height) {
  const int32_t samples = static_cast<int32_t>(sample_offsets_.size()) - 1;
  const auto n = static_cast<size_t>(sample_offsets_.back());
  const auto rounds = static_cast<size_t>(max_height + 1);
  round_offsets_.assign(rounds + 1, 0);
  for (size_t i = 0; i < n; ++i) ++round_offsets_[static_cast<size_t>(heights_[i]) + 1];
  for (size_t r = 0; r < rounds; ++r) round_offsets_[r + 1] += round_offsets_[r];
  leaf_round_.assign(rounds, 0);
  if (rounds > 0) leaf_round_[0] = 1;
  first_inner_row_ = rounds > 0 ? round_offsets_[1] : 0;
  // Reuse heights_ as the per-round cursor is not possible (it is read below),
  // so fill rows with a cursor copy of the offsets.
  std::vector<int32_t>& cursor = token_runs_;  // scratch, rebuilt below
  cursor.assign(round_offsets_.begin(), round_offsets_.end() - 1);
  for (int32_t s = 0; s < samples; ++s) {
    const int32_t base = sample_offsets_[static_cast<size_t>(s)];
    const int32_t count = sample_offsets_[static_cast<size_t>(s) + 1] - base;
    for (int32_t v = 0; v < count; ++v) {
      const auto gv = static_cast<size_t>(base + v);
      const int32_t row = cursor[static_cast<size_t>(heights_[gv])]++;
      row_of_vertex_[gv] = row;
      row_sample_[static_cast<size_t>(row)] = s;
      row_vertex_[static_cast<size_t>(row)] = v;
    }
  }
}

// Serial: every vertex is a round of its own, in the graphs' order.
void BatchLayout::order_as_given(std::span<const InputGraph> graphs) {
  const int32_t samples = static_cast<int32_t>(graphs.size());
  const auto n = static_cast<size_t>(sample_offsets_.back());
  round_offsets_.resize(n + 1);
  leaf_round_.resize(n);
  first_inner_row_ = 0;
  for (int32_t s = 0; s < samples; ++s) {
    const int32_t base = sample_offsets_[static_cast<size_t>(s)];
    const InputGraph& g = graphs[static_cast<size_t>(s)];
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      const auto row = static_cast<size_t>(base + v);
      row_of_vertex_[row] = base + v;
      row_sample_[row] = s;
      row_vertex_[row] = v;
      leaf_round_[row] = g.is_leaf(v) ? 1 : 0;
    }
  }
  for (size_t i = 0; i <= n; ++i) round_offsets_[i] = static_cast<int32_t>(i);
}

// Per-row data and the children CSR in row order.
void BatchLayout::fill_rows(std::span<const InputGraph> graphs, int64_t total_edges) {
  const auto n = static_cast<size_t>(sample_offsets_.back());
  tokens_.resize(n);
  labels_.resize(n);
  child_offsets_.resize(n + 1);
  child_rows_.resize(static_cast<size_t>(total_edges));
  edge_parents_.resize(static_cast<size_t>(total_edges));
  child_offsets_[0] = 0;
  for (size_t row = 0; row < n; ++row) {
    const InputGraph& g = graphs[static_cast<size_t>(row_sample_[row])];
    const int32_t v = row_vertex_[row];
    tokens_[row] = g.token(v);
    labels_[row] = g.label(v);
    child_offsets_[row + 1] = child_offsets_[row] + g.arity(v);
  }
  for (size_t row = 0; row < n; ++row) {
    const int32_t s = row_sample_[row];
    const int32_t base = sample_offsets_[static_cast<size_t>(s)];
    const auto ch = graphs[static_cast<size_t>(s)].children(row_vertex_[row]);
    auto e = static_cast<size_t>(child_offsets_[row]);
    for (int32_t c : ch) {
      child_rows_[e] = row_of_vertex_[static_cast<size_t>(base + c)];
      edge_parents_[e] = static_cast<int32_t>(row);
      ++e;
    }
  }
}

// Runs of rows that carry a token (one embedding lookup each).
void BatchLayout::find_token_runs() {
  const auto n = tokens_.size();
  token_runs_.clear();
  for (size_t row = 0; row < n;) {
    if (tokens_[row] == InputGraph::none) {
      ++row;
      continue;
    }
    const size_t begin = row;
    while (row < n && tokens_[row] != InputGraph::none) ++row;
    token_runs_.push_back(static_cast<int32_t>(begin));
    token_runs_.push_back(static_cast<int32_t>(row));
  }
}

}  // namespace taihu::cavs
