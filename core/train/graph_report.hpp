#pragma once
// What training a dynamic network reports (core/train/graph_replica.hpp):
// per epoch the dev and test figures; in the end those of the epoch with the
// best dev figure (root accuracy, or perplexity for a language model), the
// usual model selection, with the last epoch's in the history.

#include <cstdint>
#include <string>
#include <vector>

#include "core/train/metrics_log.hpp"
#include "core/train/replica.hpp"
#include "core/train/train_report.hpp"

namespace taihu {

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
  int64_t iterations = 0;  // planned; a stopped run's: as far as it came
  bool stopped = false;     // before the end, on request (SIGINT, SIGTERM, taihu.Trainer.stop)
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

}  // namespace taihu
