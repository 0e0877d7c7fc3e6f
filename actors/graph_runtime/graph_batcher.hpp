#pragma once
// The graph batcher: runs one mini-batch over several vertex executors
// (vertex_executor.hpp) as message flow.
//
// The mini-batch is cut into parts, one per executor. On msg::RunGraphBatch
// the batcher asks every executor to run its part (msg::RunVertexPart); the
// parts run concurrently, each executor through its own rounds. Their weight
// gradients add into the shared parameter diffs, so the batcher hands out
// that turn (msg::WeightGradientTurn) to one part at a time, in part order:
// part k writes once it has run and part k-1 has written. The diffs are then
// the same sum, in the same order, on every run — bit for bit. When the last
// part has written (forward only: when every part has run) the request is
// answered with msg::GraphBatchDone: 4 messages per part and 2 per batch
// (2 per part forward only), however many rounds the parts have.
//
// A failed part (an exception in its executor, which then stops) stops the
// handing out of turns; once no executor still runs anything of the batch
// (nothing reads the batch's data any more), the request fails with the
// first error and the batcher quits with it.

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <vector>

#include "actors/graph_runtime/vertex_executor.hpp"
#include "messages/vertex_work.hpp"

namespace taihu::graph {

using GraphBatcherActor = caf::typed_actor<caf::replies_to<msg::RunGraphBatch>::with<msg::GraphBatchDone>>;

GraphBatcherActor spawn_graph_batcher(caf::actor_system& system, std::vector<VertexExecutorActor> executors);

}  // namespace taihu::graph
