#include "core/solver/sgd.hpp"

#include "core/common/check.hpp"
#include "core/solver/option_check.hpp"

namespace taihu {

SgdSolver::SgdSolver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback,
                     bool nesterov_type)
    : Solver(options, std::move(params), max_iter_fallback) {
  momentum_ = options.get_or<float>("momentum", 0.9f);
  detail::checked_option(options, "momentum", momentum_, momentum_ >= 0.0f && momentum_ < 1.0f,
                         "in [0, 1)");
  nesterov_ = options.get_or<bool>("nesterov", nesterov_type);
  if (nesterov_type && !nesterov_) throw options.error("nesterov", "contradicts type = nesterov");
  if (nesterov_ && momentum_ == 0.0f) throw options.error("momentum", "must be > 0 for Nesterov momentum");
  allocate_history({"momentum"});
}

namespace {

// One expression for the whole param and for its rows: the same bits.
void plain_step(float* w, const float* d, int64_t n, float lr, float weight_decay, float grad_scale) {
  for (int64_t i = 0; i < n; ++i) w[i] -= lr * (grad_scale * d[i] + weight_decay * w[i]);
}

}  // namespace

void SgdSolver::update(Slot& slot, float lr, float weight_decay, float grad_scale) {
  Blob& blob = *slot.param->blob;
  float* w = blob.data().ptr();
  const float* d = blob.diff().ptr();
  float* v = slot.history[0].ptr();
  const int64_t n = blob.count();
  const float mu = momentum_;
  if (nesterov_) {
    for (int64_t i = 0; i < n; ++i) {
      const float g = grad_scale * d[i] + weight_decay * w[i];
      v[i] = mu * v[i] + g;
      w[i] -= lr * (g + mu * v[i]);
    }
  } else if (mu == 0.0f) {
    // Plain SGD: the history stays zero, so it is neither read nor written
    // (a third less memory traffic on a large embedding table).
    plain_step(w, d, n, lr, weight_decay, grad_scale);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float g = grad_scale * d[i] + weight_decay * w[i];
      v[i] = mu * v[i] + g;
      w[i] -= lr * v[i];
    }
  }
}

bool SgdSolver::update_rows(Slot& slot, float lr, float weight_decay, float grad_scale,
                            std::span<const int32_t> rows) {
  // With momentum the history of an untouched row still decays, and decay
  // moves an untouched weight: only plain SGD may skip zero gradients.
  if (nesterov_ || momentum_ != 0.0f || weight_decay != 0.0f) return false;
  Blob& blob = *slot.param->blob;
  const int64_t height = blob.shape()[0], width = blob.shape()[1];
  float* w = blob.data().ptr();
  const float* d = blob.diff().ptr();
  for (const int32_t row : rows) {
    require(row >= 0 && row < height, "sparse gradient of '{}': row {} outside [0, {})", slot.param->name, row, height);
    plain_step(w + row * width, d + row * width, width, lr, weight_decay, grad_scale);
  }
  return true;
}

}  // namespace taihu
