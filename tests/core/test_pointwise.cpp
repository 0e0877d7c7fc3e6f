// Elementwise kernels and the pointwise / shape layers: known values, naive
// references, finite-difference gradients, in-place use, errors.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/kernels/elementwise.hpp"
#include "core/layers/dropout.hpp"
#include "core/net/net.hpp"
#include "support/gradient_check.hpp"
#include "support/layer_fixture.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;
using taihu::testing::check_gradients;
using taihu::testing::fill_uniform;
using taihu::testing::GradientCheckOptions;
using taihu::testing::make_layer;

namespace {

std::string error_of(auto&& f) { return taihu::testing::error_message<std::exception>(f); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void set_values(Blob& blob, const std::vector<float>& values) {
  REQUIRE(static_cast<int64_t>(values.size()) == blob.count());
  std::copy(values.begin(), values.end(), blob.data().ptr());
}

std::vector<float> values_of(const Tensor& t) { return {t.ptr(), t.ptr() + t.count()}; }

void check_close(const Tensor& actual, const std::vector<float>& expected, float tolerance = 1e-6f) {
  REQUIRE(actual.count() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    CHECK_MESSAGE(std::fabs(actual[static_cast<int64_t>(i)] - expected[i]) <=
                      tolerance * std::max(1.0f, std::fabs(expected[i])),
                  "element " << i << ": " << actual[static_cast<int64_t>(i)] << " vs " << expected[i]);
}

// Runs setup, reshape and forward once.
void run_forward(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
  layer.setup(bottom, top);
  layer.reshape(bottom, top);
  layer.forward(bottom, top);
}

// Naive softmax over the middle extent, in double precision.
std::vector<float> naive_softmax(const std::vector<float>& x, int64_t outer, int64_t channels,
                                 int64_t inner) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t c) { return static_cast<size_t>((o * channels + c) * inner + i); };
      double top = x[at(0)];
      for (int64_t c = 1; c < channels; ++c) top = std::max<double>(top, x[at(c)]);
      double sum = 0.0;
      for (int64_t c = 0; c < channels; ++c) sum += std::exp(x[at(c)] - top);
      for (int64_t c = 0; c < channels; ++c) y[at(c)] = static_cast<float>(std::exp(x[at(c)] - top) / sum);
    }
  return y;
}

// A layer run out of place and a twin run in place (top == bottom) must agree
// in forward values and in the gradient they pass down.
void check_in_place(const std::string& type, const std::string& options, const Shape& shape,
                    Phase phase = Phase::train) {
  auto out_of_place = make_layer(type, options);
  auto in_place = make_layer(type, options);
  REQUIRE(in_place->supports_in_place());
  out_of_place->set_phase(phase);
  in_place->set_phase(phase);
  Blob bottom(shape), top, shared(shape);
  fill_uniform(bottom, 11, -2.0f, 2.0f);
  shared.data().copy_from(bottom.data());
  run_forward(*out_of_place, {&bottom}, {&top});
  run_forward(*in_place, {&shared}, {&shared});
  check_close(shared.data(), values_of(top.data()), 0.0f);

  Blob grad(shape);
  fill_uniform(grad, 12);
  top.diff().copy_from(grad.data());
  shared.diff().copy_from(grad.data());
  out_of_place->backward({&top}, {true}, {&bottom});
  in_place->backward({&shared}, {true}, {&shared});
  check_close(shared.diff(), values_of(bottom.diff()), 0.0f);
}

}  // namespace

