#pragma once
// One data-parallel copy of a model, as a worker actor drives it: the model,
// its solver, and its shard of every global batch. Two kinds share the
// contract: a net (NetReplica, core/train/net_replica.hpp) and a dynamic
// network run over input graphs (GraphReplica, core/train/graph_replica.hpp),
// so the synchronization actors never know which one they move gradients for.
//
// Per iteration the caller
//   1. runs the task compute(iteration, stage_done): forward and backward of this
//      rank's share of global batch `iteration`; stage_done(s, seconds) runs as
//      soon as the gradients of gradient stage s are final, so their allreduce
//      can start while backward goes on (stages finish last to first). `seconds`
//      is the step's time so far on the clock of ReplicaStep's forward_seconds +
//      backward_seconds, so that no stage is done after the step (by
//      construction, not by how quickly the caller reads a clock);
//   2. overwrites every learnable parameter's diff with the averaged gradient;
//   3. calls update(): the solver step, then clears what compute() added.
//
// Plain C++ (no actors).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cavs/batch_runner.hpp"
#include "core/cavs/executor.hpp"
#include "core/common/task.hpp"
#include "core/config/config.hpp"
#include "core/data/batch_feed.hpp"
#include "core/data/dataset.hpp"
#include "core/layers/layer.hpp"
#include "core/net/gradient_stages.hpp"
#include "core/net/layer_executor.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/train_setup.hpp"

namespace taihu {

struct GraphDataset;
class Net;

namespace cavs {
class VertexFunction;
}

struct ReplicaStep {
  float loss = 0.0f;        // mean training loss of this rank's share
  uint64_t samples = 0;     // images, trees, sentences
  uint64_t vertices = 0;    // vertices of the graphs (dynamic models); 0 for nets
  double forward_seconds = 0.0;   // with the wait for the batch
  double backward_seconds = 0.0;
  double data_wait_seconds = 0.0;  // of forward_seconds: waiting for a batch not yet ready
};

// Figures on one evaluation split. Nets fill loss and accuracy; dynamic
// models also the accuracy over labelled roots and the perplexity.
struct Scores {
  double loss = 0.0;           // mean over samples (nets) or labelled vertices
  double accuracy = 0.0;       // fraction in [0, 1]
  double root_accuracy = 0.0;  // over labelled roots
  double perplexity = 0.0;     // exp(loss)
};

struct ReplicaEvaluation {
  bool has_dev = false;
  Scores dev;
  Scores test;
};

// A replica's own figures at the end of a run: a device model's simulated
// time (device.device != "cpu"), or a dynamic model's executor time shares
// and which runner ran it.
struct ReplicaFigures {
  DeviceReport device;
  // CPU nets: the fused layer runs ("16 BatchNorm+Scale+ReLU, ...") and each
  // convolution's kernels.
  std::string fused_runs;
  std::vector<LayerKernels> convolutions;
  cavs::ExecutorStats executor;
  std::string runner;  // dynamic models: "inline" or "actors"
  // Samples of this replica's data sets found unreadable and skipped so far
  // (the data sets are shared by the replicas of one process).
  int64_t data_skipped = 0;
  int64_t data_left_out = 0;  // files and lines left out while listing them
};

class Replica {
 public:
  virtual ~Replica() = default;

  // The net's or the model type's name, for logs and checkpoints.
  virtual const std::string& name() const = 0;
  virtual int64_t learnable_parameters() const = 0;
  // What a sample is called in progress lines: images, trees, sentences.
  virtual const char* sample_unit() const = 0;

  // In forward order; backward finishes them last to first.
  virtual std::vector<GradientStage> gradient_stages() = 0;
  // Every parameter the replicas must agree on (learnable and state, such as
  // batch-norm statistics), in a fixed order: what rank 0 broadcasts.
  virtual std::vector<Param*> params() = 0;

  // Solver steps taken, and the rate of the next one.
  virtual int64_t iteration() const = 0;
  virtual float learning_rate() const = 0;
  virtual int64_t batches_per_epoch() const = 0;
  // Positions the training data at `batch` of `epoch` (both 0-based).
  virtual void seek(int64_t epoch, int64_t batch) = 0;

  // A task (core/common/task.hpp): it suspends where it waits on actors (the
  // next batch, a device model's layer pass, the graph runtime's batch) and
  // goes on where the caller's Resumer resumes it.
  using StageDone = std::function<void(std::size_t stage, double seconds)>;
  virtual async::Task<ReplicaStep> compute(uint64_t iteration, StageDone stage_done) = 0;
  virtual void update() = 0;
  // On the held-out data (rank 0 holds it).
  virtual ReplicaEvaluation evaluate() = 0;

  // Makes every kernel choice its layers would make by timing on their first
  // calls (`[conv] algorithm = measured`) now, before any computes, so that
  // rank 0's choices can go to every replica (core/layers/convolution_choices.hpp).
  virtual void decide_kernels() {}

  virtual Checkpoint checkpoint(const TrainPosition& position) = 0;
  // Restores after checking that the checkpoint fits; with `rngs` also the
  // random generators (one rank's). Returns the checkpoint's position.
  virtual TrainPosition restore(const Checkpoint& checkpoint, bool rngs) = 0;

  // Summed over the iterations so far.
  virtual ReplicaFigures figures() const = 0;
};

// What the layers above core supply to replicas, which cannot spawn actors
// themselves: the executor that runs a net's layers on a device model
// (`device` other than cpu, e.g. the SW26010's core-group actors), the
// runner that gets a dynamic model's mini-batches through F (the graph actor
// runtime), and the feed of a net's mini-batches (batch loader and decoder
// actors). Empty: a net runs on the CPU only, F on the calling thread, and
// batches come from a BatchSource's prefetch thread.
using LayerExecutorFactory =
    std::function<std::unique_ptr<LayerExecutor>(const std::string& device, Net& net, const config::Document& doc)>;
using RunnerFactory =
    std::function<std::unique_ptr<cavs::BatchRunner>(cavs::VertexFunction& f, const config::Document& doc)>;

struct ReplicaServices {
  LayerExecutorFactory devices;
  RunnerFactory runner;
  BatchFeedFactory feeds;
};

// The data every replica of one run reads (shared, read-only): images for a
// net, input graphs for a dynamic model (a config with a [model] section).
struct ReplicaData {
  DataConfig config;
  std::shared_ptr<const Dataset> train, test;
  std::shared_ptr<const GraphDataset> graphs;
  // `memory`: the graphs of [data] source = memory (core/graph/graph_dataset.hpp).
  static ReplicaData read(const config::Document& doc, const TrainSettings& settings,
                          const GraphDataset* memory = nullptr);
};

// Whether a config trains a dynamic network ([model]) rather than a net.
bool is_dynamic_model(const config::Document& doc);

// The root keys of a data-parallel run: TrainSettings with the defaults of the
// single-replica trainer of the same kind.
TrainSettings read_replica_settings(const config::Document& doc);

// Rank `rank` of `ranks`: every rank reads its own share of each global batch
// of ranks x settings.batch_size samples; rank 0 also holds the held-out data.
std::unique_ptr<Replica> build_replica(const config::Document& doc, const TrainSettings& settings,
                                       const ReplicaData& data, int rank, int ranks,
                                       const ReplicaServices& services = {});

}  // namespace taihu
