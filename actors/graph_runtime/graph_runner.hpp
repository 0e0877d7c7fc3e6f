#pragma once
// The actor runtime for dynamic networks behind the trainers' BatchRunner
// interface: `executors` vertex-executor actors and one graph batcher
// (graph_batcher.hpp), spawned in the caller's actor system — the process
// has one, and the runner never makes another. Each mini-batch is cut into
// contiguous parts of about equal vertex counts (cavs::split_by_vertices),
// one per executor; the parts run concurrently and their weight gradients
// add into the shared parameter diffs one part at a time in part order, so
// the result is bit for bit that of inline executors running the same parts
// one after another, and with one executor that of cavs::InlineRunner.
//
//   executors = 0     # root key: concurrent executors; 0 = the cores divided by
//                     # the BLAS threads (2 on a 2-core machine with 1 BLAS thread)
//   step_timeout = 600  # root key: seconds a mini-batch may take before the run stops
//
// The app sets BLAS threads to cores / executors unless [blas] threads says
// otherwise, so executors x BLAS threads never exceeds the cores by default.
//
// train() and evaluate() are tasks that suspend until the batch is done
// (actors/ask.hpp): a data-parallel worker's step awaits them and its thread
// takes other messages meanwhile; a plain thread takes them with
// async::sync_wait (never a handler of a scheduled actor, which would hold
// a scheduler thread). The executors are detached (a thread each); the batcher is scheduled and
// needs a scheduler thread for moments, so any system will do, one with a
// single scheduler thread included; idle work-stealing threads poll, though,
// which on a small machine takes time from the executors, while the
// "sharing" policy's threads sleep. The system must outlive the runner, and
// the vertex function too; the runner's destructor waits for its actors.

#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>

#include "core/cavs/batch_runner.hpp"
#include "core/config/config.hpp"

namespace taihu::graph {

struct GraphRunnerOptions {
  int executors = 1;
  double step_timeout = 600.0;
  cavs::ExecutorOptions executor;
};

// What the runtime's actors cost besides the executors' own work.
struct GraphRuntimeStats {
  int64_t batches = 0;
  int64_t messages = 0;  // between the runner and its actors: requests and answers alike
};

class GraphRunner : public cavs::BatchRunner {
 public:
  // Since the last reset_stats().
  virtual GraphRuntimeStats runtime_stats() const = 0;
};

std::unique_ptr<GraphRunner> make_graph_runner(caf::actor_system& system, cavs::VertexFunction& f,
                                               const GraphRunnerOptions& options);

// Reads `executors` and `step_timeout` from the document's root section.
GraphRunnerOptions read_graph_runner_options(const config::Document& doc);

}  // namespace taihu::graph
