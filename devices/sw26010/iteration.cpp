#include "devices/sw26010/iteration.hpp"

#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

namespace {
// y = a x + b y on the MPE: reads x and y, writes y (12 bytes per float).
std::int64_t mpe_axpby(CoreGroup& cg, std::int64_t n) { return cg.mpe_copy(12.0 * double(n)); }
}  // namespace

KernelStats axpy_mpe(CoreGroup& cg, const float* x, float* y, std::int64_t n) {
  if (cg.numerics())
    for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
  KernelStats stats;
  stats.kernel = "axpy_mpe";
  stats.cycles = mpe_axpby(cg, n);
  return stats;
}

std::int64_t gradient_sum_mpe(CoreGroup& cg, std::int64_t parameters, int groups) {
  std::int64_t cycles = 0;
  for (int g = 1; g < groups; ++g) cycles += mpe_axpby(cg, parameters);
  return cycles;
}

std::int64_t sgd_update(CoreGroup& cg, std::int64_t parameters) {
  // history <- rate * diff + momentum * history, then diff <- history: the
  // copy runs on the CPEs (timing only: its cost does not depend on the values)
  std::int64_t copy_cycles = 0;
  {
    TimingOnly timing(cg);
    copy_cycles = copy(cg, timing_address(), timing_address(), parameters).cycles;
  }
  return mpe_axpby(cg, parameters)  // Regularize: diff += decay * data
         + mpe_axpby(cg, parameters)  // ComputeUpdateValue: history = rate * diff + momentum * history
         + copy_cycles                // diff = history
         + mpe_axpby(cg, parameters);  // Net::Update: data -= diff
}

}  // namespace taihu::sw26010
