#pragma once
// Tests hold shards and their owner as untyped handles (a scoped_actor, a
// lambda actor) so that they can send them anything, malformed messages
// included. ShardInit carries the typed handles a shard uses (a peer takes
// chunks, the owner Reduced); the tests' handles are cast to them here, once.

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

#include <cstdint>
#include <vector>

#include "messages/shard_init.hpp"

namespace taihu::testing {

inline msg::ShardInit shard_init(std::uint32_t bucket, const std::vector<caf::actor>& peers, const caf::actor& owner) {
  msg::ShardInit init{bucket, {}, caf::actor_cast<msg::reduced_receiver>(owner)};
  for (const auto& p : peers) init.peers.push_back(caf::actor_cast<msg::chunk_receiver>(p));
  return init;
}

}  // namespace taihu::testing
