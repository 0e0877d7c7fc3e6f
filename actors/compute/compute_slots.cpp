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
  if (!closed_ && !waiting_.empty()) {
    // handed over: it stays taken
    waiting_.front()(true);
    waiting_.pop_front();
    return;
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
