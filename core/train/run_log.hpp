#pragma once
// What a training run writes as it goes, for any kind of replica and any
// number of them: a metrics record every `display` iterations, and a log line
// and a metrics record per evaluated epoch (the record types: README, Using
// taihu-train). Nets report test loss and accuracy; dynamic models dev and
// test figures (graph_report.hpp).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/train/metrics_log.hpp"
#include "core/train/replica.hpp"

namespace taihu {

// One epoch as the run measured it, before it becomes a report's history.
struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0.0;  // mean of the iterations' losses (each the ranks' mean)
  double seconds = 0.0;     // training time
  uint64_t samples = 0;
  uint64_t vertices = 0;
  ReplicaEvaluation evaluation;

  double samples_per_second() const { return static_cast<double>(samples) / (seconds > 0 ? seconds : 1e-9); }
  double vertices_per_second() const { return static_cast<double>(vertices) / (seconds > 0 ? seconds : 1e-9); }
};

class RunLog {
 public:
  struct Model {
    bool dynamic = false;         // a dynamic model: dev and test figures
    bool language_model = false;  // perplexity rather than accuracy
    bool has_dev = false;
    std::string sample_unit = "images";
  };

  // `metrics`: the metrics file (.jsonl or .csv), empty for none;
  // `observer`: receives every record, the file's and every iteration's.
  RunLog(const std::filesystem::path& metrics, int64_t epochs, Model model, MetricObserver observer = {});

  // After iteration `iteration` (1-based count of iterations done); the
  // file keeps it when `display_due`, the observer always. `extra`: more
  // figures of the iteration, appended to its record.
  void iteration(int64_t epoch, int64_t iteration, double loss, double learning_rate, double samples_per_second,
                 bool display_due, const MetricRecord& extra = {});
  // An evaluated epoch; `iteration`: iterations done by its end.
  void epoch(const EpochRecord& e, int64_t iteration);

 private:
  MetricsLog metrics_;
  int64_t epochs_;
  Model model_;
};

}  // namespace taihu
