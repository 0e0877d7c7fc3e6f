#pragma once
// LARS (You, Gitman & Ginsburg 2017): momentum SGD with a layer-wise rate per
// parameter blob,
//   local_lr = lr * trust_coefficient * ||w|| / (||g|| + decay * ||w||)
//   v = momentum * v + local_lr * (g + decay * w),   w -= v
// where g is the (clipped) gradient. When ||w|| or ||g|| is 0 the trust ratio
// falls back to 1 (local_lr = lr). With lars_exclude_1d = true, 1-D params
// (biases, normalisation) and params with decay_mult 0 take the plain rate lr.
// History: "<param>/momentum".

#include "core/solver/solver.hpp"

namespace taihu {

class LarsSolver final : public Solver {
 public:
  LarsSolver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback);
  const char* type() const override { return "lars"; }

 protected:
  void update(Slot& slot, float lr, float weight_decay, float grad_scale) override;

 private:
  float momentum_;
  float trust_coefficient_;
  bool exclude_1d_;
};

}  // namespace taihu
