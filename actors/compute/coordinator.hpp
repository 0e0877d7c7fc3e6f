#pragma once
// taihu's one training loop: an event-based coordinator actor drives any
// number of replicas (1 ... N; nets or dynamic models; on the CPU or a device
// model; in this process or on taihu-node processes) over the worker protocol
// (worker_actor.hpp). Per iteration it sends Iterate to every worker and
// continues when every IterationDone is in (fan_in.hpp); between them it keeps
// the epochs (core/train/epoch_cursor.hpp), progress, metrics and epoch logs
// (core/train/run_log.hpp), checkpoints (checkpointing.hpp), the NaN stop
// (core/train/loss_check.hpp), the status endpoint (core/train/run_status.hpp)
// and, with elastic nodes, the regroup (elastic.hpp). Each lives once.
//
// Per fusion bucket, N shard actors run the bucket's allreduce, purely by
// messages, as soon as backward has produced it (actors/sync/); one replica
// alone exchanges nothing. The config is run_plan.hpp's.
//
// Threads (2-core machine): workers are detached actors, each with its own
// thread, because a forward/backward cannot yield; the coordinator and the
// shard actors run on CAF's scheduler. The rule: at most compute_slots
// workers compute at the same time, and compute_slots x BLAS threads <=
// cores. The app sets BLAS threads to max(1, cores / workers) unless [blas]
// threads says otherwise, so by default workers x BLAS threads never exceeds
// the cores; with more workers than cores the slots serialise the extra
// workers instead of oversubscribing.
//
// Report: the single replica's keys (core/train/train_report.hpp,
// graph_report.hpp); with N > 1 also `workers`, `buckets` (elements,
// algorithm, predicted seconds), `exposed_comm_seconds` (per worker, summed
// over the iterations: backward ended -> last bucket reduced, including
// waiting for slower peers), `comm_hidden_fraction` (of all buckets'
// collective wall time, the share that passed before the sending worker's
// backward ended), `bytes_sent_per_iteration` (payload the shards sent, all
// ranks, measured), `dense_bytes_per_iteration` (dense ring allreduce of
// the same buckets), and medians over the iterations of `iteration_seconds`
// (Iterate sent -> every IterationDone in), `compute_seconds` (the slowest
// worker's forward + backward) and `update_seconds` (its solver step).
//
// Failures: a worker that throws, stalls past step_timeout or sends a
// wrong-sized gradient (its shard actor rejects it), a node that is lost:
// the run stops all actors and train() throws WorkerFailure naming the rank
// and the reason, and the last checkpoint stays intact. Every wait is
// bounded, so a failure never hangs.
//
// Checkpoints: rank 0 writes [output] checkpoint after every epoch and every
// checkpoint_every iterations (all replicas hold the same weights and solver
// state; with compression every rank first writes its compressor state).
// A resumed run restores every replica from it (replicas on nodes get its
// bytes) and continues bit for bit: random layers draw from streams that are
// a function of (seed, rank, iteration).

#include <caf/fwd.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "actors/compute/run_plan.hpp"
#include "actors/compute/worker_actor.hpp"
#include "core/common/error.hpp"
#include "core/common/progress.hpp"
#include "core/train/graph_report.hpp"
#include "core/train/metrics_log.hpp"
#include "core/train/replica.hpp"
#include "core/train/train_report.hpp"

namespace taihu::compute {

class WorkerFailure : public Error {
 public:
  WorkerFailure(int rank, const std::string& what) : Error(what), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

struct TrainingOptions {
  Progress::Mode progress = Progress::Mode::automatic;
  std::filesystem::path resume;  // a checkpoint of the same configuration; empty: from the start
  // Every metrics record as the run makes it: each iteration's (not only
  // every display-th, as the file keeps them) and each epoch's evaluation.
  // Called on the coordinator's thread: it must return quickly.
  MetricObserver observer;
  // Set from any thread (a signal handler too: a lock-free atomic) to stop
  // the run after the iteration in flight: the coordinator writes a
  // checkpoint where the run stands (it resumes from there) and train()
  // returns what was done, TrainingResult::stopped set.
  std::shared_ptr<const std::atomic<bool>> stop;
  // Trains nothing: evaluates the weights of `resume` (or the initial ones)
  // and returns them in TrainingResult::evaluation.
  bool evaluate_only = false;
  WorkerFault fault;  // tests
};

struct TrainingResult {
  std::variant<TrainReport, GraphTrainReport> report;  // a net's, or a dynamic model's
  std::vector<std::vector<float>> final_parameters;     // every rank's parameter values, net order
  bool stopped = false;                                 // by TrainingOptions::stop, before the end
  std::optional<ReplicaEvaluation> evaluation;          // TrainingOptions::evaluate_only
};

// Trains what `plan` describes with actors of `system` (configured as the
// apps configure theirs, apps/actor_system.hpp) and blocks until the run is
// over (train.cpp). Throws
// WorkerFailure, NumericError (NaN or infinite loss), or Error.
TrainingResult train(caf::actor_system& system, RunPlan plan, const TrainingOptions& options = {});

}  // namespace taihu::compute
