#include "core/solver/lars.hpp"

#include <cmath>

#include "core/common/lane_sum.hpp"
#include "core/solver/option_check.hpp"

namespace taihu {

using detail::checked_option;

LarsSolver::LarsSolver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback)
    : Solver(options, std::move(params), max_iter_fallback) {
  momentum_ = options.get_or<float>("momentum", 0.9f);
  checked_option(options, "momentum", momentum_, momentum_ >= 0.0f && momentum_ < 1.0f, "in [0, 1)");
  trust_coefficient_ = options.get_or<float>("trust_coefficient", 0.001f);
  checked_option(options, "trust_coefficient", trust_coefficient_, trust_coefficient_ > 0.0f, "> 0");
  exclude_1d_ = options.get_or<bool>("lars_exclude_1d", false);
  allocate_history({"momentum"});
}

void LarsSolver::update(Slot& slot, float lr, float weight_decay, float grad_scale) {
  Blob& blob = *slot.param->blob;
  float* w = blob.data().ptr();
  const float* d = blob.diff().ptr();
  float* v = slot.history[0].ptr();
  const int64_t n = blob.count();

  float local_lr = lr;
  const bool excluded =
      exclude_1d_ && (blob.shape().rank() <= 1 || slot.param->decay_mult == 0.0f);
  if (!excluded) {
    const double w_norm = std::sqrt(static_cast<double>(detail::lane_sum(n, [&](int64_t i) { return w[i] * w[i]; })));
    const double g_norm = grad_scale * std::sqrt(static_cast<double>(
                                           detail::lane_sum(n, [&](int64_t i) { return d[i] * d[i]; })));
    if (w_norm > 0.0 && g_norm > 0.0)
      local_lr = static_cast<float>(lr * trust_coefficient_ * w_norm / (g_norm + weight_decay * w_norm));
  }
  const float mu = momentum_;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad_scale * d[i] + weight_decay * w[i];
    v[i] = mu * v[i] + local_lr * g;
    w[i] -= v[i];
  }
}

}  // namespace taihu
