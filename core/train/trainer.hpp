#pragma once
// Single-replica training: a net, a solver and a train/test data pair, driven
// epoch by epoch from an application config document:
//
//   net = nets/lenet.ini      # the net description, relative to this file
//   epochs = 3
//   batch_size = 64
//   test_batch_size = 1000
//   seed = 1
//   display = 100             # iterations between plain progress lines
//   iterations = 0            # stop after N training iterations in all (0: run the epochs)
//   device = cpu              # or sw26010: layers run on a device model (needs the
//                             # app's LayerExecutorFactory; simulated time in the report)
//   [data]    ... see core/data/dataset.hpp
//   [solver]  ... see core/solver/solver.hpp
//   [output]
//   dir = out/lenet-fashion   # metrics and checkpoints go here
//   metrics = metrics.jsonl   # or .csv; empty disables
//   checkpoint = lenet.ckpt   # written after every epoch (and every checkpoint_every iterations)
//   checkpoint_every = 0      # also every N iterations
//   keep_all = false          # also keep a copy per checkpoint: lenet-iter1000.ckpt
//
// Numbers that matter to users (loss, accuracy, rate) are reported per epoch
// and in the final TrainReport.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/net/layer_executor.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/metrics_log.hpp"
#include "core/train/progress.hpp"
#include "core/train/train_setup.hpp"

namespace taihu {

class Net;
class Solver;
class Dataset;
class BatchSource;

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
};

struct TrainReport {
  std::string net;
  int64_t parameters = 0;
  int64_t epochs = 0;
  int64_t iterations = 0;
  int64_t batch_size = 0;
  double train_loss = 0.0;
  double test_loss = 0.0;
  double test_accuracy = 0.0;
  double images_per_second = 0.0;  // training images over training time
  double seconds = 0.0;
  std::string blas_kernel;
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
  // device != "cpu": the device model's simulated time (per layer, per iteration).
  std::string device = "cpu";
  DeviceReport device_report;

  std::string to_json() const;
};

// Makes the executor for a `device` other than cpu (the app supplies it: device
// models live outside core); null or an empty function: only cpu is available.
using LayerExecutorFactory =
    std::function<std::unique_ptr<LayerExecutor>(const std::string& device, Net& net, const config::Document& doc)>;

// The per-layer table of a device report, for logs.
std::string device_report_table(const DeviceReport& report, int64_t batch);

class Trainer {
 public:
  // Reads the whole config; unknown keys are errors. `doc` must outlive the trainer.
  explicit Trainer(config::Document doc, Progress::Mode progress = Progress::Mode::automatic,
                   const LayerExecutorFactory& devices = {});
  ~Trainer();

  // Continues from a checkpoint written by an identical configuration.
  void resume(const std::filesystem::path& checkpoint);
  // Trains the remaining epochs; throws NumericError on NaN/Inf loss.
  TrainReport run();

  Net& net() { return *net_; }
  Checkpoint make_checkpoint() const;
  void restore(const Checkpoint& checkpoint);
  std::filesystem::path checkpoint_path() const { return checkpoint_path_; }

 private:
  void evaluate(EpochResult& result);
  bool iteration_limit_reached() const;
  // `unaccounted_seconds`: training time of the current epoch so far.
  void write_checkpoint(double unaccounted_seconds);

  config::Document doc_;
  TrainSettings settings_;
  Progress::Mode progress_mode_;
  std::unique_ptr<Net> net_;
  std::string device_ = "cpu";
  std::unique_ptr<LayerExecutor> executor_;  // after net_: destroyed first
  int64_t max_iterations_ = 0;  // 0: no limit
  std::unique_ptr<Solver> solver_;
  std::shared_ptr<const Dataset> train_set_;
  std::shared_ptr<const Dataset> test_set_;
  std::unique_ptr<BatchSource> train_source_;
  std::unique_ptr<BatchSource> test_source_;
  MetricsLog metrics_;

  int64_t epochs_ = 1;
  int64_t batch_size_ = 64;
  int64_t test_batch_size_ = 1000;
  uint64_t seed_ = 1;
  int64_t display_ = 100;
  int64_t checkpoint_every_ = 0;
  bool keep_all_checkpoints_ = false;
  std::string data_blob_;
  std::string label_blob_;
  std::string loss_blob_;
  std::string accuracy_blob_;
  std::filesystem::path checkpoint_path_;

  // Position, restored from checkpoints.
  int64_t epoch_ = 0;  // completed epochs
  int64_t batch_ = 0;  // batches done in the current epoch
  double epoch_loss_sum_ = 0.0;
  double elapsed_ = 0.0;
  std::vector<EpochResult> history_;
};

}  // namespace taihu
