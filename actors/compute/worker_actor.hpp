#pragma once
// One data-parallel replica as an actor: it owns a Replica (a net or a dynamic
// network with its solver and its shard of the training data,
// core/train/replica.hpp) and its view of the fusion buckets.
//
// Protocol (messages/):
//   get_atom                 -> msg::Parameters: every param's values (rank 0's are broadcast)
//   msg::Parameters          overwrite every param (the broadcast from rank 0)
//   msg::Step{it}            from the coordinator: forward, then backward stage
//                            by stage; as soon as the lowest stage of a bucket
//                            has run, pack the bucket and send GradientReady to
//                            this rank's shard of it (the collective runs while
//                            backward goes on)
//   msg::Reduced             from a shard: write the sum back scaled by 1/N; when
//                            all buckets are back, solver step, then StepDone to
//                            the sender of Step
//   eval_atom                -> ReplicaEvaluation on the held-out data (rank 0)
//   (restore_atom, path, epoch, batch)
//                            -> true once the checkpoint at `path` is loaded and the
//                            data positioned at (epoch, batch) (elastic clusters)
//   stats_atom               -> (uint64 iteration, bool in_step, uint64 buckets pending)
//   (save_atom, path, keep_all, epoch, batch, elapsed, epoch_loss_sum)
//                            -> true once this replica's checkpoint is on disk
// An exception (or a malformed Reduced) terminates the worker with the reason
// as its exit error, which the coordinator sees through its monitor.
//
// Threads: a forward/backward blocks for tens of milliseconds and CAF cannot
// preempt it, so workers are detached actors (a thread each) and never sit on
// a scheduler thread that the shard actors need. `compute_slots` bounds how
// many workers compute at the same time (see coordinator.hpp for the rule).

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <semaphore>
#include <string>
#include <vector>

#include "core/train/replica.hpp"
#include "messages/payload_allocator.hpp"

namespace taihu::collectives {
class Buckets;
}

namespace taihu::compute {

// A test hook: make one worker misbehave at one iteration.
struct WorkerFault {
  enum class Kind : std::uint8_t { none, throw_in_step, wrong_gradient_size, stall };
  Kind kind = Kind::none;
  int rank = -1;
  std::uint64_t iteration = 0;
  double stall_seconds = 0.0;
};

using ComputeSlots = std::counting_semaphore<1024>;

// Everything a replica owns; built by the coordinator, then handed to (and
// only touched by) the worker actor.
struct WorkerModel {
  int rank = 0;
  int ranks = 1;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<collectives::Buckets> buckets;
  std::vector<caf::actor> shards;  // this rank's shard actor of each bucket
  std::shared_ptr<ComputeSlots> compute_slots;
  // Where the bucket buffers live (a node's shared arena, so that shards on
  // this host read them in place); null: the heap.
  std::shared_ptr<const msg::PayloadAllocator> allocator;
  WorkerFault fault;

  WorkerModel();
  ~WorkerModel();
};

caf::actor spawn_worker(caf::actor_system& system, std::shared_ptr<WorkerModel> model);

}  // namespace taihu::compute
