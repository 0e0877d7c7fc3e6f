#pragma once
// How every taihu process configures its one actor system: taihu-train (and
// a launched rank 0), taihu-node, taihu-sim and Python's train() all come
// through configure_actor_system, so that they agree on the message types,
// the scheduler and, where processes talk to each other, the middleman.

#include <caf/fwd.hpp>

#include <optional>

#include "actors/compute/cluster.hpp"
#include "core/config/config.hpp"

namespace taihu::app {

struct ActorSystemSettings {
  // Scheduler threads; 0: the cores, at most 2. They run the short handlers
  // (shards, coordinator, feed); a worker computes on a thread of its own.
  int scheduler_threads = 0;
  bool work_stealing = false;  // CAF's work-stealing policy; false: work sharing

  // Where the process speaks to others over CAF's middleman (the cluster's
  // control plane): how often each side shows it lives, and how long a silent
  // peer counts as alive (seconds).
  struct ControlPlane {
    double heartbeat = 1.0;
    double dead_after = 5.0;
  };
  std::optional<ControlPlane> control_plane;
};

// A training config's: [sync] scheduler_threads and scheduler; with nodes,
// [cluster] heartbeat and dead_after. Read before the system exists.
ActorSystemSettings actor_system_settings(const config::Document& doc);

// Loads taihu's message types and applies `settings` to `cfg`.
void configure_actor_system(caf::actor_system_config& cfg, const ActorSystemSettings& settings);

// A node's process (taihu-node, a launched rank other than 0): its actor
// system, with the control plane's timing from `options`, then its node agent
// until the run ends. Returns taihu-node's exit code (compute::run_node).
int run_node_process(const compute::NodeOptions& options);

}  // namespace taihu::app
