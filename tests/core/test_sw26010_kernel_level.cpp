// The SW26010 model at the kernel level: the passes of a convolution timed
// apart (as P Table II publishes them), and the mechanisms that make whole
// kernels pay what the real ones pay (issue 16).

#include <doctest/doctest.h>

#include <cmath>

#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/conv_passes.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/swgemm_plan.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {
std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}
void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got[i] == doctest::Approx(want[i]).epsilon(1e-4).scale(1.0));
  }
}
}  // namespace

TEST_SUITE("sw26010") {
  TEST_CASE("a convolution's weight- and data-gradient passes timed apart add up to its backward pass") {
    const Params p;
    const ConvShape s{16, 12, 12, 32, 3, 3, 1, 1, 1, 1};
    const std::int64_t batch = 3;
    const auto wgrad = time_conv_pass(p, s, batch, ConvPass::weight_gradient, ConvMethod::explicit_gemm);
    const auto dgrad = time_conv_pass(p, s, batch, ConvPass::data_gradient, ConvMethod::explicit_gemm);
    REQUIRE(wgrad.modelled);
    REQUIRE(dgrad.modelled);
    CHECK(wgrad.cycles > 0);
    CHECK(dgrad.cycles > 0);
    CoreGroup cg(0, p);
    cg.set_numerics(false);
    alignas(128) static float dummy[32];
    float* d = dummy;
    CHECK(conv_backward_explicit(cg, s, batch, d, d, d, d, d, d, d).cycles == wgrad.cycles + dgrad.cycles);
    // the implicit kernels need stride 1; their layout transforms are counted apart
    ConvShape strided = s;
    strided.stride_h = strided.stride_w = 2;
    CHECK_FALSE(time_conv_pass(p, strided, batch, ConvPass::data_gradient, ConvMethod::implicit).modelled);
    const auto fwd = time_conv_pass(p, s, batch, ConvPass::forward, ConvMethod::implicit);
    CHECK(fwd.modelled);
    CHECK(fwd.transforms() > 0);
    CHECK(fwd.total() == fwd.cycles + fwd.transforms());
  }
}

TEST_SUITE("sw26010") {
  TEST_CASE("lock-step register communication: a memory-level GEMM is slower than perfect overlap, not slower than none") {
    // TH Fig. 3.6: the 64 CPEs broadcasting in lock-step let the next step's DMA
    // proceed only in part during the compute
    const auto time_with = [](double overlap) {
      Params p;
      p.gemm_lockstep_dma_overlap = overlap;
      CoreGroup cg(0, p);
      cg.set_numerics(false);
      alignas(128) static float dummy[32];
      return gemm(cg, Transpose::no, Transpose::no, 512, 512, 512, 1, dummy, 512, dummy, 512, 0, dummy, 512);
    };
    const auto perfect = time_with(1), half = time_with(0.5), none = time_with(0);
    CHECK(perfect.cycles < half.cycles);
    CHECK(half.cycles < none.cycles);
    // no overlap at all costs at most every transfer in series after the compute
    const Params p;
    const double serial = double(none.dma_charged_bytes) / p.dma_strided_bytes_per_cycle() +
                          double(none.dma_requests) * p.dma_put_latency_cycles;
    CHECK(double(none.cycles - perfect.cycles) <= serial);
    CHECK(none.dma_charged_bytes == perfect.dma_charged_bytes);  // the same transfers, only their overlap differs
  }

  TEST_CASE("lock-step with no overlap: a DMA-bound step pays its compute and its transfers, one after the other") {
    // swGEMM's worst block at 1024^3 (32 x 128 x 32): each K step's transfers take several times its compute
    const GemmBlocking worst{4, 16, 4};
    // with the inner loop's iterations (almost) free, and at their calibrated cost
    const auto params = [](bool free_loop) {
      Params p;
      p.gemm_lockstep_dma_overlap = 0;
      if (free_loop) p.gemm_cycles_per_16_vmad = 1e-6;
      return p;
    };
    const auto gemm_cycles = [&](bool free_loop) {
      CoreGroup cg(0, params(free_loop));
      cg.set_numerics(false);
      float* x = timing_address();
      return double(gemm_batch(cg, "gemm", Transpose::no, Transpose::no, 256, 256, 1, 0,
                               {GemmProblem{x, 256, {{x, 256, x, 256, 256}}}}, &worst)
                        .cycles);
    };
    // what the loop's iterations add to one step: the LDM-resident primitive (one step, no DMA) timed both ways
    const auto step_cycles = [&](bool free_loop) {
      CoreGroup cg(0, params(free_loop));
      return double(ldm_gemm_primitive(cg, 4, 16, 4).cycles);
    };
    const double steps = (256 / 32) * (256 / 128) * (256 / 32);
    const double added = steps * (step_cycles(false) - step_cycles(true));
    // all of it, not hidden behind the transfers (up to rounding in the DMA server's timeline)
    CHECK(gemm_cycles(false) - gemm_cycles(true) == doctest::Approx(added).epsilon(0.05));
  }
}

