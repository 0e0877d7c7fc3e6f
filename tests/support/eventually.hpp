#pragma once
// Waits for a condition that another thread makes true (a data plane's I/O
// thread, a peer): polls it every 5 ms until `timeout`, then once more.

#include <chrono>
#include <thread>

namespace taihu::testing {

template <class F>
bool eventually(F&& condition, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace taihu::testing
