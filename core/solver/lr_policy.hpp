#pragma once
// Learning-rate schedules: a pure function of the iteration.
//
//   lr_policy = fixed                        base_lr
//             | step       gamma stepsize    base_lr * gamma^floor(it / stepsize)
//             | multistep  gamma stepvalue   base_lr * gamma^(number of stepvalues <= it)
//             | poly       power max_iter    base_lr * (1 - it / max_iter)^power
//             | cosine     max_iter min_lr   min_lr + (base_lr - min_lr) * (1 + cos(pi it / max_iter)) / 2
//   warmup_iters = 0            # any policy: the first iterations are scaled by a factor
//   warmup_start_factor = 0.1   # rising linearly from this to 1 at warmup_iters
//
// Past max_iter, poly stays at 0 and cosine at min_lr.

#include <cstdint>
#include <vector>

#include "core/config/config.hpp"

namespace taihu {

struct LrPolicy {
  enum class Kind { fixed, step, multistep, poly, cosine };
  Kind kind = Kind::fixed;
  double base_lr = 0.01;
  double gamma = 0.1;
  int64_t stepsize = 0;
  std::vector<int64_t> stepvalues;  // increasing
  double power = 1.0;
  int64_t max_iter = 0;
  double min_lr = 0.0;
  int64_t warmup_iters = 0;
  double warmup_start_factor = 0.1;

  // Reads base_lr, lr_policy and the keys that policy uses (plus max_iter
  // whenever present, and the warm-up keys). `max_iter_fallback` (> 0) stands
  // in for an absent max_iter, e.g. derived from epochs by the trainer.
  static LrPolicy from_options(const config::Section& options, int64_t max_iter_fallback = 0);

  // The learning rate at `iteration` (0-based), warm-up included.
  float at(int64_t iteration) const;
};

}  // namespace taihu
