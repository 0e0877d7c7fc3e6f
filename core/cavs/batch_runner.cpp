#include "core/cavs/batch_runner.hpp"

namespace taihu::cavs {

InlineRunner::InlineRunner(VertexFunction& f, ExecutorOptions options) : executor_(f, options) {}

async::Task<GraphMetrics> InlineRunner::train(std::span<const InputGraph> graphs, float loss_scale) {
  executor_.set_inputs(graphs);
  executor_.set_loss_scale(loss_scale);
  executor_.run_forward_backward();
  GraphMetrics metrics;
  metrics.add(executor_, graphs);
  co_return metrics;
}

async::Task<GraphMetrics> InlineRunner::evaluate(std::span<const InputGraph> graphs) {
  executor_.set_inputs(graphs);
  executor_.run_forward();
  GraphMetrics metrics;
  metrics.add(executor_, graphs);
  co_return metrics;
}

}  // namespace taihu::cavs
