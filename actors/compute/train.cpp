// train(), the caller's side of the coordinator (coordinator.hpp): it reads
// the checkpoint a run resumes from, spawns the coordinator, waits for its
// outcome and makes the report of it.

#include <caf/actor_system.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <memory>

#include "actors/compute/coordinator.hpp"
#include "actors/compute/coordinator_state.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/train/checkpoint.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

namespace {

TrainReport net_report(const RunPlan& plan, const Outcome& o) {
  TrainReport report;
  const RunRecord& record = o.record;
  report.net = plan.model_name;
  report.parameters = plan.parameters;
  report.batch_size = plan.global_batch();
  report.blas_kernel = blas::kernel_name();
  report.epochs = plan.settings.epochs;
  for (const EpochRecord& e : record.epochs)
    report.history.push_back(EpochResult{e.epoch, e.train_loss, e.evaluation.test.loss, e.evaluation.test.accuracy,
                                         e.seconds, e.samples_per_second()});
  if (!report.history.empty()) {
    report.train_loss = report.history.back().train_loss;
    report.test_loss = report.history.back().test_loss;
    report.test_accuracy = report.history.back().test_accuracy;
  }
  report.seconds = record.seconds;
  report.images_per_second = record.seconds > 0 ? static_cast<double>(record.samples) / record.seconds : 0.0;
  report.data.source = plan.data.config.source;
  report.data.decoders = plan.data.config.decoders;
  report.data.prefetch = plan.data.config.prefetch;
  report.data.wait_seconds = record.data_wait_seconds;
  // Replicas of one process share their data sets (and count): the largest count.
  for (const auto& f : o.figures) {
    report.data.skipped = std::max(report.data.skipped, f.data_skipped);
    report.data.left_out = std::max(report.data.left_out, f.data_left_out);
  }
  if (plan.device == "cpu" && !o.figures.empty()) {
    report.fused_runs = o.figures.front().fused_runs;
    report.convolutions = o.figures.front().convolutions;
  }
  if (plan.device != "cpu" && !o.figures.empty()) {
    report.device = plan.device;
    report.device_report = o.figures.front().device;
    if (plan.ranks > 1) {
      for (const auto& f : o.figures) report.chip_iteration_seconds.push_back(f.device.simulated_iteration_seconds());
      report.simulated_allreduce_seconds = plan.simulated_allreduce_seconds;
    }
  }
  return report;
}

GraphTrainReport graph_report(const RunPlan& plan, const Outcome& o) {
  GraphTrainReport report;
  const RunRecord& record = o.record;
  report.model = plan.model_name;
  report.data = plan.graphs->source;
  report.language_model = plan.graphs->language_model;
  report.has_dev = plan.graphs->has_dev;
  report.parameters = plan.parameters;
  report.epochs = plan.settings.epochs;
  report.batch_size = plan.global_batch();
  std::vector<GraphEpochResult> history;
  for (const EpochRecord& e : record.epochs)
    history.push_back(GraphEpochResult{e.epoch, e.train_loss, e.evaluation.dev, e.evaluation.test, e.seconds,
                                       e.samples_per_second(), e.vertices_per_second()});
  report.set_history(std::move(history));
  report.seconds = record.seconds;
  report.samples_per_second = record.seconds > 0 ? static_cast<double>(record.samples) / record.seconds : 0.0;
  report.vertices_per_second = record.seconds > 0 ? static_cast<double>(record.vertices) / record.seconds : 0.0;
  if (!o.figures.empty()) {
    cavs::ExecutorStats total;
    for (const auto& f : o.figures) total += f.executor;
    report.runner = plan.ranks > 1 ? "data-parallel, " + o.figures.front().runner : o.figures.front().runner;
    const double t = total.schedule_seconds + total.forward_seconds + total.backward_seconds +
                     total.weight_gradient_seconds;
    if (t > 0) {
      report.schedule_share = total.schedule_seconds / t;
      report.forward_share = total.forward_seconds / t;
      report.backward_share = total.backward_seconds / t;
      report.weight_gradient_share = total.weight_gradient_seconds / t;
      report.gemm_gflops = total.gemm_flops / t * 1e-9;
    }
  }
  return report;
}

template <class Report>
void add_data_parallel_figures(const RunPlan& plan, const RunRecord& record, Report& report) {
  report.workers = plan.ranks;
  report.buckets = plan.bucket_reports;
  report.exposed_comm_seconds = record.exposed_comm_seconds;
  report.comm_hidden_fraction = record.comm_seconds > 0 ? record.hidden_comm_seconds / record.comm_seconds : 0.0;
  report.bytes_sent_per_iteration =
      record.iterations > 0 ? record.bytes_sent / static_cast<double>(record.iterations) : 0.0;
  report.dense_bytes_per_iteration = plan.dense_bytes;
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  report.iteration_seconds = median(record.iteration_walls);
  report.compute_seconds = median(record.computes);
  report.update_seconds = median(record.updates);
  const double iterations = std::max<double>(1.0, static_cast<double>(record.iterations));
  report.step_await_seconds = record.await_seconds / iterations;
  report.reduced_during_step = record.reduced_during_step / iterations;
  for (std::size_t b = 0; b < report.buckets.size() && b < record.buckets.size(); ++b) {
    const auto& iterations = record.buckets[b];
    auto figure = [&](double msg::BucketTiming::*field) {
      std::vector<double> v;
      for (const auto& t : iterations) v.push_back(t.*field);
      return median(std::move(v));
    };
    BucketReport& bucket = report.buckets[b];
    bucket.ready_seconds = figure(&msg::BucketTiming::ready);
    bucket.done_seconds = figure(&msg::BucketTiming::done);
    bucket.compress_seconds = figure(&msg::BucketTiming::compress_cpu);
    bucket.decompress_seconds = figure(&msg::BucketTiming::decompress_cpu);
    bucket.unpack_seconds = figure(&msg::BucketTiming::unpack_cpu);
  }
}

}  // namespace

