#pragma once
// How the graph actor runtime (actors/graph_runtime/) cuts a mini-batch
// among its vertex executors: into contiguous parts of about equal vertex
// counts, so that executors running concurrently finish at about the same
// time. Plain C++, so that tests can run the very same parts through inline
// executors.

#include <cstddef>
#include <span>
#include <vector>

#include "core/graph/input_graph.hpp"

namespace taihu::cavs {

// Graphs [begin, end) of a mini-batch.
struct GraphRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};

// min(parts, graphs.size()) non-empty ranges, in order, covering every graph.
// Part p takes graphs while at least half of the next one falls within
// (p + 1) / parts of the total vertex count, and leaves one graph for each
// later part.
std::vector<GraphRange> split_by_vertices(std::span<const InputGraph> graphs, std::size_t parts);

}  // namespace taihu::cavs
