// The graph actor runtime (actors/graph_runtime/): a mini-batch cut into parts
// and run by vertex-executor actors against inline executors.
//
// Bit for bit, by construction:
//  - 1 executor and cavs::InlineRunner: the same steps of one executor in the
//    same order;
//  - N executors and N inline executors running the same parts
//    (cavs::split_by_vertices) one after another in part order: a part reads
//    only the weights until it adds its weight gradients, and the batcher lets
//    the parts add them in part order. Loss and metrics merge in part order.
// Within tolerance: N executors and one InlineRunner over the whole batch. The
// same per-vertex terms are summed in another association (each part's
// weight-gradient GEMM over its own rows, then the parts; the loss per part,
// then the parts), so float32 rounding differs: here the gradients by up to
// 1.1e-5 relative (7e-6 on 2 executors), the loss not at all; the test allows
// 1e-4 and 1e-6.
//
// The computing executors run with flush-to-zero (their threads set it), so
// the references run with it too.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "actors/graph_runtime/graph_runner.hpp"
#include "core/cavs/batch_runner.hpp"
#include "core/cavs/batch_split.hpp"
#include "core/cavs/models/tree_lstm.hpp"
#include "core/common/error.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/common/sync_wait.hpp"
#include "core/common/random.hpp"
#include "core/graph/tree_generators.hpp"
#include "tests/support/actor_fixture.hpp"

namespace taihu {
namespace {

std::vector<InputGraph> sst_like(int n, uint64_t seed, int32_t vocabulary) {
  Rng rng(seed);
  RandomTreeOptions options;
  options.vocabulary_size = vocabulary;
  options.num_classes = 5;
  std::vector<InputGraph> graphs;
  for (int i = 0; i < n; ++i) graphs.push_back(sst_like_tree(rng, options));
  return graphs;
}

cavs::TreeLstmOptions small_lstm() {
  cavs::TreeLstmOptions o;
  o.vocabulary = 50;
  o.embedding = 12;
  o.hidden = 8;
  o.classes = 5;
  o.seed = 7;
  return o;
}

std::vector<std::vector<float>> diffs(cavs::VertexFunction& f) {
  std::vector<std::vector<float>> out;
  for (auto& p : f.params()) {
    const float* d = p.blob->diff().ptr();
    out.emplace_back(d, d + p.blob->count());
  }
  return out;
}

double max_relative_difference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j)
      worst = std::max(worst, std::abs(double(a[i][j]) - b[i][j]) / std::max(1e-3, std::abs(double(b[i][j]))));
  return worst;
}

void check_same_metrics(const cavs::GraphMetrics& a, const cavs::GraphMetrics& b) {
  CHECK(a.loss == b.loss);  // bit for bit
  CHECK(a.labelled == b.labelled);
  CHECK(a.correct == b.correct);
  CHECK(a.roots == b.roots);
  CHECK(a.root_correct == b.root_correct);
  CHECK(a.samples == b.samples);
  CHECK(a.vertices == b.vertices);
}

// This thread computes with flush-to-zero, as the executor actors do, while
// the object lives.
class FlushToZeroScope {
 public:
  FlushToZeroScope() { enable_flush_to_zero(); }
  ~FlushToZeroScope() { set_float_mode(saved_); }

 private:
  unsigned saved_ = float_mode();
};

// The reference for N executors: N inline executors over one function, each
// running one part of split_by_vertices, one after another in part order.
class PartsInOrder final : public cavs::BatchRunner {
 public:
  PartsInOrder(cavs::VertexFunction& f, size_t parts) {
    for (size_t k = 0; k < parts; ++k) executors_.push_back(std::make_unique<cavs::Executor>(f));
  }
  async::Task<cavs::GraphMetrics> train(std::span<const InputGraph> graphs, float loss_scale) override {
    co_return run(graphs, loss_scale, true);
  }
  async::Task<cavs::GraphMetrics> evaluate(std::span<const InputGraph> graphs) override {
    co_return run(graphs, 1.0f, false);
  }
  void zero_gradients() override {
    for (auto& e : executors_) e->zero_gradients();
  }
  std::vector<RowSparseGradient> sparse_gradients() const override {
    std::vector<RowSparseGradient> all;
    for (const auto& e : executors_) merge_sparse_gradients(all, e->sparse_gradients());
    return all;
  }
  cavs::ExecutorStats stats() const override { return {}; }
  void reset_stats() override {}

 private:
  cavs::GraphMetrics run(std::span<const InputGraph> graphs, float loss_scale, bool backward) {
    FlushToZeroScope ftz;
    cavs::GraphMetrics total;
    const auto ranges = cavs::split_by_vertices(graphs, executors_.size());
    for (size_t k = 0; k < ranges.size(); ++k) {
      cavs::Executor& e = *executors_[k];
      const auto part = graphs.subspan(ranges[k].begin, ranges[k].size());
      e.set_inputs(part, static_cast<int32_t>(ranges[k].begin));
      e.set_loss_scale(loss_scale);
      e.run_forward();
      cavs::GraphMetrics metrics;
      metrics.add(e, part);
      if (backward) e.run_backward();
      total.merge(metrics);
    }
    return total;
  }

