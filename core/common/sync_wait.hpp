#pragma once
// The one place a thread blocks on a task (task.hpp): runs it on the calling
// thread, sleeping while it is suspended, and returns its value (or rethrows).
// For callers that want an answer now — evaluation passes, Net::forward(),
// tests, benchmarks. A task that never suspends (a CPU
// layer, an inline graph runner) runs straight through, without sleeping.
//
// Not for a worker's step, which runs as a task on the worker's own mailbox
// (actors/compute/worker_actor.cpp), and never from a scheduled actor's
// handler, which would hold a scheduler thread. A detached actor may (a
// worker's evaluation pass): it blocks only its own thread.
//
// Plain C++ (no actors).

#include <condition_variable>
#include <coroutine>
#include <memory>
#include <mutex>
#include <vector>

#include "core/common/task.hpp"

namespace taihu::async {

// Resumes coroutines on the thread that calls run_one().
class BlockingResumer final : public Resumer {
 public:
  void resume_later(std::coroutine_handle<> h) override;
  // Waits for a coroutine handed to resume_later, and resumes it.
  void run_one();

 private:
  std::mutex mutex_;
  std::condition_variable posted_;
  std::vector<std::coroutine_handle<>> ready_;  // a vector: no allocation for a task that never suspends
};

template <class T>
T sync_wait(Task<T> task) {
  auto resumer = std::make_shared<BlockingResumer>();
  task.start(resumer);
  while (!task.done()) resumer->run_one();
  return task.result();
}

}  // namespace taihu::async
