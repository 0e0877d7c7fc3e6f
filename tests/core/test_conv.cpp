// Convolution, pooling, inner product, im2col and the OpenBLAS kernel choice.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/kernels/im2col.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/convolution.hpp"
#include "tests/support/gradient_check.hpp"
#include "tests/support/layer_fixture.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;
using namespace taihu::testing;

namespace {

struct ConvCase {
  int64_t n, c, h, w;
  std::string options;  // without num_output
  int64_t out;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, group;
  bool bias;
};

// Direct convolution, straight from the definition, in double precision.
std::vector<double> naive_conv(const Blob& x, const Blob& weight, const Blob* bias, const ConvCase& cc) {
  const int64_t eh = cc.dh * (cc.kh - 1) + 1, ew = cc.dw * (cc.kw - 1) + 1;
  const int64_t oh = (cc.h + 2 * cc.ph - eh) / cc.sh + 1, ow = (cc.w + 2 * cc.pw - ew) / cc.sw + 1;
  const int64_t cg = cc.c / cc.group, og = cc.out / cc.group;
  std::vector<double> y(static_cast<size_t>(cc.n * cc.out * oh * ow));
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < cc.out; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = bias ? bias->data()[o] : 0.0;
          const int64_t grp = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ki = 0; ki < cc.kh; ++ki)
              for (int64_t kj = 0; kj < cc.kw; ++kj) {
                const int64_t ih = i * cc.sh - cc.ph + ki * cc.dh, iw = j * cc.sw - cc.pw + kj * cc.dw;
                if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
                const int64_t c = grp * cg + ci;
                sum += static_cast<double>(x.data()[((n * cc.c + c) * cc.h + ih) * cc.w + iw]) *
                       weight.data()[((o * cg + ci) * cc.kh + ki) * cc.kw + kj];
              }
          y[static_cast<size_t>(((n * cc.out + o) * oh + i) * ow + j)] = sum;
        }
  return y;
}

ConvCase make_case(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out, int64_t kh, int64_t kw, int64_t sh,
                   int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t group, bool bias) {
  ConvCase cc{n, c, h, w, "", out, kh, kw, sh, sw, ph, pw, dh, dw, group, bias};
  cc.options = fmt::format(
      "kernel_h = {}\nkernel_w = {}\nstride_h = {}\nstride_w = {}\npad_h = {}\npad_w = {}\ndilation = {} {}\n"
      "group = {}\nbias_term = {}\nweight_filler = uniform -1 1\n{}",
      kh, kw, sh, sw, ph, pw, dh, dw, group, bias ? "true" : "false", bias ? "bias_filler = uniform -1 1\n" : "");
  return cc;
}

std::string error_of(auto&& f) { return taihu::testing::error_message<Error>(f); }

GradientCheckOptions tolerance(float step, float threshold) {
  GradientCheckOptions options;
  options.step = step;
  options.threshold = threshold;
  return options;
}

blas::KernelRequest request(std::string kernel) {
  blas::KernelRequest r;
  r.kernel = std::move(kernel);
  return r;
}

// Restores the convolution tuning after a test changes it.
// The im2col path's tuning, for one test: the algorithm is pinned to im2col
// (oneDNN's passes are checked against it in test_dnnl_convolution.cpp).
struct TuningGuard {
  ConvolutionLayer::Tuning saved = ConvolutionLayer::tuning();
  ConvolutionLayer::Algorithm saved_algorithm = ConvolutionLayer::default_algorithm();
  TuningGuard() { ConvolutionLayer::default_algorithm() = ConvolutionLayer::Algorithm::im2col; }
  ~TuningGuard() {
    ConvolutionLayer::tuning() = saved;
    ConvolutionLayer::default_algorithm() = saved_algorithm;
  }
};

}  // namespace

