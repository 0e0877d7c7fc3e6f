#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/cavs/executor.hpp"
#include "core/cavs/function.hpp"
#include "core/cavs/model_config.hpp"
#include "core/cavs/models/chain_lm.hpp"
#include "core/cavs/models/gated_graph.hpp"
#include "core/cavs/models/tree_fc.hpp"
#include "core/cavs/models/tree_gru.hpp"
#include "core/cavs/models/tree_lstm.hpp"
#include "core/common/error.hpp"
#include <fmt/format.h>
#include "core/graph/expression_tree.hpp"
#include "core/graph/tree_generators.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;
using namespace taihu::cavs;

namespace {

std::string error_of(auto&& f) { return taihu::testing::error_message<Error>(f); }

std::vector<InputGraph> random_trees(uint64_t seed, int count, int32_t vocabulary, int32_t classes,
                                     int32_t max_leaves = 9) {
  Rng rng(seed);
  RandomTreeOptions options;
  options.vocabulary_size = vocabulary;
  options.num_classes = classes;
  std::vector<InputGraph> trees;
  for (int t = 0; t < count; ++t) {
    InputGraph g = random_binary_tree(rng, 1 + static_cast<int32_t>(rng.below(static_cast<uint64_t>(max_leaves))), options);
    // Some inner vertices get tokens too (rows with and without tokens interleave).
    for (int32_t v = 0; v < g.num_vertices(); ++v)
      if (!g.is_leaf(v) && rng.below(2) == 0) g.set_token(v, static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary))));
    trees.push_back(std::move(g));
  }
  return trees;
}

// Trees of any arity: repeatedly give 1..max_arity pending roots one parent.
std::vector<InputGraph> random_nary_trees(uint64_t seed, int count, int32_t max_arity, int32_t vocabulary,
                                          int32_t classes) {
  Rng rng(seed);
  std::vector<InputGraph> trees;
  for (int t = 0; t < count; ++t) {
    InputGraph g;
    std::vector<int32_t> pending;
    const int leaves = 1 + static_cast<int>(rng.below(8));
    for (int l = 0; l < leaves; ++l)
      pending.push_back(g.add_leaf(static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary))),
                                   static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)))));
    while (pending.size() > 1) {
      const size_t k = std::min(pending.size(), 1 + static_cast<size_t>(rng.below(static_cast<uint64_t>(max_arity))));
      std::vector<int32_t> kids;
      for (size_t i = 0; i < k; ++i) {
        const size_t pick = static_cast<size_t>(rng.below(pending.size()));
        kids.push_back(pending[pick]);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(pick));
      }
      const int32_t token = rng.below(2) ? static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary))) : InputGraph::none;
      pending.push_back(g.add_vertex(kids, static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes))), token));
    }
    trees.push_back(std::move(g));
  }
  return trees;
}

// DAGs: every vertex picks up to 3 distinct earlier vertices as children, so
// many vertices have several parents; some vertices are unlabelled.
std::vector<InputGraph> random_dags(uint64_t seed, int count, int32_t vocabulary, int32_t classes) {
  Rng rng(seed);
  std::vector<InputGraph> dags;
  for (int t = 0; t < count; ++t) {
    InputGraph g;
    const int n = 1 + static_cast<int>(rng.below(10));
    for (int v = 0; v < n; ++v) {
      std::vector<int32_t> kids;
      const int k = v == 0 ? 0 : static_cast<int>(rng.below(4));
      for (int i = 0; i < k; ++i) {
        const auto c = static_cast<int32_t>(rng.below(static_cast<uint64_t>(v)));
        if (std::find(kids.begin(), kids.end(), c) == kids.end()) kids.push_back(c);
      }
      const int32_t label = rng.below(4) == 0 ? InputGraph::none : static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
      g.add_vertex(kids, label, static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary))));
    }
    dags.push_back(std::move(g));
  }
  return dags;
}

