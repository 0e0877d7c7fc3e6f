#pragma once
// A vertex executor as an actor: it owns one cavs::Executor and the part of
// a mini-batch handed to it. Asked to run its part (msg::RunVertexPart), it
// runs the whole sequence on its own — lay out the part, eager ops, rounds
// 0 .. R-1, lazy ops, metrics, and with backward the lazy ops' backward,
// rounds R-1 .. 0, the eager ops' backward and the weight-gradient GEMMs
// into its own scratch — and answers msg::VertexPartReady. Adding its weight
// gradients to the parameter diffs then waits until the graph batcher hands
// it the turn (msg::WeightGradientTurn).
//
// Executors of one runner share the vertex function's parameters: forward
// reads the weights, backward touches only the executor's own buffers, and
// only cavs::Executor::accumulate_weight_gradients() adds to the shared
// diffs — which the batcher lets one executor do at a time, in part order.
//
// A part is one handler, not a message per step: nobody addresses an executor
// while its part runs (the batcher waits for the answer), so splitting it up
// would only add mailbox round trips. A step can compute for milliseconds and
// CAF cannot preempt it, so executors are detached actors (a thread each),
// with flush-to-zero set on that thread; they need no scheduler thread. An
// exception (a malformed graph, say) fails the request with the message and
// terminates the actor with it as its exit reason.

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>
#include <vector>

#include "core/cavs/executor.hpp"
#include "core/cavs/graph_metrics.hpp"
#include "messages/vertex_work.hpp"

namespace taihu::graph {

using VertexExecutorActor =
    caf::typed_actor<caf::replies_to<msg::RunVertexPart>::with<msg::VertexPartReady>,
                     caf::replies_to<msg::WeightGradientTurn>::with<msg::WeightGradientsWritten>>;

// What the executor actor works on; the runner sets `graphs` and
// `loss_scale` before each batch and reads `metrics` after it. The part owns
// a copy of its graphs (copy-assigned, so their buffers are reused), so a
// part still running after a failed batch never reads the caller's memory.
struct ExecutorPart {
  ExecutorPart(cavs::VertexFunction& f, cavs::ExecutorOptions options) : executor(f, options) {}

  cavs::Executor executor;
  std::vector<InputGraph> graphs;
  int32_t first_sample = 0;  // where `graphs` start in the mini-batch (for messages)
  float loss_scale = 1.0f;
  cavs::GraphMetrics metrics;
};

VertexExecutorActor spawn_vertex_executor(caf::actor_system& system, std::shared_ptr<ExecutorPart> part);

}  // namespace taihu::graph
