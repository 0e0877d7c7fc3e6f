#pragma once
// How many workers of a process compute at the same time (coordinator.hpp
// states the rule): a worker holds a slot for its forward and backward.
//
// A mutex and a condition variable rather than std::counting_semaphore:
// libstdc++ 12's semaphore can lose a wake-up. Its acquire() reads the
// counter, spins (ending in sched_yield), then sleeps on the futex with the
// value read before the spin; a release that lands during that last yield
// turns the counter back to that value and wakes nobody (release() wakes
// only when the counter was 0), so the waiter sleeps with slots free. On a
// loaded machine the yield lasts a time slice, and a data-parallel run
// stalled until step_timeout with a worker asleep in acquire() and no slot
// held (libstdc++ PR 104928).
//
// close() ends the waits when the run stops: a worker thread that waits for a
// slot then gives up its step, so the actor system can shut down (it waits
// for every worker's thread).

#include <condition_variable>
#include <mutex>

namespace taihu::compute {

class ComputeSlots {
 public:
  explicit ComputeSlots(int slots);
  ComputeSlots(const ComputeSlots&) = delete;
  ComputeSlots& operator=(const ComputeSlots&) = delete;

  // Takes a slot, waiting for one if need be; false (and no slot) once closed.
  [[nodiscard]] bool acquire();
  // Gives back a slot that acquire() took (also after close()).
  void release();
  // The run stopped: every waiter returns false now, every later acquire() at once.
  void close();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int free_;
  bool closed_ = false;
};

}  // namespace taihu::compute
