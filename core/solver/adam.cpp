#include "core/solver/adam.hpp"

#include <cmath>

#include "core/solver/option_check.hpp"

namespace taihu {

using detail::checked_option;

AdamSolver::AdamSolver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback,
                       bool decoupled_decay)
    : Solver(options, std::move(params), max_iter_fallback), decoupled_(decoupled_decay) {
  beta1_ = options.get_or<float>("beta1", 0.9f);
  checked_option(options, "beta1", beta1_, beta1_ >= 0.0f && beta1_ < 1.0f, "in [0, 1)");
  beta2_ = options.get_or<float>("beta2", 0.999f);
  checked_option(options, "beta2", beta2_, beta2_ >= 0.0f && beta2_ < 1.0f, "in [0, 1)");
  eps_ = options.get_or<float>("eps", 1e-8f);
  checked_option(options, "eps", eps_, eps_ > 0.0f, "> 0");
  allocate_history({"moment1", "moment2"});
}

void AdamSolver::update(Slot& slot, float lr, float weight_decay, float grad_scale) {
  Blob& blob = *slot.param->blob;
  float* w = blob.data().ptr();
  const float* d = blob.diff().ptr();
  float* m = slot.history[0].ptr();
  float* v = slot.history[1].ptr();
  const int64_t n = blob.count();
  const double t = static_cast<double>(iteration_ + 1);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(static_cast<double>(beta1_), t)));
  const float inv_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(static_cast<double>(beta2_), t)));
  const float b1 = beta1_, b2 = beta2_, c1 = 1.0f - beta1_, c2 = 1.0f - beta2_, eps = eps_;
  // Adam folds the decay into the gradient; AdamW shrinks the weights directly.
  const float l2 = decoupled_ ? 0.0f : weight_decay;
  const float shrink = decoupled_ ? 1.0f - lr * weight_decay : 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad_scale * d[i] + l2 * w[i];
    m[i] = b1 * m[i] + c1 * g;
    v[i] = b2 * v[i] + c2 * g * g;
    w[i] = shrink * w[i] - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bias2 + eps);
  }
}

}  // namespace taihu
