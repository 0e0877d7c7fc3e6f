#pragma once
// Dynamic-network work items between the graph batcher and its vertex
// executors (actors/graph_runtime): one step of one executor's part of a mini-batch —
// its eager ops, one round of vertices, its lazy ops, their backward, or its
// weight gradients. The data stays with the executor; messages carry only
// which step to run and, back, how long it took.

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace taihu::msg {

enum class VertexStep : std::uint8_t {
  inputs,            // lay out the executor's graphs (schedule, buffers)
  forward_eager,     // ops that depend only on pull() and parameters, all vertices
  forward_round,     // the vertices of one round (height)
  forward_lazy,      // ops that never reach scatter (the loss), all vertices
  backward_lazy,
  backward_round,
  backward_eager,
  weight_gradients,  // one GEMM per weight over all vertices (exclusive: shared diffs)
  metrics,           // read loss and predictions
};

const char* step_name(VertexStep step);

struct VertexWork {
  std::uint64_t batch = 0;
  std::uint32_t executor = 0;
  VertexStep step = VertexStep::inputs;
  std::int32_t round = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VertexWork& x) {
  return f(caf::meta::type_name("taihu::msg::VertexWork"), x.batch, x.executor, x.step, x.round);
}

struct VertexWorkDone {
  std::uint64_t batch = 0;
  std::uint32_t executor = 0;
  VertexStep step = VertexStep::inputs;
  std::int32_t round = 0;
  double seconds = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VertexWorkDone& x) {
  return f(caf::meta::type_name("taihu::msg::VertexWorkDone"), x.batch, x.executor, x.step, x.round, x.seconds);
}

// Trainer -> batcher: run the parts already handed to executors 0 .. parts-1,
// forward only or forward and backward; answered with `true` when every part
// is done.
struct RunGraphBatch {
  std::uint64_t batch = 0;
  std::uint32_t parts = 1;
  bool backward = true;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunGraphBatch& x) {
  return f(caf::meta::type_name("taihu::msg::RunGraphBatch"), x.batch, x.parts, x.backward);
}

}  // namespace taihu::msg
