#include <doctest/doctest.h>

#include "devices/sw26010/batch_norm.hpp"

using namespace taihu::sw26010;

TEST_SUITE("sw26010") {
  TEST_CASE("BatchNorm as swCaffe trains it: a channel per CPE, synchronous planes, chained sums; Caffe's path on large planes") {
    const Params p;
    CoreGroup cg(0, p);
    cg.set_numerics(false);
    // channel c is CPE c % 64's: 32 channels (half the CPEs idle) take far more than half as long
    // as 64, and a 65th channel is a second round of planes for CPE 0
    const auto t32 = time_batch_norm(cg, 4, 32, 28 * 28, true), t64 = time_batch_norm(cg, 4, 64, 28 * 28, true);
    const auto t65 = time_batch_norm(cg, 4, 65, 28 * 28, true), t128 = time_batch_norm(cg, 4, 128, 28 * 28, true);
    CHECK(double(t32.forward) > 0.75 * double(t64.forward));
    CHECK(double(t65.forward) > 1.1 * double(t64.forward));
    CHECK(t128.forward > 3 * t64.forward / 2);
    // the statistics pass's additions chain at the FP latency: per CPE at least
    // batch x planes x spatial x 7 cycles forward, twice that backward (sums over dy and dy x_norm in one loop)
    const double chain = 4 * 2 * 28 * 28 * p.fp_latency_cycles;
    CHECK(double(t128.forward) > chain);
    CHECK(!t128.multi_pass);
    // not in place: the input is copied to the output first
    CHECK(time_batch_norm(cg, 4, 64, 28 * 28, false).forward > t64.forward);
    // 60 x 60 planes and up: Caffe's multi-pass path, two gemv passes over the tensor on the MPE each way
    const auto big = time_batch_norm(cg, 2, 64, 60 * 60, true);
    CHECK(big.multi_pass);
    const double n = 2.0 * 64 * 3600;
    CHECK(double(big.forward) > 2 * double(cg.mpe_copy(4 * n)));
    CHECK(double(big.backward) > 2 * double(cg.mpe_copy(4 * n)) + double(cg.mpe_copy(12 * n)));
    CHECK(time_batch_norm(cg, 2, 64, 59 * 59, true).forward < big.forward);
  }
}
