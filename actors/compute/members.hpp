#pragma once
// The replicas of one generation of a run, as the coordinator sees them:
// every rank's worker, and who every monitored actor is (so that a failure
// names its rank, its role and its node). A run in one process has one
// generation (spawn_local_members); an elastic cluster forms a new one each
// time it re-forms (cluster_members.hpp).

#include <caf/actor_addr.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute/worker_actor.hpp"
#include "core/train/run_status.hpp"

namespace taihu::compute {

struct RunPlan;

struct Participant {
  int rank = -1;
  std::string role;   // "worker", "shard of bucket 3" or "node"
  std::string where;  // " on node 2 'name'" with nodes, else empty
  int node = -1;      // with nodes: the node it lives on
};

struct Members {
  int generation = 0;
  std::vector<worker_actor> workers;           // by rank
  std::map<caf::actor_addr, Participant> who;  // every actor the coordinator monitors
  std::vector<int> rank_node;                  // each rank's node (0 in process)
  std::vector<RunStatus::Member> status;       // for the status endpoint
  // Spawned in this process: stopped at the end.
  std::vector<worker_actor> local_workers;
  std::vector<sync::shard_actor> local_shards;

  const Participant* find(const caf::actor_addr& a) const {
    auto it = who.find(a);
    return it == who.end() ? nullptr : &it->second;
  }
};

// Every rank in this process: its worker and, per bucket, its shard, wired
// together. Rank 0 takes plan.rank0 over; the others are built here.
Members spawn_local_members(caf::actor_system& system, RunPlan& plan, std::shared_ptr<ComputeSlots> slots,
                            WorkerFault fault);

}  // namespace taihu::compute
