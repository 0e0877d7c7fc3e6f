#include "actors/graph_runtime/graph_runner.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "actors/exception_reason.hpp"
#include "actors/graph_runtime/graph_batcher.hpp"
#include "actors/graph_runtime/vertex_executor.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "messages/type_ids.hpp"

namespace taihu::graph {
namespace {

class ActorGraphRunner final : public cavs::BatchRunner {
 public:
  ActorGraphRunner(cavs::VertexFunction& f, const GraphRunnerOptions& options)
      : timeout_(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::duration<double>(options.step_timeout))),
        system_(configure(config_)) {
    // Parts share the parameters' diffs; only the weight-gradient step may
    // write them (executor.hpp), which the batcher serialises.
    require(options.executors <= 1 || options.executor.lazy_weight_gradients,
            "graph runtime: {} executors need lazy weight gradients", options.executors);
    std::vector<caf::actor> executors;
    for (int k = 0; k < std::max(1, options.executors); ++k) {
      parts_.push_back(std::make_shared<ExecutorPart>(f, options.executor));
      executors.push_back(spawn_vertex_executor(system_, parts_.back()));
    }
    executors_ = executors;
    batcher_ = spawn_graph_batcher(system_, std::move(executors));
  }

  ~ActorGraphRunner() override {
    caf::anon_send_exit(batcher_, caf::exit_reason::user_shutdown);
    for (auto& e : executors_) caf::anon_send_exit(e, caf::exit_reason::user_shutdown);
  }

  cavs::GraphMetrics train(std::span<const InputGraph> graphs, float loss_scale) override {
    return run(graphs, loss_scale, true);
  }
  cavs::GraphMetrics evaluate(std::span<const InputGraph> graphs) override { return run(graphs, 1.0f, false); }

  // Between batches the executors are idle, and the reply to the last batch
  // ordered their writes before this thread's reads.
  void zero_gradients() override {
    for (auto& p : parts_) p->executor.zero_gradients();
  }

  cavs::ExecutorStats stats() const override {
    cavs::ExecutorStats total;
    for (const auto& p : parts_) total += p->executor.stats();
    return total;
  }
  void reset_stats() override {
    for (auto& p : parts_) p->executor.stats().reset();
  }

 private:
  static caf::actor_system_config& configure(caf::actor_system_config& cfg) {
    // The executors are detached (own threads); the batcher needs one
    // scheduler thread, and more would only spin on 2 cores.
    cfg.add_message_types<caf::id_block::taihu>();
    cfg.set("scheduler.max-threads", 1);
    cfg.set("scheduler.policy", caf::atom("sharing"));
    return cfg;
  }

  // Cuts the batch into contiguous parts of about equal vertex counts.
  std::uint32_t split(std::span<const InputGraph> graphs) {
    int64_t total = 0;
    for (const auto& g : graphs) total += g.num_vertices();
    const auto k = static_cast<int64_t>(std::min(parts_.size(), graphs.size()));
    size_t begin = 0;
    int64_t seen = 0;
    for (int64_t p = 0; p < k; ++p) {
      size_t end = begin;
      const int64_t target = total * (p + 1) / k;
      const size_t must_leave = static_cast<size_t>(k - p - 1);  // one graph for each later part
      while (end < graphs.size() - must_leave && (end == begin || seen + graphs[end].num_vertices() / 2 <= target)) {
        seen += graphs[end].num_vertices();
        ++end;
      }
      if (p == k - 1) {
        for (; end < graphs.size(); ++end) seen += graphs[end].num_vertices();
      }
      parts_[static_cast<size_t>(p)]->first_sample = static_cast<int32_t>(begin);
      auto& part = parts_[static_cast<size_t>(p)]->graphs;
      part.assign(graphs.begin() + static_cast<std::ptrdiff_t>(begin), graphs.begin() + static_cast<std::ptrdiff_t>(end));
      begin = end;
    }
    return static_cast<std::uint32_t>(k);
  }

  cavs::GraphMetrics run(std::span<const InputGraph> graphs, float loss_scale, bool backward) {
    cavs::GraphMetrics total;
    if (!failure_.empty()) throw Error("graph runtime: stopped after an earlier failure: " + failure_);
    if (graphs.empty()) return total;
    const std::uint32_t parts = split(graphs);
    for (std::uint32_t k = 0; k < parts; ++k) parts_[k]->loss_scale = loss_scale;
    caf::scoped_actor self{system_};
    std::string failure;
    self->request(batcher_, timeout_, msg::RunGraphBatch{++batch_, parts, backward})
        .receive([](bool) {},
                 [&](caf::error& e) {
                   failure = e.category() == caf::atom("system") && e.code() == static_cast<uint8_t>(caf::sec::request_timeout)
                                 ? fmt::format("a mini-batch took longer than step_timeout = {} s",
                                               std::chrono::duration<double>(timeout_).count())
                                 : reason_text(system_, e);
                 });
    if (!failure.empty()) {
      failure_ = failure;
      throw Error("graph runtime: " + failure);
    }
    for (std::uint32_t k = 0; k < parts; ++k) total.merge(parts_[k]->metrics);
    return total;
  }

  std::chrono::milliseconds timeout_;
  caf::actor_system_config config_;
  caf::actor_system system_;
  std::vector<std::shared_ptr<ExecutorPart>> parts_;
  std::vector<caf::actor> executors_;
  caf::actor batcher_;
  std::uint64_t batch_ = 0;
  std::string failure_;  // set once a batch failed: the executors are gone
};

}  // namespace

std::unique_ptr<cavs::BatchRunner> make_graph_runner(cavs::VertexFunction& f, const GraphRunnerOptions& options) {
  return std::make_unique<ActorGraphRunner>(f, options);
}

GraphRunnerOptions read_graph_runner_options(const config::Document& doc) {
  const config::Section& root = doc.root();
  GraphRunnerOptions options;
  const int executors = root.get_or<int>("executors", 0);
  if (executors < 0) throw root.error("executors", "must be >= 0 (0 = cores / BLAS threads)");
  options.executors = executors > 0 ? executors : std::max(1, blas::available_cores() / std::max(1, blas::threads()));
  options.step_timeout = root.get_or<double>("step_timeout", 600.0);
  if (!(options.step_timeout > 0)) throw root.error("step_timeout", "must be positive (seconds)");
  return options;
}

}  // namespace taihu::graph
