#include "core/solver/lr_policy.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/solver/option_check.hpp"

namespace taihu {

using detail::checked_option;

LrPolicy LrPolicy::from_options(const config::Section& options, int64_t max_iter_fallback) {
  LrPolicy p;
  p.base_lr = options.get<double>("base_lr");
  checked_option(options, "base_lr", p.base_lr, p.base_lr >= 0.0 && std::isfinite(p.base_lr),
                 "a finite number >= 0");
  const std::string kind =
      options.get_choice("lr_policy", {"fixed", "step", "multistep", "poly", "cosine"}, "fixed");

  // max_iter is the run's length too, so it is accepted (read) under any policy.
  const bool needs_max_iter = kind == "poly" || kind == "cosine";
  if (options.has("max_iter")) {
    p.max_iter = options.get<int64_t>("max_iter");
    checked_option(options, "max_iter", p.max_iter, p.max_iter > 0, "> 0");
  } else if (max_iter_fallback > 0) {
    p.max_iter = max_iter_fallback;
  } else if (needs_max_iter) {
    throw options.error("max_iter", "required by lr_policy = " + kind + " but missing");
  }

  if (kind == "fixed") {
    p.kind = Kind::fixed;
  } else if (kind == "step") {
    p.kind = Kind::step;
    p.gamma = options.get_or<double>("gamma", 0.1);
    checked_option(options, "gamma", p.gamma, p.gamma > 0.0, "> 0");
    p.stepsize = options.get<int64_t>("stepsize");
    checked_option(options, "stepsize", p.stepsize, p.stepsize > 0, "> 0");
  } else if (kind == "multistep") {
    p.kind = Kind::multistep;
    p.gamma = options.get_or<double>("gamma", 0.1);
    checked_option(options, "gamma", p.gamma, p.gamma > 0.0, "> 0");
    p.stepvalues = options.get_list<int64_t>("stepvalue");
    if (p.stepvalues.empty()) throw options.error("stepvalue", "needs at least one iteration");
    for (size_t i = 0; i < p.stepvalues.size(); ++i)
      if (p.stepvalues[i] < 0 || (i > 0 && p.stepvalues[i] <= p.stepvalues[i - 1]))
        throw options.error("stepvalue", "must be non-negative and strictly increasing");
  } else if (kind == "poly") {
    p.kind = Kind::poly;
    p.power = options.get_or<double>("power", 1.0);
    checked_option(options, "power", p.power, p.power >= 0.0, ">= 0");
  } else {
    p.kind = Kind::cosine;
    p.min_lr = options.get_or<double>("min_lr", 0.0);
    checked_option(options, "min_lr", p.min_lr, p.min_lr >= 0.0 && p.min_lr <= p.base_lr,
                   "in [0, base_lr]");
  }

  p.warmup_iters = options.get_or<int64_t>("warmup_iters", 0);
  checked_option(options, "warmup_iters", p.warmup_iters, p.warmup_iters >= 0, ">= 0");
  p.warmup_start_factor = options.get_or<double>("warmup_start_factor", 0.1);
  checked_option(options, "warmup_start_factor", p.warmup_start_factor,
                 p.warmup_start_factor >= 0.0 && p.warmup_start_factor <= 1.0, "in [0, 1]");
  return p;
}

float LrPolicy::at(int64_t iteration) const {
  const int64_t it = std::max<int64_t>(iteration, 0);
  double lr = base_lr;
  switch (kind) {
    case Kind::fixed:
      break;
    case Kind::step:
      lr = base_lr * std::pow(gamma, static_cast<double>(it / stepsize));
      break;
    case Kind::multistep: {
      const auto passed = std::upper_bound(stepvalues.begin(), stepvalues.end(), it) - stepvalues.begin();
      lr = base_lr * std::pow(gamma, static_cast<double>(passed));
      break;
    }
    case Kind::poly: {
      const double progress = std::min(1.0, static_cast<double>(it) / static_cast<double>(max_iter));
      lr = base_lr * std::pow(1.0 - progress, power);
      break;
    }
    case Kind::cosine: {
      const double progress = std::min(1.0, static_cast<double>(it) / static_cast<double>(max_iter));
      lr = min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
      break;
    }
  }
  if (it < warmup_iters) {
    const double t = static_cast<double>(it) / static_cast<double>(warmup_iters);
    lr *= warmup_start_factor + (1.0 - warmup_start_factor) * t;
  }
  return static_cast<float>(lr);
}

}  // namespace taihu
