// The graph actor runtime (actors/graph): a mini-batch cut into parts and
// run by several vertex-executor actors gives the loss, predictions and
// parameter gradients of one executor running it inline.

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "actors/graph_runtime/graph_runner.hpp"
#include "core/cavs/batch_runner.hpp"
#include "core/cavs/models/tree_lstm.hpp"
#include "core/common/error.hpp"
#include "core/common/random.hpp"
#include "core/graph/expression_tree.hpp"
#include "core/graph/tree_generators.hpp"

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

}  // namespace

TEST_SUITE("graph runtime actors") {
  TEST_CASE("2 and 3 executors: loss, predictions and every gradient equal the inline executor") {
    auto graphs = sst_like(23, 3, 50);
    for (int executors : {2, 3}) {
      CAPTURE(executors);
      cavs::VertexFunction reference = cavs::make_binary_tree_lstm(small_lstm());
      cavs::VertexFunction actors = reference.replica();
      cavs::InlineRunner inline_runner(reference);
      graph::GraphRunnerOptions options;
      options.executors = executors;
      auto runner = graph::make_graph_runner(actors, options);

      const cavs::GraphMetrics a = inline_runner.train(graphs, 0.5f);
      const cavs::GraphMetrics b = runner->train(graphs, 0.5f);
      CHECK(b.loss == doctest::Approx(a.loss).epsilon(1e-5));
      CHECK(b.labelled == a.labelled);
      CHECK(b.correct == a.correct);
      CHECK(b.roots == 23);
      CHECK(b.root_correct == a.root_correct);
      CHECK(b.samples == 23);
      CHECK(max_relative_difference(diffs(actors), diffs(reference)) < 1e-3);

      // A second batch of another size reuses the actors; diffs accumulate.
      auto more = sst_like(5, 4, 50);
      inline_runner.train(more, 1.0f);
      runner->train(more, 1.0f);
      CHECK(max_relative_difference(diffs(actors), diffs(reference)) < 1e-3);

      const cavs::GraphMetrics ea = inline_runner.evaluate(graphs);
      const cavs::GraphMetrics eb = runner->evaluate(graphs);
      CHECK(eb.loss == doctest::Approx(ea.loss).epsilon(1e-5));
      CHECK(eb.correct == ea.correct);
      CHECK(runner->stats().batches >= 3);

      // zero_gradients clears exactly what the two training batches added,
      // although an evaluation ran in between.
      runner->zero_gradients();
      for (const auto& d : diffs(actors))
        for (float x : d) REQUIRE(x == 0.0f);
    }
  }

  TEST_CASE("fewer graphs than executors, and a single-vertex graph") {
    cavs::VertexFunction f = cavs::make_binary_tree_lstm(small_lstm());
    graph::GraphRunnerOptions options;
    options.executors = 4;
    auto runner = graph::make_graph_runner(f, options);
    std::vector<InputGraph> graphs;
    graphs.emplace_back();
    graphs.back().add_leaf(3, 1);
    const auto m = runner->train(graphs, 1.0f);
    CHECK(m.samples == 1);
    CHECK(m.labelled == 1);
    CHECK(std::isfinite(m.loss));
  }

  TEST_CASE("a malformed graph fails the batch with the sample and vertex, without hanging") {
    cavs::VertexFunction f = cavs::make_binary_tree_lstm(small_lstm());
    graph::GraphRunnerOptions options;
    options.executors = 2;
    options.step_timeout = 30;
    auto runner = graph::make_graph_runner(f, options);
    auto graphs = sst_like(6, 5, 50);
    graphs[4].set_token(0, 999);  // outside the vocabulary of 50
    std::string message;
    try {
      runner->train(graphs, 1.0f);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.find("999") != std::string::npos);
    CHECK(message.find("sample 4, vertex 0") != std::string::npos);  // numbered within the whole mini-batch
  }
}

}  // namespace taihu
