#pragma once
// The actor runtime for dynamic networks behind the trainers' BatchRunner
// interface: `executors` vertex-executor actors and one graph batcher
// (graph_batcher.hpp). Each mini-batch is cut into contiguous parts of about
// equal vertex counts, one per executor; their work items run concurrently
// and their gradients meet in the shared parameter diffs, so the result is the
// one-executor gradient up to float summation order.
//
//   executors = 0     # root key: concurrent executors; 0 = the cores divided by
//                     # the BLAS threads (2 on a 2-core machine with 1 BLAS thread)
//   step_timeout = 600  # root key: seconds a mini-batch may take before the run stops
//
// The app sets BLAS threads to cores / executors unless [blas] threads says
// otherwise, so executors x BLAS threads never exceeds the cores by default.

#include <memory>

#include "core/cavs/batch_runner.hpp"
#include "core/config/config.hpp"

namespace taihu::graph {

struct GraphRunnerOptions {
  int executors = 1;
  double step_timeout = 600.0;
  cavs::ExecutorOptions executor;
};

std::unique_ptr<cavs::BatchRunner> make_graph_runner(cavs::VertexFunction& f, const GraphRunnerOptions& options);

// Reads `executors` and `step_timeout` from the document's root section.
GraphRunnerOptions read_graph_runner_options(const config::Document& doc);

}  // namespace taihu::graph
