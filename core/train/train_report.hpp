#pragma once
// What a training run reports: per epoch, and in the end (report keys:
// README "Using taihu-train"); the JSON `taihu-train --report` writes.

#include <cstdint>
#include <string>
#include <vector>

#include "core/net/layer_executor.hpp"

namespace taihu {

struct EpochResult {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0.0;
  double test_loss = 0.0;
  double test_accuracy = 0.0;  // fraction in [0, 1]
  double seconds = 0.0;        // training time of this epoch
  double images_per_second = 0.0;
};

// One fusion bucket of a data-parallel run: its size and collective.
struct BucketReport {
  int64_t elements = 0;
  std::string algorithm;
  double predicted_seconds = 0.0;  // cost model's allreduce time
  // Medians over the iterations of the slowest worker's figures: seconds from
  // the start of forward to when backward handed the bucket over (taihu-sim's
  // buckets) and to when its shard had the sum; the CPU seconds of the work
  // on the gradient before the collective (RedSync's compressor step), after
  // it (adding the messages up) and of unpacking the sum into the gradients:
  // taihu-sim's compress_seconds, decompress_seconds and unpack_seconds.
  double ready_seconds = 0.0;
  double done_seconds = 0.0;
  double compress_seconds = 0.0;
  double decompress_seconds = 0.0;
  double unpack_seconds = 0.0;
};

// {"elements": …, "algorithm": …, "predicted_seconds": …, "ready_seconds": …, "done_seconds": …,
//  "compress_seconds": …, "decompress_seconds": …, "unpack_seconds": …}
std::string bucket_json(const BucketReport& bucket);

// How the training data were read: the source, the feed, the time workers
// waited for batches (per worker, summed over the run), the samples skipped
// as unreadable (image files and records) and what listing left out.
struct DataReport {
  std::string source;
  int decoders = 0;
  int prefetch = 0;
  double wait_seconds = 0.0;
  int64_t skipped = 0;
  int64_t left_out = 0;  // while listing: files that are not images, empty class folders, bad list lines
};

struct TrainReport {
  std::string net;
  int64_t parameters = 0;
  int64_t epochs = 0;
  int64_t iterations = 0;  // planned; a stopped run's: as far as it came
  bool stopped = false;     // before the end, on request (SIGINT, SIGTERM, taihu.Trainer.stop)
  int64_t batch_size = 0;
  double train_loss = 0.0;
  double test_loss = 0.0;
  double test_accuracy = 0.0;
  double images_per_second = 0.0;  // training images over training time
  double seconds = 0.0;
  std::string blas_kernel;
  // CPU nets: the fused layer runs and each convolution's kernels per pass
  // (rank 0's replica; ReplicaFigures).
  std::string fused_runs;
  std::vector<LayerKernels> convolutions;
  DataReport data;
  std::vector<EpochResult> history;
  int64_t workers = 1;
  std::vector<BucketReport> buckets;  // data-parallel runs only
  // Data-parallel runs: time a worker waited for reductions after its
  // backward ended, and the share of communication hidden behind backward.
  double exposed_comm_seconds = 0.0;
  double comm_hidden_fraction = 0.0;  // of the buckets' collective time
  // Payload bytes all ranks' shards sent per iteration (measured; packed
  // messages when compressed), and what dense ring allreduce would send.
  double bytes_sent_per_iteration = 0.0;
  double dense_bytes_per_iteration = 0.0;
  // Medians over the iterations: the wall time of one (the coordinator's
  // Iterate sent -> every IterationDone in), the slowest worker's forward +
  // backward (batch waits included) and its solver step. What an iteration
  // costs besides synchronisation, measured in the run itself (e.g. as
  // taihu-sim's compute_seconds).
  double iteration_seconds = 0.0;
  double compute_seconds = 0.0;
  double update_seconds = 0.0;
  // Per iteration, averaged over the workers: seconds a worker's step was
  // suspended awaiting actors (a compute slot, its batch, a device's core
  // groups, the graph runtime) with its thread free, and the reduced buckets
  // it took meanwhile.
  double step_await_seconds = 0.0;
  double reduced_during_step = 0.0;
  // device != "cpu": the device model's simulated time (per layer, per
  // iteration) of rank 0's chip. With several replicas, every chip is
  // simulated: each one's iteration time, and the allreduce of the gradient
  // between them on the simulated network ([network], simulator/network.hpp),
  // summed over the buckets and not overlapped with compute.
  std::string device = "cpu";
  DeviceReport device_report;
  std::vector<double> chip_iteration_seconds;  // by rank
  double simulated_allreduce_seconds = 0.0;    // per iteration
  // Of a simulated iteration: the slowest chip's compute, then the allreduce.
  double simulated_allreduce_share() const;
  double simulated_system_images_per_second() const;

  std::string to_json() const;
  // to_json's parts, each as it stands in the object (its members with their
  // leading line breaks and trailing commas), or nothing where it has none:
  std::string kernels_json() const;         // "fused_runs" and "convolutions"
  std::string communication_json() const;  // "buckets" and the data-parallel figures
  std::string device_json() const;          // the simulated device's figures and layers
  std::string history_json() const;         // the epochs, one object per line
};

// The per-layer table of a device report, for logs.
std::string device_report_table(const DeviceReport& report, int64_t batch);

}  // namespace taihu
