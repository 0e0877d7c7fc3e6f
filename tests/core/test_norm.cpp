#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/gradient_check.hpp"
#include "support/layer_fixture.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;
using namespace taihu::testing;

namespace {

// Per-channel mean and biased variance over N and spatial positions, in double.
void channel_stats(const Blob& x, std::vector<double>& mean, std::vector<double>& var) {
  const auto& s = x.shape();
  const int64_t N = s[0], C = s[1], S = s.count_from(2);
  mean.assign(C, 0.0);
  var.assign(C, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) mean[c] += x.data()[(n * C + c) * S + i];
  for (auto& m : mean) m /= static_cast<double>(N * S);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) {
        const double d = x.data()[(n * C + c) * S + i] - mean[c];
        var[c] += d * d;
      }
  for (auto& v : var) v /= static_cast<double>(N * S);
}

void check_normalised(const Blob& x, const Blob& y, const std::vector<double>& mean,
                      const std::vector<double>& var, double eps) {
  const auto& s = x.shape();
  const int64_t N = s[0], C = s[1], S = s.count_from(2);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t j = (n * C + c) * S + i;
        const double expected = (x.data()[j] - mean[c]) / std::sqrt(var[c] + eps);
        REQUIRE(y.data()[j] == doctest::Approx(expected).epsilon(1e-4));
      }
}

std::string error_of(auto&& f) { return taihu::testing::error_message<std::exception>(f); }

// Naive LRN: scale over the window by direct summation.
std::vector<double> naive_lrn(const Blob& x, int size, double alpha, double beta, double k, bool across) {
  const auto& s = x.shape();
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const int half = size / 2;
  std::vector<double> y(static_cast<size_t>(x.count()));
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) -> double {
    return x.data()[((n * C + c) * H + h) * W + w];
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          double sum = 0.0;
          if (across) {
            for (int64_t cc = c - half; cc <= c + half; ++cc)
              if (cc >= 0 && cc < C) sum += at(n, cc, h, w) * at(n, cc, h, w);
          } else {
            for (int64_t hh = h - half; hh <= h + half; ++hh)
              for (int64_t ww = w - half; ww <= w + half; ++ww)
                if (hh >= 0 && hh < H && ww >= 0 && ww < W) sum += at(n, c, hh, ww) * at(n, c, hh, ww);
          }
          const double n_window = across ? size : size * size;
          const double scale = k + alpha / n_window * sum;
          y[((n * C + c) * H + h) * W + w] = at(n, c, h, w) * std::pow(scale, -beta);
        }
  return y;
}

}  // namespace

