#pragma once
// The graph actor runtime's protocol (actors/graph_runtime/): a trainer asks
// the graph batcher to run a mini-batch already cut into parts; the batcher
// asks each vertex executor to run its part (lay it out, forward, backward's
// data gradients), then hands out the weight-gradient turn, one part at a
// time in part order, because the parts add into shared parameter diffs.
// The data stays with the executors (graph_runtime/vertex_executor.hpp);
// messages say only what to run and that it ran. Every request here is
// answered by the type named beside it.

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace taihu::msg {

// Trainer -> batcher: run the parts already handed to executors 0 .. parts-1,
// forward only or forward and backward. Answered with GraphBatchDone.
struct RunGraphBatch {
  std::uint64_t batch = 0;
  std::uint32_t parts = 1;
  bool backward = true;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunGraphBatch& x) {
  return f(caf::meta::type_name("taihu::msg::RunGraphBatch"), x.batch, x.parts, x.backward);
}

// Batcher -> trainer: every part ran. `messages` counts this batch's
// messages between the actors, the request and this answer included.
struct GraphBatchDone {
  std::uint64_t batch = 0;
  std::uint32_t messages = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GraphBatchDone& x) {
  return f(caf::meta::type_name("taihu::msg::GraphBatchDone"), x.batch, x.messages);
}

// Batcher -> executor: run your part of the batch: lay out its graphs,
// forward, read the metrics, and with `backward` the data gradients down to
// the inputs. Answered with VertexPartReady.
struct RunVertexPart {
  std::uint64_t batch = 0;
  std::uint32_t part = 0;
  bool backward = true;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunVertexPart& x) {
  return f(caf::meta::type_name("taihu::msg::RunVertexPart"), x.batch, x.part, x.backward);
}

// Executor -> batcher: the part ran; with backward, its weight gradients
// wait for their turn.
struct VertexPartReady {
  std::uint64_t batch = 0;
  std::uint32_t part = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VertexPartReady& x) {
  return f(caf::meta::type_name("taihu::msg::VertexPartReady"), x.batch, x.part);
}

// Batcher -> executor: add your part's weight gradients to the shared
// parameter diffs now. Answered with WeightGradientsWritten.
struct WeightGradientTurn {
  std::uint64_t batch = 0;
  std::uint32_t part = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WeightGradientTurn& x) {
  return f(caf::meta::type_name("taihu::msg::WeightGradientTurn"), x.batch, x.part);
}

struct WeightGradientsWritten {
  std::uint64_t batch = 0;
  std::uint32_t part = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WeightGradientsWritten& x) {
  return f(caf::meta::type_name("taihu::msg::WeightGradientsWritten"), x.batch, x.part);
}

}  // namespace taihu::msg