std::vector<InputGraph> random_sentences(uint64_t seed, int count, int32_t vocabulary, int max_length) {
  Rng rng(seed);
  std::vector<InputGraph> chains;
  for (int t = 0; t < count; ++t) {
    std::vector<int32_t> tokens(2 + rng.below(static_cast<uint64_t>(max_length - 1)));
    for (auto& token : tokens) token = static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary)));
    chains.push_back(language_model_chain(tokens));
  }
  return chains;
}

struct Result {
  double loss = 0;
  int64_t loss_vertices = 0;
  std::vector<std::vector<float>> grads;  // per param
  std::vector<int32_t> predictions;       // by (sample, vertex) order
};

Result run(VertexFunction& f, const ExecutorOptions& options, const std::vector<InputGraph>& graphs) {
  f.zero_diffs();
  Executor ex(f, options);
  ex.set_inputs(graphs);
  ex.run_forward_backward();
  Result r;
  r.loss = ex.loss();
  r.loss_vertices = ex.loss_vertices();
  for (const auto& p : f.params()) r.grads.emplace_back(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count());
  for (int32_t s = 0; s < static_cast<int32_t>(graphs.size()); ++s)
    for (int32_t v = 0; v < graphs[static_cast<size_t>(s)].num_vertices(); ++v) r.predictions.push_back(ex.prediction(s, v));
  return r;
}

void check_same(const Result& a, const Result& b, const VertexFunction& f, const std::string& what) {
  INFO(what);
  CHECK(a.loss == doctest::Approx(b.loss).epsilon(1e-5));
  CHECK(a.loss_vertices == b.loss_vertices);
  CHECK(a.predictions == b.predictions);
  for (size_t p = 0; p < a.grads.size(); ++p) {
    float max_abs = 0, max_diff = 0;
    for (size_t i = 0; i < a.grads[p].size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(b.grads[p][i]));
      max_diff = std::max(max_diff, std::fabs(a.grads[p][i] - b.grads[p][i]));
    }
    INFO("param " << f.params()[p].name << " max |grad| " << max_abs << " max diff " << max_diff);
    CHECK(max_diff <= 1e-4f * std::max(1.0f, max_abs));
    CHECK(max_abs > 0.0f);  // every parameter gets a gradient from this data
  }
}

std::vector<std::pair<std::string, ExecutorOptions>> variants() {
  std::vector<std::pair<std::string, ExecutorOptions>> v;
  v.emplace_back("batched", ExecutorOptions{});
  ExecutorOptions o;
  o.eager_lazy = false;
  v.emplace_back("batched, no eager/lazy", o);
  o = {};
  o.lazy_weight_gradients = false;
  v.emplace_back("batched, eager weight gradients", o);
  o = {};
  o.fuse_elementwise = false;
  o.merge_matmuls = false;
  v.emplace_back("batched, no fusion, no merge", o);
  o = {};
  o.skip_zero_rows = false;
  v.emplace_back("batched, no zero-row skipping", o);
  o = {};
  o.assign_gradients = false;
  v.emplace_back("batched, accumulated gradients", o);
  v.emplace_back("serial", ExecutorOptions::serial());
  o = ExecutorOptions::serial();
  o.lazy_weight_gradients = true;
  v.emplace_back("serial, lazy weight gradients", o);
  return v;
}

// Batched (every variant) against one vertex at a time, all optimisations off.
void check_against_reference(VertexFunction& f, const std::vector<InputGraph>& graphs) {
  const Result reference = run(f, ExecutorOptions::reference(), graphs);
  CHECK(reference.loss_vertices > 0);
  for (const auto& [name, options] : variants()) check_same(run(f, options, graphs), reference, f, name);
}

