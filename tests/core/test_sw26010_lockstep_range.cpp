// The two lock-step parameters as ranges (params.hpp, lockstep_range.hpp):
// read and checked from the config, the per-iteration cost charged on every
// iteration of the register-communication loop, every output reported at the central values and over the corners.

#include <doctest/doctest.h>

#include <set>
#include <utility>

#include "core/config/config.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/lockstep_range.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {
std::int64_t gemm_cycles(const Params& p) {
  CoreGroup cg(0, p);
  cg.set_numerics(false);
  float* x = timing_address();
  const GemmBlocking blocks{8, 16, 8};  // 64 x 128 x 64 per step: 4 x 2 x 4 steps for 256^3
  return gemm_batch(cg, "gemm", Transpose::no, Transpose::no, 256, 256, 1, 0,
                    {GemmProblem{x, 256, {{x, 256, x, 256, 256}}}}, &blocks)
      .cycles;
}
}  // namespace

TEST_SUITE("sw26010") {
  TEST_CASE("lock-step ranges: read from the config, the central value inside, bad ranges named") {
    const Params shipped = Params::defaults();
    CHECK(shipped.gemm_lockstep_dma_overlap_range.low == 0);
    CHECK(shipped.gemm_lockstep_dma_overlap_range.high == 1);
    CHECK(shipped.gemm_lockstep_iteration_cycles_range.high == 8);  // sw5cc -O3's 25-cycle loop against D's 17
    CHECK(shipped.gemm_lockstep_iteration_cycles_range.contains(shipped.gemm_lockstep_iteration_cycles));
    auto doc = config::Document::parse(
        "[sw26010]\ngemm_lockstep_iteration_cycles = 20\n"
        "gemm_lockstep_iteration_cycles_range = 10, 30\n",
        "x.ini");
    const Params p = Params::from(doc.section("sw26010"));
    CHECK(p.gemm_lockstep_iteration_cycles_range.low == 10);
    CHECK(p.gemm_lockstep_iteration_cycles_range.high == 30);
    for (const char* bad :
         {"gemm_lockstep_iteration_cycles = 40\ngemm_lockstep_iteration_cycles_range = 10, 30\n",
          "gemm_lockstep_iteration_cycles_range = 30, 10\n", "gemm_lockstep_iteration_cycles_range = 5\n",
          "gemm_lockstep_dma_overlap_range = 0, 1.5\n"}) {
      CAPTURE(bad);
      auto d = config::Document::parse(std::string("[sw26010]\n") + bad, "x.ini");
      CHECK_THROWS_WITH_AS(Params::from(d.section("sw26010")), doctest::Contains("gemm_lockstep"), ConfigError);
    }
  }

  TEST_CASE("lock-step iteration cost: charged on every iteration of the register-communication loop") {
    Params base;
    base.gemm_lockstep_dma_overlap = 0;
    Params costly = base;
    costly.gemm_lockstep_iteration_cycles = 2;
    // 32 steps (4 x 2 x 4 blocks); per step each CPE runs 8 broadcast steps of (8 x 16) / 64 = 2 register
    // blocks, each a loop of tile_k = 8 iterations: 32 x 8 x 2 x (8 - 1) iterations past the first (the
    // first of each loop is its prologue)
    CHECK(gemm_cycles(costly) - gemm_cycles(base) == 32 * 8 * 2 * 7 * 2);
  }

  TEST_CASE("an output across the lock-step range: central value, and the corners' extremes") {
    Params p;
    p.gemm_lockstep_dma_overlap = 0.5;
    p.gemm_lockstep_iteration_cycles = 4;
    const auto corners = lockstep_corners(p);
    std::set<std::pair<double, double>> seen;
    for (const auto& c : corners) seen.insert({c.gemm_lockstep_dma_overlap, c.gemm_lockstep_iteration_cycles});
    CHECK(seen == std::set<std::pair<double, double>>{{0, 0}, {0, 8}, {1, 0}, {1, 8}});
    const OutputRange r = across_lockstep_range(p, [](const Params& q) { return gemm_cycles(q); });
    CHECK(r.central == gemm_cycles(p));
    // slowest: no overlap and the costliest step; fastest: full overlap and no step cost
    Params slowest = p, fastest = p;
    slowest.gemm_lockstep_dma_overlap = 0, slowest.gemm_lockstep_iteration_cycles = 8;
    fastest.gemm_lockstep_dma_overlap = 1, fastest.gemm_lockstep_iteration_cycles = 0;
    CHECK(r.high == gemm_cycles(slowest));
    CHECK(r.low == gemm_cycles(fastest));
    CHECK(r.low < r.central);
    CHECK(r.central < r.high);
    CHECK(OutputRange{10.04, 9.1, 10.3}.describe() == "10.0 (9.1-10.3)");
  }
}
