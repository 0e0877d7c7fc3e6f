#pragma once
// How many workers of a process compute at the same time (coordinator.hpp
// states the rule): a worker holds a slot for its forward and backward.
//
// A worker's step awaits its slot (core/common/pending.hpp) rather than
// blocking on it: while it waits, its thread takes its other messages. A
// freed slot goes straight to the longest waiter, so a slot is never free
// while a worker waits, and never to a step that was dropped while it
// waited (its worker stopped). (Before the steps were tasks, the workers blocked
// here; libstdc++ 12's std::counting_semaphore could lose the wake-up,
// PR 104928, and a run stalled with a slot free.)
//
// close() ends the waits when the run stops: a waiting step then gives up,
// so the actor system can shut down.

#include <deque>
#include <mutex>

#include "core/common/pending.hpp"

namespace taihu::compute {

class ComputeSlots {
 public:
  explicit ComputeSlots(int slots);
  ComputeSlots(const ComputeSlots&) = delete;
  ComputeSlots& operator=(const ComputeSlots&) = delete;

  // A slot: true at once if one is free, else when one is released; false
  // (and no slot) once closed.
  async::Pending<bool> acquire();
  // Gives back a slot that acquire() took (also after close()).
  void release();
  // The run stopped: every waiter gets false now, every later acquire() at once.
  void close();

 private:
  std::mutex mutex_;
  std::deque<async::Completion<bool>> waiting_;
  int free_;
  bool closed_ = false;
};

// The slots of a process: [sync] compute_slots when given (> 0), else as
// many as the cores hold workers at the current BLAS threads each.
int compute_slot_count(int configured);

}  // namespace taihu::compute
