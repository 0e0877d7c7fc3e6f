#pragma once
// The actors a replica may run on, in the process's one actor system: the
// SW26010 model's core-group actors for a net with device = sw26010
// (actors/device/sw26010_executor.hpp), the graph actor runtime for a
// dynamic model (actors/graph_runtime/graph_runner.hpp), and the batch
// loader and decoder actors that read every net's mini-batches
// (actors/feed/batch_loader.hpp). Core builds
// replicas; this plugs the actors into them (core/train/replica.hpp).
//
// Config (root keys):
//   graph_runtime = actors    # a dynamic model's mini-batches on vertex-executor
//                             # actors; inline: on the worker's thread
//   executors = 0             # vertex executors per replica; 0 = the cores
//                             # divided by (BLAS threads x replicas in this process)
//   [sw26010]                 # overrides of config/devices/sw26010.ini's chip parameters

#include <caf/fwd.hpp>

#include "core/train/replica.hpp"

namespace taihu::compute {

// `replicas`: how many replicas this process hosts (they share its cores).
ReplicaServices replica_services(caf::actor_system& system, int replicas);

}  // namespace taihu::compute
