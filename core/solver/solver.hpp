#pragma once
// Solvers update learnable parameters from their accumulated gradients.
//
//   [solver]
//   type = sgd | nesterov | adam | adamw | lars   # nesterov = sgd with nesterov = true
//   base_lr = 0.01            # required
//   weight_decay = 0          # L2, times each param's decay_mult
//   clip_gradients = 0        # global L2 norm over all learnable params; 0 disables
//   lr_policy = fixed | step | multistep | poly | cosine   (see lr_policy.hpp, + warmup_iters)
//   # sgd:   momentum = 0.9, nesterov = false
//   # adam, adamw: beta1 = 0.9, beta2 = 0.999, eps = 1e-8
//   # lars:  momentum = 0.9, trust_coefficient = 0.001, lars_exclude_1d = false
//
// Per parameter, the learning rate is lr * lr_mult and the decay
// weight_decay * decay_mult; params with lr_mult 0 and non-learnable params
// (running statistics) are left alone. step() reads the diffs without
// changing them (clipping is applied as a factor); the caller zeroes them
// before the next backward.
//
// A solver's whole state is its iteration plus per-parameter history
// tensors (momentum, Adam moments), exposed by name so that checkpoints can
// store and restore it generically; restoring both makes the following steps
// bit-identical to an uninterrupted run.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.hpp"
#include "core/layers/layer.hpp"
#include "core/solver/lr_policy.hpp"
#include "core/solver/row_sparse_gradient.hpp"

namespace taihu {

class Solver {
 public:
  virtual ~Solver() = default;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Builds the solver named by `type` in the section, reading all the keys
  // it uses (the caller then calls options.reject_unused()). `params` may
  // include non-learnable ones; they are skipped. `max_iter_fallback` (> 0)
  // stands in for an absent max_iter.
  static std::unique_ptr<Solver> create(const config::Section& options, std::vector<Param*> params,
                                        int64_t max_iter_fallback = 0);

  virtual const char* type() const = 0;

  // One update from the params' diffs; advances the iteration counter.
  // `sparse` names params whose diff is zero outside some rows; a solver
  // that leaves zero-gradient elements unchanged updates only those rows
  // (same result), the others ignore it. The caller vouches for the rows:
  // after an allreduce every row may hold a gradient, so pass nothing.
  void step(std::span<const RowSparseGradient> sparse = {});
  // Learning rate the next step() will use (before lr_mult).
  float learning_rate() const { return policy_.at(iteration_); }
  const LrPolicy& lr_policy() const { return policy_; }

  int64_t iteration() const { return iteration_; }
  void set_iteration(int64_t iteration) { iteration_ = iteration; }

  // Global L2 norm of the gradients seen by the last step(), before
  // clipping; computed only when clipping is on (0 otherwise).
  float last_gradient_norm() const { return last_gradient_norm_; }

  // History tensors, named "<param>/<kind>" (e.g. "conv1/weight/momentum"),
  // in a stable order: params in the order given, kinds in a fixed order.
  // Their contents may be overwritten to restore a checkpoint.
  std::vector<std::pair<std::string, Tensor*>> state();

 protected:
  // Reads the common keys (base_lr, weight_decay, clip_gradients, lr policy).
  Solver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback);

  struct Slot {
    Param* param;
    std::vector<Tensor> history;  // one per history kind, shaped like the param
  };

  // Allocates zeroed history tensors for every learnable param (call once,
  // from the derived constructor).
  void allocate_history(std::vector<std::string> kinds);

  // Updates one param. The gradient is grad_scale * diff (grad_scale < 1
  // when clipping); lr and weight_decay already include the multipliers.
  // Several slots' updates (and update_rows) run at once on the compute
  // threads: each may touch its own slot only.
  virtual void update(Slot& slot, float lr, float weight_decay, float grad_scale) = 0;
  // The same update on the given rows of a 2-D param only, where it equals
  // update() on the whole param because every other row's gradient is zero.
  // Returns false (doing nothing) where it would not: then update() runs.
  virtual bool update_rows(Slot&, float /*lr*/, float /*weight_decay*/, float /*grad_scale*/,
                           std::span<const int32_t> /*rows*/) {
    return false;
  }

  float weight_decay() const { return weight_decay_; }
  int64_t iteration_ = 0;

 private:
  double global_gradient_norm() const;

  LrPolicy policy_;
  float weight_decay_ = 0.0f;
  float clip_gradients_ = 0.0f;
  float last_gradient_norm_ = 0.0f;
  std::vector<Slot> slots_;
  std::vector<std::string> history_kinds_;
};

}  // namespace taihu
