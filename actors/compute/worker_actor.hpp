#pragma once
// One data-parallel replica as an actor: it owns a Replica (a net or a dynamic
// network with its solver and its share of the training data,
// core/train/replica.hpp) and its view of the fusion buckets.
//
// Protocol (msg::worker_actor, messages/worker_interface.hpp):
//   get_atom              -> Parameters: every param's values (rank 0's are broadcast)
//   Parameters            overwrite every param (the broadcast from rank 0)
//   Iterate{it}           -> IterationDone, once the iteration is over: forward,
//                         then backward stage by stage; as soon as the lowest
//                         stage of a bucket has run, the bucket goes to this
//                         rank's shard of it (GradientReady), so the collective
//                         runs while backward goes on; when every bucket is back
//                         (Reduced, scaled by 1/N), the solver steps. One
//                         replica alone (no shards) steps at once.
//   Reduced               from a shard: one bucket's sum
//   stats_atom            -> WorkerProbe (a worker busy computing cannot answer)
//   eval_atom             -> ReplicaEvaluation on the held-out data (rank 0)
//   figures_atom          -> ReplicaFigures (device time, executor shares)
//   SaveCheckpoint        -> true once this replica's checkpoint is on disk
//   SaveCompressorState   -> true once this rank's compressor file is on disk
//   CompressorRestore     -> true, or false when the compressors start from zero
//   RestoreCheckpoint     -> true once restored and positioned
// An exception (or a malformed Reduced) terminates the worker with the reason
// as its exit error, which the coordinator sees through its monitor.
//
// Threads: a forward/backward blocks for tens of milliseconds and CAF cannot
// preempt it, so workers are detached actors (a thread each) and never sit on
// a scheduler thread that the shard actors need. `compute_slots` bounds how
// many workers compute at the same time (coordinator.hpp states the rule).
//
// The step is a task (Replica::compute, core/common/task.hpp): where it
// awaits actors — the batch loader, a device model's core groups, the graph
// runtime — it suspends, and the worker's thread takes the messages in its
// mailbox (reduced buckets, probes) until a resume_atom says the step may go
// on (mailbox_resumer.hpp). Only the computing itself holds the thread.

#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute/compute_slots.hpp"
#include "actors/sync/shard_actor.hpp"
#include "core/train/replica.hpp"
#include "messages/type_ids.hpp"
#include "messages/worker_interface.hpp"

namespace taihu::collectives {
class Buckets;
}

namespace taihu::compute {

using msg::worker_actor;  // messages/worker_interface.hpp

// A test hook: make one worker misbehave at one iteration. lose_slot: the
// worker takes a compute slot for good before its step (as a lost wake-up
// did), so with compute_slots = 1 it waits for a slot that never frees.
// shard_fails: the worker's shard of the first bucket ends with an error.
struct WorkerFault {
  enum class Kind : std::uint8_t { none, throw_in_step, wrong_gradient_size, stall, lose_slot, shard_fails };
  Kind kind = Kind::none;
  int rank = -1;
  std::uint64_t iteration = 0;
  double stall_seconds = 0.0;
};

// Everything a replica owns; built by whoever hosts the rank (the
// coordinator, or a node), then handed to (and only touched by) its worker.
struct WorkerModel {
  int rank = 0;
  int ranks = 1;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<collectives::Buckets> buckets;
  std::vector<sync::shard_actor> shards;  // this rank's shard actor of each bucket; none with one rank
  std::shared_ptr<ComputeSlots> compute_slots;
  // Where the bucket buffers live (a node's shared arena, so that shards on
  // this host read them in place); null: the heap.
  std::shared_ptr<const msg::PayloadAllocator> allocator;
  WorkerFault fault;

  WorkerModel();
  ~WorkerModel();
};

// Rank `rank` of `ranks`: its replica (core/train/replica.hpp: a net or a
// dynamic model, its solver, its share of every global batch and, on rank 0,
// the held-out data; device executors and graph runners from `services`) and
// its view of the fusion buckets of `bucket_bytes`.
std::shared_ptr<WorkerModel> build_worker_model(const config::Document& doc, const TrainSettings& settings,
                                                const ReplicaData& data, int rank, int ranks,
                                                std::size_t bucket_bytes, const ReplicaServices& services = {},
                                                WorkerFault fault = {});

worker_actor spawn_worker(caf::actor_system& system, std::shared_ptr<WorkerModel> model);

}  // namespace taihu::compute
