#pragma once
// Where a worker's step goes on after it awaited an actor (core/common/task.hpp):
// on the worker's own mailbox. A coroutine that may go on is queued here and
// the worker is told with a resume_atom, whose handler resumes it on the
// worker's thread, between its other messages — never beside them.
//
// The worker is held weakly: a step that was dropped with its worker leaves
// a late completion nowhere to go, and that is all.

#include <caf/actor_control_block.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include <coroutine>
#include <deque>
#include <mutex>

#include "core/common/task.hpp"

namespace taihu::compute {

class MailboxResumer final : public async::Resumer {
 public:
  explicit MailboxResumer(caf::actor_control_block* owner) : owner_(owner) {}

  void resume_later(std::coroutine_handle<> h) override;
  // In the owner's resume_atom handler: the coroutine that message is for
  // (none when the queue is empty).
  std::coroutine_handle<> next();

 private:
  caf::weak_actor_ptr owner_;
  std::mutex mutex_;
  std::deque<std::coroutine_handle<>> ready_;
};

}  // namespace taihu::compute
