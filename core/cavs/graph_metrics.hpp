#pragma once
// What one pass over a set of input graphs measured: the summed loss and
// accuracy over every labelled vertex and over the roots alone (SST's
// "fine-grained root accuracy" is the latter). Replicas fill their own and
// merge() them.

#include <cmath>
#include <cstdint>
#include <span>

#include "core/graph/input_graph.hpp"

namespace taihu::cavs {

class Executor;

struct GraphMetrics {
  double loss = 0.0;           // summed over labelled vertices
  int64_t labelled = 0;        // vertices with a label
  int64_t correct = 0;         // of those, predicted right
  int64_t roots = 0;           // labelled roots
  int64_t root_correct = 0;
  int64_t samples = 0;
  int64_t vertices = 0;

  // Reads the executor's loss and predictions after a forward over `graphs`
  // (the same graphs, in the same order, as its set_inputs()).
  void add(const Executor& executor, std::span<const InputGraph> graphs);
  void merge(const GraphMetrics& other);

  double mean_loss() const { return labelled > 0 ? loss / static_cast<double>(labelled) : 0.0; }
  double accuracy() const { return labelled > 0 ? static_cast<double>(correct) / static_cast<double>(labelled) : 0.0; }
  double root_accuracy() const { return roots > 0 ? static_cast<double>(root_correct) / static_cast<double>(roots) : 0.0; }
  // exp(mean loss): a language model's perplexity.
  double perplexity() const { return std::exp(mean_loss()); }
};

// Labelled vertices in `graphs` (what a loss normalised per vertex divides by).
int64_t count_labelled(std::span<const InputGraph> graphs);

}  // namespace taihu::cavs
