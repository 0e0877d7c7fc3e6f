#pragma once
// Stochastic gradient descent with (optionally Nesterov) momentum, in the
// form PyTorch uses: with g = gradient + decay * w,
//   v = momentum * v + g
//   w -= lr * v                      (classical)
//   w -= lr * (g + momentum * v)     (Nesterov, Sutskever et al. 2013)
// History: "<param>/momentum".

#include "core/solver/solver.hpp"

namespace taihu {

class SgdSolver final : public Solver {
 public:
  // `nesterov_type`: built as type = nesterov, which implies nesterov = true.
  SgdSolver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback,
            bool nesterov_type = false);
  const char* type() const override { return nesterov_ ? "nesterov" : "sgd"; }
  float momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }

 protected:
  void update(Slot& slot, float lr, float weight_decay, float grad_scale) override;
  // Plain SGD without decay only: there a zero gradient changes nothing.
  bool update_rows(Slot& slot, float lr, float weight_decay, float grad_scale, std::span<const int32_t> rows) override;

 private:
  float momentum_;
  bool nesterov_;
};

}  // namespace taihu
