// Convolutions by oneDNN (core/kernels/dnnl_convolution.hpp) against
// im2col + GEMM on the same weights and data, every pass; the choice of
// algorithm and its errors.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/layers/convolution.hpp"
#include "core/layers/convolution_choices.hpp"
#include "support/error_message.hpp"
#include "support/gradient_check.hpp"
#include "support/layer_fixture.hpp"

using namespace taihu;
using namespace taihu::testing;

namespace {

struct Result {
  std::vector<float> top, bottom_diff, weight_diff, bias_diff;
  std::string kernels;
};

// Forward and backward of a fresh layer on seeded data; parameter diffs
// start at 0.25 so that accumulation shows.
Result run(const std::string& options, const Shape& bottom_shape) {
  auto layer = make_layer("Convolution", options);
  Blob x(bottom_shape), y;
  fill_uniform(x, 7, -1.0f, 1.0f);
  layer->setup({&x}, {&y});
  layer->reshape({&x}, {&y});
  for (auto& p : layer->params()) fill_uniform(*p.blob, 11 + p.blob->count(), -0.5f, 0.5f);
  layer->forward({&x}, {&y});
  Rng rng(13);
  for (int64_t i = 0; i < y.count(); ++i) y.diff()[i] = rng.uniform(-1.0f, 1.0f);
  for (auto& p : layer->params()) p.blob->diff().fill(0.25f);
  layer->backward({&y}, {true}, {&x});
  Result r;
  r.top.assign(y.data().ptr(), y.data().ptr() + y.count());
  r.bottom_diff.assign(x.diff().ptr(), x.diff().ptr() + x.count());
  const auto& params = layer->params();
  r.weight_diff.assign(params[0].blob->diff().ptr(), params[0].blob->diff().ptr() + params[0].blob->count());
  if (params.size() > 1)
    r.bias_diff.assign(params[1].blob->diff().ptr(), params[1].blob->diff().ptr() + params[1].blob->count());
  auto& conv = static_cast<ConvolutionLayer&>(*layer);
  using Pass = DnnlConvolution::Pass;
  r.kernels = conv.pass_kernel(Pass::forward) + " | " + conv.pass_kernel(Pass::data_gradient) + " | " +
              conv.pass_kernel(Pass::weight_gradient);
  return r;
}

// Largest difference relative to the largest reference value.
double relative_error(const std::vector<float>& a, const std::vector<float>& ref) {
  REQUIRE(a.size() == ref.size());
  double largest = 0.0, error = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::abs(double(ref[i])));
    error = std::max(error, std::abs(double(a[i]) - double(ref[i])));
  }
  return error / std::max(largest, 1e-30);
}

GradientCheckOptions tolerance(float step, float threshold) {
  GradientCheckOptions options;
  options.step = step;
  options.threshold = threshold;
  return options;
}

bool dnnl_applies(const std::string& options, const Shape& shape) {
  try {
    run(options + "\nalgorithm = dnnl", shape);
    return true;
  } catch (const ShapeError&) {
    return false;
  }
}

}  // namespace

