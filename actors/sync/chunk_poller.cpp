#include "actors/sync/chunk_poller.hpp"

#include <thread>

namespace taihu::sync {

bool ChunkPoller::poll(bool waiting) {
  queued_ = false;
  if (!waiting || !held_) return false;
  if (router_->poll() == 0) {
    if (std::chrono::steady_clock::now() - wait_began_ >= router_->poll_budget()) {
      release();  // sleep: a doorbell wakes this process
      return false;
    }
    std::this_thread::yield();  // another rank's process may need this core to send
  }
  queued_ = true;
  return true;
}

}  // namespace taihu::sync
