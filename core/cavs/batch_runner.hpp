#pragma once
// How a trainer gets one mini-batch through a vertex function: forward and
// backward, parameter diffs accumulated (+=) into the function's params.
// InlineRunner runs an Executor's steps on the calling thread; the actor
// runtime (actors/graph_runtime/graph_runner.hpp) runs the same steps on
// several concurrent executors, one part of the batch each. Trainers see only
// this interface.
//
// train() and evaluate() are tasks (core/common/task.hpp): a worker's step
// awaits them without holding its thread while the graph actors run the
// batch; callers outside an actor take the answer with async::sync_wait.
// InlineRunner's never suspend.

#include <memory>
#include <span>
#include <vector>

#include "core/cavs/executor.hpp"
#include "core/cavs/graph_metrics.hpp"
#include "core/common/task.hpp"

namespace taihu::cavs {

class BatchRunner {
 public:
  virtual ~BatchRunner() = default;

  // Forward + backward; gradients are loss_scale * d(summed loss).
  // The graphs must outlive the task.
  virtual async::Task<GraphMetrics> train(std::span<const InputGraph> graphs, float loss_scale) = 0;
  // Forward only (loss and predictions).
  virtual async::Task<GraphMetrics> evaluate(std::span<const InputGraph> graphs) = 0;
  // Zeroes what train() added to the parameter diffs since the last call:
  // every dense diff, but of an embedding table only the rows those batches
  // touched (the table can be 100x the rest of the model). Call it after the
  // solver step; the diffs must have been zero before (zero_diffs() once at
  // the start).
  virtual void zero_gradients() = 0;
  // The embedding rows zero_gradients() would clear, per table, over every
  // executor: the only rows of those tables with a gradient, for
  // Solver::step. Call it before zero_gradients().
  virtual std::vector<RowSparseGradient> sparse_gradients() const = 0;
  // Executor counters summed over every executor since the last reset.
  virtual ExecutorStats stats() const = 0;
  virtual void reset_stats() = 0;
};

class InlineRunner final : public BatchRunner {
 public:
  InlineRunner(VertexFunction& f, ExecutorOptions options = {});

  async::Task<GraphMetrics> train(std::span<const InputGraph> graphs, float loss_scale) override;
  async::Task<GraphMetrics> evaluate(std::span<const InputGraph> graphs) override;
  void zero_gradients() override { executor_.zero_gradients(); }
  std::vector<RowSparseGradient> sparse_gradients() const override { return executor_.sparse_gradients(); }
  ExecutorStats stats() const override { return executor_.stats(); }
  void reset_stats() override { executor_.stats().reset(); }

 private:
  Executor executor_;
};

}  // namespace taihu::cavs