TEST_SUITE("dnnl convolution") {
  TEST_CASE("oneDNN equals im2col + GEMM in every pass, across shapes, strides, pads, dilations and batches") {
    struct Case {
      std::string options;
      Shape shape;
    };
    const std::vector<Case> cases = {
        {"num_output = 32\nkernel_size = 3\npad = 1", Shape{2, 16, 14, 14}},
        {"num_output = 32\nkernel_size = 3\npad = 1\nbias_term = false", Shape{5, 32, 9, 11}},
        {"num_output = 64\nkernel_size = 1\nstride = 2", Shape{3, 48, 15, 15}},
        {"num_output = 16\nkernel_size = 7\nstride = 2\npad = 3", Shape{2, 3, 32, 32}},
        {"num_output = 48\nkernel_h = 3\nkernel_w = 5\npad_h = 1\npad_w = 2\ndilation = 2", Shape{1, 16, 20, 17}},
        {"num_output = 20\nkernel_size = 5", Shape{9, 1, 28, 28}},  // LeNet's conv1: 20 channels, not 16k
        {"num_output = 50\nkernel_size = 5", Shape{4, 20, 12, 12}},
        {"num_output = 128\nkernel_size = 3\nstride = 2\npad = 1", Shape{2, 64, 10, 10}},
    };
    int ran = 0;
    for (const Case& c : cases) {
      CAPTURE(c.options);
      if (!dnnl_applies(c.options, c.shape)) {
        MESSAGE("oneDNN has no JIT kernel for this case on this CPU: " << c.options);
        continue;
      }
      ++ran;
      const Result ref = run(c.options + "\nalgorithm = im2col", c.shape);
      const Result dnnl = run(c.options + "\nalgorithm = dnnl", c.shape);
      CHECK(ref.kernels == "im2col+GEMM | im2col+GEMM | im2col+GEMM");
      CHECK(dnnl.kernels.find("oneDNN jit") == 0);
      CHECK(relative_error(dnnl.top, ref.top) < 1e-5);
      CHECK(relative_error(dnnl.bottom_diff, ref.bottom_diff) < 1e-5);
      CHECK(relative_error(dnnl.weight_diff, ref.weight_diff) < 1e-5);
      CHECK(relative_error(dnnl.bias_diff, ref.bias_diff) < 1e-5);
      // A second run computes the same bits (its pieces are cut by shape).
      const Result again = run(c.options + "\nalgorithm = dnnl", c.shape);
      CHECK(again.top == dnnl.top);
      CHECK(again.weight_diff == dnnl.weight_diff);
    }
    if (ran == 0) MESSAGE("oneDNN has no JIT kernel on this CPU: nothing compared");
  }

  TEST_CASE("oneDNN's weight gradient: the same bits on 1, 2 and 3 threads, in slices of outputs or pieces of images") {
    // A 1x1 layer on a large input is cut in pieces of images (partial sums
    // added in piece order); a 3x3 layer with many weights on a small input
    // in slices of output channels. Neither cut depends on the threads.
    const std::vector<std::pair<std::string, Shape>> cases = {
        {"num_output = 32\nkernel_size = 1", Shape{8, 32, 12, 12}},
        {"num_output = 128\nkernel_size = 3\npad = 1", Shape{2, 64, 5, 5}},
    };
    const int saved = compute_threads();
    for (const auto& c : cases) {
      const std::string& options = c.first;  // not a structured binding: clang's CAPTURE cannot name one
      const Shape& shape = c.second;
      CAPTURE(options);
      if (!dnnl_applies(options, shape)) continue;
      set_compute_threads(1);
      const Result one = run(options + "\nalgorithm = dnnl", shape);
      const Result ref = run(options + "\nalgorithm = im2col", shape);
      CHECK(relative_error(one.weight_diff, ref.weight_diff) < 1e-5);
      CHECK(relative_error(one.bias_diff, ref.bias_diff) < 1e-5);
      for (const int threads : {2, 3}) {
        set_compute_threads(threads);
        const Result many = run(options + "\nalgorithm = dnnl", shape);
        CHECK(many.weight_diff == one.weight_diff);
        CHECK(many.bias_diff == one.bias_diff);
      }
    }
    set_compute_threads(saved);
  }

  TEST_CASE("oneDNN convolution passes the gradient check, accumulates and respects propagate_down") {
    struct Case {
      std::string options;
      Shape input;
    };
    const std::vector<Case> cases = {
        {"num_output = 16\nkernel_size = 3\nstride = 2\npad = 1", Shape{2, 16, 9, 9}},
        {"num_output = 4\nkernel_h = 3\nkernel_w = 2\nstride = 2 1\npad = 1 0\ndilation = 1 2", Shape{2, 4, 7, 6}},
        {"num_output = 4\nkernel_size = 1\nbias_filler = uniform -1 1", Shape{3, 2, 3, 4}},
        {"num_output = 3\nkernel_size = 3\nbias_term = false", Shape{1, 32, 6, 5}},
        {"num_output = 32\nkernel_size = 3\npad = 1\ngroup = 2", Shape{2, 32, 5, 5}},
    };
    for (const Case& c : cases) {
      CAPTURE(c.options);
      if (!dnnl_applies(c.options, c.input)) continue;
      auto layer = make_layer("Convolution", c.options + "\nalgorithm = dnnl\nweight_filler = gaussian 0.5");
      Blob x(c.input), y;
      fill_uniform(x, 3);
      check_gradients(*layer, {&x}, {&y}, tolerance(1e-2f, 2e-3f));
      // Parameter gradients add up over calls; a bottom without propagate_down keeps its diff.
      auto& w = *layer->params()[0].blob;
      w.diff().zero();
      x.diff().fill(42.0f);
      layer->backward({&y}, {false}, {&x});
      const std::vector<float> once(w.diff().ptr(), w.diff().ptr() + w.count());
      layer->backward({&y}, {false}, {&x});
      CHECK(x.diff()[0] == 42.0f);
      for (int64_t i = 0; i < w.count(); ++i) CHECK(w.diff()[i] == doctest::Approx(2 * once[static_cast<size_t>(i)]));
    }
  }

  TEST_CASE("auto: oneDNN where it has a kernel (grouped too), im2col where not; forcing it there is an error") {
    const Shape shape{2, 32, 12, 12};
    if (!dnnl_applies("num_output = 32\nkernel_size = 3", shape)) return;
    CHECK(run("num_output = 32\nkernel_size = 3", shape).kernels.find("oneDNN") == 0);
    // 1x1: oneDNN in every pass (the weight gradient in pieces of images).
    const std::string pointwise = run("num_output = 32\nkernel_size = 1", shape).kernels;
    CHECK(pointwise.find("oneDNN") == 0);
    CHECK(pointwise.find("im2col") == std::string::npos);
    // Grouped convolutions: oneDNN's grouped kernels, weight gradients group by group.
    const std::string grouped = "num_output = 32\nkernel_size = 3\ngroup = 2";
    if (dnnl_applies(grouped, shape)) {
      const Result ref = run(grouped + "\nalgorithm = im2col", shape);
      const Result dnnl = run(grouped, shape);
      CHECK(dnnl.kernels.find("oneDNN") == 0);
      CHECK(relative_error(dnnl.top, ref.top) < 1e-5);
      CHECK(relative_error(dnnl.bottom_diff, ref.bottom_diff) < 1e-5);
      CHECK(relative_error(dnnl.weight_diff, ref.weight_diff) < 1e-5);
      CHECK(relative_error(dnnl.bias_diff, ref.bias_diff) < 1e-5);
    }
    // Geometries some CPUs have no oneDNN JIT kernel for (heavily dilated
    // grouped ones): auto falls back to im2col, forcing dnnl is an error.
    const std::vector<std::string> rare = {
        "num_output = 4\nkernel_size = 3\npad = 1\ndilation = 4\ngroup = 2",
        "num_output = 3\nkernel_size = 7\npad = 3\ndilation = 3\ngroup = 3",
    };
    const Shape small{1, 4, 7, 7}, three{1, 3, 8, 8};
    bool found = false;
    for (size_t i = 0; i < rare.size() && !found; ++i) {
      const Shape& s = i == 0 ? small : three;
      if (dnnl_applies(rare[i], s)) continue;
      found = true;
      CHECK(run(rare[i], s).kernels == "im2col+GEMM | im2col+GEMM | im2col+GEMM");
      const std::string message = error_message([&] { run(rare[i] + "\nalgorithm = dnnl", s); });
      CHECK(message.find("algorithm = dnnl") != std::string::npos);
      CHECK(message.find("no JIT kernel") != std::string::npos);
      CHECK(message.find("Convolution") != std::string::npos);
    }
    if (!found) MESSAGE("oneDNN has kernels for every rare geometry tried on this CPU: the error is not exercised");
  }

  TEST_CASE("auto leaves few-channel passes to im2col: all of one channel, the data gradient of up to 4, "
            "all where oneDNN's 16-channel blocks are under 3/4 full") {
    const Shape one{2, 1, 12, 12}, three{2, 3, 12, 12}, sixteen{2, 16, 12, 12};
    const std::string options = "num_output = 16\nkernel_size = 3";
    if (!dnnl_applies(options, one)) return;
    CHECK(run(options, one).kernels == "im2col+GEMM | im2col+GEMM | im2col+GEMM");
    const std::string few = run(options, three).kernels;
    CHECK(few.find("oneDNN") == 0);
    CHECK(few.find("| im2col+GEMM | oneDNN") != std::string::npos);
    CHECK(run(options, sixteen).kernels.find("im2col") == std::string::npos);
    // LeNet's conv2: 20 -> 50 channels fill 20/32 x 50/64 = 49% of the lanes;
    // 24 -> 64 fill 75%.
    const Shape twenty{2, 20, 12, 12}, twenty_four{2, 24, 12, 12};
    CHECK(run("num_output = 50\nkernel_size = 5", twenty).kernels == "im2col+GEMM | im2col+GEMM | im2col+GEMM");
    if (dnnl_applies("num_output = 64\nkernel_size = 5", twenty_four))
      CHECK(run("num_output = 64\nkernel_size = 5", twenty_four).kernels.find("im2col") == std::string::npos);
    // Grouped: one channel per group.
    const std::string grouped = "num_output = 15\nkernel_size = 3\ngroup = 3";
    if (dnnl_applies(grouped, three))
      CHECK(run(grouped, three).kernels == "im2col+GEMM | im2col+GEMM | im2col+GEMM");
  }

  TEST_CASE("measured: decide_kernels decides every pass up front, touching no parameter; adopted decisions win") {
    const Shape shape{3, 16, 9, 9};
    const std::string plain = "num_output = 32\nkernel_size = 3";
    if (!dnnl_applies(plain, shape)) return;
    const std::string options = plain + "\nalgorithm = measured";
    ConvolutionChoices& choices = ConvolutionChoices::process();
    choices.clear();
    auto layer = make_layer("Convolution", options);
    Blob x(shape), y;
    layer->setup({&x}, {&y});
    layer->reshape({&x}, {&y});
    for (auto& p : layer->params()) {
      fill_uniform(*p.blob, 3, -0.5f, 0.5f);
      p.blob->diff().fill(0.25f);
    }
    std::vector<std::vector<float>> before;
    for (auto& p : layer->params()) {
      before.emplace_back(p.blob->data().ptr(), p.blob->data().ptr() + p.blob->count());
      before.emplace_back(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count());
    }
    auto& conv = static_cast<ConvolutionLayer&>(*layer);
    conv.decide_kernels();
    CHECK(choices.choices().size() == 3);  // all three passes, before any call
    size_t i = 0;
    for (auto& p : layer->params()) {
      CHECK(std::vector<float>(p.blob->data().ptr(), p.blob->data().ptr() + p.blob->count()) == before[i++]);
      CHECK(std::vector<float>(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count()) == before[i++]);
    }
    // Rank 0's decisions (here: im2col for every pass) replace this process's
    // own; a layer built after them computes with them and times nothing.
    auto adopted = choices.choices();
    for (auto& [key, dnnl] : adopted) dnnl = false;
    choices.adopt(adopted);
    CHECK(run(options, shape).kernels == "im2col+GEMM | im2col+GEMM | im2col+GEMM");
    for (const auto& d : choices.decisions()) CHECK(d.dnnl_seconds == 0.0);
    // And they come back as they went.
    for (auto& [key, dnnl] : adopted) dnnl = true;
    choices.adopt(adopted);
    CHECK(run(options, shape).kernels.find("im2col") == std::string::npos);
    choices.clear();
  }

  TEST_CASE("measured: each pass by the faster kernel, timed once per shape and process, results as im2col's") {
    const Shape shape{4, 16, 10, 10};
    const std::string options = "num_output = 24\nkernel_size = 3\npad = 1";
    if (!dnnl_applies(options, shape)) return;
    ConvolutionChoices& choices = ConvolutionChoices::process();
    choices.clear();
    const Result ref = run(options + "\nalgorithm = im2col", shape);
    CHECK(choices.decisions().empty());  // im2col times nothing
    const Result measured = run(options + "\nalgorithm = measured", shape);
    const auto decided = choices.decisions();
    REQUIRE(decided.size() == 3);  // forward, data and weight gradient
    std::string expected;
    for (const char* pass : {"forward", "data gradient", "weight gradient"}) {
      const auto d = std::find_if(decided.begin(), decided.end(), [&](const auto& x) { return x.key.find(pass) == 0; });
      REQUIRE(d != decided.end());
      CHECK(d->dnnl == (d->dnnl_seconds <= d->im2col_seconds));
      CHECK(d->key.find("16x10x10 -> 24/1 k3x3") != std::string::npos);
      if (!expected.empty()) expected += " | ";
      expected += d->dnnl ? "oneDNN" : "im2col+GEMM";
    }
    // The kernels reported are the decisions, and the results are the
    // chosen kernel's, equal to im2col's up to rounding.
    std::string kinds = measured.kernels;
    for (size_t at; (at = kinds.find(" jit")) != std::string::npos;) kinds.erase(at, kinds.find(" |", at) - at);
    CHECK(kinds.substr(0, expected.size()) == expected);
    CHECK(relative_error(measured.top, ref.top) < 1e-5);
    CHECK(relative_error(measured.bottom_diff, ref.bottom_diff) < 1e-5);
    CHECK(relative_error(measured.weight_diff, ref.weight_diff) < 1e-5);
    CHECK(relative_error(measured.bias_diff, ref.bias_diff) < 1e-5);
    // A second layer of the shape follows the decisions without timing: a
    // decision forced into the table is what it uses.
    choices.clear();
    for (const auto& d : decided) choices.decide(d.key, d.key.find("forward") == 0 ? 1.0 : 0.0, 0.5);
    const Result forced = run(options + "\nalgorithm = measured", shape);
    CHECK(forced.kernels.find("im2col+GEMM | oneDNN") == 0);
    CHECK(forced.kernels.find("| oneDNN", 20) != std::string::npos);
    CHECK(choices.decisions().size() == 3);
    CHECK(relative_error(forced.top, ref.top) < 1e-5);
    choices.clear();
  }

  TEST_CASE("[conv] algorithm sets the default; a layer's own key wins") {
    const Shape shape{2, 32, 12, 12};
    if (!dnnl_applies("num_output = 32\nkernel_size = 3", shape)) return;
    auto& algorithm = ConvolutionLayer::default_algorithm();
    const auto saved = algorithm;
    algorithm = ConvolutionLayer::Algorithm::im2col;
    CHECK(run("num_output = 32\nkernel_size = 3", shape).kernels.find("im2col") == 0);
    CHECK(run("num_output = 32\nkernel_size = 3\nalgorithm = dnnl", shape).kernels.find("oneDNN") == 0);
    algorithm = saved;
    CHECK(ConvolutionLayer::parse_algorithm("measured") == ConvolutionLayer::Algorithm::measured);
    CHECK_THROWS_AS(ConvolutionLayer::parse_algorithm("winograd"), std::invalid_argument);
  }
}