  std::vector<std::unique_ptr<cavs::Executor>> executors_;
};

// A Tree-LSTM for the runtime and a replica of it (the same weights) for the
// reference, both with zero diffs.
struct TwinFunctions {
  cavs::VertexFunction reference = cavs::make_binary_tree_lstm(small_lstm());
  cavs::VertexFunction f = reference.replica();
  TwinFunctions() {
    reference.zero_diffs();
    f.zero_diffs();
  }
};

// Training twice (the second batch adds to the first's diffs), evaluating, and
// zeroing the gradients: metrics and diffs equal after every step.
void check_bit_for_bit(cavs::BatchRunner& runner, cavs::BatchRunner& reference_runner, TwinFunctions& twins) {
  cavs::VertexFunction& f = twins.f;
  const auto graphs = sst_like(23, 3, 50);
  const auto more = sst_like(5, 4, 50);
  check_same_metrics(async::sync_wait(runner.train(graphs, 0.5f)),
                     async::sync_wait(reference_runner.train(graphs, 0.5f)));
  CHECK(diffs(f) == diffs(twins.reference));
  check_same_metrics(async::sync_wait(runner.train(more, 1.0f)), async::sync_wait(reference_runner.train(more, 1.0f)));
  CHECK(diffs(f) == diffs(twins.reference));
  check_same_metrics(async::sync_wait(runner.evaluate(graphs)), async::sync_wait(reference_runner.evaluate(graphs)));
  runner.zero_gradients();
  for (const auto& d : diffs(f))
    for (float x : d) REQUIRE(x == 0.0f);
}

graph::GraphRunnerOptions with_executors(int executors) {
  graph::GraphRunnerOptions options;
  options.executors = executors;
  options.step_timeout = 60;
  return options;
}

}  // namespace

