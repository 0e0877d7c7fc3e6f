#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/net_plan.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {

// Every kind of host buffer the plan DMAs: blobs, implicit filters and their
// gradients, a convolution and an inner product bias, BatchNorm's statistics.
const char* small_net = R"(
[net]
name = alignment
# NetPlan alone runs every layer itself (no executor is installed to say so)
fuse = false
[input data]
shape = 64 8 8
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 128
kernel_size = 3
pad = 1
[layer bn1]
type = BatchNorm
bottom = conv1
top = bn1
[layer scale1]
type = Scale
bottom = bn1
top = scale1
bias_term = true
[layer conv2]
type = Convolution
bottom = scale1
top = conv2
num_output = 24
kernel_size = 3
[layer ip]
type = InnerProduct
bottom = conv2
top = ip
num_output = 10
)";

// One training iteration's simulated cycles, every device layer's every phase on every group.
std::int64_t iteration_cycles(const std::shared_ptr<const config::Document>& doc, std::optional<ConvMethod> method) {
  Net net(doc, 64, 7);
  net.set_phase(Phase::train);
  NetPlan plan(net);
  plan.force_conv_method(method);
  std::int64_t total = 0;
  auto pass = [&](std::size_t i, Pass p) {
    if (plan.placement(i) != Placement::device) return;
    for (int phase = 0; phase < plan.phases(i, p); ++phase) {
      plan.before_phase(i, p, phase);
      for (int g = 0; g < Chip::groups; ++g) total += plan.run(g, i, p, phase).cycles;
    }
    plan.finish(i, p);
  };
  for (std::size_t i = 0; i < net.num_layers(); ++i) pass(i, Pass::forward);
  for (std::size_t i = net.num_layers(); i-- > 0;) pass(i, Pass::backward);
  return total;
}

}  // namespace

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

  // Slow-labelled: whole layers or nets on the CPE fibers, seconds here and minutes
  // instrumented (the sanitizer pass leaves the slow suite out; both other passes run it).
  TEST_CASE("a net's simulated time does not depend on where the host allocator put its buffers" *
            doctest::test_suite("slow")) {
    // The model charges a DMA by the 128-byte transactions its blocks touch, so
    // a buffer off the boundary costs more. Live heap blocks of odd sizes move
    // where every later buffer lands; the times must not move with them.
    const auto doc = std::make_shared<config::Document>(config::Document::parse(small_net, "alignment.ini"));
    for (const auto method : {ConvMethod::implicit, ConvMethod::explicit_gemm}) {
      const std::int64_t reference = iteration_cycles(doc, method);
      CHECK(reference > 0);
      std::vector<std::unique_ptr<char[]>> held;
      for (int k = 0; k < 4; ++k) {
        held.emplace_back(new char[std::size_t(16 + 48 * k + 4096 * (k % 3))]);
        CHECK(iteration_cycles(doc, method) == reference);
      }
    }
  }
}