TEST_SUITE("norm") {
  TEST_CASE("BatchNorm train forward normalises with batch statistics and updates running ones") {
    for (const Shape& shape : {Shape{3, 4, 2, 3}, Shape{5, 3}, Shape{2, 2, 7}}) {
      CAPTURE(shape.str());
      auto bn = make_layer("BatchNorm", "eps = 1e-3");
      Blob x(shape), y;
      fill_uniform(x, 11, -2.0f, 3.0f);
      BlobVec bottom{&x}, top{&y};
      bn->setup(bottom, top);
      bn->reshape(bottom, top);
      REQUIRE(bn->params().size() == 2);
      CHECK(bn->params()[0].name == "test/mean");
      CHECK(bn->params()[1].name == "test/variance");
      CHECK_FALSE(bn->params()[0].learnable);
      CHECK_FALSE(bn->params()[1].learnable);
      bn->forward(bottom, top);

      std::vector<double> mean, var;
      channel_stats(x, mean, var);
      check_normalised(x, y, mean, var, 1e-3);

      // running = 0.9 * running + 0.1 * batch, with the unbiased variance;
      // they start at mean 0, variance 1.
      const double m = static_cast<double>(shape.count() / shape[1]);
      const auto& rm = bn->params()[0].blob->data();
      const auto& rv = bn->params()[1].blob->data();
      for (int64_t c = 0; c < shape[1]; ++c) {
        CHECK(rm[c] == doctest::Approx(0.1 * mean[c]).epsilon(1e-5));
        CHECK(rv[c] == doctest::Approx(0.9 + 0.1 * var[c] * m / (m - 1)).epsilon(1e-5));
      }
      // A second batch moves them again.
      fill_uniform(x, 12, -1.0f, 1.0f);
      const std::vector<double> rm1(rm.ptr(), rm.ptr() + shape[1]), rv1(rv.ptr(), rv.ptr() + shape[1]);
      bn->forward(bottom, top);
      channel_stats(x, mean, var);
      for (int64_t c = 0; c < shape[1]; ++c) {
        CHECK(rm[c] == doctest::Approx(0.9 * rm1[c] + 0.1 * mean[c]).epsilon(1e-5));
        CHECK(rv[c] == doctest::Approx(0.9 * rv1[c] + 0.1 * var[c] * m / (m - 1)).epsilon(1e-5));
      }
    }
  }

  TEST_CASE("BatchNorm momentum option sets the moving average") {
    auto bn = make_layer("BatchNorm", "momentum = 0.5");
    Blob x(Shape{4, 2}), y;
    fill_uniform(x, 3);
    BlobVec bottom{&x}, top{&y};
    bn->setup(bottom, top);
    bn->reshape(bottom, top);
    bn->forward(bottom, top);
    std::vector<double> mean, var;
    channel_stats(x, mean, var);
    for (int c = 0; c < 2; ++c) {
      CHECK(bn->params()[0].blob->data()[c] == doctest::Approx(0.5 * mean[c]).epsilon(1e-5));
      CHECK(bn->params()[1].blob->data()[c] == doctest::Approx(0.5 + 0.5 * var[c] * 4 / 3).epsilon(1e-5));
    }
  }

  TEST_CASE("BatchNorm test phase and use_global_stats use the running statistics") {
    const std::vector<double> rmean{0.5, -1.0, 2.0}, rvar{4.0, 0.25, 1.5};
    auto run = [&](const std::string& opts, Phase phase, bool expect_global) {
      CAPTURE(opts);
      auto bn = make_layer("BatchNorm", opts);
      bn->set_phase(phase);
      Blob x(Shape{2, 3, 2, 2}), y;
      fill_uniform(x, 5, -3.0f, 3.0f);
      BlobVec bottom{&x}, top{&y};
      bn->setup(bottom, top);
      for (int c = 0; c < 3; ++c) {
        bn->params()[0].blob->data()[c] = static_cast<float>(rmean[c]);
        bn->params()[1].blob->data()[c] = static_cast<float>(rvar[c]);
      }
      bn->reshape(bottom, top);
      bn->forward(bottom, top);
      if (expect_global) {
        check_normalised(x, y, rmean, rvar, 1e-5);
        for (int c = 0; c < 3; ++c) {  // untouched
          CHECK(bn->params()[0].blob->data()[c] == static_cast<float>(rmean[c]));
          CHECK(bn->params()[1].blob->data()[c] == static_cast<float>(rvar[c]));
        }
      } else {
        std::vector<double> mean, var;
        channel_stats(x, mean, var);
        check_normalised(x, y, mean, var, 1e-5);
        CHECK(bn->params()[0].blob->data()[0] != static_cast<float>(rmean[0]));
      }
    };
    run("", Phase::test, true);
    run("", Phase::train, false);
    run("use_global_stats = true", Phase::train, true);
    run("use_global_stats = false", Phase::test, false);
  }

  TEST_CASE("BatchNorm gradients, through the batch statistics and with global statistics") {
    for (const Shape& shape : {Shape{3, 4, 2, 3}, Shape{6, 3}, Shape{2, 3, 5}}) {
      CAPTURE(shape.str());
      {
        auto bn = make_layer("BatchNorm");
        Blob x(shape), y;
        fill_uniform(x, 21, -2.0f, 2.0f);
        check_gradients(*bn, {&x}, {&y});
      }
      {
        auto bn = make_layer("BatchNorm", "use_global_stats = true");
        Blob x(shape), y;
        fill_uniform(x, 22, -2.0f, 2.0f);
        check_gradients(*bn, {&x}, {&y});
      }
      {
        auto bn = make_layer("BatchNorm");
        bn->set_phase(Phase::test);
        Blob x(shape), y;
        fill_uniform(x, 23, -2.0f, 2.0f);
        check_gradients(*bn, {&x}, {&y});
      }
    }
  }

  TEST_CASE("BatchNorm rejects bad options, shapes and in-place use") {
    CHECK(error_of([] { make_layer("BatchNorm", "momentum = 1.5"); }).find("momentum") != std::string::npos);
    CHECK(error_of([] { make_layer("BatchNorm", "eps = 0"); }).find("eps") != std::string::npos);
    auto bn = make_layer("BatchNorm");
    Blob x(Shape{2, 3, 4}), y, z(Shape{2, 4, 4});
    bn->setup({&x}, {&y});
    CHECK_THROWS_AS(bn->reshape({&x}, {&x}), ShapeError);
    CHECK(error_of([&] { bn->reshape({&z}, {&y}); }).find("2x4x4") != std::string::npos);
    Blob flat(Shape{6});
    auto bn2 = make_layer("BatchNorm");
    CHECK_THROWS_AS(bn2->setup({&flat}, {&y}), ShapeError);
  }

  TEST_CASE("Scale forward: per-channel gamma and optional beta") {
    auto scale = make_layer("Scale", "bias_term = true\nweight_filler = uniform 0.5 2\nbias_filler = uniform -1 1");
    Blob x(Shape{2, 3, 4}), y;
    fill_uniform(x, 31);
    BlobVec bottom{&x}, top{&y};
    scale->setup(bottom, top);
    REQUIRE(scale->params().size() == 2);
    CHECK(scale->params()[0].name == "test/weight");
    CHECK(scale->params()[1].name == "test/bias");
    CHECK(scale->params()[0].blob->shape() == Shape{3});
    scale->reshape(bottom, top);
    scale->forward(bottom, top);
    const auto& g = scale->params()[0].blob->data();
    const auto& b = scale->params()[1].blob->data();
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int i = 0; i < 4; ++i) {
          const int j = (n * 3 + c) * 4 + i;
          CHECK(y.data()[j] == doctest::Approx(x.data()[j] * g[c] + b[c]));
        }

    // Defaults: gamma = 1, no bias.
    auto plain = make_layer("Scale");
    plain->setup(bottom, top);
    CHECK(plain->params().size() == 1);
    plain->reshape(bottom, top);
    plain->forward(bottom, top);
    for (int j = 0; j < 24; ++j) CHECK(y.data()[j] == x.data()[j]);
  }

  TEST_CASE("Scale axis and num_axes choose the span of gamma") {
    auto scale = make_layer("Scale", "num_axes = 2\nweight_filler = uniform -1 1");
    Blob x(Shape{2, 3, 4}), y;
    fill_uniform(x, 32);
    BlobVec bottom{&x}, top{&y};
    scale->setup(bottom, top);
    CHECK(scale->params()[0].blob->shape() == Shape{3, 4});
    scale->reshape(bottom, top);
    scale->forward(bottom, top);
    const auto& g = scale->params()[0].blob->data();
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 12; ++j) CHECK(y.data()[n * 12 + j] == doctest::Approx(x.data()[n * 12 + j] * g[j]));

    auto last = make_layer("Scale", "axis = -1");
    last->setup(bottom, top);
    CHECK(last->params()[0].blob->shape() == Shape{4});
    auto all = make_layer("Scale", "axis = 0\nnum_axes = -1");
    all->setup(bottom, top);
    CHECK(all->params()[0].blob->shape() == Shape{2, 3, 4});
    auto scalar = make_layer("Scale", "num_axes = 0");
    scalar->setup(bottom, top);
    CHECK(scalar->params()[0].blob->shape() == Shape{});
    auto too_many = make_layer("Scale", "axis = 2\nnum_axes = 2");
    CHECK_THROWS_AS(too_many->setup(bottom, top), ShapeError);
  }

  TEST_CASE("Scale gradients against inputs and parameters") {
    struct Case {
      Shape shape;
      std::string options;
    };
    const std::vector<Case> cases{
        {Shape{2, 3, 4}, "bias_term = true\nweight_filler = uniform -1 1\nbias_filler = uniform -1 1"},
        {Shape{4, 5}, "bias_term = true\nweight_filler = uniform -1 1"},
        {Shape{2, 3, 2, 2}, "num_axes = 2\nweight_filler = gaussian 1"},
        {Shape{2, 3, 4}, "axis = 0\nnum_axes = -1\nbias_term = true\nweight_filler = uniform -1 1"},
        {Shape{2, 3, 4}, "num_axes = 0\nweight_filler = constant 0.7"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.options);
      auto scale = make_layer("Scale", c.options);
      Blob x(c.shape), y;
      fill_uniform(x, 41);
      check_gradients(*scale, {&x}, {&y});
    }
  }

  TEST_CASE("Scale with a second bottom as gamma") {
    for (const bool bias : {false, true}) {
      CAPTURE(bias);
      auto scale = make_layer("Scale", bias ? "bias_term = true\nbias_filler = uniform -1 1" : "");
      Blob x(Shape{2, 3, 4}), gamma(Shape{3}), y;
      fill_uniform(x, 51);
      fill_uniform(gamma, 52);
      BlobVec bottom{&x, &gamma}, top{&y};
      scale->setup(bottom, top);
      CHECK(scale->params().size() == (bias ? 1u : 0u));
      scale->reshape(bottom, top);
      scale->forward(bottom, top);
      const float b1 = bias ? scale->params()[0].blob->data()[1] : 0.0f;
      CHECK(y.data()[5] == doctest::Approx(x.data()[5] * gamma.data()[1] + b1));

      auto fresh = make_layer("Scale", bias ? "bias_term = true\nbias_filler = uniform -1 1" : "");
      check_gradients(*fresh, bottom, top);
    }
    // Gamma spanning two axes, and a mismatch.
    auto scale = make_layer("Scale");
    Blob x(Shape{2, 3, 4}), gamma(Shape{3, 4}), wrong(Shape{4}), y;
    fill_uniform(x, 53);
    fill_uniform(gamma, 54);
    check_gradients(*scale, {&x, &gamma}, {&y});
    auto bad = make_layer("Scale");
    bad->setup({&x, &wrong}, {&y});
    CHECK_THROWS_AS(bad->reshape({&x, &wrong}, {&y}), ShapeError);
  }

  TEST_CASE("LRN forward matches the direct formula") {
    struct Case {
      std::string options;
      int size;
      double alpha, beta, k;
      bool across;
    };
    const std::vector<Case> cases{
        {"", 5, 1.0, 0.75, 1.0, true},
        {"local_size = 3\nalpha = 2\nbeta = 0.6\nk = 2", 3, 2.0, 0.6, 2.0, true},
        {"local_size = 7\nbeta = 0.5", 7, 1.0, 0.5, 1.0, true},  // wider than the channel count
        {"local_size = 1\nbeta = 1", 1, 1.0, 1.0, 1.0, true},
        {"norm_region = within_channel\nlocal_size = 3\nalpha = 3", 3, 3.0, 0.75, 1.0, false},
        {"norm_region = within_channel\nlocal_size = 5\nbeta = 0.9\nk = 1.5", 5, 1.0, 0.9, 1.5, false},
    };
    for (const auto& c : cases) {
      CAPTURE(c.options);
      auto lrn = make_layer("LRN", c.options);
      Blob x(Shape{2, 6, 4, 5}), y;
      fill_uniform(x, 61, -2.0f, 2.0f);
      BlobVec bottom{&x}, top{&y};
      lrn->setup(bottom, top);
      lrn->reshape(bottom, top);
      lrn->forward(bottom, top);
      const auto expected = naive_lrn(x, c.size, c.alpha, c.beta, c.k, c.across);
      for (int64_t i = 0; i < x.count(); ++i)
        REQUIRE(y.data()[i] == doctest::Approx(expected[static_cast<size_t>(i)]).epsilon(1e-5));
    }
  }

  TEST_CASE("LRN gradients, across channels and within channel") {
    const std::vector<std::string> cases{
        "",
        "local_size = 3\nalpha = 2\nbeta = 0.6\nk = 2",
        "local_size = 7\nbeta = 0.5",
        "norm_region = within_channel\nlocal_size = 3\nalpha = 3",
        "norm_region = within_channel\nlocal_size = 5\nbeta = 0.9",
    };
    for (const auto& opts : cases) {
      CAPTURE(opts);
      auto lrn = make_layer("LRN", opts);
      Blob x(Shape{2, 5, 3, 4}), y;
      fill_uniform(x, 71, -1.5f, 1.5f);
      check_gradients(*lrn, {&x}, {&y});
    }
  }

  TEST_CASE("LRN rejects bad options and shapes") {
    CHECK(error_of([] { make_layer("LRN", "local_size = 4"); }).find("local_size") != std::string::npos);
    CHECK(error_of([] { make_layer("LRN", "k = 0"); }).find("'k'") != std::string::npos);
    CHECK(error_of([] { make_layer("LRN", "norm_region = both"); }).find("norm_region") != std::string::npos);
    auto lrn = make_layer("LRN");
    Blob x(Shape{2, 3}), y;
    CHECK_THROWS_AS(lrn->reshape({&x}, {&y}), ShapeError);
  }
}
