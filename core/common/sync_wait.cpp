#include "core/common/sync_wait.hpp"

namespace taihu::async {

void BlockingResumer::resume_later(std::coroutine_handle<> h) {
  {
    std::lock_guard lock(mutex_);
    ready_.push_back(h);
  }
  posted_.notify_one();
}

void BlockingResumer::run_one() {
  std::coroutine_handle<> h;
  {
    std::unique_lock lock(mutex_);
    posted_.wait(lock, [this] { return !ready_.empty(); });
    h = ready_.front();
    ready_.erase(ready_.begin());
  }
  h.resume();
}

}  // namespace taihu::async