TEST_SUITE("conv") {
  TEST_CASE("im2col matches the definition and col2im is its adjoint") {
    const std::vector<ConvGeometry> geometries = {
        {2, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1},  // 3x3 pad 1
        {3, 7, 5, 2, 3, 2, 1, 0, 2, 1, 1},  // non-square, strided, padded
        {2, 9, 8, 3, 2, 2, 3, 2, 1, 2, 3},  // dilated
        {1, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1},  // pointwise
        {2, 6, 7, 3, 3, 3, 3, 2, 2, 1, 1},  // stride 3 with pad 2
    };
    for (const ConvGeometry& g : geometries) {
      CAPTURE(g.kernel_h);
      CAPTURE(g.stride_w);
      CAPTURE(g.dilation_w);
      const int64_t oh = g.out_height(), ow = g.out_width();
      REQUIRE(oh > 0);
      REQUIRE(ow > 0);
      Rng rng(3);
      std::vector<float> x(static_cast<size_t>(g.channels * g.height * g.width));
      for (auto& v : x) v = rng.uniform(-1, 1);
      std::vector<float> col(static_cast<size_t>(g.col_rows() * oh * ow), 99.0f);
      im2col(x.data(), g, col.data());
      for (int64_t c = 0; c < g.channels; ++c)
        for (int64_t ki = 0; ki < g.kernel_h; ++ki)
          for (int64_t kj = 0; kj < g.kernel_w; ++kj)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                const int64_t ih = i * g.stride_h - g.pad_h + ki * g.dilation_h;
                const int64_t iw = j * g.stride_w - g.pad_w + kj * g.dilation_w;
                const float expected = (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width)
                                           ? 0.0f
                                           : x[static_cast<size_t>((c * g.height + ih) * g.width + iw)];
                const int64_t row = (c * g.kernel_h + ki) * g.kernel_w + kj;
                REQUIRE(col[static_cast<size_t>(row * oh * ow + i * ow + j)] == expected);
              }
      // Bands with a wider row stride give the same columns.
      const int64_t ld = oh * ow + 5;
      std::vector<float> banded(static_cast<size_t>(g.col_rows() * ld), -7.0f);
      for (int64_t r = 0; r < oh; r += 2) im2col(x.data(), g, r, std::min(r + 2, oh), banded.data() + r * ow, ld);
      for (int64_t row = 0; row < g.col_rows(); ++row)
        for (int64_t p = 0; p < oh * ow; ++p)
          REQUIRE(banded[static_cast<size_t>(row * ld + p)] == col[static_cast<size_t>(row * oh * ow + p)]);
      // <col2im(y), x> == <y, im2col(x)>
      std::vector<float> y(col.size());
      for (auto& v : y) v = rng.uniform(-1, 1);
      std::vector<float> back(x.size(), 5.0f);
      col2im(y.data(), g, back.data());
      double lhs = 0.0, rhs = 0.0;
      for (size_t i = 0; i < x.size(); ++i) lhs += static_cast<double>(back[i]) * x[i];
      for (size_t i = 0; i < y.size(); ++i) rhs += static_cast<double>(y[i]) * col[i];
      CHECK(lhs == doctest::Approx(rhs).epsilon(1e-5));
      // Banded col2im_add accumulates to the same image.
      std::vector<float> banded_back(x.size(), 0.0f);
      std::vector<float> y_banded(static_cast<size_t>(g.col_rows() * ld));
      for (int64_t row = 0; row < g.col_rows(); ++row)
        std::copy_n(y.data() + row * oh * ow, oh * ow, y_banded.data() + row * ld);
      for (int64_t r = 0; r < oh; r += 3)
        col2im_add(y_banded.data() + r * ow, ld, g, r, std::min(r + 3, oh), banded_back.data());
      for (size_t i = 0; i < x.size(); ++i) CHECK(banded_back[i] == doctest::Approx(back[i]).epsilon(1e-5));
    }
  }

  TEST_CASE("convolution forward matches a direct convolution") {
    TuningGuard guard;
    const std::vector<ConvCase> cases = {
        make_case(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true),     // 3x3 same
        make_case(2, 4, 9, 7, 6, 3, 2, 2, 1, 0, 1, 1, 1, 1, true),     // non-square kernel, strides
        make_case(1, 2, 11, 10, 3, 3, 3, 1, 2, 2, 1, 2, 3, 1, false),  // dilation, no bias
        make_case(3, 6, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2, true),     // groups
        make_case(2, 6, 6, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 3, true),     // pointwise, grouped
        make_case(3, 5, 4, 3, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, false),    // pointwise
        make_case(2, 3, 8, 8, 5, 1, 1, 2, 2, 0, 0, 1, 1, 1, true),     // 1x1 strided: not pointwise
        make_case(2, 3, 12, 12, 4, 5, 5, 3, 3, 2, 2, 1, 1, 1, true),   // AlexNet-like
        make_case(1, 2, 3, 3, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1, true),     // one output pixel
    };
    // Default plan (small images batched) and tiny budgets (bands of rows,
    // one image at a time) must agree with the reference.
    const std::vector<ConvolutionLayer::Tuning> tunings = {
        {int64_t{32} << 20, 512, 4096}, {64, 1, 1}, {600, 1 << 20, 16}};
    for (const auto& tuning : tunings) {
      ConvolutionLayer::tuning() = tuning;
      for (const ConvCase& cc : cases) {
        CAPTURE(cc.options);
        CAPTURE(tuning.column_budget_bytes);
        auto layer = make_layer("Convolution", fmt::format("num_output = {}\n{}", cc.out, cc.options));
        Blob x(Shape{cc.n, cc.c, cc.h, cc.w}), y;
        fill_uniform(x, 11);
        layer->setup({&x}, {&y});
        layer->reshape({&x}, {&y});
        layer->forward({&x}, {&y});
        const auto& params = layer->params();
        REQUIRE(params.size() == (cc.bias ? 2u : 1u));
        CHECK(params[0].blob->shape() == Shape{cc.out, cc.c / cc.group, cc.kh, cc.kw});
        const auto expected = naive_conv(x, *params[0].blob, cc.bias ? params[1].blob.get() : nullptr, cc);
        REQUIRE(static_cast<size_t>(y.count()) == expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
          REQUIRE(y.data()[static_cast<int64_t>(i)] == doctest::Approx(expected[i]).epsilon(1e-4).scale(1.0));
      }
    }
  }

  TEST_CASE("parallel_for runs every piece exactly once, on several threads") {
    const int saved = compute_threads();
    set_compute_threads(2);
    for (int64_t pieces : {1, 2, 7, 64}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(pieces));
      parallel_for(pieces, [&](int64_t i) {
        hits[static_cast<size_t>(i)]++;
        parallel_for(3, [](int64_t) {});  // nested calls run inline
      });
      for (auto& h : hits) CHECK(h.load() == 1);
    }
    std::vector<int> covered(1000, 0);
    parallel_ranges(1000, 10, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) covered[static_cast<size_t>(i)]++;
    });
    CHECK(std::count(covered.begin(), covered.end(), 1) == 1000);
    set_compute_threads(saved);
  }

  TEST_CASE("convolution on two and three threads matches one thread and the direct convolution") {
    // Large enough that im2col, col2im and the gathers are split across threads.
    // Three threads with two chunks (or gradient shares) run the chunks in order
    // with the threads inside each; one or two threads run them side by side.
    const int saved = compute_threads();
    TuningGuard guard;
    const std::vector<ConvolutionLayer::Tuning> tunings = {
        {int64_t{32} << 20, 1 << 20, 4096},  // every image batched
        {int64_t{32} << 20, 1 << 20, 1000},  // two images per chunk: two chunks, two gradient shares
        {int64_t{32} << 20, 512, 4096},      // the default
        {20000, 1, 1},                       // one image at a time, in bands
        {20000, 1, 1, false},                // the same, bottom gradient by col2im
    };
    for (const auto& tuning : tunings) {
      ConvolutionLayer::tuning() = tuning;
      for (bool pointwise : {false, true}) {
        const ConvCase cc = pointwise ? make_case(3, 16, 24, 20, 8, 1, 1, 1, 1, 0, 0, 1, 1, 2, true)
                                      : make_case(3, 8, 30, 28, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2, true);
        CAPTURE(cc.options);
        std::vector<std::vector<float>> results[3];
        for (int threads : {1, 2, 3}) {
          set_compute_threads(threads);
          auto layer = make_layer("Convolution", fmt::format("num_output = {}\n{}", cc.out, cc.options));
          Blob x(Shape{cc.n, cc.c, cc.h, cc.w}), y;
          fill_uniform(x, 31);
          layer->setup({&x}, {&y});
          layer->reshape({&x}, {&y});
          layer->forward({&x}, {&y});
          if (threads > 1) {
            const auto expected = naive_conv(x, *layer->params()[0].blob, layer->params()[1].blob.get(), cc);
            for (size_t i = 0; i < expected.size(); ++i)
              REQUIRE(y.data()[static_cast<int64_t>(i)] == doctest::Approx(expected[i]).epsilon(1e-4).scale(1.0));
          }
          fill_uniform(y, 32);
          std::copy_n(y.data().ptr(), y.count(), y.diff().ptr());
          layer->backward({&y}, {true}, {&x});
          auto& r = results[threads - 1];
          r.emplace_back(x.diff().ptr(), x.diff().ptr() + x.count());
          for (auto& p : layer->params()) r.emplace_back(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count());
        }
        for (int threads : {2, 3})
          for (size_t b = 0; b < results[0].size(); ++b)
            for (size_t i = 0; i < results[0][b].size(); ++i)
              REQUIRE(results[threads - 1][b][i] == results[0][b][i]);  // bits, by construction (tiling.hpp)
      }
    }
    set_compute_threads(saved);
  }

  TEST_CASE("convolution plans: batching small images, bands for large ones") {
    TuningGuard guard;
    ConvolutionLayer::tuning() = {int64_t{1} << 20, 512, 256};
    auto small = make_layer("Convolution", "num_output = 2\nkernel_size = 3\npad = 1");
    Blob x(Shape{8, 2, 6, 6}), y;
    small->setup({&x}, {&y});
    small->reshape({&x}, {&y});
    const auto& plan = dynamic_cast<ConvolutionLayer&>(*small).plan();
    CHECK(plan.images_per_chunk == 8);  // ceil(256 / 36) = 8 images, within the budget
    ConvolutionLayer::tuning() = {2 * 18 * 10 * 4, 512, 4096};
    auto large = make_layer("Convolution", "num_output = 2\nkernel_size = 3\npad = 1");
    Blob x2(Shape{2, 2, 10, 10}), y2;
    large->setup({&x2}, {&y2});
    large->reshape({&x2}, {&y2});
    const auto& plan2 = dynamic_cast<ConvolutionLayer&>(*large).plan();
    CHECK(plan2.images_per_chunk == 1);
    CHECK(plan2.rows_per_band == 2);  // 18 column rows x 10 columns per output row
  }

  TEST_CASE("convolution gradients") {
    TuningGuard guard;
    struct Config {
      std::string options;
      Shape input;
      ConvolutionLayer::Tuning tuning;
    };
    const std::vector<Config> configs = {
        {"num_output = 3\nkernel_size = 3\npad = 1", Shape{2, 2, 5, 5}, {int64_t{32} << 20, 512, 4096}},
        // Two images per chunk, three chunks (the last one image), each its own gradient share.
        {"num_output = 3\nkernel_size = 3\npad = 1", Shape{5, 2, 5, 5}, {int64_t{32} << 20, 512, 50}},
        {"num_output = 3\nkernel_size = 3\npad = 1", Shape{2, 2, 5, 5}, {100, 1, 1}},  // row bands
        {"num_output = 3\nkernel_size = 3\npad = 1", Shape{2, 2, 5, 5}, {100, 1, 1, false}},  // col2im
        {"num_output = 4\nkernel_h = 3\nkernel_w = 2\nstride = 2 1\npad = 1 0\ndilation = 1 2\ngroup = 2",
         Shape{2, 4, 7, 6},
         {int64_t{32} << 20, 512, 4096}},
        {"num_output = 4\nkernel_size = 1\ngroup = 2\nbias_filler = uniform -1 1",
         Shape{3, 2, 3, 4},
         {int64_t{32} << 20, 512, 4096}},
        {"num_output = 4\nkernel_size = 1\nbias_term = false", Shape{2, 3, 3, 4}, {64, 1, 1}},  // pointwise, direct
        {"num_output = 2\nkernel_size = 2\nstride = 2\nbias_term = false", Shape{1, 3, 4, 6}, {64, 1, 1}},
        // One image at a time, stride 1, >= 32 channels per group: the bottom
        // gradient as a convolution of the top gradient (flipped kernel),
        // whole images and in bands.
        {"num_output = 4\nkernel_h = 3\nkernel_w = 2\npad = 2 0\ndilation = 2 1\ngroup = 2",
         Shape{1, 64, 5, 4},
         {int64_t{32} << 20, 1, 1}},
        {"num_output = 3\nkernel_size = 3\nbias_term = false", Shape{1, 32, 6, 5}, {2000, 1, 1}},
    };
    for (const Config& cfg : configs) {
      CAPTURE(cfg.options);
      CAPTURE(cfg.tuning.column_budget_bytes);
      ConvolutionLayer::tuning() = cfg.tuning;
      auto layer = make_layer("Convolution", cfg.options + "\nweight_filler = gaussian 0.5");
      Blob x(cfg.input), y;
      fill_uniform(x, 5);
      check_gradients(*layer, {&x}, {&y}, tolerance(1e-2f, 2e-3f));
    }
  }

  TEST_CASE("stride-1 bottom gradient by the flipped-kernel convolution matches GEMM + col2im") {
    TuningGuard guard;
    const int saved = compute_threads();
    set_compute_threads(2);
    for (const std::string options : {"num_output = 40\nkernel_size = 3\npad = 1",
                                      "num_output = 6\nkernel_h = 3\nkernel_w = 5\npad = 0 3\ndilation = 2 1\ngroup = 2",
                                      "num_output = 8\nkernel_size = 2\nbias_term = false"}) {
      CAPTURE(options);
      std::vector<float> results[2];
      for (bool transposed : {true, false}) {
        ConvolutionLayer::tuning() = {3000, 1, 1, transposed};  // one image at a time, in bands
        auto layer = make_layer("Convolution", options);
        Blob x(Shape{2, 64, 11, 9}), y;
        fill_uniform(x, 71);
        layer->setup({&x}, {&y});
        layer->reshape({&x}, {&y});
        layer->forward({&x}, {&y});
        fill_uniform(y, 72);
        std::copy_n(y.data().ptr(), y.count(), y.diff().ptr());
        x.diff().fill(42.0f);  // overwritten
        layer->backward({&y}, {true}, {&x});
        results[transposed ? 0 : 1].assign(x.diff().ptr(), x.diff().ptr() + x.count());
      }
      for (size_t i = 0; i < results[0].size(); ++i)
        REQUIRE(results[0][i] == doctest::Approx(results[1][i]).epsilon(1e-4).scale(1.0));
    }
    set_compute_threads(saved);
  }

  TEST_CASE("convolution backward accumulates parameter gradients and respects propagate_down") {
    TuningGuard guard;
    auto layer = make_layer("Convolution", "num_output = 2\nkernel_size = 3\nbias_filler = constant 0.5");
    Blob x(Shape{2, 2, 4, 4}), y;
    fill_uniform(x, 9);
    layer->setup({&x}, {&y});
    layer->reshape({&x}, {&y});
    layer->forward({&x}, {&y});
    fill_uniform(y, 4);
    std::copy_n(y.data().ptr(), y.count(), y.diff().ptr());
    x.diff().fill(42.0f);
    auto& w = *layer->params()[0].blob;
    auto& b = *layer->params()[1].blob;
    w.diff().zero(), b.diff().zero();
    layer->backward({&y}, {false}, {&x});
    const std::vector<float> once(w.diff().ptr(), w.diff().ptr() + w.count());
    const float bias_once = b.diff()[0];
    CHECK(x.diff()[0] == 42.0f);  // untouched
    layer->backward({&y}, {false}, {&x});
    for (int64_t i = 0; i < w.count(); ++i) CHECK(w.diff()[i] == doctest::Approx(2 * once[static_cast<size_t>(i)]));
    // Bias gradient: the sum of the top diff over images and positions.
    double sum = 0.0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t p = 0; p < 4; ++p) sum += y.diff()[(n * 2 + 0) * 4 + p];
    CHECK(bias_once == doctest::Approx(sum));
  }

  TEST_CASE("convolution shape and option errors name the layer") {
    auto grouped = make_layer("Convolution", "num_output = 4\nkernel_size = 3\ngroup = 2");
    Blob x(Shape{1, 3, 5, 5}), y;
    const auto msg = error_of([&] { grouped->setup({&x}, {&y}); });
    CHECK(msg.find("layer 'test' (Convolution)") != std::string::npos);
    CHECK(msg.find("group 2") != std::string::npos);

    auto large = make_layer("Convolution", "num_output = 4\nkernel_size = 5\npad = 1");
    Blob small(Shape{1, 1, 2, 2});
    large->setup({&small}, {&y});
    const auto too_big = error_of([&] { large->reshape({&small}, {&y}); });
    CHECK(too_big.find("layer 'test' (Convolution)") != std::string::npos);
    CHECK(too_big.find("larger than the padded input 4x4") != std::string::npos);

    auto conv = make_layer("Convolution", "num_output = 4\nkernel_size = 3");
    Blob flat(Shape{2, 3}), chw(Shape{1, 2, 5, 5});
    CHECK(error_of([&] { conv->setup({&flat}, {&y}); }).find("4-D") != std::string::npos);
    conv->setup({&chw}, {&y});
    Blob other(Shape{1, 3, 5, 5});
    CHECK(error_of([&] { conv->reshape({&other}, {&y}); }).find("expected 2 input channels") != std::string::npos);

    CHECK(error_of([] {
            make_layer("Convolution", "num_output = 3\nkernel_size = 3\ngroup = 2");
          }).find("not divisible by group") != std::string::npos);
    CHECK(error_of([] { make_layer("Convolution", "num_output = 3"); }).find("kernel_size") != std::string::npos);
    CHECK(error_of([] {
            make_layer("Convolution", "num_output = 3\nkernel_size = 3\nkernel_h = 3\nkernel_w = 3");
          }).find("not both") != std::string::npos);
    CHECK(error_of([] { make_layer("Convolution", "num_output = 3\nkernel_h = 3"); }).find("without kernel_w") !=
          std::string::npos);
    CHECK(error_of([] { make_layer("Convolution", "num_output = 3\nkernel_size = 1 2 3"); }).find("two") !=
          std::string::npos);
    CHECK(error_of([] { make_layer("Convolution", "num_output = 3\nkernel_size = 0"); }).find("at least 1") !=
          std::string::npos);
  }

  TEST_CASE("max pooling: Caffe output sizes, values and gradients") {
    // 5x5 input, kernel 2, stride 2: ceil(3/2) + 1 = 3 outputs; the last
    // window holds only the last row/column.
    auto layer = make_layer("Pooling", "pool = max\nkernel_size = 2\nstride = 2");
    Blob x(Shape{1, 1, 5, 5}), y;
    for (int64_t i = 0; i < 25; ++i) x.data()[i] = static_cast<float>((i * 7) % 25);  // distinct
    layer->reshape({&x}, {&y});
    REQUIRE(y.shape() == Shape{1, 1, 3, 3});
    layer->forward({&x}, {&y});
    for (int64_t oh = 0; oh < 3; ++oh)
      for (int64_t ow = 0; ow < 3; ++ow) {
        float best = -1;
        for (int64_t ih = 2 * oh; ih < std::min<int64_t>(2 * oh + 2, 5); ++ih)
          for (int64_t iw = 2 * ow; iw < std::min<int64_t>(2 * ow + 2, 5); ++iw)
            best = std::max(best, x.data()[ih * 5 + iw]);
        CHECK(y.data()[oh * 3 + ow] == best);
      }
    // Padding: in 4, kernel 3, stride 2, pad 1: ceil(3/2) + 1 = 3 windows
    // starting at -1, 1, 3 (the last starts inside the input: kept).
    auto padded = make_layer("Pooling", "pool = max\nkernel_size = 3\nstride = 2\npad = 1");
    Blob x4(Shape{1, 1, 4, 4}), y4;
    padded->reshape({&x4}, {&y4});
    CHECK(y4.shape() == Shape{1, 1, 3, 3});
    // in 3, kernel 2, stride 2, pad 1: ceil(3/2) + 1 = 3, but the window at
    // 2*2-1 = 3 starts beyond the input: clipped to 2.
    auto clipped = make_layer("Pooling", "pool = max\nkernel_size = 2\nstride = 2\npad = 1");
    Blob x3(Shape{1, 1, 3, 3}), y3;
    clipped->reshape({&x3}, {&y3});
    CHECK(y3.shape() == Shape{1, 1, 2, 2});
    // round_mode = floor (PyTorch's and ONNX's default): floor(3/2) + 1 = 2
    // windows for 5x5 / kernel 2 / stride 2, and ResNet's stem pool (112,
    // kernel 3, stride 2, pad 1) gives 56 where ceil gives 57.
    auto floor = make_layer("Pooling", "pool = max\nkernel_size = 2\nstride = 2\nround_mode = floor");
    floor->reshape({&x}, {&y});
    CHECK(y.shape() == Shape{1, 1, 2, 2});
    floor->forward({&x}, {&y});
    CHECK(y.data()[3] == std::max({x.data()[12], x.data()[13], x.data()[17], x.data()[18]}));  // rows, columns 2-3
    Blob stem(Shape{1, 1, 112, 112}), pooled;
    make_layer("Pooling", "kernel_size = 3\nstride = 2\npad = 1\nround_mode = floor")->reshape({&stem}, {&pooled});
    CHECK(pooled.shape() == Shape{1, 1, 56, 56});
    make_layer("Pooling", "kernel_size = 3\nstride = 2\npad = 1")->reshape({&stem}, {&pooled});
    CHECK(pooled.shape() == Shape{1, 1, 57, 57});
    CHECK(error_of([] { make_layer("Pooling", "kernel_size = 2\nround_mode = down"); }).find("round_mode") !=
          std::string::npos);

    const std::vector<std::pair<std::string, Shape>> configs = {
        {"pool = max\nkernel_size = 2\nstride = 2", Shape{2, 2, 5, 5}},
        {"pool = max\nkernel_size = 3\nstride = 2\npad = 1\nround_mode = floor", Shape{1, 2, 6, 7}},
        {"pool = max\nkernel_size = 3\nstride = 2\npad = 1", Shape{1, 3, 6, 5}},
        {"pool = max\nkernel_h = 3\nkernel_w = 2\nstride_h = 1\nstride_w = 2", Shape{2, 1, 5, 6}},
        {"pool = max\nglobal_pooling = true", Shape{2, 3, 4, 3}},
    };
    for (const auto& config : configs) {
      const auto& [options, shape] = config;
      CAPTURE(config.first);
      auto l = make_layer("Pooling", options);
      Blob in(shape), out;
      // A random permutation of distinct values spaced 0.1 apart: no ties, and
      // a step of 1e-2 never changes which element is the maximum.
      Rng rng(17);
      std::vector<int64_t> order(static_cast<size_t>(in.count()));
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
      for (int64_t i = 0; i < in.count(); ++i) in.data()[i] = 0.1f * static_cast<float>(order[static_cast<size_t>(i)]);
      check_gradients(*l, {&in}, {&out}, tolerance(1e-2f, 1e-3f));
    }
  }

  TEST_CASE("max pooling: windows inside the plane (fast path) and at its border equal a plain scan, ties and NaN too") {
    // Each output: the first maximum of its window clipped to the input, in
    // row-then-column order with a strict '>' (a NaN never wins; a window of
    // NaN and -inf gives -inf at its first element). The backward pass shows
    // which element was chosen.
    struct Case {
      const char* options;
      Shape shape;
      int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    };
    const std::vector<Case> cases = {
        {"kernel_size = 2\nstride = 2", Shape{2, 3, 8, 10}, 2, 2, 2, 2, 0, 0},
        {"kernel_size = 2\nstride = 2", Shape{1, 2, 7, 9}, 2, 2, 2, 2, 0, 0},    // ceil: partial last windows
        // Rows of 20 and 18 outputs: the vectorised 2x2 path's full vectors and its tail.
        {"kernel_size = 2\nstride = 2", Shape{2, 2, 6, 40}, 2, 2, 2, 2, 0, 0},
        {"kernel_size = 2\nstride = 2\npad = 1", Shape{1, 2, 9, 35}, 2, 2, 2, 2, 1, 1},
        {"kernel_size = 3\nstride = 2", Shape{2, 2, 13, 11}, 3, 3, 2, 2, 0, 0},   // AlexNet-style, partial
        {"kernel_size = 3\nstride = 2\npad = 1", Shape{1, 2, 12, 12}, 3, 3, 2, 2, 1, 1},
        {"kernel_size = 3\nstride = 1\npad = 1", Shape{1, 1, 6, 7}, 3, 3, 1, 1, 1, 1},
        {"kernel_h = 3\nkernel_w = 2\nstride_h = 1\nstride_w = 2", Shape{2, 1, 6, 9}, 3, 2, 1, 2, 0, 0},
        {"kernel_size = 4\nstride = 3\npad = 2", Shape{1, 2, 11, 10}, 4, 4, 3, 3, 2, 2},
    };
    for (const Case& c : cases) {
      CAPTURE(c.options);
      auto layer = make_layer("Pooling", std::string("pool = max\n") + c.options);
      Blob x(c.shape), y;
      Rng rng(5);
      // Few distinct values (many ties), some NaN and -inf.
      for (int64_t i = 0; i < x.count(); ++i) {
        const uint64_t r = rng.below(20);
        x.data()[i] = r == 0   ? std::numeric_limits<float>::quiet_NaN()
                      : r == 1 ? -std::numeric_limits<float>::infinity()
                               : static_cast<float>(r % 5);
      }
      layer->reshape({&x}, {&y});
      layer->forward({&x}, {&y});
      const int64_t H = c.shape[2], W = c.shape[3], OH = y.shape()[2], OW = y.shape()[3];
      for (int64_t i = 0; i < y.count(); ++i) y.diff()[i] = static_cast<float>(i + 1);
      layer->backward({&y}, {true}, {&x});
      std::vector<float> dx(static_cast<size_t>(x.count()), 0.0f);
      for (int64_t p = 0; p < c.shape[0] * c.shape[1]; ++p)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t h0 = oh * c.stride_h - c.pad_h, w0 = ow * c.stride_w - c.pad_w;
            const int64_t h1 = std::min(h0 + c.kernel_h, H), w1 = std::min(w0 + c.kernel_w, W);
            float best = -std::numeric_limits<float>::infinity();
            int64_t at = std::max<int64_t>(h0, 0) * W + std::max<int64_t>(w0, 0);
            for (int64_t ih = std::max<int64_t>(h0, 0); ih < h1; ++ih)
              for (int64_t iw = std::max<int64_t>(w0, 0); iw < w1; ++iw)
                if (x.data()[p * H * W + ih * W + iw] > best) best = x.data()[p * H * W + ih * W + iw], at = ih * W + iw;
            const int64_t o = p * OH * OW + oh * OW + ow;
            CHECK(std::memcmp(&y.data()[o], &best, sizeof(float)) == 0);
            dx[static_cast<size_t>(p * H * W + at)] += y.diff()[o];
          }
      CHECK(std::memcmp(dx.data(), x.diff().ptr(), dx.size() * sizeof(float)) == 0);
    }
  }

  TEST_CASE("average pooling divides by the window clipped to the padded input") {
    auto layer = make_layer("Pooling", "pool = ave\nkernel_size = 3\nstride = 2\npad = 1");
    Blob x(Shape{1, 1, 4, 4}), y;
    x.data().fill(1.0f);
    layer->reshape({&x}, {&y});
    REQUIRE(y.shape() == Shape{1, 1, 3, 3});
    layer->forward({&x}, {&y});
    // Window starts -1, 1, 3; ends (clipped to in + pad = 5) 2, 4, 5.
    // Divisors 3, 3, 2 per axis; inputs inside: 2, 3, 1 per axis.
    const float inside[3] = {2, 3, 1}, divisor[3] = {3, 3, 2};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        CHECK(y.data()[i * 3 + j] == doctest::Approx(inside[i] * inside[j] / (divisor[i] * divisor[j])));

    auto global = make_layer("Pooling", "pool = ave\nglobal_pooling = true");
    Blob g(Shape{2, 2, 3, 4}), gy;
    fill_uniform(g, 3);
    global->reshape({&g}, {&gy});
    REQUIRE(gy.shape() == Shape{2, 2, 1, 1});
    global->forward({&g}, {&gy});
    for (int64_t p = 0; p < 4; ++p) {
      double sum = 0.0;
      for (int64_t i = 0; i < 12; ++i) sum += g.data()[p * 12 + i];
      CHECK(gy.data()[p] == doctest::Approx(sum / 12));
    }

    for (const auto& config : std::vector<std::pair<std::string, Shape>>{
             {"pool = ave\nkernel_size = 3\nstride = 2\npad = 1", Shape{2, 2, 5, 6}},
             {"pool = ave\nkernel_size = 2 3\nstride = 1 2", Shape{1, 2, 4, 7}},
             {"pool = ave\nglobal_pooling = true", Shape{2, 3, 3, 5}}}) {
      const auto& [options, shape] = config;
      CAPTURE(config.first);
      auto l = make_layer("Pooling", options);
      Blob in(shape), out;
      fill_uniform(in, 8);
      check_gradients(*l, {&in}, {&out}, tolerance(1e-2f, 1e-3f));
    }
  }

  TEST_CASE("pooling errors") {
    CHECK(error_of([] { make_layer("Pooling", "pool = min\nkernel_size = 2"); }).find("max, ave") != std::string::npos);
    CHECK(error_of([] { make_layer("Pooling", "kernel_size = 2\npad = 2"); }).find("smaller than the kernel") !=
          std::string::npos);
    CHECK(error_of([] { make_layer("Pooling", "global_pooling = true\nkernel_size = 2"); }).find("global") !=
          std::string::npos);
    auto l = make_layer("Pooling", "kernel_size = 4");
    Blob x(Shape{1, 1, 3, 3}), y;
    const auto msg = error_of([&] { l->reshape({&x}, {&y}); });
    CHECK(msg.find("layer 'test' (Pooling)") != std::string::npos);
    CHECK(msg.find("larger than the padded input") != std::string::npos);
  }

  TEST_CASE("inner product: values, axis and gradients") {
    auto layer = make_layer("InnerProduct", "num_output = 3\nweight_filler = uniform -1 1\nbias_filler = uniform -1 1");
    Blob x(Shape{2, 2, 2, 2}), y;
    fill_uniform(x, 21);
    layer->setup({&x}, {&y});
    layer->reshape({&x}, {&y});
    REQUIRE(y.shape() == Shape{2, 3});
    layer->forward({&x}, {&y});
    const auto& w = *layer->params()[0].blob;
    const auto& b = *layer->params()[1].blob;
    CHECK(w.shape() == Shape{3, 8});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < 3; ++o) {
        double sum = b.data()[o];
        for (int64_t k = 0; k < 8; ++k) sum += static_cast<double>(w.data()[o * 8 + k]) * x.data()[n * 8 + k];
        CHECK(y.data()[n * 3 + o] == doctest::Approx(sum));
      }

    auto axis2 = make_layer("InnerProduct", "num_output = 4\naxis = 2");
    Blob x3(Shape{2, 3, 5}), y3;
    axis2->setup({&x3}, {&y3});
    axis2->reshape({&x3}, {&y3});
    CHECK(y3.shape() == Shape{2, 3, 4});
    CHECK(axis2->params()[0].blob->shape() == Shape{4, 5});

    for (const auto& config : std::vector<std::pair<std::string, Shape>>{
             {"num_output = 3\nbias_filler = uniform -1 1", Shape{4, 2, 3}},
             {"num_output = 2\naxis = 2\nweight_filler = gaussian 1", Shape{2, 3, 4}},
             {"num_output = 5\nbias_term = false\naxis = -1", Shape{3, 6}}}) {
      const auto& [options, shape] = config;
      CAPTURE(config.first);
      auto l = make_layer("InnerProduct", options);
      Blob in(shape), out;
      fill_uniform(in, 13);
      check_gradients(*l, {&in}, {&out}, tolerance(1e-2f, 2e-3f));
    }

    Blob wrong(Shape{2, 9}), yw;
    auto l = make_layer("InnerProduct", "num_output = 2");
    Blob ok(Shape{2, 8});
    l->setup({&ok}, {&yw});
    const auto msg = error_of([&] { l->reshape({&wrong}, {&yw}); });
    CHECK(msg.find("layer 'test' (InnerProduct)") != std::string::npos);
    CHECK(msg.find("expected 8 inputs") != std::string::npos);
    auto bad_axis = make_layer("InnerProduct", "num_output = 2\naxis = 3");
    CHECK(error_of([&] { bad_axis->setup({&ok}, {&yw}); }).find("axis 3") != std::string::npos);
  }

  TEST_CASE("BLAS kernel: CPUID parsing and the best core type") {
    blas::CpuidWords w;
    w.max_leaf = 13;
    std::memcpy(w.vendor, "GenuineIntel", 12);
    w.leaf1_ecx = (1u << 27) | (1u << 28) | (1u << 12);  // OSXSAVE, AVX, FMA
    w.xcr0 = 0xe7;                                       // x87, SSE, AVX, opmask, ZMM
    w.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
    auto f = blas::features_from_cpuid(w);
    CHECK(f.avx512f);
    CHECK(blas::best_coretype(f) == "SkylakeX");
    w.leaf7_1_eax = 1u << 5;  // AVX512_BF16
    CHECK(blas::best_coretype(blas::features_from_cpuid(w)) == "Cooperlake");
    w.xcr0 = 0x7;  // the OS does not save ZMM state: no AVX-512
    f = blas::features_from_cpuid(w);
    CHECK_FALSE(f.avx512f);
    CHECK(blas::best_coretype(f) == "Haswell");
    CHECK_FALSE(blas::can_run(f, "SkylakeX"));
    std::memcpy(w.vendor, "AuthenticAMD", 12);
    w.leaf7_ebx = 1u << 5, w.leaf7_1_eax = 0;
    f = blas::features_from_cpuid(w);
    CHECK(blas::best_coretype(f) == "Zen");
    w.leaf1_ecx = (1u << 27) | (1u << 28);  // AVX without FMA/AVX2 use
    w.leaf7_ebx = 0;
    CHECK(blas::best_coretype(blas::features_from_cpuid(w)) == "");
    w.xcr0 = 0x3;  // OS without AVX state
    CHECK_FALSE(blas::features_from_cpuid(w).avx);

    // This machine: a name, and one this CPU can run.
    const auto here = blas::detect_cpu();
    const std::string best = blas::best_coretype(here);
    MESSAGE("CPU: " << here.vendor << " (" << here.str() << "), best kernel '" << best << "', OpenBLAS uses "
                    << blas::kernel_name());
    if (!best.empty()) CHECK(blas::can_run(here, best));
    CHECK_FALSE(blas::kernel_name().empty());
    CHECK(blas::canonical_coretype("skylakex") == std::optional<std::string>("SkylakeX"));
    CHECK_FALSE(blas::canonical_coretype("pentium9"));
  }

  TEST_CASE("BLAS kernel: decisions for requests and environments") {
    blas::CpuFeatures xeon;
    xeon.vendor = "GenuineIntel";
    xeon.avx = xeon.avx2 = xeon.fma = true;
    xeon.avx512f = xeon.avx512dq = xeon.avx512bw = xeon.avx512vl = true;
    blas::CpuFeatures epyc;
    epyc.vendor = "AuthenticAMD";
    epyc.avx = epyc.avx2 = epyc.fma = true;
    const blas::KernelRequest automatic;

    // OpenBLAS misdetected an AVX-512 Xeon: switch.
    auto d = blas::decide_kernel(xeon, automatic, {std::nullopt, std::nullopt, "Prescott"});
    CHECK(d.reexec);
    CHECK(d.coretype == "SkylakeX");
    // Already right (names compare case-insensitively): keep.
    d = blas::decide_kernel(xeon, automatic, {std::nullopt, std::nullopt, "SKYLAKEX"});
    CHECK_FALSE(d.reexec);
    d = blas::decide_kernel(epyc, automatic, {std::nullopt, std::nullopt, "Zen"});
    CHECK_FALSE(d.reexec);
    CHECK(d.reason.find("best for this CPU") != std::string::npos);
    // The user's OPENBLAS_CORETYPE wins over everything.
    d = blas::decide_kernel(xeon, request("Haswell"), {"Sandybridge", std::nullopt, "Sandybridge"});
    CHECK_FALSE(d.reexec);
    CHECK(d.reason.find("OPENBLAS_CORETYPE=Sandybridge") != std::string::npos);
    CHECK(d.warning.find("ignored") != std::string::npos);
    // An explicit request is honoured when the CPU can run it.
    d = blas::decide_kernel(xeon, request("haswell"), {std::nullopt, std::nullopt, "SkylakeX"});
    CHECK(d.reexec);
    CHECK(d.coretype == "Haswell");
    // ... and refused when it cannot (SkylakeX on an AVX2-only EPYC: SIGILL).
    d = blas::decide_kernel(epyc, request("SkylakeX"), {std::nullopt, std::nullopt, "Zen"});
    CHECK_FALSE(d.reexec);
    CHECK(d.warning.find("lacks") != std::string::npos);
    // "openblas" keeps OpenBLAS's own detection.
    d = blas::decide_kernel(xeon, request("openblas"), {std::nullopt, std::nullopt, "Prescott"});
    CHECK_FALSE(d.reexec);
    // After our own re-exec (marker set): never again, even if OpenBLAS ignored it.
    d = blas::decide_kernel(xeon, automatic, {"SkylakeX", "forced:SkylakeX", "SkylakeX"});
    CHECK_FALSE(d.reexec);
    CHECK(d.warning.empty());
    d = blas::decide_kernel(xeon, automatic, {"SkylakeX", "forced:SkylakeX", "Prescott"});
    CHECK_FALSE(d.reexec);
    CHECK(d.warning.find("OpenBLAS loaded Prescott") != std::string::npos);
    d = blas::decide_kernel(xeon, automatic, {std::nullopt, "fallback:SkylakeX", "Prescott"});
    CHECK_FALSE(d.reexec);
    CHECK(d.reason.find("fallback") != std::string::npos);
    // Unknown names are configuration errors.
    CHECK_THROWS_AS(blas::decide_kernel(xeon, request("pentium9"), {std::nullopt, std::nullopt, "Zen"}), ConfigError);
  }

  TEST_CASE("BLAS kernel: the loaded kernel computes correct products") {
    CHECK(blas::verify_sgemm() == "");
    CHECK(blas::available_cores() >= 1);
  }
}