TEST_SUITE("sw26010") {
  TEST_CASE("implicit weight and data gradients (H x C x W x N) equal the explicit ones") {
    CoreGroup cg(0, Params{});
    for (const ConvShape& s : {ConvShape{5, 9, 8, 6, 3, 3, 1, 1, 1, 1}, ConvShape{4, 7, 6, 3, 3, 3, 1, 1, 0, 0},
                               ConvShape{6, 5, 5, 8, 1, 1, 1, 1, 0, 0}}) {
      CAPTURE(s.channels);
      CAPTURE(s.kernel_h);
      CAPTURE(s.pad_h);
      const std::int64_t batch = 3, ho = s.out_height(), wo = s.out_width();
      const std::int64_t in = batch * s.channels * s.height * s.width, out = batch * s.num_output * ho * wo;
      const std::int64_t wsize = s.num_output * s.col_rows();
      const auto x = random_values(std::size_t(in), 1), dy = random_values(std::size_t(out), 2),
                 w = random_values(std::size_t(wsize), 3);
      // explicit, N x C x H x W: dw and db accumulate onto 0.5
      std::vector<float> dw(std::size_t(wsize), 0.5f), db(std::size_t(s.num_output), 0.5f);
      std::vector<float> dx(static_cast<std::size_t>(in));
      std::vector<float> col(static_cast<std::size_t>(s.col_rows() * ho * wo));
      conv_backward_explicit(cg, s, batch, x.data(), w.data(), dy.data(), dw.data(), db.data(), dx.data(), col.data());

      std::vector<float> xi(static_cast<std::size_t>(in)), dyi(static_cast<std::size_t>(out)), dxi(static_cast<std::size_t>(in)), dx_back(static_cast<std::size_t>(in));
      to_hcwn(cg, x.data(), xi.data(), batch, s.channels, s.height, s.width);
      to_hcwn(cg, dy.data(), dyi.data(), batch, s.num_output, ho, wo);
      std::vector<float> wa(static_cast<std::size_t>(wsize));
      filters_to_implicit_data_gradient(s, w.data(), wa.data());
      conv_data_gradient_implicit(cg, s, batch, dyi.data(), wa.data(), dxi.data());
      to_nchw(cg, dxi.data(), dx_back.data(), batch, s.channels, s.height, s.width);
      check_close(dx_back, dx);

      std::vector<float> dwi(std::size_t(wsize), 0.5f), dbi(std::size_t(s.num_output), 0.5f);
      std::vector<float> want(static_cast<std::size_t>(wsize));
      conv_weight_gradient_implicit(cg, s, batch, xi.data(), dyi.data(), dwi.data(), dbi.data());
      filters_to_implicit(s, dw.data(), want.data());  // 0.5 + dW, in the implicit layout
      check_close(dwi, want);
      check_close(dbi, db);
    }
  }

  TEST_CASE("swCaffe's implicit rule for the backward passes") {
    // C-swcaffe conv_layer.cpp (sw26010.md §6.2): batch >= 64 in multiples of 32, input channels >= 128
    // in multiples of 128, output channels >= 64 in multiples of 32; VGG-16 from conv2_2 on
    const ConvShape conv2_2{128, 112, 112, 128, 3, 3, 1, 1, 1, 1};
    CHECK(implicit_backward_eligible(conv2_2, 128));
    CHECK(implicit_backward_eligible(conv2_2, 64));
    CHECK_FALSE(implicit_backward_eligible(conv2_2, 96 + 16));
    CHECK_FALSE(implicit_backward_eligible(conv2_2, 32));
    CHECK_FALSE(implicit_backward_eligible(ConvShape{64, 112, 112, 128, 3, 3, 1, 1, 1, 1}, 128));  // conv2_1
    CHECK_FALSE(implicit_backward_eligible(ConvShape{192, 28, 28, 128, 3, 3, 1, 1, 1, 1}, 128));
    CHECK_FALSE(implicit_backward_eligible(ConvShape{128, 28, 28, 48, 3, 3, 1, 1, 1, 1}, 128));
    CHECK_FALSE(implicit_backward_eligible(conv2_2, 128, 2));
    CHECK_FALSE(implicit_backward_eligible(ConvShape{128, 28, 28, 128, 3, 3, 2, 2, 1, 1}, 128));
    // and the time of both implicit backward passes is modelled
    const Params p;
    const ConvShape small{128, 6, 6, 64, 3, 3, 1, 1, 1, 1};
    for (const auto pass : {ConvPass::weight_gradient, ConvPass::data_gradient}) {
      const auto t = time_conv_pass(p, small, 64, pass, ConvMethod::implicit);
      CHECK(t.modelled);
      CHECK(t.cycles > 0);
      CHECK(t.transforms() > 0);
    }
  }
}

