#include "actors/sync/bucket_shards.hpp"

#include <caf/all.hpp>

#include "actors/sync/compressed_shard_actor.hpp"

namespace taihu::sync {

std::vector<shard_actor> spawn_bucket_shards(caf::actor_system& system, const collectives::Topology& topology,
                                            const BucketShardConfig& config, std::shared_ptr<ChunkRouter> router,
                                            const std::function<bool(int)>& local) {
  const int ranks = topology.ranks();
  std::vector<shard_actor> shards(static_cast<std::size_t>(ranks));
  auto is_local = [&](int r) { return !local || local(r); };
  if (config.compression.allgather()) {
    // Dense segments next to sparse ones go by allreduce (fewer bytes than in every message).
    std::size_t dense = 0;
    for (const auto& s : config.compression.segments)
      if (s.options.method == compress::Method::dense) dense += s.count;
    const bool split = ranks > 1 && dense > 0;
    collectives::Schedule schedule;
    if (split) schedule = collectives::make_allreduce(config.algorithm, topology, dense);
    for (int r = 0; r < ranks; ++r) {
      if (!is_local(r)) continue;
      CompressedShardSpec spec;
      spec.bucket = config.bucket;
      spec.rank = r;
      spec.ranks = ranks;
      spec.elements = config.elements;
      spec.segments = config.compression.segments;
      spec.split_dense = split;
      if (split) spec.dense_steps = schedule.steps[static_cast<std::size_t>(r)];
      shards[static_cast<std::size_t>(r)] = spawn_compressed_shard(system, std::move(spec), router);
    }
    return shards;
  }
  const auto schedule = collectives::make_allreduce(config.algorithm, topology, config.elements);
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