TEST_SUITE("pointwise") {
  // ------------------------------------------------------------------ kernels

  TEST_CASE("elementwise arithmetic kernels") {
    const std::vector<float> a{1, -2, 3, 4.5f, 0, -7, 8, 9, 10};
    const std::vector<float> b{2, 2, -1, 0.5f, 3, 1, -8, 0, 0.25f};
    const auto n = static_cast<int64_t>(a.size());
    std::vector<float> y(a.size());
    kernels::add(n, a.data(), b.data(), y.data());
    CHECK(y == std::vector<float>{3, 0, 2, 5, 3, -6, 0, 9, 10.25f});
    kernels::sub(n, a.data(), b.data(), y.data());
    CHECK(y == std::vector<float>{-1, -4, 4, 4, -3, -8, 16, 9, 9.75f});
    kernels::mul(n, a.data(), b.data(), y.data());
    CHECK(y == std::vector<float>{2, -4, -3, 2.25f, 0, -7, -64, 0, 2.5f});
    kernels::scale(n, -2.0f, a.data(), y.data());
    CHECK(y == std::vector<float>{-2, 4, -6, -9, 0, 14, -16, -18, -20});
    y = b;
    kernels::axpy(n, 2.0f, a.data(), y.data());
    CHECK(y == std::vector<float>{4, -2, 5, 9.5f, 3, -13, 8, 18, 20.25f});
    y = b;
    kernels::axpby(n, 2.0f, a.data(), -1.0f, y.data());
    CHECK(y == std::vector<float>{0, -6, 7, 8.5f, -3, -15, 24, 18, 19.75f});
    // In place: y = a + y.
    y = b;
    kernels::add(n, a.data(), y.data(), y.data());
    CHECK(y[8] == 10.25f);
  }

  TEST_CASE("sum and max reductions match a serial loop at every length") {
    for (int64_t n : {0, 1, 7, 31, 63, 64, 65, 100, 1000}) {
      std::vector<float> x(static_cast<size_t>(n));
      Rng rng(static_cast<uint64_t>(n));
      for (auto& v : x) v = rng.uniform(-3.0f, 3.0f);
      double sum = 0.0;
      float best = -INFINITY;
      for (float v : x) {
        sum += v;
        best = std::max(best, v);
      }
      CHECK(kernels::sum(n, x.data()) == doctest::Approx(sum).epsilon(1e-5));
      CHECK(kernels::max(n, x.data()) == best);
    }
  }

  TEST_CASE("fast exp, sigmoid and tanh are accurate over the float range") {
    double worst_exp = 0.0, worst_sigmoid = 0.0, worst_tanh = 0.0;
    for (float x = -100.0f; x < 88.0f; x += 0.0137f) {
      const double e = std::exp(static_cast<double>(x));
      if (e > 1e-37) worst_exp = std::max(worst_exp, std::fabs(kernels::fast_exp(x) - e) / e);
      const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
      if (s > 1e-37) worst_sigmoid = std::max(worst_sigmoid, std::fabs(kernels::fast_sigmoid(x) - s) / s);
      const double t = std::tanh(static_cast<double>(x));
      worst_tanh = std::max(worst_tanh, std::fabs(kernels::fast_tanh(x) - t) / std::max(std::fabs(t), 1e-30));
    }
    for (float x = -0.2f; x < 0.2f; x += 1.3e-5f) {
      const double t = std::tanh(static_cast<double>(x));
      worst_tanh = std::max(worst_tanh, std::fabs(kernels::fast_tanh(x) - t) / std::max(std::fabs(t), 1e-30));
    }
    CHECK(worst_exp < 3e-7);
    CHECK(worst_sigmoid < 4e-7);
    CHECK(worst_tanh < 6e-7);
    CHECK(kernels::fast_exp(0.0f) == 1.0f);
    CHECK(std::isinf(kernels::fast_exp(89.0f)));
    CHECK(kernels::fast_exp(-200.0f) == 0.0f);
    CHECK(std::isnan(kernels::fast_exp(NAN)));
    CHECK(kernels::fast_sigmoid(-INFINITY) == 0.0f);
    CHECK(kernels::fast_sigmoid(INFINITY) == 1.0f);
    CHECK(kernels::fast_tanh(-INFINITY) == -1.0f);
    CHECK(kernels::fast_tanh(0.0f) == 0.0f);
    CHECK(std::isnan(kernels::fast_tanh(NAN)));
  }

  TEST_CASE("softmax kernel matches a naive reference for short, long and spatial rows") {
    struct Case {
      int64_t outer, channels, inner;
    };
    for (const Case c : {Case{5, 10, 1}, Case{3, 100, 1}, Case{2, 3, 7}, Case{2, 70, 5}, Case{1, 1, 4}}) {
      const auto n = static_cast<size_t>(c.outer * c.channels * c.inner);
      std::vector<float> x(n), y(n), scratch(static_cast<size_t>(c.inner));
      Rng rng(n);
      for (auto& v : x) v = rng.uniform(-20.0f, 20.0f);
      kernels::softmax_forward(c.outer, c.channels, c.inner, x.data(), y.data(), scratch.data());
      const auto expected = naive_softmax(x, c.outer, c.channels, c.inner);
      for (size_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-5));
      // In place.
      kernels::softmax_forward(c.outer, c.channels, c.inner, x.data(), x.data(), scratch.data());
      CHECK(x == y);
    }
  }

  // --------------------------------------------------------------------- ReLU

  TEST_CASE("ReLU and leaky ReLU known values") {
    Blob bottom(Shape{2, 3}), top;
    set_values(bottom, {-2, -0.5f, 0, 0.5f, 3, -1});
    auto relu = make_layer("ReLU");
    run_forward(*relu, {&bottom}, {&top});
    check_close(top.data(), {0, 0, 0, 0.5f, 3, 0});
    auto leaky = make_layer("ReLU", "negative_slope = 0.1");
    run_forward(*leaky, {&bottom}, {&top});
    check_close(top.data(), {-0.2f, -0.05f, 0, 0.5f, 3, -0.1f});
    top.diff().fill(2.0f);
    leaky->backward({&top}, {true}, {&bottom});
    check_close(bottom.diff(), {0.2f, 0.2f, 0.2f, 2, 2, 0.2f});
  }

  TEST_CASE("ReLU gradients, skipping the kink") {
    for (const char* options :
         {"", "negative_slope = 0.1", "negative_slope = -0.3", "negative_slope = 1.5"}) {
      CAPTURE(options);
      auto layer = make_layer("ReLU", options);
      Blob bottom(Shape{2, 3, 4, 5}), top;
      fill_uniform(bottom, 3);
      GradientCheckOptions opt;
      opt.kink = 0.0f;
      opt.kink_range = 0.02f;
      opt.threshold = 1e-3f;
      check_gradients(*layer, {&bottom}, {&top}, opt);
    }
  }

  TEST_CASE("ReLU in place agrees with out of place; a negative slope cannot work in place") {
    check_in_place("ReLU", "", Shape{4, 37});
    check_in_place("ReLU", "negative_slope = 0.2", Shape{3, 5, 2});
    auto layer = make_layer("ReLU", "negative_slope = -0.5");
    Blob blob(Shape{3});
    const auto msg = error_of([&] { layer->setup({&blob}, {&blob}); });
    CHECK(contains(msg, "negative_slope"));
    CHECK(contains(msg, "test-layer.ini:2"));
  }

  // ---------------------------------------------------------- Sigmoid and TanH

  TEST_CASE("Sigmoid and TanH known values") {
    Blob bottom(Shape{5}), top;
    set_values(bottom, {0, 1, -1, 20, -20});
    auto sigmoid = make_layer("Sigmoid");
    run_forward(*sigmoid, {&bottom}, {&top});
    check_close(top.data(), {0.5f, 0.7310585786f, 0.2689414214f, 0.9999999979f, 2.0611536e-9f}, 1e-6f);
    CHECK(top.data()[4] == doctest::Approx(2.0611536e-9).epsilon(1e-5));
    auto tanh = make_layer("TanH");
    run_forward(*tanh, {&bottom}, {&top});
    check_close(top.data(), {0, 0.7615941560f, -0.7615941560f, 1, -1}, 1e-6f);
    top.diff().fill(1.0f);
    tanh->backward({&top}, {true}, {&bottom});
    check_close(bottom.diff(), {1, 0.4199743416f, 0.4199743416f, 0, 0}, 1e-6f);
  }

  TEST_CASE("Sigmoid and TanH gradients") {
    for (const char* type : {"Sigmoid", "TanH"}) {
      for (const Shape& shape : {Shape{2, 3, 4}, Shape{1, 50}}) {
        CAPTURE(type);
        auto layer = make_layer(type);
        Blob bottom(shape), top;
        fill_uniform(bottom, 5, -3.0f, 3.0f);
        GradientCheckOptions opt;
        opt.threshold = 1e-3f;
        check_gradients(*layer, {&bottom}, {&top}, opt);
      }
    }
  }

  TEST_CASE("Sigmoid and TanH in place agree with out of place") {
    check_in_place("Sigmoid", "", Shape{3, 41});
    check_in_place("TanH", "", Shape{3, 41});
  }

  // ------------------------------------------------------------------ Dropout

  TEST_CASE("Dropout keeps about 1 - p of the units, scaled by 1 / (1 - p)") {
    for (float ratio : {0.5f, 0.3f, 0.9f}) {
      CAPTURE(ratio);
      auto layer = make_layer("Dropout", "dropout_ratio = " + std::to_string(ratio));
      Blob bottom(Shape{100, 1001}), top;
      bottom.data().fill(1.0f);
      run_forward(*layer, {&bottom}, {&top});
      int64_t kept = 0;
      bool values_ok = true;
      for (int64_t i = 0; i < top.count(); ++i) {
        kept += top.data()[i] != 0.0f;
        values_ok =
            values_ok && (top.data()[i] == 0.0f || top.data()[i] == doctest::Approx(1.0 / (1.0 - ratio)));
      }
      CHECK(values_ok);
      CHECK(static_cast<double>(kept) / top.count() == doctest::Approx(1.0 - ratio).epsilon(0.01));
    }
  }

  TEST_CASE("Dropout masks come from the layer's rng and differ between passes") {
    auto layer = make_layer("Dropout", "dropout_ratio = 0.5");
    auto& dropout = dynamic_cast<DropoutLayer&>(*layer);
    Blob bottom(Shape{4, 33}), top;
    bottom.data().fill(1.0f);
    layer->setup({&bottom}, {&top});
    layer->reshape({&bottom}, {&top});
    const Rng saved = layer->rng();
    layer->forward({&bottom}, {&top});
    const auto first = values_of(dropout.mask());
    layer->forward({&bottom}, {&top});
    CHECK(values_of(dropout.mask()) != first);
    layer->rng() = saved;  // as a checkpoint restore would
    layer->forward({&bottom}, {&top});
    CHECK(values_of(dropout.mask()) == first);
    CHECK(values_of(top.data()) == first);
  }

  TEST_CASE("Dropout is the identity in the test phase") {
    auto layer = make_layer("Dropout", "dropout_ratio = 0.7");
    layer->set_phase(Phase::test);
    Blob bottom(Shape{3, 17}), top;
    fill_uniform(bottom, 9);
    run_forward(*layer, {&bottom}, {&top});
    CHECK(values_of(top.data()) == values_of(bottom.data()));
    fill_uniform(top, 10);
    top.diff().copy_from(top.data());
    layer->backward({&top}, {true}, {&bottom});
    CHECK(values_of(bottom.diff()) == values_of(top.data()));
  }

  TEST_CASE("Dropout gradients in training use the same mask") {
    for (const char* options : {"", "dropout_ratio = 0.2"}) {
      auto layer = make_layer("Dropout", options);
      Blob bottom(Shape{2, 3, 5}), top;
      fill_uniform(bottom, 4);
      GradientCheckOptions opt;
      opt.threshold = 1e-3f;
      check_gradients(*layer, {&bottom}, {&top}, opt);
    }
  }

  TEST_CASE("Dropout in place agrees with out of place; bad ratios are rejected") {
    check_in_place("Dropout", "dropout_ratio = 0.4", Shape{5, 31});
    check_in_place("Dropout", "dropout_ratio = 0.4", Shape{5, 31}, Phase::test);
    for (const char* ratio : {"1", "-0.1", "1.5"}) {
      const auto msg = error_of([&] { make_layer("Dropout", std::string("dropout_ratio = ") + ratio); });
      CHECK(contains(msg, "dropout_ratio"));
      CHECK(contains(msg, "test-layer.ini:2"));
    }
  }

  // ------------------------------------------------------------------ Softmax

  TEST_CASE("Softmax known values, rows summing to one, and stability for large scores") {
    Blob bottom(Shape{2, 3}), top;
    set_values(bottom, {0, std::log(2.0f), std::log(3.0f), 1000, 1001, 1000});
    auto layer = make_layer("Softmax");
    run_forward(*layer, {&bottom}, {&top});
    const float e = std::exp(1.0f);
    check_close(top.data(), {1 / 6.0f, 2 / 6.0f, 3 / 6.0f, 1 / (2 + e), e / (2 + e), 1 / (2 + e)}, 1e-6f);
  }

  TEST_CASE("Softmax along an inner axis and with spatial positions matches a naive reference") {
    struct Case {
      Shape shape;
      std::string options;
      int64_t outer, channels, inner;
    };
    for (const auto& c :
         {Case{Shape{2, 3, 2, 2}, "", 2, 3, 4}, Case{Shape{2, 3, 4}, "axis = 2", 6, 4, 1},
          Case{Shape{2, 3, 4}, "axis = -2", 2, 3, 4}, Case{Shape{3, 5, 2}, "axis = 0", 1, 3, 10}}) {
      CAPTURE(c.options);
      auto layer = make_layer("Softmax", c.options);
      Blob bottom(c.shape), top;
      fill_uniform(bottom, 21, -4.0f, 4.0f);
      run_forward(*layer, {&bottom}, {&top});
      CHECK(top.shape() == c.shape);
      const auto expected = naive_softmax(values_of(bottom.data()), c.outer, c.channels, c.inner);
      check_close(top.data(), expected, 1e-5f);
    }
  }

  TEST_CASE("Softmax gradients") {
    struct Case {
      Shape shape;
      const char* options;
    };
    for (const auto& c : {Case{Shape{3, 5}, ""}, Case{Shape{2, 3, 2, 3}, ""}, Case{Shape{2, 70}, ""},
                          Case{Shape{2, 3, 4}, "axis = -1"}, Case{Shape{4, 2, 3}, "axis = 0"}}) {
      CAPTURE(c.options);
      auto layer = make_layer("Softmax", c.options);
      Blob bottom(c.shape), top;
      fill_uniform(bottom, 8, -2.0f, 2.0f);
      GradientCheckOptions opt;
      opt.threshold = 2e-3f;
      check_gradients(*layer, {&bottom}, {&top}, opt);
    }
  }

  TEST_CASE("Softmax with an axis out of range names the layer") {
    auto layer = make_layer("Softmax", "axis = 3");
    Blob bottom(Shape{2, 3}), top;
    const auto msg = error_of([&] { run_forward(*layer, {&bottom}, {&top}); });
    CHECK(contains(msg, "'test' (Softmax)"));
    CHECK(contains(msg, "axis 3"));
  }

  // ---------------------------------------------------------- SoftmaxWithLoss

  TEST_CASE("SoftmaxWithLoss known loss under each normalization") {
    // Two samples, three classes, uniform scores for sample 0, clear winner
    // for sample 1 (probabilities 1/6, 2/6, 3/6), labels 0 and 2.
    Blob scores(Shape{2, 3}), labels(Shape{2}), top;
    set_values(scores, {5, 5, 5, 0, std::log(2.0f), std::log(3.0f)});
    set_values(labels, {0, 2});
    const double total = std::log(3.0) - std::log(0.5);
    for (const auto& config :
         std::vector<std::pair<std::string, double>>{{"", 2},
                                                     {"normalization = valid", 2},
                                                     {"normalization = batch_size", 2},
                                                     {"normalization = full", 2},
                                                     {"normalization = none", 1}}) {
      const auto& [options, normalizer] = config;
      CAPTURE(config.first);
      auto layer = make_layer("SoftmaxWithLoss", options);
      CHECK(layer->default_loss_weight() == 1.0f);
      run_forward(*layer, {&scores, &labels}, {&top});
      CHECK(top.shape().rank() == 0);
      CHECK(top.data()[0] == doctest::Approx(total / normalizer).epsilon(1e-6));
    }
    // Ignoring sample 1 leaves log 3 over one valid label (valid), two samples
    // (batch_size, full) or 1 (none).
    set_values(labels, {0, -1});
    for (const auto& config : std::vector<std::pair<std::string, double>>{
             {"ignore_label = -1", std::log(3.0)},
             {"ignore_label = -1\nnormalization = batch_size", std::log(3.0) / 2},
             {"ignore_label = -1\nnormalization = full", std::log(3.0) / 2},
             {"ignore_label = -1\nnormalization = none", std::log(3.0)}}) {
      const auto& [options, expected] = config;
      CAPTURE(config.first);
      auto layer = make_layer("SoftmaxWithLoss", options);
      run_forward(*layer, {&scores, &labels}, {&top});
      CHECK(top.data()[0] == doctest::Approx(expected).epsilon(1e-6));
    }
    // Every label ignored: loss 0, not NaN.
    set_values(labels, {-1, -1});
    auto layer = make_layer("SoftmaxWithLoss", "ignore_label = -1");
    run_forward(*layer, {&scores, &labels}, {&top});
    CHECK(top.data()[0] == 0.0f);
  }

  TEST_CASE("SoftmaxWithLoss with spatial positions averages over samples and positions") {
    // Scores 1x2x1x2: position 0 favours class 1, position 1 is uniform.
    Blob scores(Shape{1, 2, 1, 2}), labels(Shape{1, 1, 2}), top;
    set_values(scores, {0, 0, std::log(3.0f), 0});
    set_values(labels, {1, 0});
    auto layer = make_layer("SoftmaxWithLoss");
    run_forward(*layer, {&scores, &labels}, {&top});
    CHECK(top.data()[0] == doctest::Approx((-std::log(0.75) + std::log(2.0)) / 2).epsilon(1e-6));
    top.diff()[0] = 1.0f;
    layer->backward({&top}, {true, false}, {&scores, &labels});
    // (p - onehot) / 2 per position; channel-major layout.
    check_close(scores.diff(), {0.25f / 2, (0.5f - 1) / 2, (0.75f - 1) / 2, 0.5f / 2}, 1e-6f);
  }

  TEST_CASE("SoftmaxWithLoss gradients for every normalization, ignore_label and spatial input") {
    struct Case {
      Shape scores, labels;
      std::string options;
    };
    for (const auto& c :
         std::vector<Case>{{Shape{4, 5}, Shape{4}, ""},
                           {Shape{4, 5}, Shape{4, 1}, "normalization = none"},
                           {Shape{4, 5}, Shape{4}, "normalization = batch_size\nignore_label = 3"},
                           {Shape{4, 5}, Shape{4}, "ignore_label = 3"},
                           {Shape{2, 3, 2, 2}, Shape{2, 2, 2}, "ignore_label = 0"},
                           {Shape{2, 3, 2, 2}, Shape{2, 1, 2, 2}, "normalization = full\nignore_label = 0"},
                           {Shape{2, 3, 4}, Shape{2, 3}, "axis = -1"}}) {
      CAPTURE(c.options);
      auto layer = make_layer("SoftmaxWithLoss", c.options);
      Blob scores(c.scores), labels(c.labels), top;
      fill_uniform(scores, 13, -2.0f, 2.0f);
      const int64_t classes = c.options.find("axis") != std::string::npos ? c.scores[2] : c.scores[1];
      for (int64_t i = 0; i < labels.count(); ++i)
        labels.data()[i] = static_cast<float>((i * 7 + 1) % classes);
      GradientCheckOptions opt;
      opt.bottoms_to_check = {0};
      opt.threshold = 2e-3f;
      check_gradients(*layer, {&scores, &labels}, {&top}, opt);
    }
  }

  TEST_CASE("SoftmaxWithLoss rejects bad labels and a gradient request for them") {
    Blob scores(Shape{2, 3}), labels(Shape{2}), top;
    fill_uniform(scores, 1);
    auto layer = make_layer("SoftmaxWithLoss");
    set_values(labels, {0, 3});
    auto msg = error_of([&] { run_forward(*layer, {&scores, &labels}, {&top}); });
    CHECK(contains(msg, "'test' (SoftmaxWithLoss)"));
    CHECK(contains(msg, "label 3"));
    CHECK(contains(msg, "[0, 3)"));
    set_values(labels, {-1, 0});
    CHECK(contains(error_of([&] { run_forward(*layer, {&scores, &labels}, {&top}); }), "label -1"));
    set_values(labels, {1.5f, 0});
    CHECK(contains(error_of([&] { run_forward(*layer, {&scores, &labels}, {&top}); }), "label 1.5"));

    set_values(labels, {1, 2});
    run_forward(*layer, {&scores, &labels}, {&top});
    top.diff()[0] = 1.0f;
    msg = error_of([&] { layer->backward({&top}, {true, true}, {&scores, &labels}); });
    CHECK(contains(msg, "'test' (SoftmaxWithLoss)"));
    CHECK(contains(msg, "labels"));

    Blob wrong(Shape{3});
    msg = error_of([&] { run_forward(*layer, {&scores, &wrong}, {&top}); });
    CHECK(contains(msg, "'test' (SoftmaxWithLoss)"));
    CHECK(contains(msg, "need 2 labels"));

    CHECK(contains(error_of([] { make_layer("SoftmaxWithLoss", "normalization = mean"); }), "valid, full"));
  }

  // ----------------------------------------------------------------- Accuracy

  TEST_CASE("Accuracy known values for top-1, top-2, ignore_label and spatial input") {
    Blob scores(Shape{4, 3}), labels(Shape{4}), top;
    set_values(scores, {0.1f, 0.7f, 0.2f,    // best 1, second 2
                        0.5f, 0.3f, 0.2f,    // best 0, second 1
                        0.2f, 0.2f, 0.6f,    // best 2, tie between 0 and 1
                        0.3f, 0.3f, 0.3f});  // three-way tie
    set_values(labels, {1, 1, 1, 2});
    auto top1 = make_layer("Accuracy");
    CHECK_FALSE(top1->has_backward());
    run_forward(*top1, {&scores, &labels}, {&top});
    CHECK(top.shape().rank() == 0);
    CHECK(top.data()[0] == doctest::Approx(0.25));  // only sample 0
    auto top2 = make_layer("Accuracy", "top_k = 2");
    run_forward(*top2, {&scores, &labels}, {&top});
    // Sample 2: class 1 ties with class 0, which ranks first, so rank 3; sample 3: rank 3.
    CHECK(top.data()[0] == doctest::Approx(0.5));
    auto ignoring = make_layer("Accuracy", "ignore_label = 2");
    run_forward(*ignoring, {&scores, &labels}, {&top});
    CHECK(top.data()[0] == doctest::Approx(1.0 / 3));

    Blob spatial(Shape{1, 2, 3}), spatial_labels(Shape{1, 3});
    set_values(spatial, {1, 0, 5, 0, 1, 4});  // winners per position: 0, 1, 0
    set_values(spatial_labels, {0, 0, 0});
    auto layer = make_layer("Accuracy");
    run_forward(*layer, {&spatial, &spatial_labels}, {&top});
    CHECK(top.data()[0] == doctest::Approx(2.0 / 3));
  }

  TEST_CASE("Accuracy errors name the layer") {
    Blob scores(Shape{2, 3}), labels(Shape{2}), top;
    auto layer = make_layer("Accuracy", "top_k = 4");
    CHECK(contains(error_of([&] { run_forward(*layer, {&scores, &labels}, {&top}); }), "top_k = 4"));
    auto plain = make_layer("Accuracy");
    set_values(labels, {0, 7});
    const auto msg = error_of([&] { run_forward(*plain, {&scores, &labels}, {&top}); });
    CHECK(contains(msg, "'test' (Accuracy)"));
    CHECK(contains(msg, "label 7"));
  }

  // ------------------------------------------------------------------ Eltwise

  TEST_CASE("Eltwise sum, prod and max known values") {
    Blob a(Shape{2, 2}), b(Shape{2, 2}), c(Shape{2, 2}), top;
    set_values(a, {1, -2, 3, 0});
    set_values(b, {4, 5, -6, 2});
    set_values(c, {-1, 6, 2, -3});
    auto sum = make_layer("Eltwise", "coeff = 1 -0.5 2");
    run_forward(*sum, {&a, &b, &c}, {&top});
    check_close(top.data(), {-3, 7.5f, 10, -7});
    auto prod = make_layer("Eltwise", "operation = prod");
    run_forward(*prod, {&a, &b, &c}, {&top});
    check_close(top.data(), {-4, -60, -36, 0});
    auto max = make_layer("Eltwise", "operation = max");
    run_forward(*max, {&a, &b, &c}, {&top});
    check_close(top.data(), {4, 6, 3, 2});
    top.diff().fill(1.0f);
    max->backward({&top}, {true, true, true}, {&a, &b, &c});
    check_close(a.diff(), {0, 0, 1, 0});
    check_close(b.diff(), {1, 0, 0, 1});
    check_close(c.diff(), {0, 1, 0, 0});
  }

  TEST_CASE("Eltwise gradients for sum with coefficients, prod and max") {
    struct Case {
      std::string options;
      int bottoms;
    };
    for (const auto& c : std::vector<Case>{{"", 2},
                                           {"coeff = 0.5 -2 3", 3},
                                           {"operation = prod", 2},
                                           {"operation = prod", 3},
                                           {"operation = max", 2},
                                           {"operation = max", 3}}) {
      CAPTURE(c.options);
      auto layer = make_layer("Eltwise", c.options);
      std::vector<Blob> blobs;  // not a copied Blob: copies would share storage
      for (int k = 0; k < c.bottoms; ++k) blobs.emplace_back(Shape{2, 3, 4});
      BlobVec bottom;
      for (auto& blob : blobs) bottom.push_back(&blob);
      // Max needs a clear winner everywhere (the step is 0.01): bottom k gets
      // a distinct offset per element.
      Rng rng(77);
      for (int64_t i = 0; i < blobs[0].count(); ++i) {
        const float base = rng.uniform(-1.0f, 1.0f);
        for (int k = 0; k < c.bottoms; ++k) {
          const auto slot = static_cast<int64_t>((i + k) % c.bottoms);
          blobs[static_cast<size_t>(k)].data()[i] =
              base + 0.1f * static_cast<float>(slot) + rng.uniform(0.0f, 0.05f);
        }
      }
      Blob top;
      GradientCheckOptions opt;
      opt.threshold = 1e-3f;
      check_gradients(*layer, bottom, {&top}, opt);
    }
  }

  TEST_CASE("Eltwise rejects mismatched shapes and bad coefficients, naming the layer") {
    Blob a(Shape{2, 3}), b(Shape{3, 2}), top;
    auto layer = make_layer("Eltwise");
    const auto msg = error_of([&] { run_forward(*layer, {&a, &b}, {&top}); });
    CHECK(contains(msg, "'test' (Eltwise)"));
    CHECK(contains(msg, "2x3"));
    CHECK(contains(msg, "3x2"));
    Blob c(Shape{2, 3});
    auto wrong_count = make_layer("Eltwise", "coeff = 1 2 3");
    CHECK(contains(error_of([&] { run_forward(*wrong_count, {&a, &c}, {&top}); }), "one value per bottom"));
    CHECK(contains(error_of([] { make_layer("Eltwise", "operation = max\ncoeff = 1 2"); }), "coeff"));
    CHECK(contains(error_of([] { make_layer("Eltwise", "operation = min"); }), "sum, prod, max"));
  }

  // ------------------------------------------------------------------- Concat

  TEST_CASE("Concat known values along axes 0, 1 and 2") {
    Blob a(Shape{2, 1, 2}), b(Shape{2, 1, 2}), top;
    set_values(a, {1, 2, 3, 4});
    set_values(b, {5, 6, 7, 8});
    auto axis0 = make_layer("Concat", "axis = 0");
    run_forward(*axis0, {&a, &b}, {&top});
    CHECK(top.shape() == Shape{4, 1, 2});
    check_close(top.data(), {1, 2, 3, 4, 5, 6, 7, 8});
    auto axis1 = make_layer("Concat");
    run_forward(*axis1, {&a, &b}, {&top});
    CHECK(top.shape() == Shape{2, 2, 2});
    check_close(top.data(), {1, 2, 5, 6, 3, 4, 7, 8});
    auto axis2 = make_layer("Concat", "axis = -1");
    run_forward(*axis2, {&a, &b}, {&top});
    CHECK(top.shape() == Shape{2, 1, 4});
    check_close(top.data(), {1, 2, 5, 6, 3, 4, 7, 8});
    auto single = make_layer("Concat");
    run_forward(*single, {&a}, {&top});
    check_close(top.data(), {1, 2, 3, 4});
  }

  TEST_CASE("Concat gradients along axes 0, 1 and 2") {
    for (int axis : {0, 1, 2}) {
      CAPTURE(axis);
      std::vector<int64_t> d0{2, 3, 2, 2}, d1 = d0, d2 = d0;
      d1[static_cast<size_t>(axis)] = 1;
      d2[static_cast<size_t>(axis)] = 4;
      Blob a{Shape(d0)}, b{Shape(d1)}, c{Shape(d2)}, top;
      fill_uniform(a, 1);
      fill_uniform(b, 2);
      fill_uniform(c, 3);
      auto layer = make_layer("Concat", "axis = " + std::to_string(axis));
      GradientCheckOptions opt;
      opt.threshold = 1e-3f;
      check_gradients(*layer, {&a, &b, &c}, {&top}, opt);
      // Only the requested bottom receives its gradient.
      top.diff().fill(1.0f);
      b.diff().fill(-5.0f);
      layer->backward({&top}, {true, false, true}, {&a, &b, &c});
      CHECK(b.diff()[0] == -5.0f);
    }
  }

  TEST_CASE("Concat rejects shapes that differ off the axis") {
    Blob a(Shape{2, 3, 4}), b(Shape{2, 5, 5}), top;
    auto layer = make_layer("Concat");
    const auto msg = error_of([&] { run_forward(*layer, {&a, &b}, {&top}); });
    CHECK(contains(msg, "'test' (Concat)"));
    CHECK(contains(msg, "2x5x5"));
    Blob c(Shape{2, 3});
    CHECK(contains(error_of([&] { run_forward(*layer, {&a, &c}, {&top}); }), "bottom[1]"));
  }

  // --------------------------------------------------------- Flatten, Reshape

  TEST_CASE("Flatten merges axes and shares data and diff") {
    Blob bottom(Shape{2, 3, 4, 5}), top;
    fill_uniform(bottom, 3);
    auto layer = make_layer("Flatten");
    run_forward(*layer, {&bottom}, {&top});
    CHECK(top.shape() == Shape{2, 60});
    CHECK(top.data().shares_storage_with(bottom.data()));
    CHECK(top.diff().shares_storage_with(bottom.diff()));
    CHECK(bottom.shape() == Shape{2, 3, 4, 5});
    auto middle = make_layer("Flatten", "axis = 1\nend_axis = 2");
    run_forward(*middle, {&bottom}, {&top});
    CHECK(top.shape() == Shape{2, 12, 5});
    auto all = make_layer("Flatten", "axis = 0");
    run_forward(*all, {&bottom}, {&top});
    CHECK(top.shape() == Shape{120});
    check_gradients(*middle, {&bottom}, {&top});
    auto bad = make_layer("Flatten", "axis = 3\nend_axis = 1");
    const auto msg = error_of([&] { run_forward(*bad, {&bottom}, {&top}); });
    CHECK(contains(msg, "'test' (Flatten)"));
  }

  TEST_CASE("Reshape follows Caffe's 0 (copy) and -1 (infer) rules") {
    struct Case {
      std::string options;
      Shape expected;
    };
    Blob bottom(Shape{2, 3, 4, 5}), top;
    for (const auto& c : std::vector<Case>{{"shape = 0 -1", Shape{2, 60}},
                                           {"shape = -1 5", Shape{24, 5}},
                                           {"shape = 0 0 20", Shape{2, 3, 20}},
                                           {"shape = 6 2 10", Shape{6, 2, 10}},
                                           {"shape = 1 1\naxis = 1\nnum_axes = 0", Shape{2, 1, 1, 3, 4, 5}},
                                           {"shape = -1\naxis = 1\nnum_axes = 2", Shape{2, 12, 5}},
                                           {"shape = 1 -1\naxis = -1", Shape{2, 3, 4, 5, 1, 1}},
                                           {"shape = 0 1 -1\naxis = 2", Shape{2, 3, 4, 1, 5}}}) {
      CAPTURE(c.options);
      auto layer = make_layer("Reshape", c.options);
      run_forward(*layer, {&bottom}, {&top});
      CHECK(top.shape() == c.expected);
      CHECK(top.data().shares_storage_with(bottom.data()));
      CHECK(top.diff().shares_storage_with(bottom.diff()));
    }
    auto layer = make_layer("Reshape", "shape = 0 -1 3");
    fill_uniform(bottom, 6);
    check_gradients(*layer, {&bottom}, {&top});
  }

  TEST_CASE("Reshape errors") {
    Blob bottom(Shape{2, 3, 4}), top;
    auto wrong_count = make_layer("Reshape", "shape = 5 5");
    auto msg = error_of([&] { run_forward(*wrong_count, {&bottom}, {&top}); });
    CHECK(contains(msg, "'test' (Reshape)"));
    CHECK(contains(msg, "24 elements"));
    auto no_divide = make_layer("Reshape", "shape = 5 -1");
    CHECK(contains(error_of([&] { run_forward(*no_divide, {&bottom}, {&top}); }), "infer"));
    CHECK(contains(error_of([] { make_layer("Reshape", "shape = -1 -1"); }), "at most one"));
    CHECK(contains(error_of([] { make_layer("Reshape", "shape = 2 -3"); }), "test-layer.ini:2"));
    CHECK(contains(error_of([] { make_layer("Reshape"); }), "required"));
  }

  // ---------------------------------------------------------------------- Net

  TEST_CASE("a net of pointwise layers: splits, in-place layers, outputs and loss") {
    const std::string text =
        "[net]\n"
        "name = pointwise\n"
        "[input a]\n"
        "shape = 3\n"
        "[input b]\n"
        "shape = 3\n"
        "[input label]\n"
        "shape =\n"
        "[layer diff]\n"
        "type = Eltwise\n"
        "bottom = a b\n"
        "top = d\n"
        "coeff = 1 -1\n"
        "[layer rect]\n"
        "type = ReLU\n"
        "bottom = d\n"
        "top = d\n"
        "[layer join]\n"
        "type = Concat\n"
        "bottom = d a\n"
        "top = scores\n"
        "[layer prob]\n"
        "type = Softmax\n"
        "bottom = scores\n"
        "top = p\n"
        "[layer loss]\n"
        "type = SoftmaxWithLoss\n"
        "bottom = scores label\n"
        "top = loss\n"
        "[layer acc]\n"
        "type = Accuracy\n"
        "bottom = scores label\n"
        "top = acc\n";
    auto doc = std::make_shared<config::Document>(config::Document::parse(text, "pw.ini"));
    Net net(doc, 2, 5);
    CHECK(net.output_names() == std::vector<std::string>{"acc", "loss", "p"});
    int splits = 0;
    for (size_t i = 0; i < net.num_layers(); ++i) splits += std::string(net.layer(i).type()) == "Split";
    CHECK(splits == 3);  // "a" and "label" have two readers, "scores" three

    set_values(net.blob("a"), {1, 2, 3, 0, -1, 2});
    set_values(net.blob("b"), {0, 5, 1, 1, -3, 0});
    set_values(net.blob("label"), {2, 4});
    const float loss = net.forward();
    // d = relu(a - b) = {1, 0, 2}, {0, 2, 2}; scores = [d, a] per sample.
    const std::vector<float> scores{1, 0, 2, 1, 2, 3, 0, 2, 2, 0, -1, 2};
    const auto p = naive_softmax(scores, 2, 6, 1);
    const double expected = -(std::log(p[2]) + std::log(p[6 + 4])) / 2;
    CHECK(loss == doctest::Approx(expected).epsilon(1e-5));
    CHECK(net.blob("loss").data()[0] == doctest::Approx(expected).epsilon(1e-5));
    check_close(net.blob("p").data(), p, 1e-5f);
    // Sample 0's best class is 5 (score 3), sample 1's are 1, 2 and 5 (score 2), tie won by class 1.
    CHECK(net.blob("acc").data()[0] == 0.0f);
    set_values(net.blob("label"), {5, 1});
    net.forward();
    CHECK(net.blob("acc").data()[0] == 1.0f);
    net.backward();  // no learnable parameters: nothing to do, and nothing fails
  }

  TEST_CASE("bad nets are reported with the file, line and the fix") {
    const std::string head = "[input x]\nshape = 4\n";  // lines 1-2
    auto build = [&](const std::string& layers) {
      return error_of([&] {
        auto doc = std::make_shared<config::Document>(config::Document::parse(head + layers, "bad.ini"));
        Net net(doc, 2, 1);
      });
    };
    auto msg = build("[layer smash]\ntype = Frobnicate\nbottom = x\ntop = y\n");
    CHECK(contains(msg, "bad.ini:3"));
    CHECK(contains(msg, "Frobnicate"));
    CHECK(contains(msg, "known types"));
    for (const char* type : {"ReLU", "Sigmoid", "TanH", "Dropout", "Softmax", "SoftmaxWithLoss", "Accuracy",
                             "Eltwise", "Concat", "Flatten", "Reshape"})
      CHECK_MESSAGE(contains(msg, type), type);

    msg = build(
        "[layer act]\ntype = ReLU\nbottom = x\ntop = y\n[layer join]\ntype = Concat\nbottom = y ghost\ntop = "
        "z\n");
    CHECK(contains(msg, "bad.ini:7"));
    CHECK(contains(msg, "'join'"));
    CHECK(contains(msg, "'ghost'"));

    msg = build("[layer act]\ntype = ReLU\nbottom = x\ntop = y\nnegative_slop = 0.1\n");
    CHECK(contains(msg, "bad.ini:7"));
    CHECK(contains(msg, "negative_slop"));
    CHECK(contains(msg, "unknown option"));

    msg = build(
        "[layer a]\ntype = ReLU\nbottom = x\ntop = y\n[layer b]\ntype = ReLU\nbottom = x\ntop = z\n"
        "[layer sum]\ntype = Eltwise\nbottom = y z x\ntop = s\n[layer wide]\ntype = Reshape\nbottom = x\n"
        "top = r\nshape = 0 2 2\n[layer bad]\ntype = Eltwise\nbottom = s r\ntop = t\n");
    CHECK(contains(msg, "'bad' (Eltwise)"));
    CHECK(contains(msg, "2x2x2"));
  }
}

TEST_CASE("ReLU propagates NaN so that divergence is not masked") {
  std::vector<float> x{-1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f}, y(3);
  taihu::kernels::relu_forward(3, 0.0f, x.data(), y.data());
  CHECK(y[0] == 0.0f);
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == 2.0f);
  taihu::kernels::relu_forward(3, 0.1f, x.data(), y.data());
  CHECK(std::isnan(y[1]));
}
