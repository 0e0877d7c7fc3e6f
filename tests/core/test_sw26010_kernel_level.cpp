// The SW26010 model at the kernel level: the passes of a convolution timed
// apart (as P Table II publishes them), and the mechanisms that make whole
// kernels pay what the real ones pay (issue 16).

#include <doctest/doctest.h>

#include <cstdint>

#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/conv_passes.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"

using namespace taihu;
using namespace taihu::sw26010;

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
    // the implicit kernel is the forward pass's only; its layout transforms are counted apart
    CHECK_FALSE(time_conv_pass(p, s, batch, ConvPass::data_gradient, ConvMethod::implicit).modelled);
    const auto fwd = time_conv_pass(p, s, batch, ConvPass::forward, ConvMethod::implicit);
    CHECK(fwd.modelled);
    CHECK(fwd.transforms > 0);
    CHECK(fwd.total() == fwd.cycles + fwd.transforms);
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
}
