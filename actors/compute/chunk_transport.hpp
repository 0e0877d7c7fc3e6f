#pragma once
// What carries a node's chunks to the other nodes, opened by one factory for
// whichever [cluster] transport the run names: taihu's data plane (TCP,
// same-host channels and shared arena, TLS; transport/data_plane.hpp) or MPI
// (transport/mpi_transport.hpp). The node agent opens a link and reports
// where it is reached without knowing which. A node that hosts every rank
// (an in-process run's, or the one node of nodes = 1) has nothing to carry:
// its link is null, and every shard's peers are local (hosted_ranks.hpp).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute/cluster.hpp"
#include "core/config/config.hpp"
#include "messages/payload_allocator.hpp"

namespace taihu::transport {
class ChunkLink;
}

namespace taihu::compute {

struct OpenedChunkLink {
  std::shared_ptr<transport::ChunkLink> link;
  // Where this node's buckets and the shards' copies live: the shared arena,
  // so that peers on this host read them in place; null: the heap.
  std::shared_ptr<const msg::PayloadAllocator> allocator;
  // Where the other nodes reach it (empty and 0: the transport needs no
  // address, as MPI), and a line for the log.
  std::string host;
  std::uint16_t port = 0;
  std::string description;
};

// Opens node `node`'s link (of `nodes`; rank_node[r]: rank r's node) as the
// run's [cluster] section says, or none when every rank is on `node`;
// `on_lost` runs on the transport's thread when a peer is lost; `label` names
// the node in logs. Throws Error (or NetError) when it cannot be opened.
OpenedChunkLink open_chunk_link(const config::Section& cluster, const NodeOptions& options, int node, int nodes,
                                std::vector<int> rank_node,
                                std::function<void(int node, const std::string& reason)> on_lost,
                                const std::string& label);

}  // namespace taihu::compute
