#pragma once
// Training of a dynamic network — a Cavs vertex function run over one input
// graph per sample — from an application config:
//
//   epochs = 10
//   batch_size = 25           # graphs per mini-batch
//   test_batch_size = 256     # graphs per evaluation batch
//   seed = 1
//   display = 50              # iterations between plain progress lines
//   loss = per_sample         # gradient scale: 1/graphs (per_sample, default for
//                             # trees) or 1/labelled vertices (per_vertex, default
//                             # for language models)
//   [model]   ... see core/cavs/model_config.hpp
//   [data]    ... see core/graph/graph_dataset.hpp
//   [solver]  ... see core/solver/solver.hpp
//   [output]  dir, metrics, checkpoint (after every epoch), keep_all
//
// Every epoch is evaluated on the dev set (when the data set has one) and on
// the test set; the report's test figures are those of the epoch with the best
// dev figure (root accuracy, or perplexity for a language model), the usual
// model selection, and the last epoch's are in the history. The training order
// of an epoch is a permutation seeded by (seed, epoch), so a run resumed from
// an epoch checkpoint continues exactly.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cavs/batch_runner.hpp"
#include "core/cavs/function.hpp"
#include "core/config/config.hpp"
#include "core/graph/graph_dataset.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/metrics_log.hpp"
#include "core/train/progress.hpp"
#include "core/train/replica.hpp"
#include "core/train/trainer.hpp"

namespace taihu {

class Solver;

// Loss and accuracy over labelled vertices, root accuracy, perplexity.
using GraphEvaluation = Scores;

struct GraphEpochResult {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0.0;  // mean over labelled vertices
  GraphEvaluation dev;
  GraphEvaluation test;
  double seconds = 0.0;  // training time of the epoch
  double samples_per_second = 0.0;
  double vertices_per_second = 0.0;
};

struct GraphTrainReport {
  std::string model;
  std::string data;
  bool language_model = false;
  bool has_dev = false;
  int64_t parameters = 0;
  int64_t epochs = 0;
  int64_t iterations = 0;
  int64_t batch_size = 0;
  int64_t best_epoch = 0;      // chosen by dev (the last epoch without a dev set)
  double train_loss = 0.0;
  GraphEvaluation dev;         // of the best epoch
  GraphEvaluation test;        // of the best epoch
  double samples_per_second = 0.0;   // training trees (or sentences/chains) per second
  double vertices_per_second = 0.0;  // training vertices (tokens for chains) per second
  double seconds = 0.0;
  // Shares of the executors' time, summed over the run.
  double schedule_share = 0.0;
  double forward_share = 0.0;
  double backward_share = 0.0;
  double weight_gradient_share = 0.0;
  double gemm_gflops = 0.0;  // GEMM work per second of executor time
  std::string runner;
  std::vector<GraphEpochResult> history;
  // Data-parallel runs (workers = N, actors/compute/coordinator.hpp).
  int64_t workers = 1;
  std::vector<BucketReport> buckets;
  double exposed_comm_seconds = 0.0;
  double comm_hidden_fraction = 0.0;
  // Payload bytes all ranks' shards sent per iteration (packed messages when
  // compressed), and what dense ring allreduce would send.
  double bytes_sent_per_iteration = 0.0;
  double dense_bytes_per_iteration = 0.0;

  // Sets the history and takes the reported figures from the best epoch:
  // highest dev root accuracy, or lowest dev perplexity (the last epoch
  // without a dev set).
  void set_history(std::vector<GraphEpochResult> epochs);

  // JSON with `test_accuracy` (root accuracy, a fraction) and
  // `trees_per_second` for tree models, `test_perplexity` and
  // `tokens_per_second` for language models.
  std::string to_json() const;
};

// Logs an evaluated epoch (`dev`: whether it has dev figures) and writes it
// to the metrics log.
void log_graph_epoch(const GraphEpochResult& result, int64_t epochs, bool dev, bool language_model,
                     const char* sample_unit, int64_t iteration, MetricsLog& metrics);

// Builds the runner that gets mini-batches through F; it may read its own
// keys from the document (before unknown keys are rejected). The default
// runs the executor on the calling thread.
using RunnerFactory =
    std::function<std::unique_ptr<cavs::BatchRunner>(cavs::VertexFunction&, const config::Document&)>;

class GraphTrainer {
 public:
  explicit GraphTrainer(config::Document doc, Progress::Mode progress = Progress::Mode::automatic,
                        RunnerFactory runner = {});
  ~GraphTrainer();

  // Continues from an epoch checkpoint of the same configuration.
  void resume(const std::filesystem::path& checkpoint);
  // Trains the remaining epochs; throws NumericError on a NaN/Inf loss.
  GraphTrainReport run();

  cavs::VertexFunction& model() { return *model_; }
  const GraphDataset& data() const { return data_; }
  GraphEvaluation evaluate(const std::vector<InputGraph>& graphs);

 private:
  Checkpoint make_checkpoint() const;
  // What a sample is called in progress lines: trees, sentences, graphs.
  const char* sample_unit() const;
  void write_checkpoint();

  config::Document doc_;
  Progress::Mode progress_mode_;
  GraphDataset data_;
  std::unique_ptr<cavs::VertexFunction> model_;
  std::unique_ptr<cavs::BatchRunner> runner_;
  std::unique_ptr<Solver> solver_;
  MetricsLog metrics_;
  std::string model_type_;
  std::string runner_name_;

  int64_t epochs_ = 1;
  int64_t batch_size_ = 25;
  int64_t test_batch_size_ = 256;
  uint64_t seed_ = 1;
  int64_t display_ = 50;
  bool per_vertex_loss_ = false;
  std::filesystem::path checkpoint_path_;
  bool keep_all_checkpoints_ = false;

  int64_t epoch_ = 0;  // completed epochs
  double elapsed_ = 0.0;
  std::vector<GraphEpochResult> history_;
};

}  // namespace taihu
