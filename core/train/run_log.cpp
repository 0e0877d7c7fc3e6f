#include "core/train/run_log.hpp"

#include <spdlog/spdlog.h>

#include "core/train/graph_report.hpp"

namespace taihu {

RunLog::RunLog(const std::filesystem::path& metrics, int64_t epochs, Model model, MetricObserver observer)
    : epochs_(epochs), model_(std::move(model)) {
  if (!metrics.empty()) metrics_ = MetricsLog(metrics);
  metrics_.set_observer(std::move(observer));
}

void RunLog::iteration(int64_t epoch, int64_t iteration, double loss, double learning_rate,
                       double samples_per_second, bool display_due, const MetricRecord& extra) {
  MetricRecord record{{"type", std::string("train")},
                            {"epoch", epoch},
                            {"iteration", iteration},
                            {"loss", loss},
                            {"lr", learning_rate},
                            {model_.dynamic ? "samples_per_second" : "images_per_second", samples_per_second}};
  record.insert(record.end(), extra.begin(), extra.end());
  if (display_due)
    metrics_.write(record);
  else
    metrics_.observe(record);
}

void RunLog::epoch(const EpochRecord& e, int64_t iteration) {
  if (model_.dynamic) {
    const GraphEpochResult g{e.epoch,   e.train_loss, e.evaluation.dev, e.evaluation.test, e.seconds,
                             e.samples_per_second(), e.vertices_per_second()};
    log_graph_epoch(g, epochs_, model_.has_dev, model_.language_model, model_.sample_unit.c_str(), iteration,
                    metrics_);
    return;
  }
  spdlog::info("epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%", e.epoch, epochs_,
               e.train_loss, e.evaluation.test.loss, 100.0 * e.evaluation.test.accuracy);
  metrics_.write({{"type", std::string("test")},
                  {"epoch", e.epoch},
                  {"iteration", iteration},
                  {"loss", e.evaluation.test.loss},
                  {"accuracy", e.evaluation.test.accuracy},
                  {"train_loss", e.train_loss},
                  {"images_per_second", e.samples_per_second()}});
}

}  // namespace taihu
