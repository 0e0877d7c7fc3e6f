#pragma once
// One call that spawns a fusion bucket's shard actors, whatever carries the
// bucket: a plain allreduce shard (actors/sync/shard_actor.hpp) with the
// bucket's algorithm, or RedSync's compressed shard
// (actors/sync/compressed_shard_actor.hpp) when the plan compresses it (a
// bucket the plan sends all dense keeps its allreduce, behind the
// compressor's momentum correction when there is one). Used
// by the coordinator (every rank in-process) and by the nodes (their local
// ranks, with the data plane as router).

#include <caf/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/compression_plan.hpp"
#include "actors/sync/shard_actor.hpp"
#include "collectives/topology.hpp"

namespace taihu::sync {

struct BucketShardConfig {
  std::uint32_t bucket = 0;
  std::size_t elements = 0;
  collectives::Algorithm algorithm = collectives::Algorithm::ring;  // for plain allreduce
  collectives::BucketCompression compression;          // compressed() selects the compressed shard
};

// result[r] is rank r's shard, or an empty handle where `local(r)` is false
// (no predicate: every rank is local). The caller sends ShardInit.
std::vector<shard_actor> spawn_bucket_shards(caf::actor_system& system, const collectives::Topology& topology,
                                            const BucketShardConfig& config,
                                            std::shared_ptr<ChunkRouter> router = nullptr,
                                            const std::function<bool(int rank)>& local = {});

}  // namespace taihu::sync