TEST_SUITE("sw26010") {
  TEST_CASE("swGEMM's call: its model picks the block, blocks divide the padded shape, padding costs passes") {
    const Params p;
    // 1024^3: no padding; the block minimises swGEMM's own estimate over its legal blockings
    const auto cube = plan_swgemm(1024, 1024, 1024, p);
    CHECK_FALSE(cube.padded());
    // swGEMM's blkM runs along the model's m, blkN (multiples of 128) along n
    const int blk_m = 8 * cube.blocking.tile_m, blk_n = 8 * cube.blocking.tile_n, blk_k = 8 * cube.blocking.tile_k;
    CHECK(1024 % blk_m == 0);
    CHECK(1024 % blk_n == 0);
    CHECK(blk_n % 128 == 0);
    CHECK(1024 % blk_k == 0);
    CHECK(cube.estimated_seconds == doctest::Approx(swgemm_estimate(1024, 1024, 1024, blk_m, blk_n, blk_k)));
    for (const auto& [m, n, k] : {std::tuple{128, 128, 128}, std::tuple{256, 256, 256}, std::tuple{64, 512, 128}})
      CHECK(cube.estimated_seconds <= swgemm_estimate(1024, 1024, 1024, m, n, k));
    // T_est as src/sw_sgemm_std.c computes it, here DMA-bound: every tile at the map rate of blkN's
    // per-CPE width (64 B: 11967 MB/s), only T_init's A tile at blkM's (16 B: 3362 MB/s).
    // T_dma = (2 x (128 + 512) KiB + 16 KiB) / 11967 MB/s = 110.9 us, above T_compute (35.7 us);
    // T_init = 512 KiB / 11967 MB/s + 128 KiB / 3362 MB/s = 82.8 us
    CHECK(swgemm_estimate(32, 128, 2048, 32, 128, 1024) == doctest::Approx(193.6944e-6).epsilon(1e-5).scale(0));
    // VGG-16 conv1_1's forward GEMM per image (No = 64, K = 27): n = 50176 is a multiple of 128 and
    // m = 64 of 32, so only K pads (to 32); the border passes are paid on top of a GEMM of whole blocks
    const auto conv1_1 = plan_swgemm(64, 50176, 27, p);
    CHECK(conv1_1.padded_m == 0);
    CHECK(conv1_1.padded_k == 32);
    CHECK(conv1_1.padded_n == 0);
    // conv3_2's (256 x 3136 x 2304): n pads to 3200, the next multiple of 128
    CHECK(plan_swgemm(256, 3136, 2304, p).padded_n == 3200);
    CoreGroup cg(0, p);
    cg.set_numerics(false);
    alignas(128) static float dummy[32];
    const auto call = gemm(cg, Transpose::no, Transpose::no, 64, 50176, 27, 1, dummy, 27, dummy, 50176, 0, dummy, 50176);
    const auto gemm_only = gemm_batch(cg, "gemm", Transpose::no, Transpose::no, 64, 50176, 1, 0,
                                      {GemmProblem{dummy, 50176, {{dummy, 27, dummy, 50176, 27}}}}, &conv1_1.blocking);
    CHECK(call.cycles > gemm_only.cycles);
    CHECK(call.dma_charged_bytes > gemm_only.dma_charged_bytes);
  }
}

