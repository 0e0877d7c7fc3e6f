#pragma once
// Two data-plane "nodes" in one process, joined both ways, for shard actors
// split between them: rank_node[r] is the node of rank r.

#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "actors/chunk_link/chunk_link.hpp"
#include "support/shard_wiring.hpp"
#include "messages/type_ids.hpp"

namespace taihu::testing {

// part_bytes 0: the data plane's default frame size. tls = always: every
// chunk through TLS (between_hosts: through same-host channels).
inline std::vector<std::shared_ptr<transport::ChunkLink>> two_linked_nodes(
    const std::vector<int>& rank_node, std::size_t part_bytes = 0,
    transport::TlsMode tls = transport::TlsMode::between_hosts) {
  const std::string secret = transport::random_secret();
  std::vector<std::shared_ptr<transport::ChunkLink>> links;
  for (int node = 0; node < 2; ++node) {
    transport::DataPlaneOptions o;
    o.node = node;
    o.secret = secret;
    if (part_bytes > 0) o.part_bytes = part_bytes;
    o.tls = tls;
    links.push_back(std::make_shared<transport::ChunkLink>(o, rank_node, [](int, const std::string&) {}));
  }
  links[0]->plane().connect(1, "127.0.0.1", links[1]->port());
  links[1]->plane().connect(0, "127.0.0.1", links[0]->port());
  return links;
}

// Each shard learns only the shards of its own node; the others are empty
// handles (their chunks go through the data plane).
inline void wire_across_nodes(caf::scoped_actor& owner, std::uint32_t bucket, const std::vector<caf::actor>& shards,
                              const std::vector<int>& rank_node) {
  const std::size_t p = shards.size();
  for (std::size_t r = 0; r < p; ++r) {
    std::vector<caf::actor> peers(p);
    for (std::size_t q = 0; q < p; ++q)
      if (rank_node[q] == rank_node[r]) peers[q] = shards[q];
    owner->send(shards[r], testing::shard_init(bucket, peers, owner));
  }
}

}  // namespace taihu::testing
