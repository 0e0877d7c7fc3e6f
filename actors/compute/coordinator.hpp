#pragma once
// Data-parallel training with N in-process replicas, as message flow:
// a driver (the coordinator, a scoped actor) spawns N worker actors and, per
// fusion bucket, N shard actors that run the bucket's allreduce; it broadcasts
// rank 0's parameters, then per iteration sends Step to every worker and waits
// for every StepDone; rank 0 evaluates after each epoch.
//
// The replicas are nets or dynamic networks (core/train/replica.hpp): the
// config is taihu-train's for either (core/train/trainer.hpp, or
// core/train/graph_trainer.hpp for a config with [model]) plus:
//   workers = 4                # replicas; batch_size is per worker, so the
//                              # global batch is workers * batch_size
//   [sync]
//   bucket_mb = 25             # fusion bucket size; 0 = one bucket for all
//   algorithm = auto           # ring | rabenseifner | topology_aware | hierarchical | auto
//   step_timeout = 60          # seconds a worker may take for one step
//   compute_slots = 0          # workers computing at once; 0 = cores / BLAS threads
//   scheduler_threads = 0      # CAF threads for the shard actors; 0 = min(2, cores)
//   scheduler = sharing        # CAF policy: sharing (threads sleep on a condition
//                              # variable) or stealing (idle threads poll, #737)
//   [topology]                 # optional, see collectives/topology.hpp; ranks = workers.
//                              # Default: one group, in-process link costs.
//   [compress]                 # optional: RedSync's gradient compression per layer
//                              # (core/compress/policy.hpp, collectives/compression_plan.hpp);
//                              # method = none keeps plain allreduce
// `auto` picks each bucket's algorithm with the α-β-γ cost model and logs the
// choice and the predicted time.
//
// Threads (2-core machine): workers are detached actors, each with its own
// thread, because a forward/backward cannot yield; the shard actors and the
// coordinator's messages run on CAF's scheduler. The rule: at most
// compute_slots workers compute at the same time, and compute_slots × BLAS
// threads <= cores. The app sets BLAS threads to max(1, cores / workers)
// unless [blas] threads says otherwise, so by default workers × BLAS threads
// never exceeds the cores; with more workers than cores the slots serialise
// the extra workers instead of oversubscribing.
//
// Report: the Trainer's keys, plus `workers`, `buckets` (elements, algorithm,
// predicted seconds), `exposed_comm_seconds` (per worker, summed over the
// iterations: backward ended -> last bucket reduced, including waiting for
// slower peers) and `comm_hidden_fraction` (of all buckets' collective wall
// time, GradientReady sent -> reduced, the share that passed before the
// sending worker's backward ended; on 2 busy cores that overlap is time
// sharing, not free parallelism), `bytes_sent_per_iteration` (payload the
// shards sent, all ranks, measured) and `dense_bytes_per_iteration` (dense
// ring allreduce of the same buckets).
//
// Failures: a worker that throws, stalls past step_timeout or sends a
// wrong-sized gradient (its shard actor rejects it) makes run() stop all
// actors and throw WorkerFailure naming the rank and the reason. Every wait
// is bounded, so a failure never hangs.
//
// Checkpoints: rank 0 writes [output] checkpoint after every epoch and every
// checkpoint_every iterations (all replicas hold the same weights and solver
// state). resume() restores it into every replica; layers' random generators
// are restored on rank 0 only, so a resumed run is bit-exact for nets without
// random layers (dropout on ranks > 0 draws new masks).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute/worker_actor.hpp"
#include "collectives/topology.hpp"
#include "core/common/error.hpp"
#include "core/data/dataset.hpp"
#include "core/config/config.hpp"
#include "core/train/progress.hpp"
#include "core/train/graph_trainer.hpp"
#include "core/train/replica.hpp"
#include "core/train/trainer.hpp"

namespace taihu::compute {

class WorkerFailure : public Error {
 public:
  WorkerFailure(int rank, const std::string& what) : Error(what), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

// Shared by the coordinator and the nodes (actors/compute/cluster.hpp), so
// that every process builds the same replicas and schedules from one config.

// The [topology] section, or (without one) uniform in-process links.
collectives::Topology training_topology(const config::Document& doc, int ranks);

// Rank `rank`'s worker model: its replica (core/train/replica.hpp: a net or a
// dynamic model, its solver, its shard of every global batch and, on rank 0,
// the held-out data) and its view of the fusion buckets.
std::shared_ptr<WorkerModel> build_worker_model(const config::Document& doc, const TrainSettings& settings,
                                                const ReplicaData& data, int rank, int ranks,
                                                std::size_t bucket_bytes, WorkerFault fault = {});

class DataParallelTrainer {
 public:
  explicit DataParallelTrainer(config::Document doc, Progress::Mode progress = Progress::Mode::automatic,
                               WorkerFault fault = {});
  ~DataParallelTrainer();

  // Continues from a checkpoint of the same configuration (call before run()).
  void resume(const std::filesystem::path& checkpoint);
  // Trains a net (a config with `net`).
  TrainReport run();
  // Trains a dynamic model (a config with [model]).
  GraphTrainReport run_graph();
  bool dynamic_model() const;

  int workers() const;
  // Every rank's parameter values (all params, net order) after run().
  const std::vector<std::vector<float>>& final_parameters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taihu::compute