TrainingResult train(caf::actor_system& system, RunPlan plan, const TrainingOptions& options) {
  auto shared = std::make_shared<RunPlan>(std::move(plan));
  // A resumed run: every replica loads the checkpoint (its bytes, so that
  // replicas on nodes need not see this file) and its compressor state.
  TrainPosition start;
  std::optional<CoordinatorState::PendingRestore> restore;
  if (!options.resume.empty()) {
    const Checkpoint c = load_checkpoint(options.resume);
    const std::string source = fmt::format("'{}'", options.resume.string());
    start = TrainPosition{c.epoch, c.batch, c.elapsed_seconds, c.epoch_loss_sum};
    // Evaluation takes the weights alone; training continues from the position.
    if (!options.evaluate_only) {
      if (EpochCursor(shared->settings.epochs, shared->per_epoch, shared->max_iterations, 0, start).finished())
        raise<ConfigError>("the run in {} is already complete ({} of {} epochs, iteration {}); raise `epochs` (or "
                           "`iterations`) to train further",
                           source, c.epoch, shared->settings.epochs, c.iteration);
      check_position(c, source, shared->settings.epochs, shared->per_epoch);
    }
    CoordinatorState::PendingRestore r;
    r.checkpoint.bytes = encode_checkpoint(c);
    r.checkpoint.source = source;
    if (shared->compressed())
      for (int rank = 0; rank < shared->ranks; ++rank)
        r.compressors.push_back(msg::CompressorRestore{options.resume.string(),
                                                       c.epoch * shared->per_epoch + c.batch, shared->ranks,
                                                       {rank}, 1.0f});
    restore = std::move(r);
    spdlog::info("{} '{}': epoch {} batch {} (iteration {})", options.evaluate_only ? "evaluating" : "resumed from",
                 options.resume.string(), c.epoch + 1, c.batch, c.iteration);
  }
  auto outcome = std::make_shared<std::promise<Outcome>>();
  auto future = outcome->get_future();
  system.spawn(coordinator, shared, options, outcome, start, std::move(restore));
  Outcome o = future.get();
  if (o.error) std::rethrow_exception(o.error);
  const RunPlan& p = *shared;
  TrainingResult result;
  result.final_parameters = std::move(o.final_parameters);
  result.stopped = o.record.stopped;
  result.evaluation = o.record.evaluation;
  // Planned, or as far as a stopped run came.
  const int64_t iterations = o.record.stopped ? static_cast<int64_t>(o.record.stopped_at) : p.settings.epochs * p.per_epoch;
  if (p.graphs) {
    GraphTrainReport report = graph_report(p, o);
    report.iterations = p.max_iterations > 0 ? std::min(iterations, p.max_iterations) : iterations;
    report.stopped = o.record.stopped;
    add_data_parallel_figures(p, o.record, report);
    result.report = std::move(report);
  } else {
    TrainReport report = net_report(p, o);
    report.iterations = p.max_iterations > 0 ? std::min(iterations, p.max_iterations) : iterations;
    report.stopped = o.record.stopped;
    add_data_parallel_figures(p, o.record, report);
    result.report = std::move(report);
  }
  return result;
}

}  // namespace taihu::compute
