#pragma once
// A shard's polling of its router while it waits for chunks
// (ChunkRouter::poll_budget): the hold on the router's polling, the budget of
// the current wait, and whether a poll message is on its way. The shard actor
// sends itself that message (behind whatever its mailbox holds); this class
// decides when. The hold is given back however the shard ends: one left
// behind would keep the peers from ringing doorbells for this process.

#include <chrono>

#include "actors/sync/shard_actor.hpp"

namespace taihu::sync {

class ChunkPoller {
 public:
  ChunkPoller() = default;
  ChunkPoller(const ChunkPoller&) = delete;
  ChunkPoller& operator=(const ChunkPoller&) = delete;
  ~ChunkPoller() { release(); }

  // The router to poll (null: never polls). Set once, before the first wait.
  void attach(ChunkRouter* router) { router_ = router; }

  // The shard waits for a chunk. True: send the poll message now.
  bool wait() {
    if (router_ == nullptr || router_->poll_budget().count() == 0) return false;
    if (!held_) {
      router_->hold_polling(true);
      held_ = true;
    }
    wait_began_ = std::chrono::steady_clock::now();
    if (queued_) return false;
    queued_ = true;
    return true;
  }

  // The poll message arrived; `waiting`: the shard still runs an iteration.
  // True: send it again (after what this poll delivered).
  bool poll(bool waiting);

  // The iteration is over: peers ring doorbells again. Takes what arrived meanwhile.
  void release() {
    if (!held_) return;
    held_ = false;
    router_->hold_polling(false);
  }

 private:
  ChunkRouter* router_ = nullptr;
  bool held_ = false;
  bool queued_ = false;
  std::chrono::steady_clock::time_point wait_began_;
};

}  // namespace taihu::sync
