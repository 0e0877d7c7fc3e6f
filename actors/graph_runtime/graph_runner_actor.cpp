#include "actors/graph_runtime/graph_runner.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>  // the destructor waits for the actors

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "actors/ask.hpp"
#include "actors/exception_reason.hpp"
#include "actors/graph_runtime/graph_batcher.hpp"
#include "actors/graph_runtime/vertex_executor.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/cavs/batch_split.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/kernels/compute_threads.hpp"
#include "messages/type_ids.hpp"

namespace taihu::graph {
namespace {

class ActorGraphRunner final : public GraphRunner {
 public:
  ActorGraphRunner(caf::actor_system& system, cavs::VertexFunction& f, const GraphRunnerOptions& options)
      : system_(system),
        timeout_(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::duration<double>(options.step_timeout))) {
    // Parts share the parameters' diffs; only the weight-gradient step may
    // write them (executor.hpp), which the batcher serialises.
    require(options.executors <= 1 || options.executor.lazy_weight_gradients,
            "graph runtime: {} executors need lazy weight gradients", options.executors);
    for (int k = 0; k < std::max(1, options.executors); ++k) {
      parts_.push_back(std::make_shared<ExecutorPart>(f, options.executor));
      executors_.push_back(spawn_vertex_executor(system_, parts_.back()));
    }
    batcher_ = spawn_graph_batcher(system_, executors_);
  }

  // Waits for the actors to be gone: after a timed-out batch a part may
  // still run, reading the vertex function, which may go with the runner.
  ~ActorGraphRunner() override {
    caf::scoped_actor self{system_};
    self->send_exit(batcher_, caf::exit_reason::user_shutdown);
    for (auto& e : executors_) self->send_exit(e, caf::exit_reason::user_shutdown);
    self->wait_for(batcher_, executors_);
  }

  async::Task<cavs::GraphMetrics> train(std::span<const InputGraph> graphs, float loss_scale) override {
    return run(graphs, loss_scale, true);
  }
  async::Task<cavs::GraphMetrics> evaluate(std::span<const InputGraph> graphs) override {
    return run(graphs, 1.0f, false);
  }

  // Between batches the executors are idle, and the reply to the last batch
  // ordered their writes before this thread's reads.
  void zero_gradients() override {
    for (auto& p : parts_) p->executor.zero_gradients();
  }

  std::vector<RowSparseGradient> sparse_gradients() const override {
    std::vector<RowSparseGradient> all;
    for (const auto& p : parts_) merge_sparse_gradients(all, p->executor.sparse_gradients());
    return all;
  }

  cavs::ExecutorStats stats() const override {
    cavs::ExecutorStats total;
    for (const auto& p : parts_) total += p->executor.stats();
    return total;
  }
  void reset_stats() override {
    for (auto& p : parts_) p->executor.stats().reset();
    runtime_stats_ = {};
  }
  GraphRuntimeStats runtime_stats() const override { return runtime_stats_; }

 private:
  // Hands each executor its part; returns how many parts there are.
  std::uint32_t hand_out(std::span<const InputGraph> graphs, float loss_scale) {
    const auto ranges = cavs::split_by_vertices(graphs, parts_.size());
    for (std::size_t k = 0; k < ranges.size(); ++k) {
      ExecutorPart& part = *parts_[k];
      const auto begin = graphs.begin() + static_cast<std::ptrdiff_t>(ranges[k].begin);
      part.graphs.assign(begin, begin + static_cast<std::ptrdiff_t>(ranges[k].size()));
      part.first_sample = static_cast<int32_t>(ranges[k].begin);
      part.loss_scale = loss_scale;
    }
    return static_cast<std::uint32_t>(ranges.size());
  }

  // Suspends the caller's task while the batcher and executors run the batch.
  async::Task<cavs::GraphMetrics> run(std::span<const InputGraph> graphs, float loss_scale, bool backward) {
    cavs::GraphMetrics total;
    if (!failure_.empty()) throw Error("graph runtime: stopped after an earlier failure: " + failure_);
    if (graphs.empty()) co_return total;
    const std::uint32_t parts = hand_out(graphs, loss_scale);
    const caf::expected<msg::GraphBatchDone> done =
        co_await ask<msg::GraphBatchDone>(system_, batcher_, timeout_, msg::RunGraphBatch{++batch_, parts, backward});
    if (!done) {
      const caf::error& e = done.error();
      const bool timed_out =
          e.category() == caf::atom("system") && e.code() == static_cast<uint8_t>(caf::sec::request_timeout);
      failure_ = timed_out ? fmt::format("a mini-batch took longer than step_timeout = {} s",
                                         std::chrono::duration<double>(timeout_).count())
                           : reason_text(system_, e);
      throw Error("graph runtime: " + failure_);
    }
    ++runtime_stats_.batches;
    // the batcher counts them all: the request, the parts' messages, the answer
    runtime_stats_.messages += done->messages;
    for (std::uint32_t k = 0; k < parts; ++k) total.merge(parts_[k]->metrics);
    co_return total;
  }

  caf::actor_system& system_;
  std::chrono::milliseconds timeout_;
  std::vector<std::shared_ptr<ExecutorPart>> parts_;
  std::vector<VertexExecutorActor> executors_;
  GraphBatcherActor batcher_;
  std::uint64_t batch_ = 0;
  GraphRuntimeStats runtime_stats_;
  std::string failure_;  // set once a batch failed: the runner takes no more
};

}  // namespace

std::unique_ptr<GraphRunner> make_graph_runner(caf::actor_system& system, cavs::VertexFunction& f,
                                               const GraphRunnerOptions& options) {
  return std::make_unique<ActorGraphRunner>(system, f, options);
}

GraphRunnerOptions read_graph_runner_options(const config::Document& doc) {
  const config::Section& root = doc.root();
  GraphRunnerOptions options;
  const int executors = root.get_or<int>("executors", 0);
  if (executors < 0) throw root.error("executors", "must be >= 0 (0 = cores / BLAS threads)");
  options.executors = executors > 0 ? executors : std::max(1, blas::available_cores() / std::max(1, compute_threads()));
  options.step_timeout = root.get_or<double>("step_timeout", 600.0);
  if (!(options.step_timeout > 0)) throw root.error("step_timeout", "must be positive (seconds)");
  return options;
}

}  // namespace taihu::graph
