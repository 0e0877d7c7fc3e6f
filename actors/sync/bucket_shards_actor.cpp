#include "actors/sync/bucket_shards.hpp"

#include <caf/all.hpp>

#include "actors/sync/compressed_shard_actor.hpp"

namespace taihu::sync {

std::vector<caf::actor> spawn_bucket_shards(caf::actor_system& system, const Topology& topology,
                                            const BucketShardConfig& config, std::shared_ptr<ChunkRouter> router,
                                            const std::function<bool(int)>& local) {
  const int ranks = topology.ranks();
  std::vector<caf::actor> shards(static_cast<std::size_t>(ranks));
  auto is_local = [&](int r) { return !local || local(r); };
  if (config.compression.allgather()) {
    for (int r = 0; r < ranks; ++r) {
      if (!is_local(r)) continue;
      shards[static_cast<std::size_t>(r)] = spawn_compressed_shard(
          system, CompressedShardSpec{config.bucket, r, ranks, config.elements, config.compression.segments}, router);
    }
    return shards;
  }
  const auto schedule = make_allreduce(config.algorithm, topology, config.elements);
  for (auto& spec : shard_specs(schedule, config.bucket)) {
    const int r = spec.rank;
    if (!is_local(r)) continue;
    if (config.compression.compressed() && config.compression.needs_precompress()) {
      auto segments = config.compression.segments;
      for (auto& segment : segments) segment.options.workers = ranks;
      spec.precompress = std::make_shared<compress::BucketCompressor>(config.elements, std::move(segments));
    }
    shards[static_cast<std::size_t>(r)] = spawn_shard(system, std::move(spec), router);
  }
  return shards;
}

}  // namespace taihu::sync
