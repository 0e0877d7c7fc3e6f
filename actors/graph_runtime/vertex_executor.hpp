#pragma once
// A vertex executor as an actor: it owns one cavs::Executor and the part of
// a mini-batch handed to it, and runs the work items the graph batcher sends
// (msg::VertexWork: lay out the part, eager ops, one round of vertices, lazy
// ops, their backward, weight gradients, metrics), answering each with
// msg::VertexWorkDone. The `inputs` step answers with the part's number of
// rounds in `round`, so the batcher plans the part without touching it.
//
// Executors of one runner share the vertex function's parameters: forward
// reads the weights, backward's data gradients touch only the executor's own
// buffers, and only `weight_gradients` adds to the shared diffs — which the
// batcher never lets two executors do at once.
//
// A step can compute for milliseconds and CAF cannot preempt it, so executors
// are detached actors (a thread each), with flush-to-zero set on that thread.
// An exception (a malformed graph, say) terminates the actor with the message
// as its exit reason.

#include <caf/fwd.hpp>

#include <memory>
#include <vector>

#include "core/cavs/executor.hpp"
#include "core/cavs/graph_metrics.hpp"

namespace taihu::graph {

// What the executor actor works on; the runner sets `graphs` and
// `loss_scale` before each batch and reads `metrics` after it. The part owns
// a copy of its graphs (copy-assigned, so their buffers are reused), so a
// step still running after a failed batch never reads the caller's memory.
struct ExecutorPart {
  ExecutorPart(cavs::VertexFunction& f, cavs::ExecutorOptions options) : executor(f, options) {}

  cavs::Executor executor;
  std::vector<InputGraph> graphs;
  int32_t first_sample = 0;  // where `graphs` start in the mini-batch (for messages)
  float loss_scale = 1.0f;
  cavs::GraphMetrics metrics;
};

caf::actor spawn_vertex_executor(caf::actor_system& system, std::shared_ptr<ExecutorPart> part);

}  // namespace taihu::graph