TEST_SUITE("sw26010") {
  // Slow-labelled: whole layers or nets on the CPE fibers, seconds here and minutes
  // instrumented (the sanitizer pass leaves the slow suite out; both other passes run it).
  TEST_CASE("the kernels' own GEMM blocks split a dimension evenly: no padded tail block computed whole" *
            doctest::test_suite("slow")) {
    const Params p;
    // 384 output channels are 48 per CPE: two blocks of 24, not one of 32 and a half-empty one (D Table III's 128 -> 384)
    const auto split = GemmBlocking::choose(384, 128, 128, p);
    CHECK(split.tile_m == 24);
    CHECK(split.tile_n == 16);
    CHECK(GemmBlocking::choose(256, 128, 128, p).tile_m == 32);
    for (const std::int64_t m : {1, 13, 100, 260, 832, 2048}) {
      CAPTURE(m);
      const auto g = GemmBlocking::choose(m, 50, 27, p);
      CHECK(g.tile_m % 4 == 0);
      CHECK(g.tile_m <= 32);
      const std::int64_t per_cpe = (m + 7) / 8, blocks = (per_cpe + g.tile_m - 1) / g.tile_m;
      CHECK(blocks == (per_cpe + 31) / 32);      // as few blocks as the largest tile allows
      CHECK(blocks * g.tile_m - per_cpe < 4 * blocks);  // the padding is at most the rounding to 4 per block
    }
    // so the implicit forward of 128 -> 384 channels costs about 1.5x that of 128 -> 256 (2x with a padded tail)
    const ConvShape narrow{128, 34, 34, 256, 3, 3, 1, 1, 0, 0}, wide{128, 34, 34, 384, 3, 3, 1, 1, 0, 0};
    const auto t256 = time_conv_pass(p, narrow, 128, ConvPass::forward, ConvMethod::implicit);
    const auto t384 = time_conv_pass(p, wide, 128, ConvPass::forward, ConvMethod::implicit);
    CHECK(double(t384.cycles) / double(t256.cycles) == doctest::Approx(1.5).epsilon(0.1));
  }
}

