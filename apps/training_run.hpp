#pragma once
// The training run behind both front ends, taihu-train and the Python
// module's taihu.train (python/): the config's compute threads, the
// process's one actor system, the run plan and the coordinator's loop
// (actors/compute/coordinator.hpp). Logs the result and returns it.

#include <filesystem>
#include <optional>
#include <string>

#include "actors/compute/cluster.hpp"
#include "actors/compute/coordinator.hpp"
#include "core/common/progress.hpp"
#include "core/config/config.hpp"

namespace taihu::app {

struct TrainingRunOptions {
  Progress::Mode progress = Progress::Mode::automatic;
  std::filesystem::path resume;  // a checkpoint of the same configuration; empty: from the start
  // A cluster launcher's rank 0 runs node 0 beside its coordinator (apps/launched_cluster.hpp).
  std::optional<compute::NodeOptions> own_node;
  // compute::TrainingOptions': the records as they are made, the stop
  // request, evaluation alone.
  MetricObserver observer;
  std::shared_ptr<const std::atomic<bool>> stop;
  bool evaluate_only = false;
  // A dynamic model's graphs, [data] source = memory (taihu.GraphData).
  std::shared_ptr<const GraphDataset> graphs;
};

// Trains what `doc` describes (BLAS already set up: setup_blas). Throws as
// compute::train does.
compute::TrainingResult run_training(config::Document doc, const TrainingRunOptions& options);

// The result's report as JSON (what --report writes).
std::string report_json(const compute::TrainingResult& result);
// An evaluation (TrainingRunOptions::evaluate_only) as JSON: "test" and, with
// a dev set, "dev", each with loss and accuracy, and for dynamic models
// root_accuracy and perplexity.
std::string evaluation_json(const compute::TrainingResult& result);

}  // namespace taihu::app
