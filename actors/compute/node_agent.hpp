#pragma once
// A node's agent (node_actor.cpp): the coordinator's counterpart in a
// process. It joins at the coordinator's gate, hosts the ranks the
// coordinator places on it for one cluster generation at a time (their
// workers and shard actors, and the chunk link to the other nodes), and ends
// with an exit code that says why. Every process hosts its ranks through
// one (node_process.cpp spawns them): taihu-node, a launched rank 0 beside
// its coordinator, and an in-process run's own node. Internal to
// actors/compute.

#include <caf/fwd.hpp>

#include <future>
#include <memory>
#include <string>

#include "actors/compute/cluster.hpp"
#include "actors/compute/worker_actor.hpp"

namespace taihu::compute {

// taihu-node's exit codes (its --help lists them; 2, bad input, is the app's).
enum NodeExit : int {
  finished = 0,
  coordinator_unreachable = 4,
  not_admitted = 5,
  setup_failed = 6,
  coordinator_lost = 7,
  dropped = 8,
  run_failed = 9,
};

// An in-process run's replicas: its node builds them from the run's plan, in
// this process, instead of from a config sent to it. The plan is read only:
// its coordinator changes it only to re-form an elastic cluster, which an
// in-process run is not.
struct PlannedReplicas {
  std::shared_ptr<const RunPlan> plan;
  std::shared_ptr<WorkerModel> rank0;  // built to plan the buckets: rank 0 takes it over
  WorkerFault fault;                   // a test's
};

// Spawns an agent named `name` that joins at `gate` and sets `exit_code`
// when it ends; `planned`: an in-process run's node, else null (the
// replicas are built from the config the coordinator sends).
void spawn_node_agent(caf::actor_system& system, NodeOptions options, std::string name, msg::gate_actor gate,
                      std::shared_ptr<std::promise<int>> exit_code, std::shared_ptr<PlannedReplicas> planned);

}  // namespace taihu::compute
