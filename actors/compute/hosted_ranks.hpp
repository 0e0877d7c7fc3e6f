#pragma once
// The ranks one process hosts for one generation of a run, wired up: per
// fusion bucket, each hosted rank's shard actor, and each rank's worker
// owning its shards. Every process hosts its ranks this one way, through its
// node's agent (node_agent.hpp): an in-process run's one node as well as a
// node process, whose shards reach the other processes' through a chunk
// link.

#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "actors/compute/compute_slots.hpp"
#include "actors/compute/worker_actor.hpp"
#include "actors/sync/bucket_shards.hpp"
#include "actors/sync/shard_actor.hpp"
#include "collectives/topology.hpp"

namespace taihu::transport {
class ChunkLink;
}

namespace taihu::compute {

struct HostedRanks {
  struct Shard {
    int rank = 0;
    std::uint32_t bucket = 0;
    sync::shard_actor actor;
  };
  std::vector<int> ranks;             // hosted here, in the order the models came
  std::vector<worker_actor> workers;  // by position in ranks
  std::vector<Shard> shards;          // bucket by bucket, rank by rank
};

// Spawns the shards of `buckets` for the ranks of `models` (one model per
// hosted rank, of `ranks` in all; one rank alone has no shards), then one
// worker per model, taking `slots`; tells every shard its peers and its
// worker. `link` carries chunks to the ranks elsewhere (every hosted shard is
// attached to it); null when every rank is hosted here.
HostedRanks host_ranks(caf::actor_system& system, const collectives::Topology& topology,
                       const std::vector<sync::BucketShardConfig>& buckets,
                       std::vector<std::shared_ptr<WorkerModel>> models, int ranks,
                       std::shared_ptr<ComputeSlots> slots, std::shared_ptr<transport::ChunkLink> link = nullptr);

}  // namespace taihu::compute
