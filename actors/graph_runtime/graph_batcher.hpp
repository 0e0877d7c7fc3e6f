#pragma once
// The graph batcher: runs one mini-batch over several vertex executors as
// message flow (DESIGN.md, "One dynamic-network mini-batch").
//
// The mini-batch is split into parts, one per executor. On
// msg::RunGraphBatch the batcher sends every part's first work item; each
// msg::VertexWorkDone makes the next item of that part ready — round r+1
// once round r is done (a vertex's children all lie in earlier rounds),
// backward rounds in reverse — so the parts' rounds interleave and run
// concurrently. Weight gradients add into the shared parameter diffs, so
// one executor at a time holds that step; the others queue. When every part
// has reported its metrics the request is answered with `true`.
//
// An executor that dies (an exception in a step) fails the pending request
// with its exit reason; the batcher then quits.

#include <caf/fwd.hpp>

#include <vector>

namespace taihu::graph {

caf::actor spawn_graph_batcher(caf::actor_system& system, std::vector<caf::actor> executors);

}  // namespace taihu::graph
