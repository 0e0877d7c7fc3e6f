#pragma once
// Wiring of one shard actor: its rank's peers (the same bucket's shard on
// every rank, indexed by rank, itself included) and the owner that gets
// Reduced. Sent once, after all shards of the bucket exist.
//
// The handles are typed by what the shard sends them: a peer takes chunks, the
// owner (a worker, or the simulation driver) takes Reduced. Any actor that
// speaks more converts to them without a cast.

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <vector>

#include "messages/chunk.hpp"
#include "messages/reduced.hpp"

namespace taihu::msg {

// A shard's peer, as the shard sees it (actors/sync/shard_actor.hpp speaks more).
using chunk_receiver = caf::typed_actor<caf::reacts_to<Chunk>>;
// A shard's owner.
using reduced_receiver = caf::typed_actor<caf::reacts_to<Reduced>>;

struct ShardInit {
  std::uint32_t bucket = 0;
  std::vector<chunk_receiver> peers;
  reduced_receiver owner;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardInit& x) {
  return f(caf::meta::type_name("taihu::msg::ShardInit"), x.bucket, x.peers, x.owner);
}

}  // namespace taihu::msg
