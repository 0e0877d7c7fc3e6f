#include "core/train/graph_report.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace taihu {

namespace {

std::string evaluation_json(const GraphEvaluation& e) {
  return to_json({{"loss", e.loss}, {"accuracy", e.accuracy}, {"root_accuracy", e.root_accuracy},
                  {"perplexity", e.perplexity}});
}

}  // namespace

std::string GraphTrainReport::to_json() const {
  std::string epochs_json;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& e = history[i];
    epochs_json += fmt::format("{}{{\"epoch\": {}, \"train_loss\": {:.9g}, \"dev\": {}, \"test\": {}, "
                               "\"seconds\": {:.6g}, \"samples_per_second\": {:.6g}, \"vertices_per_second\": {:.6g}}}",
                               i ? ",\n    " : "", e.epoch, e.train_loss, evaluation_json(e.dev),
                               evaluation_json(e.test), e.seconds, e.samples_per_second, e.vertices_per_second);
  }
  // The headline keys name what users compare: accuracy and trees/s for tree
  // models, perplexity and tokens/s for language models.
  auto dev_value = [&](double v) { return has_dev ? fmt::format("{:.9g}", v) : std::string("null"); };
  const std::string headline =
      language_model
          ? fmt::format("  \"test_perplexity\": {:.9g},\n  \"dev_perplexity\": {},\n  \"tokens_per_second\": {:.6g},\n",
                        test.perplexity, dev_value(dev.perplexity), vertices_per_second)
          : fmt::format("  \"test_accuracy\": {:.9g},\n  \"dev_accuracy\": {},\n  \"test_vertex_accuracy\": {:.9g},\n"
                        "  \"trees_per_second\": {:.6g},\n  \"vertices_per_second\": {:.6g},\n",
                        test.root_accuracy, dev_value(dev.root_accuracy), test.accuracy, samples_per_second,
                        vertices_per_second);
  std::string data_parallel;
  if (workers > 1) {
    std::string buckets_json;
    for (const auto& b : buckets)
      buckets_json += (buckets_json.empty() ? "" : ", ") + bucket_json(b);
    data_parallel = fmt::format(
        "  \"workers\": {},\n  \"buckets\": [{}],\n  \"exposed_comm_seconds\": {:.6g},\n"
        "  \"comm_hidden_fraction\": {:.4f},\n  \"bytes_sent_per_iteration\": {:.9g},\n"
        "  \"dense_bytes_per_iteration\": {:.9g},\n  \"iteration_seconds\": {:.6g},\n"
        "  \"compute_seconds\": {:.6g},\n  \"update_seconds\": {:.6g},\n"
        "  \"step_await_seconds\": {:.6g},\n  \"reduced_during_step\": {:.4g},\n",
        workers, buckets_json, exposed_comm_seconds, comm_hidden_fraction, bytes_sent_per_iteration,
        dense_bytes_per_iteration, iteration_seconds, compute_seconds, update_seconds, step_await_seconds,
        reduced_during_step);
  }
  return fmt::format(
      "{{\n  \"model\": {},\n  \"data\": {},\n  \"parameters\": {},\n  \"epochs\": {},\n  \"iterations\": {},\n"
      "  \"stopped\": {},\n"
      "  \"batch_size\": {},\n  \"best_epoch\": {},\n  \"train_loss\": {:.9g},\n  \"test_loss\": {:.9g},\n{}"
      "  \"samples_per_second\": {:.6g},\n  \"seconds\": {:.6g},\n  \"runner\": {},\n{}"
      "  \"time_shares\": {{\"schedule\": {:.4f}, \"forward\": {:.4f}, \"backward\": {:.4f}, \"weight_gradients\": {:.4f}}},\n"
      "  \"gemm_gflops\": {:.4g},\n  \"history\": [\n    {}\n  ]\n}}\n",
      json_quote(model), json_quote(data), parameters, epochs, iterations, stopped, batch_size, best_epoch, train_loss,
      test.loss, headline, samples_per_second, seconds, json_quote(runner), data_parallel, schedule_share, forward_share,
      backward_share, weight_gradient_share, gemm_gflops, epochs_json);
}

void GraphTrainReport::set_history(std::vector<GraphEpochResult> epochs) {
  history = std::move(epochs);
  if (history.empty()) return;
  size_t best = history.size() - 1;
  if (has_dev)
    for (size_t i = 0; i < history.size(); ++i) {
      const auto& e = history[i].dev;
      const auto& b = history[best].dev;
      if (language_model ? e.perplexity < b.perplexity : e.root_accuracy > b.root_accuracy) best = i;
    }
  best_epoch = history[best].epoch;
  dev = history[best].dev;
  test = history[best].test;
  train_loss = history.back().train_loss;
}

void log_graph_epoch(const GraphEpochResult& result, int64_t epochs, bool dev, bool language_model,
                     const char* sample_unit, int64_t iteration, MetricsLog& metrics) {
  if (language_model)
    spdlog::info("epoch {}/{}: train loss {:.4f}, {}test perplexity {:.2f}, {:.0f} tokens/s", result.epoch, epochs,
                 result.train_loss, dev ? fmt::format("dev perplexity {:.2f}, ", result.dev.perplexity) : "",
                 result.test.perplexity, result.vertices_per_second);
  else
    spdlog::info("epoch {}/{}: train loss {:.4f}, root accuracy {}test {:.2f}% (all vertices {:.2f}%), "
                 "{:.0f} {}/s",
                 result.epoch, epochs, result.train_loss,
                 dev ? fmt::format("dev {:.2f}% ", 100.0 * result.dev.root_accuracy) : "",
                 100.0 * result.test.root_accuracy, 100.0 * result.test.accuracy, result.samples_per_second,
                 sample_unit);
  metrics.write({{"type", std::string("eval")},
                 {"epoch", result.epoch},
                 {"iteration", iteration},
                 {"train_loss", result.train_loss},
                 {"dev_loss", result.dev.loss},
                 {"dev_root_accuracy", result.dev.root_accuracy},
                 {"test_loss", result.test.loss},
                 {"test_root_accuracy", result.test.root_accuracy},
                 {"test_accuracy", result.test.accuracy},
                 {"samples_per_second", result.samples_per_second}});
}

}  // namespace taihu
