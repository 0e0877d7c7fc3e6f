#pragma once
// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019).
//   adam:  g = gradient + decay * w          (L2 regularisation through the moments)
//   adamw: g = gradient; w -= lr * decay * w  (decoupled decay, scaled by the
//          scheduled lr as in PyTorch's AdamW)
// then, at step t = iteration + 1,
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//   w -= lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps)
// History: "<param>/moment1", "<param>/moment2".

#include "core/solver/solver.hpp"

namespace taihu {

class AdamSolver final : public Solver {
 public:
  AdamSolver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback,
             bool decoupled_decay);
  const char* type() const override { return decoupled_ ? "adamw" : "adam"; }

 protected:
  void update(Slot& slot, float lr, float weight_decay, float grad_scale) override;

 private:
  float beta1_;
  float beta2_;
  float eps_;
  bool decoupled_;
};

}  // namespace taihu