TEST_SUITE("sw26010") {
  TEST_CASE("GEMM data handling: float2double widens in LDM, single runs the slower loop, double moves twice the bytes") {
    // T §3.7, Fig. 9
    const auto run = [](GemmPrecision precision) {
      CoreGroup cg(0, Params{});
      cg.set_numerics(false);
      cg.set_gemm_precision(precision);
      alignas(128) static float dummy[32];
      return gemm(cg, Transpose::no, Transpose::no, 512, 512, 512, 1, dummy, 512, dummy, 512, 0, dummy, 512);
    };
    const auto f2d = run(GemmPrecision::float2double), single = run(GemmPrecision::single),
               dbl = run(GemmPrecision::double_data);
    CHECK(single.cycles > f2d.cycles);  // 25 cycles per 16 vmad against 17 plus the widening
    CHECK(single.dma_bytes == f2d.dma_bytes);
    CHECK(dbl.dma_bytes == 2 * f2d.dma_bytes);
    CHECK(dbl.ldm_peak_bytes <= f2d.ldm_peak_bytes);  // no float staging beside the double tiles
    // single computes too (the numbers on host copies of its tiles), the same as float2double;
    // double data is timing only
    CoreGroup cg(0, Params{});
    const auto a = random_values(64 * 48, 11), b = random_values(48 * 80, 12);
    std::vector<float> c_f2d(64 * 80), c_single(64 * 80);
    gemm(cg, Transpose::no, Transpose::no, 64, 80, 48, 1, a.data(), 48, b.data(), 80, 0, c_f2d.data(), 80);
    cg.set_gemm_precision(GemmPrecision::single);
    gemm(cg, Transpose::no, Transpose::no, 64, 80, 48, 1, a.data(), 48, b.data(), 80, 0, c_single.data(), 80);
    check_close(c_single, c_f2d);
    cg.set_gemm_precision(GemmPrecision::double_data);
    std::vector<float> c(64 * 64);
    CHECK_THROWS_AS(gemm(cg, Transpose::no, Transpose::no, 64, 64, 64, 1, a.data(), 64, a.data(), 64, 0, c.data(), 64),
                    SimulationError);
  }
}

TEST_SUITE("sw26010") {
  TEST_CASE("swCaffe's implicit kernels multiply in single precision (gemmfloat); the explicit GEMMs widen") {
    const ConvShape s{64, 10, 10, 64, 3, 3, 1, 1, 1, 1};
    const auto fwd = [&](GemmPrecision implicit, ConvMethod method) {
      return time_conv_pass(Params{}, s, 32, ConvPass::forward, method, implicit).cycles;
    };
    CoreGroup cg(0, Params{});
    CHECK(cg.implicit_precision() == GemmPrecision::single);  // the default, as swCaffe runs them
    CHECK(cg.gemm_precision() == GemmPrecision::float2double);
    // 25 cycles per 16 vmad against 17 plus the widening: the single-precision kernel is slower
    CHECK(fwd(GemmPrecision::single, ConvMethod::implicit) > fwd(GemmPrecision::float2double, ConvMethod::implicit));
    // Two runs allocate their buffers anew, and DMA costs depend on the addresses modulo 128
    // (an allocator with red zones, ASan's, moves them): equal within 0.1%.
    const auto close = [](auto a, auto b) { return std::abs(double(a) - double(b)) <= 1e-3 * double(b); };
    CHECK(close(time_conv_pass(Params{}, s, 32, ConvPass::forward, ConvMethod::implicit).cycles,
                fwd(GemmPrecision::single, ConvMethod::implicit)));
    // the implicit precision leaves the explicit path alone
    CHECK(close(fwd(GemmPrecision::single, ConvMethod::explicit_gemm),
                fwd(GemmPrecision::float2double, ConvMethod::explicit_gemm)));
    // and the core group's GEMM precision is what it was after an implicit kernel
    std::vector<float> x(std::size_t(s.channels * s.height * s.width * 32)), w(std::size_t(9 * 64 * 64)),
        y(std::size_t(64 * 10 * 10 * 32));
    conv_forward_implicit(cg, s, 32, x.data(), w.data(), nullptr, y.data());
    CHECK(cg.gemm_precision() == GemmPrecision::float2double);
  }

  TEST_CASE("swCaffe's implicit weight gradient widens and runs one GEMM step of K = batch per tap and pixel") {
    // sw_slave_conv_pad_float2double.c with Ni and B swapped: the reduction of each call is the batch
    const ConvShape s{128, 6, 6, 64, 3, 3, 1, 1, 1, 1};
    const std::int64_t batch = 64;
    const auto wgrad = [&](GemmPrecision implicit) {
      return time_conv_pass(Params{}, s, batch, ConvPass::weight_gradient, ConvMethod::implicit, implicit).cycles;
    };
    // the forward's precision setting does not reach it: that kernel always widens
    CHECK(wgrad(GemmPrecision::single) == wgrad(GemmPrecision::float2double));
    CHECK(wgrad(GemmPrecision::single) == wgrad(GemmPrecision::double_data));

    CoreGroup cg(0, Params{});
    cg.set_numerics(false);
    cg.set_gemm_precision(GemmPrecision::single);
    float* p = timing_address();
    const KernelStats stats = conv_weight_gradient_implicit(cg, s, batch, p, p, p, nullptr);
    CHECK(cg.gemm_precision() == GemmPrecision::single);  // restored
    // (tap, output pixel) pairs whose input pixel is inside the image: (5 + 6 + 5)^2 with padding 1,
    // each a step with at least one array sync (a step per output row would be 3 * 16 = 48)
    CHECK(stats.syncs >= 256);
  }
}

