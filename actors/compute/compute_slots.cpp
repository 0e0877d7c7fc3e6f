#include "actors/compute/compute_slots.hpp"

namespace taihu::compute {

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
