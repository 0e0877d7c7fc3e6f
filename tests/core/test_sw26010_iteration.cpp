#include <doctest/doctest.h>

#include <vector>

#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"

using namespace taihu::sw26010;

TEST_SUITE("sw26010") {
  TEST_CASE("after the backward pass: the gradient sum and the SGD step run on CG 0's MPE, the copy on the CPEs") {
    const Params p;
    CoreGroup cg(0, p);
    cg.set_numerics(false);
    const std::int64_t n = 25'000'000;  // ResNet-50's parameters, about
    // three axpy passes (3 x 12 bytes a float) at the MPE's copy rate
    const double axpy = 12.0 * double(n) / (p.mpe_copy_gbps * 1e9) * p.clock_hz;
    CHECK(double(gradient_sum_mpe(cg, n)) == doctest::Approx(3 * axpy).epsilon(1e-6));
    CHECK(double(gradient_sum_mpe(cg, n, 2)) == doctest::Approx(axpy).epsilon(1e-6));
    // SGD: decay axpy, momentum axpby, update axpy on the MPE, history -> diff copied on the CPEs
    alignas(128) static float x[32];
    const std::int64_t copy_cycles = copy(cg, x, x, n).cycles;
    CHECK(double(sgd_update(cg, n)) == doctest::Approx(3 * axpy + double(copy_cycles)).epsilon(1e-6));
    // the MPE is the slow part: at 9.9 GB/s, far below the CPEs' streaming copy
    CHECK(double(copy_cycles) < axpy / 2);
    // the copy runs timing only (its cost does not depend on the values) and leaves the group as it was
    cg.set_numerics(true);
    CHECK(double(sgd_update(cg, n)) == doctest::Approx(3 * axpy + double(copy_cycles)).epsilon(1e-6));
    CHECK(cg.numerics());
  }

  TEST_CASE("NetPlan's partial-gradient sum: y += x on the MPE, computed, at the MPE's rate") {
    const Params p;
    CoreGroup cg(0, p);
    std::vector<float> x(1000, 2.0f), y(1000, 1.0f);
    const auto before = cg.clock();
    const auto stats = axpy_mpe(cg, x.data(), y.data(), 1000);
    CHECK(y[0] == 3.0f);
    CHECK(y[999] == 3.0f);
    CHECK(double(stats.cycles) == doctest::Approx(12000.0 / (p.mpe_copy_gbps * 1e9) * p.clock_hz).epsilon(1e-3));
    CHECK(cg.clock() - before == stats.cycles);
    cg.set_numerics(false);
    axpy_mpe(cg, x.data(), y.data(), 1000);
    CHECK(y[0] == 3.0f);  // timing only: nothing computed
  }
}