// Central differences of the summed loss against the batched gradients.
void check_finite_differences(VertexFunction& f, const std::vector<InputGraph>& graphs, int per_param = 12,
                              float step = 1e-2f, float tolerance = 2e-2f) {
  const Result analytic = run(f, ExecutorOptions{}, graphs);
  Executor ex(f, ExecutorOptions{});
  ex.set_inputs(graphs);
  auto loss = [&] {
    ex.run_forward();
    return ex.loss();
  };
  Rng rng(99);
  for (size_t p = 0; p < f.params().size(); ++p) {
    Tensor& data = f.params()[p].blob->data();
    // Check elements with the largest gradients plus random ones.
    std::vector<int64_t> picks;
    const auto& g = analytic.grads[p];
    const auto largest = std::max_element(g.begin(), g.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    picks.push_back(largest - g.begin());
    for (int k = 1; k < per_param; ++k) picks.push_back(static_cast<int64_t>(rng.below(static_cast<uint64_t>(data.count()))));
    for (int64_t i : picks) {
      const float saved = data[i];
      data[i] = saved + step;
      const double plus = loss();
      data[i] = saved - step;
      const double minus = loss();
      data[i] = saved;
      const double numeric = (plus - minus) / (2.0 * step);
      const double a = g[static_cast<size_t>(i)];
      INFO("param " << f.params()[p].name << " element " << i << " analytic " << a << " numeric " << numeric);
      CHECK(std::fabs(a - numeric) <= tolerance * std::max({1.0, std::fabs(a), std::fabs(numeric)}));
    }
  }
}

TreeLstmOptions small_lstm(int32_t vocabulary = 12, int32_t classes = 3) {
  TreeLstmOptions o;
  o.vocabulary = vocabulary;
  o.embedding = 5;
  o.hidden = 4;
  o.classes = classes;
  o.embedding_scale = 0.5f;
  o.seed = 7;
  return o;
}

}  // namespace

