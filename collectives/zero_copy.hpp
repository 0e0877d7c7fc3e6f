#pragma once
// Can a sender pass a view of its live buffer instead of a copy (the
// copy-free in-process path)? Only if, under every arrival order, the
// receiver has consumed the message before the sender next writes that
// range. This answers it exactly from the schedule's happens-before order
// (program order on each rank plus send → receive), not by sampling orders.

#include <cstddef>
#include <vector>

#include "collectives/schedule.hpp"

namespace taihu::collectives {

struct SendRef {
  int rank = 0;          // sender
  std::size_t step = 0;  // index in the sender's steps
};

struct ZeroCopyReport {
  // Sends whose range the sender may overwrite (by a later receive, or by
  // this step's own receive) before the receiver has consumed it.
  std::vector<SendRef> overwritten;
  // Sends the receiver may still be consuming when the sender has finished
  // all its steps: a view must stay valid until then (keep the buffer alive,
  // or wait for an acknowledgement) before the next iteration reuses it.
  std::vector<SendRef> outlive_sender;

  bool views_safe_during_collective() const { return overwritten.empty(); }
};

// Requires a finalized, deadlock-free schedule (throws taihu::Error otherwise).
ZeroCopyReport analyse_zero_copy(const Schedule& schedule);

}  // namespace taihu::collectives
