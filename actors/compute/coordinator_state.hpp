#pragma once
// The coordinator actor's state, shared by the files that make up its
// behaviour (coordinator.hpp): the loop (coordinator_actor.cpp), the nodes'
// gathering (node_gathering_actor.cpp), the checkpoint protocol
// (checkpointing_actor.cpp), the elastic regroup (elastic_actor.cpp) and
// train(), which spawns it and makes the report (train.cpp). Internal to
// actors/compute.

#include <caf/stateful_actor.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/compute/cluster_members.hpp"
#include "actors/compute/coordinator.hpp"
#include "actors/compute/fan_in.hpp"
#include "actors/compute/members.hpp"
#include "actors/compute/run_plan.hpp"
#include "core/common/progress.hpp"
#include "core/train/epoch_cursor.hpp"
#include "core/train/loss_check.hpp"
#include "core/train/run_log.hpp"
#include "core/train/run_series.hpp"
#include "core/train/run_status.hpp"
#include "transport/status_server.hpp"

namespace taihu::compute {

using Clock = std::chrono::steady_clock;

// What a run measured, before it becomes a report.
struct RunRecord {
  std::vector<EpochRecord> epochs;
  double seconds = 0.0;  // training time, all epochs
  uint64_t samples = 0;
  uint64_t vertices = 0;
  double exposed_comm_seconds = 0.0;
  double data_wait_seconds = 0.0;  // per worker, averaged over the ranks
  double await_seconds = 0.0;       // likewise: steps suspended (IterationStats)
  double reduced_during_step = 0.0;  // likewise
  double comm_seconds = 0.0;
  double hidden_comm_seconds = 0.0;
  double bytes_sent = 0.0;  // payload all ranks' shards sent
  // Per iteration: Iterate sent -> the last IterationDone in (wall), and the
  // slowest worker's forward + backward and solver step.
  std::vector<double> iteration_walls, computes, updates;
  // Per bucket, per iteration: the slowest worker's figures (each figure the
  // largest of any worker's).
  std::vector<std::vector<msg::BucketTiming>> buckets;
  uint64_t iterations = 0;  // trained in this run
  bool stopped = false;     // by TrainingOptions::stop,
  uint64_t stopped_at = 0;  // at this iteration (counted from the run's start, resumed parts too)
  std::optional<ReplicaEvaluation> evaluation;  // TrainingOptions::evaluate_only
};

// What train() waits for.
struct Outcome {
  RunRecord record;
  std::vector<std::vector<float>> final_parameters;
  std::vector<ReplicaFigures> figures;  // by rank
  std::exception_ptr error;
};

struct CoordinatorState {
  static inline const char* name = "taihu.coordinator";

  std::shared_ptr<RunPlan> plan;
  TrainingOptions options;
  std::shared_ptr<std::promise<Outcome>> outcome;
  bool over = false;  // the outcome is delivered

  Members members;  // the current generation
  std::optional<ClusterMembers> cluster;  // the nodes: for an in-process run, its own

  // Where the run stands.
  EpochCursor cursor;
  double elapsed = 0.0;   // training seconds before this epoch (from checkpoints too)
  double loss_sum = 0.0;  // this epoch's iterations' losses
  EpochRecord epoch;      // being trained
  Clock::time_point epoch_start;
  Clock::time_point iteration_start;  // the Iterate in flight was sent
  std::optional<Progress> progress;
  RunRecord record;
  // The loss between checkpoints, and the checkpoints written (which were sane).
  LossWatch loss_watch;
  CheckpointHistory checkpoints;

  // What the next generation's replicas load before they train: a resumed
  // run's checkpoint (its bytes: a node need not see the coordinator's
  // files), or after an elastic regroup the cluster's shared checkpoint file
  // at a mapped position; with compression, each rank's compressor states.
  struct PendingRestore {
    msg::RestoreCheckpoint checkpoint;
    std::vector<msg::CompressorRestore> compressors;  // by rank; none: no compression
  };
  std::optional<PendingRestore> restore;
  // The checkpoint on disk: the global batch, ranks' nodes and epoch length
  // it was written with (an elastic regroup maps its position to the next).
  int64_t checkpoint_global_batch = 0;
  int64_t checkpoint_per_epoch = 0;
  std::vector<int> checkpoint_rank_node;

  std::optional<RunLog> log;
  std::shared_ptr<RunStatus> status;
  std::shared_ptr<RunSeries> series;  // the dashboard's curves
  std::unique_ptr<transport::StatusServer> status_server;
  std::shared_ptr<FanIn<msg::IterationDone>> iteration;  // the one in flight
};

using Coordinator = coordinator_actor::stateful_base<CoordinatorState>;

// A request to every worker of the current generation; answers from an
// earlier generation (an elastic cluster re-formed meanwhile) are dropped.
template <class Result, class Message>
void ask_workers(Coordinator* self, const Message& message, std::function<void(std::vector<Result>&)> on_all,
                 const char* what);
// The same to one worker.
template <class Result, class Message>
void ask_worker(Coordinator* self, int rank, const Message& message, std::function<void(Result&)> on_answer,
                const char* what);

// Ends the run with `outcome`: stops every member (nodes hear how the run
// ended) and hands the outcome to train().
void deliver(Coordinator* self, Outcome outcome);
// Stops the run: a WorkerFailure for `rank` (-1: none in particular) with
// `why`, unless an elastic cluster re-forms instead (elastic_actor.cpp).
void fail(Coordinator* self, int rank, const std::string& why, int lost_node = -1);
// Ends the run with an error other than a worker's (NumericError, Error).
void abort_with(Coordinator* self, std::exception_ptr error);
// Trains from the cursor on.
void next(Coordinator* self);
// The current generation is wired up: restore, broadcast, train.
void begin_generation(Coordinator* self, Members members);

// coordinator_actor.cpp: the behaviour train() spawns (train.cpp); trains
// `plan` from `start`, loading `restore` first, and sets `outcome` at the end.
coordinator_actor::behavior_type coordinator(Coordinator* self, std::shared_ptr<RunPlan> plan,
                                             TrainingOptions options, std::shared_ptr<std::promise<Outcome>> outcome,
                                             TrainPosition start,
                                             std::optional<CoordinatorState::PendingRestore> restore);

// node_gathering_actor.cpp: opens the control port and waits for the nodes
// (join_timeout; a stop request is looked at by tick_atom meanwhile);
// node_joined forms generation 1 once all have joined. An in-process run
// spawns its one node instead, which joins at once.
void gather_nodes(Coordinator* self);
void host_in_process(Coordinator* self);
void node_joined(Coordinator* self, const msg::NodeJoined& j);
void join_deadline_passed(Coordinator* self);
void watch_stop_while_gathering(Coordinator* self);
// A node reported a failure (of its generation: an earlier one's is dropped).
void on_node_failure(Coordinator* self, const msg::NodeFailure& f);

// checkpointing_actor.cpp: writes the checkpoint at `position` (every rank's
// compressor state first, then rank 0's model), then `then`.
void save_checkpoint(Coordinator* self, const TrainPosition& position, std::function<void()> then);
// Loads state.restore (if any) into every replica, then `then`.
void restore_generation(Coordinator* self, std::function<void()> then);

// elastic_actor.cpp: drops `lost_node` (if any), re-forms the cluster over
// the live nodes and continues from the last checkpoint.
void regroup(Coordinator* self, const std::string& why, int lost_node);

}  // namespace taihu::compute

#include "actors/compute/coordinator_requests.hpp"
