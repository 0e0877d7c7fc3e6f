#pragma once
// Runs a call that might hang (a feed waiting for a dead decoder, a
// destructor waiting for a thread) on a thread of its own, so that a hang
// fails one check instead of the whole suite.

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

namespace taihu::testing {

// False if f does not finish within `limit`; its thread is then abandoned.
inline bool finishes_within(std::chrono::milliseconds limit, std::function<void()> f) {
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  std::thread([f = std::move(f), done] {
    f();
    done->set_value();
  }).detach();
  return future.wait_for(limit) == std::future_status::ready;
}

}  // namespace taihu::testing
