#include "actors/compute/compute_slots.hpp"

#include <algorithm>

#include "core/blas/kernel_selection.hpp"
#include "core/kernels/compute_threads.hpp"

namespace taihu::compute {

int compute_slot_count(int configured) {
  if (configured > 0) return configured;
  return std::max(1, blas::available_cores() / std::max(1, compute_threads()));
}

ComputeSlots::ComputeSlots(int slots) : free_(slots) {}

async::Pending<bool> ComputeSlots::acquire() {
  return async::Pending<bool>([this](async::Completion<bool> take) {
    std::lock_guard lock(mutex_);
    if (closed_) {
      take(false);
    } else if (free_ > 0) {
      --free_;
      take(true);
    } else {
      waiting_.push_back(std::move(take));
    }
  });
}

void ComputeSlots::release() {
  std::lock_guard lock(mutex_);
  while (!closed_ && !waiting_.empty()) {
    auto take = std::move(waiting_.front());
    waiting_.pop_front();
    // handed over: it stays taken (unless the step was dropped while it waited: the next one)
    if (take(true)) return;
  }
  ++free_;
}

void ComputeSlots::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (auto& take : waiting_) take(false);
  waiting_.clear();
}

}  // namespace taihu::compute
