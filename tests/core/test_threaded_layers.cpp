// The memory-bound layers split large tensors over the thread pool (by
// channel, row or block) and the GEMM layers' products are tiled by shape
// (core/blas/tiling.hpp): on two or three threads every layer must give
// exactly what one thread gives, and BatchNorm must still match the direct
// formula.

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/blas/blas.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/kernels/parallel.hpp"
#include "support/layer_fixture.hpp"

using namespace taihu;
using namespace taihu::testing;

namespace {

struct Case {
  std::string type, options;
  std::vector<Shape> bottoms;
  int tops = 1;
};

// Forward then backward (random top diffs) of a fresh layer; returns every
// top, bottom diff and parameter diff, flattened.
std::vector<std::vector<float>> run(const Case& c, Phase phase) {
  auto layer = make_layer(c.type, c.options);
  layer->set_phase(phase);
  std::vector<Blob> bottoms, tops(static_cast<size_t>(c.tops));
  for (const Shape& s : c.bottoms) bottoms.emplace_back(s);
  BlobVec bottom, top;
  for (size_t i = 0; i < bottoms.size(); ++i) {
    fill_uniform(bottoms[i], 41 + i, -2.0f, 2.0f);
    bottom.push_back(&bottoms[i]);
  }
  for (auto& t : tops) top.push_back(&t);
  layer->setup(bottom, top);
  layer->reshape(bottom, top);
  layer->forward(bottom, top);
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < tops.size(); ++i) {
    out.emplace_back(tops[i].data().ptr(), tops[i].data().ptr() + tops[i].count());
    Rng rng(51 + i);
    for (int64_t k = 0; k < tops[i].count(); ++k) tops[i].diff()[k] = rng.uniform(-1.0f, 1.0f);
  }
  for (auto& p : layer->params()) p.blob->diff().fill(0.5f);  // gradients accumulate onto it
  layer->backward(top, std::vector<bool>(bottom.size(), true), bottom);
  for (const auto& b : bottoms) out.emplace_back(b.diff().ptr(), b.diff().ptr() + b.count());
  for (const auto& p : layer->params())
    out.emplace_back(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count());
  return out;
}

}  // namespace

TEST_SUITE("threads") {
  TEST_CASE("layers on two and three threads match one thread") {
    // 2 x 64 x 128 x 128 = 2097152 values: at least twice the grain, so the
    // layers really split the work (by channel, by block or by plane).
    REQUIRE(2 * 64 * 128 * 128 >= 2 * parallel_grain());
    const Shape big{2, 64, 128, 128};
    const std::vector<Case> cases = {
        {"BatchNorm", "", {big}},
        {"Scale", "bias_term = true", {big}},
        {"Scale", "", {big, Shape{64}}},
        {"ReLU", "", {big}},
        {"ReLU", "negative_slope = 0.1", {big}},
        {"Eltwise", "", {big, big}},
        {"Eltwise", "coeff = 0.5 -2", {big, big}},
        {"Eltwise", "", {big, big, big}},
        {"Split", "", {big}, 3},
        {"Pooling", "kernel_size = 3\nstride = 2\npool = max", {big}},
        {"Pooling", "kernel_size = 3\nstride = 2\npad = 1\npool = ave", {big}},
        // LeNet's conv2 and ip1 at batch 64: products of several tiles.
        {"Convolution", "num_output = 50\nkernel_size = 5", {Shape{64, 20, 12, 12}}},
        {"InnerProduct", "num_output = 500", {Shape{64, 800}}},
        {"Convolution", "num_output = 64\nkernel_size = 3\npad = 1\nstride = 2", {Shape{4, 32, 56, 56}}},
        // oneDNN: pieces of images and slices of output channels on the pool
        // (core/kernels/dnnl_convolution.hpp), and the im2col path beside it.
        {"Convolution", "num_output = 64\nkernel_size = 3\npad = 1\nalgorithm = dnnl", {Shape{5, 32, 28, 28}}},
        {"Convolution", "num_output = 256\nkernel_size = 1\nstride = 2\nalgorithm = dnnl", {Shape{3, 64, 28, 28}}},
        {"Convolution", "num_output = 64\nkernel_size = 3\npad = 1\ngroup = 2\nalgorithm = dnnl", {Shape{3, 32, 20, 20}}},
        {"Convolution", "num_output = 64\nkernel_size = 3\npad = 1\nalgorithm = im2col", {Shape{5, 32, 28, 28}}},
    };
    const int saved = compute_threads();
    for (const Case& c : cases)
      for (Phase phase : {Phase::train, Phase::test}) {
        CAPTURE(c.type);
        CAPTURE(c.options);
        CAPTURE(c.bottoms.size());
        set_compute_threads(1);
        const auto one = run(c, phase);
        for (int threads : {2, 3}) {
          CAPTURE(threads);
          set_compute_threads(threads);
          const auto more = run(c, phase);
          REQUIRE(one.size() == more.size());
          for (size_t b = 0; b < one.size(); ++b) REQUIRE(one[b] == more[b]);
        }
      }
    set_compute_threads(saved);
  }

  TEST_CASE("BatchNorm on two threads matches the direct formula") {
    const int saved = compute_threads();
    set_compute_threads(2);
    auto bn = make_layer("BatchNorm");
    Blob x(Shape{2, 64, 128, 128}), y;
    fill_uniform(x, 61, -1.0f, 3.0f);
    bn->setup({&x}, {&y});
    bn->reshape({&x}, {&y});
    bn->forward({&x}, {&y});
    const int64_t N = 2, C = 64, S = 128 * 128;
    for (int64_t c = 0; c < C; ++c) {
      double mean = 0.0, var = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) mean += x.data()[(n * C + c) * S + i];
      mean /= static_cast<double>(N * S);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) var += std::pow(x.data()[(n * C + c) * S + i] - mean, 2);
      var /= static_cast<double>(N * S);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; i += 97) {
          const int64_t j = (n * C + c) * S + i;
          REQUIRE(y.data()[j] == doctest::Approx((x.data()[j] - mean) / std::sqrt(var + 1e-5)).epsilon(1e-4));
        }
    }
    set_compute_threads(saved);
  }
}
