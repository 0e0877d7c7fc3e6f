#pragma once
// One collective run by the real shard actors (actors/sync/shard_actor.hpp)
// over a simulated network and clock.
//
// Every shard gets a ChunkRouter that calls every rank remote, so each chunk
// a shard sends goes to the simulator instead of a peer: the Engine
// (engine.hpp) stamps it with the sender's simulated clock, times it on the
// Network, and a driver actor delivers it to the receiving shard as an
// ordinary msg::Chunk when the simulated clock reaches its arrival. The
// shards' code is unchanged; they do not know they are simulated.
//
// Conservative clock: the engine only moves past a step that sends once the
// rank's shard has produced that send. If it has not yet, the driver probes
// the shard (the shard's stats request): the shard handles messages from one
// sender in order, so the reply means it has processed every delivery made
// so far, and any send it will make before a later delivery is queued. If
// the send is still missing then, the shard deviates from its schedule and
// the run fails. Shards only ever see messages whose arrival time has been
// reached, and the driver collects their Reduced.
//
// Modes: data (options.carry_data) — the inputs travel and the shards sum
// them; use up to a few dozen ranks. Timing — ShardSpec::sizes_only: buffers
// are TensorPayload::sized, so 1,024 ranks of 100 MB take no memory.

#include <caf/fwd.hpp>

#include <cstdint>
#include <vector>

#include "simulator/engine.hpp"
#include "simulator/network.hpp"
#include "collectives/schedule.hpp"
#include "messages/tensor_payload.hpp"

namespace taihu::sim {

struct SimOptions {
  bool carry_data = false;
  std::vector<double> start_times;  // per rank: when its input is ready (empty: all 0)
  std::uint32_t bucket = 0;
  // false: the network keeps the traffic of earlier runs (see
  // simulator::time_without_actors), as for a training iteration's later buckets.
  bool fresh_network = true;
};

struct SimResult {
  double seconds = 0;                      // simulated: the last rank's finish
  std::vector<double> finish;              // per rank
  std::vector<msg::TensorPayload> outputs;  // data mode: each rank's result
  simulator::EngineStats stats;
  std::uint64_t probes = 0;   // waits for a shard (see above)
  double host_seconds = 0;    // wall time of the run, spawning included
};

// Runs `schedule` once. `inputs` (data mode only): one buffer of
// schedule.elements floats per rank. Throws taihu::Error if a shard fails or
// deviates from the schedule.
SimResult simulate(caf::actor_system& system, const collectives::Schedule& schedule, simulator::Network& network,
                   const SimOptions& options, std::vector<msg::TensorPayload> inputs = {});

}  // namespace taihu::sim
