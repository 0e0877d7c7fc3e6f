// The vendor BLAS's GEMM model (devices/sw26010/blas_gemm.hpp) and its fit
// (blas_gemm_fit.hpp): what swCaffe's explicit convolutions are charged.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/common/aligned_allocator.hpp"
#include "core/config/config.hpp"
#include "devices/sw26010/blas_gemm.hpp"
#include "devices/sw26010/blas_gemm_fit.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"

using namespace taihu;
using namespace taihu::sw26010;

TEST_SUITE("sw26010") {
  TEST_CASE("the vendor GEMM: the inner loop's rate, slowed along each short dimension") {
    const Params p;
    BlasGemmParams blas;
    blas.m_half = 100, blas.n_half = 0, blas.k_half = 400, blas.exponent = 1, blas.call_cycles = 1000;
    const double inner = inner_loop_cycles(p, 256, 4096, 800);
    // 2 m n k flops at 742.4 GF/s x 16/17 (gemm_cycles_per_16_vmad = 17)
    CHECK(p.seconds(inner) == doctest::Approx(2.0 * 256 * 4096 * 800 / (742.4e9 * 16 / 17)).epsilon(1e-9));
    CHECK(blas_gemm_cycles(p, blas, 256, 4096, 800) == doctest::Approx(1000 + inner * (1 + 100.0 / 256 + 400.0 / 800)));
    // halving a dimension with a half-performance length costs more than half the flops saved
    CHECK(blas_gemm_cycles(p, blas, 128, 4096, 800) > 0.5 * blas_gemm_cycles(p, blas, 256, 4096, 800));
    CHECK(blas_gemm_covers(blas, 27, 27, 27));
    CHECK_FALSE(blas_gemm_covers(blas, 64, 50176, 1));
  }

  TEST_CASE("blas_gemm computes swGEMM's numbers, charges the vendor model, and swGEMM outside its range") {
    const Params p;
    CoreGroup cg(0, p);
    const std::int64_t m = 32, n = 48, k = 40;
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> a(std::size_t(m * k)), b(std::size_t(k * n));
    for (auto& v : a) v = u(gen);
    for (auto& v : b) v = u(gen);
    std::vector<float> c_blas(std::size_t(m * n), 0.5f), c_swgemm = c_blas;
    const auto charged =
        blas_gemm(cg, Transpose::no, Transpose::no, m, n, k, 1.0f, a.data(), k, b.data(), n, 1.0f, c_blas.data(), n);
    const auto swgemm =
        gemm(cg, Transpose::no, Transpose::no, m, n, k, 1.0f, a.data(), k, b.data(), n, 1.0f, c_swgemm.data(), n);
    CHECK(c_blas == c_swgemm);
    CHECK(charged.cycles == std::llround(blas_gemm_cycles(p, p.blas_gemm, m, n, k)));
    CHECK(charged.cycles != swgemm.cycles);
    // K = 1 (swCaffe's bias GEMM) is below the fitted range: swGEMM's charge, each on a fresh core
    // group (a DMA's cost depends on what the engine served before)
    // (host-aligned buffers: a DMA's transactions depend on its addresses)
    AlignedVector<float> ones(std::size_t(n), 1.0f), bias(std::size_t(m), 2.0f), y(std::size_t(m * n), 0.0f), y2 = y;
    CoreGroup first(0, p), second(0, p);
    const auto bias_blas = blas_gemm(first, Transpose::no, Transpose::no, m, n, 1, 1.0f, bias.data(), 1, ones.data(), n,
                                     1.0f, y.data(), n);
    const auto bias_swgemm =
        gemm(second, Transpose::no, Transpose::no, m, n, 1, 1.0f, bias.data(), 1, ones.data(), n, 1.0f, y2.data(), n);
    CHECK(bias_blas.cycles == bias_swgemm.cycles);
    CHECK(y == y2);
    CHECK(y[0] == 2.0f);
  }

  TEST_CASE("the fit recovers the parameters that made its samples, and predicts shapes it did not see") {
    const Params p;
    BlasGemmParams truth;
    truth.m_half = 150, truth.n_half = 300, truth.k_half = 500, truth.exponent = 1.5, truth.call_cycles = 2e5;
    std::vector<BlasGemmSample> seen, unseen;
    std::mt19937 gen(7);
    std::uniform_int_distribution<int> dim(32, 8192);
    for (int i = 0; i < 30; ++i) {
      BlasGemmSample s{dim(gen), dim(gen), dim(gen), 128, 0.01 * (i % 5), 0};
      s.published_seconds = predicted_seconds(p, truth, s);
      (i < 20 ? seen : unseen).push_back(s);
    }
    const BlasGemmFit fit = fit_blas_gemm(p, seen);
    CHECK(fit.params.exponent == doctest::Approx(1.5).epsilon(1e-9));
    CHECK(fit.params.m_half == doctest::Approx(150).epsilon(1e-6));
    CHECK(fit.params.n_half == doctest::Approx(300).epsilon(1e-6));
    CHECK(fit.params.k_half == doctest::Approx(500).epsilon(1e-6));
    CHECK(fit.params.call_cycles == doctest::Approx(2e5).epsilon(1e-6));
    CHECK(fit.rms_relative_error < 1e-9);
    for (const auto& s : unseen) CHECK(predicted_seconds(p, fit.params, s) == doctest::Approx(s.published_seconds));
    // a dimension that does not slow anything is fitted as no slow-down, never a negative length
    truth.n_half = 0;
    for (auto& s : seen) s.published_seconds = predicted_seconds(p, truth, s);
    const BlasGemmFit without_n = fit_blas_gemm(p, seen);
    CHECK(without_n.params.n_half == 0);
    CHECK(without_n.params.k_half == doctest::Approx(500).epsilon(1e-6));
    CHECK_THROWS(fit_blas_gemm(p, {}));
  }

  TEST_CASE("the shipped vendor-GEMM parameters: the config file's, the struct's defaults the same, bad values named") {
    const Params shipped = Params::defaults(), built_in;
    CHECK(shipped.blas_gemm.m_half == built_in.blas_gemm.m_half);
    CHECK(shipped.blas_gemm.n_half == built_in.blas_gemm.n_half);
    CHECK(shipped.blas_gemm.k_half == built_in.blas_gemm.k_half);
    CHECK(shipped.blas_gemm.exponent == built_in.blas_gemm.exponent);
    CHECK(shipped.blas_gemm.call_cycles == built_in.blas_gemm.call_cycles);
    CHECK(shipped.blas_gemm.min_dimension == built_in.blas_gemm.min_dimension);
    auto negative = config::Document::parse("[sw26010]\nblas_gemm_k_half = -3\n", "x.ini");
    CHECK_THROWS_WITH_AS(Params::from(negative.section("sw26010")), doctest::Contains("blas_gemm_k_half"), ConfigError);
    auto flat = config::Document::parse("[sw26010]\nblas_gemm_exponent = 0\n", "x.ini");
    CHECK_THROWS_WITH_AS(Params::from(flat.section("sw26010")), doctest::Contains("blas_gemm_exponent"), ConfigError);
  }
}