TEST_SUITE("cavs") {
  TEST_CASE("schedule: every vertex once, after its children; rounds = max height + 1") {
    auto trees = random_trees(1, 9, 10, 3, 12);
    trees.push_back(InputGraph::chain(std::vector<int32_t>{1, 2, 3, 4, 5}));
    trees.push_back(complete_binary_tree(3, 10));
    InputGraph single;
    single.add_leaf(4, 1);
    trees.push_back(single);
    VertexFunction f = make_binary_tree_lstm(small_lstm(10));
    int32_t max_height = 0, vertices = 0;
    for (const auto& t : trees) {
      max_height = std::max(max_height, t.height());
      vertices += t.num_vertices();
    }
    for (LayoutKind kind : {LayoutKind::batched, LayoutKind::serial}) {
      BatchLayout s;
      s.build(f.definition(), trees, kind);
      CHECK(s.num_rows() == vertices);
      CHECK(s.num_rounds() == (kind == LayoutKind::batched ? max_height + 1 : vertices));
      std::vector<int32_t> round_of_row(static_cast<size_t>(s.num_rows()), -1);
      for (int32_t r = 0; r < s.num_rounds(); ++r)
        for (int32_t row = s.round_begin(r); row < s.round_end(r); ++row) {
          CHECK(round_of_row[static_cast<size_t>(row)] == -1);
          round_of_row[static_cast<size_t>(row)] = r;
        }
      std::vector<int> seen(static_cast<size_t>(vertices), 0);
      for (int32_t sample = 0; sample < static_cast<int32_t>(trees.size()); ++sample) {
        const auto& t = trees[static_cast<size_t>(sample)];
        const auto heights = t.heights();
        for (int32_t v = 0; v < t.num_vertices(); ++v) {
          const int32_t row = s.row(sample, v);
          ++seen[static_cast<size_t>(row)];
          CHECK(s.row_sample(row) == sample);
          CHECK(s.row_vertex(row) == v);
          CHECK(s.tokens()[static_cast<size_t>(row)] == t.token(v));
          CHECK(s.labels()[static_cast<size_t>(row)] == t.label(v));
          if (kind == LayoutKind::batched) CHECK(round_of_row[static_cast<size_t>(row)] == heights[static_cast<size_t>(v)]);
          const auto children = t.children(v);
          for (size_t k = 0; k < children.size(); ++k) {
            const int32_t child_row = s.row(sample, children[k]);
            CHECK(s.child(row, static_cast<int32_t>(k)) == child_row);
            CHECK(round_of_row[static_cast<size_t>(child_row)] < round_of_row[static_cast<size_t>(row)]);
            CHECK(s.edge_parents()[static_cast<size_t>(s.child_offsets()[static_cast<size_t>(row)] + static_cast<int32_t>(k))] == row);
          }
          CHECK(s.child(row, static_cast<int32_t>(children.size())) == -1);
          CHECK(s.leaf_round(round_of_row[static_cast<size_t>(row)]) == (kind == LayoutKind::batched ? heights[static_cast<size_t>(v)] == 0 : t.is_leaf(v)));
        }
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    }
  }

  TEST_CASE("schedule: DAGs (shared children) run every vertex once, after all its children") {
    GatedGraphOptions o;
    o.vocabulary = 9;
    o.hidden = 3;
    o.classes = 3;
    VertexFunction f = make_gated_graph_network(o);
    const auto dags = random_dags(91, 12, 9, 3);
    BatchLayout s;
    s.build(f.definition(), dags, LayoutKind::batched);
    int32_t max_height = 0;
    for (const auto& g : dags) max_height = std::max(max_height, g.height());
    CHECK(s.num_rounds() == max_height + 1);
    std::vector<int32_t> round_of_row(static_cast<size_t>(s.num_rows()));
    for (int32_t r = 0; r < s.num_rounds(); ++r)
      for (int32_t row = s.round_begin(r); row < s.round_end(r); ++row) round_of_row[static_cast<size_t>(row)] = r;
    std::vector<int> seen(static_cast<size_t>(s.num_rows()), 0);
    for (int32_t sample = 0; sample < static_cast<int32_t>(dags.size()); ++sample) {
      const auto& g = dags[static_cast<size_t>(sample)];
      for (int32_t v = 0; v < g.num_vertices(); ++v) {
        const int32_t row = s.row(sample, v);
        ++seen[static_cast<size_t>(row)];
        const auto children = g.children(v);
        CHECK(s.child_offsets()[static_cast<size_t>(row) + 1] - s.child_offsets()[static_cast<size_t>(row)] ==
              static_cast<int32_t>(children.size()));
        for (size_t k = 0; k < children.size(); ++k) {
          const int32_t child_row = s.child_rows()[static_cast<size_t>(s.child_offsets()[static_cast<size_t>(row)]) + k];
          CHECK(child_row == s.row(sample, children[k]));
          CHECK(round_of_row[static_cast<size_t>(child_row)] < round_of_row[static_cast<size_t>(row)]);
        }
      }
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }

  TEST_CASE("schedule errors name the sample and the vertex") {
    VertexFunction f = make_binary_tree_lstm(small_lstm(10, 3));
    BatchLayout s;
    std::vector<InputGraph> graphs = random_trees(2, 3, 10, 3);
    InputGraph wide;
    const int32_t a = wide.add_leaf(1), b = wide.add_leaf(2), c = wide.add_leaf(3);
    const std::vector<int32_t> kids{a, b, c};
    wide.add_vertex(kids, 0);
    graphs.push_back(wide);
    CHECK(error_of([&] { s.build(f.definition(), graphs, LayoutKind::batched); }) ==
          "cavs schedule: sample 3, vertex 3 has 3 children, but F allows at most 2");
    graphs.pop_back();
    graphs[1].set_token(0, 10);
    CHECK(error_of([&] { s.build(f.definition(), graphs, LayoutKind::batched); }) ==
          "cavs schedule: sample 1, vertex 0: token 10 is outside the vocabulary [0, 10)");
    graphs[1].set_token(0, 1);
    graphs[2].set_label(graphs[2].num_vertices() - 1, 3);
    CHECK(error_of([&] { s.build(f.definition(), graphs, LayoutKind::serial); }) ==
          fmt::format("cavs schedule: sample 2, vertex {}: label 3 is outside [0, 3)", graphs[2].num_vertices() - 1));
  }

  TEST_CASE("define-time errors name the op and its operands") {
    {
      FunctionBuilder f({.max_arity = 2});
      auto W = f.parameter("W", {4, 3});
      Value g = f.gather(0, 5);
      CHECK(error_of([&] { f.matmul(g, W); }) ==
            "matmul: x is gather #0 [vertex x 5] (slot 0) but W 'W' is [4 x 3], expected [out x 5]");
      CHECK(error_of([&] { f.gather(2, 5); }) ==
            "gather(2): child slot 2 cannot exist, F allows at most 2 children per vertex");
      CHECK(error_of([&] { f.gather(1, 6); }).find("width 6 differs from the width 5") != std::string::npos);
      Value h = f.slice(g, 0, 3);
      CHECK(error_of([&] { f.add(g, h); }) ==
            "add: operands differ: a is gather #0 [vertex x 5] (slot 0), b is slice #1 [vertex x 3]");
      CHECK(error_of([&] { f.slice(g, 3, 3); }) == "slice: columns [3, 6) are outside gather #0 [vertex x 5] (slot 0)");
    }
    {
      FunctionBuilder f;
      CHECK(error_of([&] { f.gather(0, 4); }).find("need a bounded arity") != std::string::npos);
    }
    {  // unused value
      FunctionBuilder f({.max_arity = 1});
      auto W = f.parameter("W", {2, 2});
      Value g = f.gather(0, 2);
      Value unused = f.tanh(g);
      (void)unused;
      Value h = f.sigmoid(f.matmul(g, W));
      f.scatter(h);
      f.push(h);
      CHECK(error_of([&] { std::move(f).build(); }) ==
            "vertex function: the value of tanh #1 [vertex x 2] is never used (scatter, push or use it, or remove it)");
    }
    {  // a built builder is spent
      FunctionBuilder f;
      f.push(f.embedding(f.parameter("E", {4, 3}), f.pull()));
      VertexFunction built = std::move(f).build();
      CHECK(built.params().size() == 1);
      CHECK(error_of([&] { f.pull(); }) == "pull: the builder was already built");
      CHECK(error_of([&] { f.gather_sum(3); }) == "gather_sum: the builder was already built");
    }
    {  // scatter width differs from gather width
      FunctionBuilder f({.max_arity = 1});
      Value g = f.gather(0, 2);
      Value h = f.concat({g, g});
      f.scatter(h);
      f.push(h);
      CHECK(error_of([&] { std::move(f).build(); }) ==
            "vertex function: scatter(concat #1 [vertex x 4]) has width 4 but gathers read width 2");
    }
    {  // gather without scatter, unused parameter, no output
      FunctionBuilder f({.max_arity = 1});
      f.push(f.gather(0, 2));
      CHECK(error_of([&] { std::move(f).build(); }) ==
            "vertex function: F gathers its children's state but never scatters it");
      FunctionBuilder g;
      g.parameter("b", {3});
      g.push(g.embedding(g.parameter("E", {4, 3}), g.pull()));
      CHECK(error_of([&] { std::move(g).build(); }) == "vertex function: parameter 'b' is never used");
      FunctionBuilder h;
      auto E = h.parameter("E", {4, 3});
      CHECK(error_of([&] { h.embedding(E, h.label()); }) == "embedding: ids must be pull(), got label #0");
    }
  }

  TEST_CASE("compiled binary Tree-LSTM: eager/recurrent/lazy, merged matmuls, fused row steps") {
    VertexFunction f = make_binary_tree_lstm(small_lstm());
    const auto program = Program::compile(f.shared_definition());
    // x * W_{i,o,u}: one eager GEMM, and x * W_f apart (only needed where a vertex has both
    // a token and children); [h_l; h_r] * U_{i,o,u,fl,fr}: one GEMM per round; the
    // classifier: one lazy GEMM.
    CHECK(program->gemm_steps(OpClass::eager) == 2);
    CHECK(program->gemm_steps(OpClass::recurrent) == 1);
    CHECK(program->gemm_steps(OpClass::lazy) == 1);
    int rowwise_recurrent = 0;
    for (const auto& s : program->steps[1]) rowwise_recurrent += s.kind == InstructionKind::rowwise;
    CHECK(rowwise_recurrent == 2);  // concat(h_l, h_r), then the whole gate chain up to concat(h, c)
    const auto unmerged = Program::compile(f.shared_definition(), {.merge_matmuls = false});
    CHECK(unmerged->gemm_steps(OpClass::eager) == 4);
    const MatmulGroup& forget = program->groups[static_cast<size_t>(program->op_group[static_cast<size_t>(
        std::find_if(f.definition().ops.begin(), f.definition().ops.end(), [&](const Op& op) {
          return op.kind == OpKind::matmul && f.definition().params[static_cast<size_t>(op.param)].name == "W_f";
        }) - f.definition().ops.begin())])];
    CHECK(forget.dead_at_leaves);
    CHECK(forget.ops.size() == 1);
    CHECK(unmerged->gemm_steps(OpClass::recurrent) == 5);
  }

  TEST_CASE("binary Tree-LSTM: batched loss and every gradient equal one vertex at a time") {
    VertexFunction f = make_binary_tree_lstm(small_lstm());
    auto trees = random_trees(3, 7, 12, 3);
    InputGraph single;
    single.add_leaf(3, 2);
    trees.push_back(single);
    check_against_reference(f, trees);
  }

  TEST_CASE("binary Tree-LSTM: finite differences") {
    VertexFunction f = make_binary_tree_lstm(small_lstm());
    check_finite_differences(f, random_trees(4, 4, 12, 3, 6));
  }

  TEST_CASE("executor: buffers grow only, and a second batch reuses them") {
    VertexFunction f = make_binary_tree_lstm(small_lstm());
    Executor ex(f);
    const auto big = random_trees(5, 6, 12, 3);
    const auto small = random_trees(6, 2, 12, 3);
    ex.set_inputs(big);
    ex.run_forward_backward();
    const double big_loss = ex.loss();
    ex.set_inputs(small);
    ex.run_forward_backward();
    Executor fresh(f);
    fresh.set_inputs(small);
    fresh.run_forward();
    CHECK(ex.loss() == doctest::Approx(fresh.loss()).epsilon(1e-6));
    ex.set_inputs(big);
    ex.run_forward();
    CHECK(ex.loss() == doctest::Approx(big_loss).epsilon(1e-6));
    CHECK(ex.stats().batches == 3);
    CHECK(ex.stats().gemm_calls > 0);
    // zero_gradients clears exactly what backward added
    ex.set_inputs(small);
    f.zero_diffs();
    ex.zero_gradients();  // forgets the rows of the batches above
    ex.run_forward_backward();
    // sparse_gradients names the embedding table and, sorted and once each,
    // the batch's tokens: every row with a gradient, and no other.
    const auto sparse = ex.sparse_gradients();
    REQUIRE(sparse.size() == 1);
    std::set<int32_t> tokens;
    for (const auto& g : small)
      for (int32_t t : g.tokens())
        if (t >= 0) tokens.insert(t);
    CHECK(sparse[0].rows == std::vector<int32_t>(tokens.begin(), tokens.end()));
    for (const auto& p : f.params()) {
      if (p.blob.get() != sparse[0].blob) continue;
      const int64_t width = p.blob->shape()[1];
      for (int64_t row = 0; row < p.blob->shape()[0]; ++row) {
        const float* d = p.blob->diff().ptr() + row * width;
        const bool touched = std::any_of(d, d + width, [](float v) { return v != 0.0f; });
        if (touched) CHECK(tokens.count(static_cast<int32_t>(row)) == 1);
      }
    }
    ex.zero_gradients();
    CHECK(ex.sparse_gradients()[0].rows.empty());
    for (const auto& p : f.params())
      CHECK(std::all_of(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count(), [](float v) { return v == 0.0f; }));
    // push output: h of every vertex, readable by row
    const MatrixView h = ex.output();
    CHECK(h.rows == ex.schedule().num_rows());
    CHECK(h.width == 4);
  }

  TEST_CASE("executor: an empty mini-batch and an empty graph run zero rounds") {
    VertexFunction f = make_binary_tree_lstm(small_lstm());
    for (ExecutorOptions options : {ExecutorOptions{}, ExecutorOptions::serial()}) {
      Executor ex(f, options);
      ex.set_inputs({});
      CHECK(ex.num_rounds() == 0);
      ex.run_forward_backward();
      CHECK(ex.loss() == 0.0);
      CHECK(ex.loss_vertices() == 0);
      const std::vector<InputGraph> empty(2);
      ex.set_inputs(empty);
      ex.run_forward_backward();
      CHECK(ex.loss_vertices() == 0);
      const auto trees = random_trees(8, 3, 12, 3);
      ex.set_inputs(trees);
      ex.run_forward_backward();
      CHECK(ex.loss_vertices() > 0);
    }
  }

  TEST_CASE("binary Tree-LSTM learns arithmetic-expression trees") {
    Rng rng(11);
    ExpressionTreeOptions eo;
    eo.max_leaves = 4;
    eo.modulus = 5;
    eo.multiply = false;
    std::vector<InputGraph> data;
    for (int i = 0; i < 64; ++i) data.push_back(random_expression_tree(rng, eo).graph);
    TreeLstmOptions o;
    o.vocabulary = expression_vocabulary_size;
    o.embedding = 8;
    o.hidden = 16;
    o.classes = 5;
    o.seed = 3;
    VertexFunction f = make_binary_tree_lstm(o);
    Executor ex(f);
    ex.set_inputs(data);
    double first = 0, last = 0;
    for (int epoch = 0; epoch < 60; ++epoch) {
      f.zero_diffs();
      ex.set_loss_scale(1.0f / 64.0f);
      ex.run_forward_backward();
      if (epoch == 0) first = ex.loss() / static_cast<double>(ex.loss_vertices());
      last = ex.loss() / static_cast<double>(ex.loss_vertices());
      for (auto& p : f.params())
        for (int64_t i = 0; i < p.blob->count(); ++i) p.blob->data()[i] -= 0.5f * p.blob->diff()[i];
    }
    INFO("mean loss " << first << " -> " << last);
    CHECK(last < 0.7 * first);
  }

  TEST_CASE("child-sum Tree-LSTM: batched == one vertex at a time, finite differences") {
    VertexFunction f = make_child_sum_tree_lstm(small_lstm());
    const auto trees = random_nary_trees(21, 7, 4, 12, 3);
    check_against_reference(f, trees);
    check_finite_differences(f, random_nary_trees(22, 3, 4, 12, 3));
    // One forget gate per child: the compiled program has an edge-domain GEMM.
    const auto program = Program::compile(f.shared_definition());
    CHECK(std::any_of(program->groups.begin(), program->groups.end(),
                      [](const MatmulGroup& g) { return g.domain == Domain::edge; }));
  }

  TEST_CASE("Tree-FC: batched == one vertex at a time, finite differences") {
    TreeFcOptions o;
    o.vocabulary = 10;
    o.hidden = 6;
    o.classes = 3;
    o.embedding_scale = 0.8f;
    o.seed = 5;
    VertexFunction f = make_tree_fc(o);
    std::vector<InputGraph> trees = random_trees(31, 5, 10, 3);
    InputGraph complete = complete_binary_tree(3, 10);
    for (int32_t v = 0; v < complete.num_vertices(); ++v) complete.set_label(v, v % 3);
    trees.push_back(complete);
    check_against_reference(f, trees);
    check_finite_differences(f, trees, 10, 1e-3f, 3e-2f);  // small step: relu kinks
  }

  TEST_CASE("Tree-GRU: batched == one vertex at a time, finite differences") {
    TreeGruOptions o;
    o.vocabulary = 12;
    o.embedding = 5;
    o.hidden = 4;
    o.classes = 3;
    o.embedding_scale = 0.5f;
    o.seed = 9;
    VertexFunction f = make_tree_gru(o);
    check_against_reference(f, random_trees(41, 7, 12, 3));
    check_finite_differences(f, random_trees(42, 4, 12, 3, 6));
  }

  TEST_CASE("LSTM and GRU language models: batched == one step at a time, finite differences") {
    ChainLmOptions o;
    o.vocabulary = 15;
    o.embedding = 5;
    o.hidden = 4;
    o.embedding_scale = 0.5f;
    o.seed = 13;
    for (int kind = 0; kind < 2; ++kind) {
      const std::string model = kind == 0 ? "LSTM" : "GRU";
      INFO(model);
      VertexFunction f = kind == 0 ? make_lstm_language_model(o) : make_gru_language_model(o);
      const auto sentences = random_sentences(51 + kind, 6, 15, 9);
      check_against_reference(f, sentences);
      check_finite_differences(f, random_sentences(61 + kind, 3, 15, 6));
      // The vocabulary softmax is lazy: one GEMM after the last round.
      const auto program = Program::compile(f.shared_definition());
      CHECK(program->gemm_steps(OpClass::lazy) == 1);
      Executor ex(f);
      ex.set_inputs(sentences);
      int32_t longest = 0;
      for (const auto& g : sentences) longest = std::max(longest, g.num_vertices());
      CHECK(ex.num_rounds() == longest);
    }
    CHECK(error_of([] { language_model_chain(std::vector<int32_t>{3}); }) ==
          "language model chain: need at least 2 tokens, got 1");
  }

  TEST_CASE("gated graph network over DAGs: batched == one vertex at a time, finite differences") {
    GatedGraphOptions o;
    o.vocabulary = 9;
    o.hidden = 5;
    o.classes = 3;
    o.embedding_scale = 0.5f;
    o.seed = 17;
    VertexFunction f = make_gated_graph_network(o);
    const auto dags = random_dags(71, 8, 9, 3);
    int shared = 0;  // the data really has vertices with several parents
    for (const auto& g : dags)
      for (int32_t c : g.parent_counts()) shared += c > 1;
    CHECK(shared > 0);
    check_against_reference(f, dags);
    check_finite_differences(f, random_dags(72, 4, 9, 3));
  }

  TEST_CASE("replicas run concurrently and match a single executor") {
    VertexFunction f = make_binary_tree_lstm(small_lstm());
    VertexFunction g = f.replica();
    const auto a = random_trees(81, 20, 12, 3);
    const auto b = random_trees(82, 20, 12, 3);
    const Result expected_a = run(f, ExecutorOptions{}, a);
    const Result expected_b = run(g, ExecutorOptions{}, b);
    f.zero_diffs();
    g.zero_diffs();
    Executor ea(f), eb(g);
    ea.set_inputs(a);
    eb.set_inputs(b);
    std::thread other([&] {
      for (int k = 0; k < 20; ++k) eb.run_forward();
      eb.run_backward();
    });
    for (int k = 0; k < 20; ++k) ea.run_forward();
    ea.run_backward();
    other.join();
    CHECK(ea.loss() == doctest::Approx(expected_a.loss).epsilon(1e-6));
    CHECK(eb.loss() == doctest::Approx(expected_b.loss).epsilon(1e-6));
    for (size_t p = 0; p < f.params().size(); ++p) {
      CHECK(std::equal(expected_a.grads[p].begin(), expected_a.grads[p].end(), f.params()[p].blob->diff().ptr()));
      CHECK(std::equal(expected_b.grads[p].begin(), expected_b.grads[p].end(), g.params()[p].blob->diff().ptr()));
    }
  }
}

TEST_CASE("model limits: each model type's arity, known before its data load, is its F's") {
  auto limits = [](const std::string& type) {
    const auto doc = config::Document::parse("[model]\ntype = " + type + "\n", "m.ini");
    return cavs::model_limits(doc.section("model"));
  };
  CHECK(limits("tree_lstm").max_children == 2);
  CHECK(limits("tree_gru").max_children == 2);
  CHECK(limits("tree_fc").max_children == 2);
  CHECK(limits("lstm").max_children == 0);  // its data are its own chains (and trees get a clearer message)
  CHECK(limits("child_sum_tree_lstm").max_children == 0);  // any number
  CHECK(limits("gated_graph").max_children == 0);
  CHECK(limits("tree_lstm").model == "model 'tree_lstm'");
  // build_model checks the table against the F it built, for every type a test trains.
  const GraphDataset data = [] {
    GraphDataset d;
    d.vocabulary_size = 10;
    d.num_classes = 3;
    return d;
  }();
  for (const std::string type : {"tree_lstm", "child_sum_tree_lstm", "tree_gru", "tree_fc", "gated_graph"}) {
    const auto doc = config::Document::parse("[model]\ntype = " + type + "\nhidden = 4\n", "m.ini");
    CHECK_NOTHROW(cavs::build_model(doc.section("model"), data, 1));
  }
}
