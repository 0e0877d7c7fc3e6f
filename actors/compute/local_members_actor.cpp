#include <caf/all.hpp>
#include <fmt/format.h>

#include "actors/compute/hosted_ranks.hpp"
#include "actors/compute/members.hpp"
#include "actors/compute/run_plan.hpp"

namespace taihu::compute {

Members spawn_local_members(caf::actor_system& system, RunPlan& plan, std::shared_ptr<ComputeSlots> slots,
                            WorkerFault fault) {
  std::vector<std::shared_ptr<WorkerModel>> models;
  for (int r = 0; r < plan.ranks; ++r) {
    models.push_back(r == 0 ? std::exchange(plan.rank0, nullptr) : plan.build_model(r, fault));
    if (r == 0) models.back()->fault = fault;
  }
  std::vector<sync::BucketShardConfig> buckets;
  for (std::size_t b = 0; b < plan.bucket_elements.size(); ++b)
    buckets.push_back({static_cast<std::uint32_t>(b), plan.bucket_elements[b], plan.bucket_algorithms[b],
                       plan.bucket_compression[b]});
  HostedRanks hosted = host_ranks(system, *plan.topology, buckets, std::move(models), plan.ranks, std::move(slots));
  Members m;
  m.generation = 1;
  m.rank_node.assign(static_cast<std::size_t>(plan.ranks), 0);
  for (const auto& shard : hosted.shards) {
    m.who[shard.actor.address()] = {shard.rank, fmt::format("shard of bucket {}", shard.bucket), ""};
    m.local_shards.push_back(shard.actor);
  }
  for (std::size_t k = 0; k < hosted.ranks.size(); ++k) {
    const int r = hosted.ranks[k];
    const worker_actor& w = hosted.workers[k];
    m.workers.push_back(w);
    m.who[w.address()] = {r, "worker", ""};
    m.local_workers.push_back(w);
    m.status.push_back({fmt::format("worker {} (in-process)", r), "training", {r}});
  }
  return m;
}

}  // namespace taihu::compute
