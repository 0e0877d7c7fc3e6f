#include <caf/all.hpp>
#include <fmt/format.h>

#include "actors/compute/members.hpp"
#include "actors/compute/run_plan.hpp"
#include "actors/sync/bucket_shards.hpp"

namespace taihu::compute {

Members spawn_local_members(caf::actor_system& system, RunPlan& plan, std::shared_ptr<ComputeSlots> slots,
                            WorkerFault fault) {
  Members m;
  m.generation = 1;
  m.rank_node.assign(static_cast<std::size_t>(plan.ranks), 0);
  std::vector<std::vector<sync::shard_actor>> shards(plan.bucket_elements.size());
  for (std::size_t b = 0; b < shards.size(); ++b) {
    shards[b] = sync::spawn_bucket_shards(system, *plan.topology,
                                          {static_cast<std::uint32_t>(b), plan.bucket_elements[b],
                                           plan.bucket_algorithms[b], plan.bucket_compression[b]});
    for (int r = 0; r < plan.ranks; ++r) {
      const sync::shard_actor& s = shards[b][static_cast<std::size_t>(r)];
      m.who[s.address()] = {r, fmt::format("shard of bucket {}", b), ""};
      m.local_shards.push_back(s);
    }
  }
  for (int r = 0; r < plan.ranks; ++r) {
    auto model = r == 0 ? std::exchange(plan.rank0, nullptr) : plan.build_model(r, fault);
    if (r == 0) model->fault = fault;
    for (auto& bucket : shards) model->shards.push_back(bucket[static_cast<std::size_t>(r)]);
    model->compute_slots = slots;
    const worker_actor w = spawn_worker(system, std::move(model));
    m.workers.push_back(w);
    m.who[w.address()] = {r, "worker", ""};
    m.local_workers.push_back(w);
    m.status.push_back({fmt::format("worker {} (in-process)", r), "training", {r}});
  }
  for (std::size_t b = 0; b < shards.size(); ++b)
    for (int r = 0; r < plan.ranks; ++r)
      caf::anon_send(shards[b][static_cast<std::size_t>(r)],
                     msg::ShardInit{static_cast<std::uint32_t>(b), sync::as_peers(shards[b]),
                                    m.workers[static_cast<std::size_t>(r)]});
  return m;
}

}  // namespace taihu::compute
