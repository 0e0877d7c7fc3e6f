#include "actors/compute/hosted_ranks.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "actors/chunk_link/chunk_link.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

HostedRanks host_ranks(caf::actor_system& system, const collectives::Topology& topology,
                       const std::vector<sync::BucketShardConfig>& buckets,
                       std::vector<std::shared_ptr<WorkerModel>> models, int ranks,
                       std::shared_ptr<ComputeSlots> slots, std::shared_ptr<transport::ChunkLink> link) {
  HostedRanks hosted;
  for (const auto& m : models) hosted.ranks.push_back(m->rank);
  const auto here = [&hosted](int r) { return std::ranges::find(hosted.ranks, r) != hosted.ranks.end(); };
  // [bucket][rank]: an empty handle for a rank hosted elsewhere.
  std::vector<std::vector<sync::shard_actor>> bucket_shards;
  if (ranks > 1)
    for (const auto& bucket : buckets) {
      bucket_shards.push_back(sync::spawn_bucket_shards(system, topology, bucket, link, here));
      for (int r : hosted.ranks) {
        const sync::shard_actor& shard = bucket_shards.back()[static_cast<std::size_t>(r)];
        if (link) link->attach(bucket.bucket, r, shard);
        hosted.shards.push_back({r, bucket.bucket, shard});
      }
    }
  for (auto& m : models) {
    for (const auto& shards : bucket_shards) m->shards.push_back(shards[static_cast<std::size_t>(m->rank)]);
    m->compute_slots = slots;
    hosted.workers.push_back(spawn_worker(system, std::move(m)));
  }
  for (std::size_t b = 0; b < bucket_shards.size(); ++b) {
    const auto peers = sync::as_peers(bucket_shards[b]);
    for (std::size_t k = 0; k < hosted.ranks.size(); ++k)
      caf::anon_send(bucket_shards[b][static_cast<std::size_t>(hosted.ranks[k])],
                     msg::ShardInit{buckets[b].bucket, peers, hosted.workers[k]});
  }
  return hosted;
}

}  // namespace taihu::compute
