#include "actors/compute/compute_slots.hpp"

namespace taihu::compute {

ComputeSlots::ComputeSlots(int slots) : free_(slots) {}

bool ComputeSlots::acquire() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return free_ > 0 || closed_; });
  if (closed_) return false;
  --free_;
  return true;
}

void ComputeSlots::release() {
  {
    std::lock_guard lock(mutex_);
    ++free_;
  }
  // Every waiter waits for the same thing, so waking one is enough.
  changed_.notify_one();
}

void ComputeSlots::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace taihu::compute