TEST_SUITE("graph runtime actors") {
  TEST_CASE_FIXTURE(testing::ActorFixture,
                    "1 executor: metrics and every gradient are the inline runner's, bit for bit") {
    TwinFunctions twins;
    cavs::InlineRunner inline_runner(twins.reference);
    auto runner = graph::make_graph_runner(system, twins.f, with_executors(1));
    FlushToZeroScope ftz;  // for the inline runner, on this thread
    check_bit_for_bit(*runner, inline_runner, twins);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture,
                    "2 and 3 executors: bit for bit inline executors running the same parts in part order") {
    for (int executors : {2, 3}) {
      CAPTURE(executors);
      TwinFunctions twins;
      PartsInOrder parts_in_order(twins.reference, static_cast<size_t>(executors));
      auto runner = graph::make_graph_runner(system, twins.f, with_executors(executors));
      check_bit_for_bit(*runner, parts_in_order, twins);
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "2 and 3 executors: one inline executor's results up to summation order") {
    const auto graphs = sst_like(23, 3, 50);
    for (int executors : {2, 3}) {
      CAPTURE(executors);
      TwinFunctions twins;
      cavs::InlineRunner inline_runner(twins.reference);
      auto runner = graph::make_graph_runner(system, twins.f, with_executors(executors));
      FlushToZeroScope ftz;
      const cavs::GraphMetrics a = async::sync_wait(inline_runner.train(graphs, 0.5f));
      const cavs::GraphMetrics b = async::sync_wait(runner->train(graphs, 0.5f));
      CHECK(b.loss == doctest::Approx(a.loss).epsilon(1e-6));
      CHECK(b.labelled == a.labelled);
      CHECK(b.correct == a.correct);  // the same argmaxes
      CHECK(b.roots == a.roots);
      CHECK(b.root_correct == a.root_correct);
      CHECK(b.samples == 23);
      CHECK(max_relative_difference(diffs(twins.f), diffs(twins.reference)) < 1e-4);
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "messages per mini-batch: 4 per part and 2 per batch, whatever the rounds") {
    // The runtime this replaced sent a message per step and round and
    // answered each: 2 (2R + 7) per part of R rounds, plus 2 — 186 for this
    // batch on 2 executors, 252 on 3.
    const auto graphs = sst_like(23, 3, 50);
    for (int executors : {1, 2, 3}) {
      CAPTURE(executors);
      cavs::VertexFunction f = cavs::make_binary_tree_lstm(small_lstm());
      auto runner = graph::make_graph_runner(system, f, with_executors(executors));
      async::sync_wait(runner->train(graphs, 1.0f));
      CHECK(runner->runtime_stats().batches == 1);
      CHECK(runner->runtime_stats().messages == 4 * executors + 2);
      CHECK(runner->stats().rounds > 10 * executors);  // many rounds, yet no message for any
      runner->reset_stats();
      async::sync_wait(runner->evaluate(graphs));  // no weight-gradient turns
      CHECK(runner->runtime_stats().messages == 2 * executors + 2);
    }
    // Fewer graphs than executors: only as many parts as graphs.
    cavs::VertexFunction f = cavs::make_binary_tree_lstm(small_lstm());
    auto runner = graph::make_graph_runner(system, f, with_executors(4));
    async::sync_wait(runner->train(std::span<const InputGraph>(graphs).first(2), 1.0f));
    CHECK(runner->runtime_stats().messages == 4 * 2 + 2);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "fewer graphs than executors, and a single-vertex graph") {
    cavs::VertexFunction f = cavs::make_binary_tree_lstm(small_lstm());
    auto runner = graph::make_graph_runner(system, f, with_executors(4));
    std::vector<InputGraph> graphs;
    graphs.emplace_back();
    graphs.back().add_leaf(3, 1);
    const auto m = async::sync_wait(runner->train(graphs, 1.0f));
    CHECK(m.samples == 1);
    CHECK(m.labelled == 1);
    CHECK(std::isfinite(m.loss));
  }

  TEST_CASE_FIXTURE(testing::ActorFixture,
                    "an executor that throws fails the batch with its message; the runner takes no more batches") {
    // The bad sample in the first part (later parts wait for a turn that never
    // comes), in the middle one and in the last one.
    for (size_t bad : {0u, 4u, 8u}) {
      CAPTURE(bad);
      cavs::VertexFunction f = cavs::make_binary_tree_lstm(small_lstm());
      auto runner = graph::make_graph_runner(system, f, with_executors(3));
      auto graphs = sst_like(9, 5, 50);
      graphs[bad].set_token(0, 999);  // outside the vocabulary of 50
      std::string message;
      try {
        async::sync_wait(runner->train(graphs, 1.0f));
      } catch (const Error& e) {
        message = e.what();
      }
      CAPTURE(message);
      CHECK(message.find("999") != std::string::npos);
      // Numbered within the whole mini-batch, not within the part.
      CHECK(message.find(fmt::format("sample {}, vertex 0", bad)) != std::string::npos);

      graphs[bad].set_token(0, 1);
      std::string refused;
      try {
        async::sync_wait(runner->train(graphs, 1.0f));
      } catch (const Error& e) {
        refused = e.what();
      }
      CHECK(refused.find("stopped after an earlier failure") != std::string::npos);
      CHECK(refused.find("999") != std::string::npos);
    }
  }

  TEST_CASE("on the caller's system, one scheduler thread shared with other actors, called from a detached actor") {
    // A data-parallel worker is a detached actor that owns a runner and calls
    // train() on its own thread. The system has one scheduler thread, which
    // the batcher shares with another actor.
    testing::ActorTestConfig config{1};
    caf::actor_system system{config};
    const auto graphs = sst_like(23, 3, 50);

    TwinFunctions twins;
    PartsInOrder parts_in_order(twins.reference, 2);
    const cavs::GraphMetrics expected = async::sync_wait(parts_in_order.train(graphs, 1.0f));

    auto counter = system.spawn([]() -> caf::behavior {
      auto count = std::make_shared<int>(0);
      return {
          [=](int x) { *count += x; },
          [=](caf::get_atom) { return *count; },
      };
    });
    caf::scoped_actor self{system};
    const size_t running_before = system.registry().running();
    size_t running_with_runner = 0;
    cavs::GraphMetrics got;
    auto worker = system.spawn<caf::detached>([&](caf::event_based_actor* self) -> caf::behavior {
      return {[&, self](int batches) {
        auto runner = graph::make_graph_runner(self->system(), twins.f, with_executors(2));
        running_with_runner = self->system().registry().running();
        for (int b = 0; b < batches; ++b) {
          self->send(counter, 1);
          got = async::sync_wait(runner->train(graphs, 1.0f));
          if (b + 1 < batches) runner->zero_gradients();
        }
        return batches;
      }};
    });
    self->request(worker, std::chrono::seconds(60), 2)
        .receive([](int batches) { CHECK(batches == 2); },
                 [](caf::error& e) { FAIL("worker failed: " << to_string(e)); });
    check_same_metrics(got, expected);
    CHECK(diffs(twins.f) == diffs(twins.reference));
    // The worker, and the runner's 2 executors and batcher: in this system.
    CHECK(running_with_runner == running_before + 4);
    self->request(counter, std::chrono::seconds(10), caf::get_atom_v)
        .receive([](int count) { CHECK(count == 2); },
                 [](caf::error& e) { FAIL("counter failed: " << to_string(e)); });
    self->send_exit(worker, caf::exit_reason::user_shutdown);
    self->send_exit(counter, caf::exit_reason::user_shutdown);
  }
}

}  // namespace taihu