TEST_SUITE("sw26010") {
  TEST_CASE("swDNN's image-size-aware step: one filter fetch serves bCo x bB outputs, the same sums") {
    // padding 1, so the border taps reach only some of a wide step's pixel columns
    const ConvShape s{8, 8, 8, 16, 3, 3, 1, 1, 1, 1};
    // a batch of 32 fills one 8 x 8 grid of the smallest tiles (4 columns a CPE): one pixel column a step
    const std::int64_t batch = 32, in = batch * s.channels * s.height * s.width;
    const std::int64_t out = batch * s.num_output * s.out_height() * s.out_width();
    const auto x = random_values(std::size_t(in), 11), w = random_values(std::size_t(9 * 16 * 8), 12);
    CoreGroup cg(0, Params{});
    std::vector<float> one(static_cast<std::size_t>(out)), four(static_cast<std::size_t>(out));
    const auto narrow = conv_forward_implicit(cg, s, batch, x.data(), w.data(), nullptr, one.data());
    const auto wide = conv_forward_implicit(cg, s, batch, x.data(), w.data(), nullptr, four.data(), 0, 0,
                                            ImplicitStep::image_size_aware(8, 16, batch));  // 8 x 16: 4 columns
    check_close(four, one);
    CHECK(wide.dma_bytes < narrow.dma_bytes);  // the wide steps did run

    // The traffic, timing only, no padding: every step fetches a tap's filter slice (No x Ni floats)
    // and the input its outputs meet; four pixel columns per step fetch the filters a quarter as often.
    const ConvShape d{32, 10, 10, 32, 3, 3, 1, 1, 0, 0};
    const std::int64_t b = 32, pixels = 8 * 8;
    const auto bytes = [&](ImplicitStep step) {
      CoreGroup timing(0, Params{});
      timing.set_numerics(false);
      float* p = timing_address();
      return conv_forward_implicit(timing, d, b, p, p, nullptr, p, 0, 0, step).dma_bytes;
    };
    const std::int64_t filters_per_pixel = 9 * 32 * 32 * std::int64_t(sizeof(float));
    const std::int64_t input_and_output = pixels * (9 * 32 * b + 32 * b) * std::int64_t(sizeof(float));
    CHECK(bytes({}) == pixels * filters_per_pixel + input_and_output);
    CHECK(bytes(ImplicitStep::image_size_aware(4, 32, b)) == pixels / 4 * filters_per_pixel + input_and_output);

    CHECK(ImplicitStep::image_size_aware(16, 32, 128).pixel_columns == 4);  // D Table III's first row
    CHECK_THROWS_AS(ImplicitStep::image_size_aware(16, 30, 128), ConfigError);
  }

  TEST_CASE("swDNN's batch-size-aware order: output columns resident, an input column fetched once for its taps") {
    // padding 1 (border taps reach part of a row), a batch of 32: one pixel column a C block; an LDM
    // budget that holds three C blocks beside the tiles, so a row of 8 columns runs in windows of 3, 3, 2
    const ConvShape s{8, 8, 8, 16, 3, 3, 1, 1, 1, 1};
    const std::int64_t batch = 32, in = batch * s.channels * s.height * s.width;
    const std::int64_t out = batch * s.num_output * s.out_height() * s.out_width();
    Params small;
    small.ldm_budget_bytes = 1400;
    REQUIRE(implicit_forward_blocking(small, s, batch, ImplicitStep::batch_size_aware()).c_blocks == 3);
    CHECK(implicit_forward_blocking(small, s, batch).c_blocks == 1);  // swCaffe's order
    const auto x = random_values(std::size_t(in), 21), w = random_values(std::size_t(9 * 16 * 8), 22);
    // both numerics paths of gemm_batch: tiles widened in LDM, and single precision's host-side tiles
    for (const auto precision : {GemmPrecision::float2double, GemmPrecision::single}) {
      INFO((precision == GemmPrecision::single ? "single" : "float2double"));
      std::vector<float> per_tap(static_cast<std::size_t>(out)), stationary(static_cast<std::size_t>(out));
      CoreGroup cg(0, small);
      cg.set_implicit_precision(precision);
      conv_forward_implicit(cg, s, batch, x.data(), w.data(), nullptr, per_tap.data());
      conv_forward_implicit(cg, s, batch, x.data(), w.data(), nullptr, stationary.data(), 0, 0,
                            ImplicitStep::batch_size_aware());
      check_close(stationary, per_tap);
    }

    // The traffic, timing only, no padding, 8 x 8 outputs: the filters as in swCaffe's order (a tap's
    // slice per output column), the input once per (output row, kernel row, input column in reach of
    // the window): a window of W output columns reads W + 2 input columns of each kernel row.
    const ConvShape d{32, 10, 10, 32, 3, 3, 1, 1, 0, 0};
    const std::int64_t b = 32, pixels = 8 * 8, column = 32 * b * std::int64_t(sizeof(float));
    const auto bytes = [&](const Params& params, ImplicitStep step) {
      CoreGroup timing(0, params);
      timing.set_numerics(false);
      float* p = timing_address();
      return conv_forward_implicit(timing, d, b, p, p, nullptr, p, 0, 0, step).dma_bytes;
    };
    const std::int64_t filters_and_output = pixels * (9 * 32 * 32 * std::int64_t(sizeof(float)) + column);
    CHECK(bytes(Params{}, {}) == filters_and_output + pixels * 9 * column);
    REQUIRE(implicit_forward_blocking(Params{}, d, b, ImplicitStep::batch_size_aware()).c_blocks == 8);
    CHECK(bytes(Params{}, ImplicitStep::batch_size_aware()) == filters_and_output + 8 * 3 * (8 + 2) * column);
    Params three;  // room for two more 4 x 4 C tiles (double and float) beside one block's tiles
    three.ldm_budget_bytes = int(implicit_forward_blocking(Params{}, d, b).ldm_bytes() +
                                 2 * 4 * 4 * (sizeof(double) + sizeof(float)));
    REQUIRE(implicit_forward_blocking(three, d, b, ImplicitStep::batch_size_aware()).c_blocks == 3);
    CHECK(bytes(three, ImplicitStep::batch_size_aware()) == filters_and_output + 8 * 3 * (5 + 5 + 4) * column);
  }
}
