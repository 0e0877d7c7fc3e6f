#pragma once
// Wiring of one shard actor: its rank's peers (the same bucket's shard on
// every rank, indexed by rank, itself included) and the owner that gets
// Reduced. Sent once, after all shards of the bucket exist.

#include <caf/actor.hpp>

#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace taihu::msg {

struct ShardInit {
  std::uint32_t bucket = 0;
  std::vector<caf::actor> peers;
  caf::actor owner;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardInit& x) {
  return f(caf::meta::type_name("taihu::msg::ShardInit"), x.bucket, x.peers, x.owner);
}

}  // namespace taihu::msg
