#include "core/solver/solver.hpp"

#include "core/kernels/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "core/common/lane_sum.hpp"
#include "core/solver/adam.hpp"
#include "core/solver/lars.hpp"
#include "core/solver/option_check.hpp"
#include "core/solver/sgd.hpp"

namespace taihu {

using detail::checked_option;

std::unique_ptr<Solver> Solver::create(const config::Section& options, std::vector<Param*> params,
                                       int64_t max_iter_fallback) {
  const std::string type = options.get_choice("type", {"sgd", "nesterov", "adam", "adamw", "lars"}, "sgd");
  if (type == "sgd" || type == "nesterov")
    return std::make_unique<SgdSolver>(options, std::move(params), max_iter_fallback, type == "nesterov");
  if (type == "adam" || type == "adamw")
    return std::make_unique<AdamSolver>(options, std::move(params), max_iter_fallback, type == "adamw");
  return std::make_unique<LarsSolver>(options, std::move(params), max_iter_fallback);
}

Solver::Solver(const config::Section& options, std::vector<Param*> params, int64_t max_iter_fallback)
    : policy_(LrPolicy::from_options(options, max_iter_fallback)) {
  weight_decay_ = options.get_or<float>("weight_decay", 0.0f);
  checked_option(options, "weight_decay", weight_decay_, weight_decay_ >= 0.0f, ">= 0");
  clip_gradients_ = options.get_or<float>("clip_gradients", 0.0f);
  checked_option(options, "clip_gradients", clip_gradients_, clip_gradients_ >= 0.0f, ">= 0 (0: off)");
  // A blob shared by several Params is updated once.
  std::unordered_set<const Blob*> seen;
  for (Param* p : params)
    if (p->learnable && seen.insert(p->blob.get()).second) slots_.push_back(Slot{p, {}});
}

void Solver::allocate_history(std::vector<std::string> kinds) {
  history_kinds_ = std::move(kinds);
  for (Slot& slot : slots_) {
    slot.history.resize(history_kinds_.size());
    for (Tensor& t : slot.history) {
      t.reshape(slot.param->blob->shape());
      t.zero();
    }
  }
}

std::vector<std::pair<std::string, Tensor*>> Solver::state() {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (Slot& slot : slots_)
    for (size_t k = 0; k < history_kinds_.size(); ++k)
      out.emplace_back(slot.param->name + "/" + history_kinds_[k], &slot.history[k]);
  return out;
}

double Solver::global_gradient_norm() const {
  double total = 0.0;
  for (const Slot& slot : slots_) {
    const float* g = slot.param->blob->diff().ptr();
    const int64_t n = slot.param->blob->count();
    // Float lanes over blocks vectorise; the blocks add in double.
    constexpr int64_t block = 4096;
    for (int64_t start = 0; start < n; start += block) {
      const float* b = g + start;
      total += detail::lane_sum(std::min(block, n - start), [&](int64_t i) { return b[i] * b[i]; });
    }
  }
  return std::sqrt(total);
}

void Solver::step(std::span<const RowSparseGradient> sparse) {
  const float lr = learning_rate();
  float grad_scale = 1.0f;
  if (clip_gradients_ > 0.0f) {
    const double norm = global_gradient_norm();
    last_gradient_norm_ = static_cast<float>(norm);
    if (norm > clip_gradients_) grad_scale = static_cast<float>(clip_gradients_ / norm);
  }
  const auto update_slot = [&](Slot& slot) {
    const Param& p = *slot.param;
    if (p.lr_mult == 0.0f) return;
    const auto hint = std::find_if(sparse.begin(), sparse.end(),
                                   [&](const RowSparseGradient& g) { return g.blob == p.blob.get(); });
    if (hint != sparse.end() && p.blob->shape().rank() == 2 &&
        update_rows(slot, lr * p.lr_mult, weight_decay_ * p.decay_mult, grad_scale, hint->rows))
      return;
    update(slot, lr * p.lr_mult, weight_decay_ * p.decay_mult, grad_scale);
  };
  // Each update touches its own slot alone, so the slots run side by side on
  // the compute threads, each on one thread: the same bits on any count. The
  // largest are claimed first so that the last piece is a small one.
  std::vector<Slot*> order;
  order.reserve(slots_.size());
  int64_t floats = 0;
  for (Slot& slot : slots_) order.push_back(&slot), floats += slot.param->blob->count();
  std::stable_sort(order.begin(), order.end(),
                   [](const Slot* a, const Slot* b) { return a->param->blob->count() > b->param->blob->count(); });
  parallel_for_items(static_cast<int64_t>(order.size()), floats,
                     [&](int64_t i) { update_slot(*order[static_cast<size_t>(i)]); });
  ++iteration_;
}

}  // namespace taihu
