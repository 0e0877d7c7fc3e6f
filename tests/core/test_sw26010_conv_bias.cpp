#include <doctest/doctest.h>

#include <vector>

#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/conv_bias.hpp"
#include "devices/sw26010/conv_passes.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/layer_timing.hpp"

using namespace taihu;
using namespace taihu::sw26010;

TEST_SUITE("sw26010") {
  TEST_CASE("convolution bias forward: one K = 1 GEMM per image into N x C x H x W, as swCaffe's forward_cpu_bias") {
    const Params p;
    CoreGroup cg(0, p);
    const std::int64_t batch = 3, channels = 8, plane = 40;
    std::vector<float> y(std::size_t(batch * channels * plane)), bias(static_cast<std::size_t>(channels));
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.25f * float(i % 17) - 1.0f;
    for (std::size_t c = 0; c < bias.size(); ++c) bias[c] = 0.5f * float(c) - 1.5f;
    const auto before = y;
    const auto stats = conv_bias_forward(cg, batch, channels, plane, bias.data(), y.data());
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t q = 0; q < plane; ++q) {
          const auto at = std::size_t((i * channels + c) * plane + q);
          CHECK(y[at] == before[at] + bias[std::size_t(c)]);
        }
    // one GEMM call per image: the time is the batch's images' calls, each a swGEMM call of K = 1
    cg.set_numerics(false);
    float* t = timing_address();
    const auto one = gemm(cg, Transpose::no, Transpose::no, channels, plane, 1, 1.0f, t, 1, t, plane, 1.0f, t, plane);
    const auto timed = conv_bias_forward(cg, batch, channels, plane, t, t);
    CHECK(timed.cycles == batch * one.cycles);
    CHECK(stats.cycles > 0);
  }

  TEST_CASE("convolution bias gradient: one MPE gemv per image, the ones re-read when they and a row overflow the L2") {
    const Params p;
    CoreGroup cg(0, p);
    const std::int64_t batch = 2, channels = 5, plane = 30;
    std::vector<float> dy(std::size_t(batch * channels * plane)), db(std::size_t(channels), 1.0f);
    for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 7) - 3.0f;
    const auto before = cg.clock();
    const auto stats = conv_bias_gradient(cg, batch, channels, plane, dy.data(), db.data());
    for (std::int64_t c = 0; c < channels; ++c) {
      double sum = 1.0;
      for (std::int64_t i = 0; i < batch; ++i)
        for (std::int64_t q = 0; q < plane; ++q) sum += dy[std::size_t((i * channels + c) * plane + q)];
      CHECK(db[std::size_t(c)] == doctest::Approx(sum));
    }
    // the MPE's time, charged to the group's clock: the matrix and the ones at the MPE's copy rate
    const double bytes = 4.0 * channels * plane + 4.0 * plane;
    CHECK(conv_bias_gemv_bytes(p, channels, plane) == bytes);
    // (each image's time rounded up to a cycle)
    CHECK(double(stats.cycles) == doctest::Approx(batch * bytes / (p.mpe_copy_gbps * 1e9) * p.clock_hz).epsilon(0.02));
    CHECK(cg.clock() - before == stats.cycles);
    // 112 x 112 planes: a row and the ones (2 x 49 KB) stay in the 256 KB L2; 224 x 224 (2 x 196 KB) do not
    CHECK(conv_bias_gemv_bytes(p, 64, 112 * 112) == 4.0 * 64 * 112 * 112 + 4.0 * 112 * 112);
    CHECK(conv_bias_gemv_bytes(p, 64, 224 * 224) == 2 * 4.0 * 64 * 224 * 224);
    // timing only: nothing computed, the same time
    cg.set_numerics(false);
    const float kept = db[0];
    CHECK(conv_bias_gradient(cg, batch, channels, plane, dy.data(), db.data()).cycles == stats.cycles);
    CHECK(db[0] == kept);
  }

  // Slow-labelled: whole layers or nets on the CPE fibers, seconds here and minutes
  // instrumented (the sanitizer pass leaves the slow suite out; both other passes run it).
  TEST_CASE("both methods pay the same bias: time_conv_pass reports it, and it is part of each pass's cycles" *
            doctest::test_suite("slow")) {
    const Params p;
    const ConvShape s{64, 28, 28, 64, 3, 3, 1, 1, 1, 1};
    for (const auto pass : {ConvPass::forward, ConvPass::weight_gradient})
      for (const auto method : {ConvMethod::implicit, ConvMethod::explicit_gemm}) {
        const auto t = time_conv_pass(p, s, 32, pass, method);
        CHECK(t.bias > 0);
        CHECK(t.bias < t.cycles);
      }
    const auto fi = time_conv_pass(p, s, 32, ConvPass::forward, ConvMethod::implicit);
    const auto fe = time_conv_pass(p, s, 32, ConvPass::forward, ConvMethod::explicit_gemm);
    CHECK(fi.bias == fe.bias);  // on the N x C x H x W output either way
    const auto wi = time_conv_pass(p, s, 32, ConvPass::weight_gradient, ConvMethod::implicit);
    const auto we = time_conv_pass(p, s, 32, ConvPass::weight_gradient, ConvMethod::explicit_gemm);
    CHECK(wi.bias == we.bias);
    CHECK(time_conv_pass(p, s, 32, ConvPass::data_gradient, ConvMethod::explicit_gemm).bias == 0);
  }

  TEST_CASE("time_layer charges a convolution's bias only with bias_term, as swCaffe's layer runs it") {
    CoreGroup cg(0, Params{});
    cg.set_numerics(false);
    Scratch scratch(false);
    auto doc = config::Document::parse(
        "[layer b]\nnum_output = 16\nkernel_size = 3\npad = 1\n"
        "[layer n]\nnum_output = 16\nkernel_size = 3\npad = 1\nbias_term = false\n",
        "t.ini");
    const std::vector<Shape> in{Shape{4, 8, 12, 12}}, out{Shape{4, 16, 12, 12}};
    const auto with = time_layer(cg, LayerShape{"Convolution", doc.find("layer", "b"), in, out, true, "b", {}}, scratch);
    const auto without = time_layer(cg, LayerShape{"Convolution", doc.find("layer", "n"), in, out, true, "n", {}}, scratch);
    CHECK(with.method == without.method);
    // the bias's share: 4 K = 1 GEMMs forward, 4 MPE gemvs backward (timed on their own)
    CoreGroup alone(0, Params{});
    alone.set_numerics(false);
    float* t = timing_address();
    CHECK(with.forward - without.forward == conv_bias_forward(alone, 4, 16, 144, t, t).cycles);
    CHECK(with.backward - without.backward == conv_bias_gradient(alone, 4, 16, 144, t, t).cycles);
  }
}
