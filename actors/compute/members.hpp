#pragma once
// The replicas of one generation of a run, as the coordinator sees them:
// every rank's worker, and who every monitored actor is (so that a failure
// names its rank, its role and its node). The nodes host them
// (cluster_members.hpp forms a generation); an elastic cluster forms a new
// one each time it re-forms.

#include <caf/actor_addr.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute/worker_actor.hpp"
#include "core/train/run_status.hpp"

namespace taihu::compute {

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

  const Participant* find(const caf::actor_addr& a) const {
    auto it = who.find(a);
    return it == who.end() ? nullptr : &it->second;
  }
};

}  // namespace taihu::compute
