#include "apps/training_run.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <variant>

#include "actors/compute/replica_services.hpp"
#include "actors/compute/run_plan.hpp"
#include "apps/actor_system.hpp"
#include "apps/version.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/kernels/compute_threads.hpp"

namespace taihu::app {
namespace {

// Which epoch the reported test figures come from.
std::string selected_epoch(const GraphTrainReport& report) {
  return report.has_dev ? fmt::format("best dev epoch {}", report.best_epoch)
                        : fmt::format("epoch {}, no dev set", report.best_epoch);
}

// A stopped run: how far it came, and its last evaluated epoch's figures if any.
template <class Report>
bool log_stopped(const Report& report) {
  if (!report.stopped) return false;
  if (report.history.empty())
    spdlog::info("stopped at iteration {}, before the first epoch ended", report.iterations);
  else
    spdlog::info("stopped at iteration {}; the figures of epoch {} follow", report.iterations,
                 report.history.back().epoch);
  return report.history.empty();
}

void log_report(const GraphTrainReport& report) {
  if (log_stopped(report)) return;
  if (report.language_model)
    spdlog::info("finished: test perplexity {:.2f} ({}), {:.0f} tokens/s", report.test.perplexity,
                 selected_epoch(report), report.vertices_per_second);
  else
    spdlog::info("finished: test root accuracy {:.2f}% ({}), {:.0f} {}/s", 100.0 * report.test.root_accuracy,
                 selected_epoch(report), report.samples_per_second, report.data == "dag" ? "graphs" : "trees");
}

void log_report(const TrainReport& report) {
  if (log_stopped(report)) return;
  spdlog::info("finished: test accuracy {:.2f}%, train loss {:.4f}, {:.0f} images/s", 100.0 * report.test_accuracy,
               report.train_loss, report.images_per_second);
  if (report.device != "cpu") {
    spdlog::info("{}", device_report_table(report.device_report, report.batch_size / report.workers));
    const auto& d = report.device_report;
    spdlog::info("{}: {:.1f} simulated images/s ({:.1f} ms per simulated iteration, {:.1f} s of host time each)",
                 report.device, d.simulated_images_per_second(), 1e3 * d.simulated_iteration_seconds(),
                 d.iterations ? d.host_seconds / d.iterations : 0.0);
    if (d.simulated_iteration_high > 0)
      spdlog::info("{}: {:.1f}-{:.1f} ms per simulated iteration across the model's lock-step parameter ranges",
                   report.device, 1e3 * d.simulated_iteration_low, 1e3 * d.simulated_iteration_high);
    if (!report.chip_iteration_seconds.empty())
      spdlog::info("{} chips: {:.1f} ms compute (slowest chip) + {:.1f} ms allreduce per iteration ({:.1f}% "
                   "allreduce), {:.1f} simulated images/s in all",
                   report.chip_iteration_seconds.size(),
                   1e3 * *std::max_element(report.chip_iteration_seconds.begin(), report.chip_iteration_seconds.end()),
                   1e3 * report.simulated_allreduce_seconds, 100.0 * report.simulated_allreduce_share(),
                   report.simulated_system_images_per_second());
  }
}

void log_evaluation(const ReplicaEvaluation& e) {
  spdlog::info("evaluated: test loss {:.4f}, accuracy {:.2f}%{}", e.test.loss, 100.0 * e.test.accuracy,
               e.has_dev ? fmt::format("; dev loss {:.4f}, accuracy {:.2f}%", e.dev.loss, 100.0 * e.dev.accuracy) : "");
}

// Compute threads per replica unless [blas] threads says: replicas share the
// cores; a dynamic model's vertex executors take the cores (one BLAS thread
// each, as its GEMMs are small: a round of vertices); a device model's core
// groups run concurrently (one each). Never more threads than cores.
void default_threads(const config::Document& doc) {
  if (doc.section("blas").get_or<int>("threads", 0) != 0) return;
  const int cores = blas::available_cores();
  const auto workers = std::max<int64_t>(1, doc.root().get_or<int64_t>("workers", 0));
  const auto nodes = doc.root().get_or<int64_t>("nodes", 0);
  if (workers > 1 || nodes > 0)
    set_compute_threads(std::max(1, cores / static_cast<int>(workers)));
  else if (doc.find("model") != nullptr)
    set_compute_threads(std::max(1, cores / std::max(1, doc.root().get_or<int>("executors", cores))));
  else if (doc.root().get_or<std::string>("device", "cpu") != "cpu")
    set_compute_threads(1);
}

}  // namespace

compute::TrainingResult run_training(config::Document doc, const TrainingRunOptions& options) {
  default_threads(doc);
  // The process's one actor system: every actor of the run lives in it.
  caf::actor_system_config cfg;
  configure_actor_system(cfg, actor_system_settings(doc));
  caf::actor_system system{cfg};
  const int local_replicas = doc.root().get_or<int>("nodes", 0) > 0 ? 1 : doc.root().get_or<int>("workers", 1);
  compute::RunPlan plan = compute::RunPlan::read(std::move(doc), compute::replica_services(system, local_replicas), {}, options.graphs);
  plan.cluster.build = build_id();
  plan.cluster.own_node = options.own_node;
  compute::TrainingOptions training;
  training.progress = options.progress;
  training.resume = options.resume;
  training.observer = options.observer;
  training.stop = options.stop;
  training.evaluate_only = options.evaluate_only;
  compute::TrainingResult result = compute::train(system, std::move(plan), training);
  if (options.evaluate_only)
    log_evaluation(*result.evaluation);
  else
    std::visit([](const auto& report) { log_report(report); }, result.report);
  return result;
}

std::string evaluation_json(const compute::TrainingResult& result) {
  const ReplicaEvaluation& evaluation = *result.evaluation;
  const bool dynamic = std::holds_alternative<GraphTrainReport>(result.report);
  const auto scores = [dynamic](const Scores& s) {
    return fmt::format("{{\"loss\": {:.9g}, \"accuracy\": {:.9g}{}}}", s.loss, s.accuracy,
                       dynamic ? fmt::format(", \"root_accuracy\": {:.9g}, \"perplexity\": {:.9g}", s.root_accuracy,
                                             s.perplexity)
                               : "");
  };
  return fmt::format("{{\n  \"test\": {}{}\n}}\n", scores(evaluation.test),
                     evaluation.has_dev ? ",\n  \"dev\": " + scores(evaluation.dev) : "");
}

std::string report_json(const compute::TrainingResult& result) {
  return std::visit([](const auto& report) { return report.to_json(); }, result.report);
}

}  // namespace taihu::app
