#pragma once
// Where a shard actor's chunk goes: to the router's transport when the router
// calls the receiving rank remote (ChunkRouter, actors/sync/shard_actor.hpp),
// else as a CAF message to that rank's shard.

#include <utility>

#include "actors/sync/shard_actor.hpp"
#include "actors/sync/shard_inbox.hpp"
#include "messages/chunk.hpp"

namespace taihu::sync {

template <class Self>
void send_chunk(Self* self, ChunkRouter* router, const ShardInbox& inbox, int to, msg::Chunk chunk) {
  if (router != nullptr && router->remote(to)) {
    router->send(to, std::move(chunk));
  } else {
    self->send(inbox.peer(to), std::move(chunk));
  }
}

}  // namespace taihu::sync
