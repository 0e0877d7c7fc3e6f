#include "core/train/graph_trainer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/blas/blas.hpp"
#include "core/cavs/model_config.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/train/graph_replica.hpp"
#include "core/solver/solver.hpp"
#include "core/train/train_setup.hpp"

namespace taihu {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
      buckets_json += fmt::format("{}{{\"elements\": {}, \"algorithm\": {}, \"predicted_seconds\": {:.6g}}}",
                                  buckets_json.empty() ? "" : ", ", b.elements, json_quote(b.algorithm),
                                  b.predicted_seconds);
    data_parallel = fmt::format(
        "  \"workers\": {},\n  \"buckets\": [{}],\n  \"exposed_comm_seconds\": {:.6g},\n"
        "  \"comm_hidden_fraction\": {:.4f},\n  \"bytes_sent_per_iteration\": {:.9g},\n"
        "  \"dense_bytes_per_iteration\": {:.9g},\n",
        workers, buckets_json, exposed_comm_seconds, comm_hidden_fraction, bytes_sent_per_iteration,
        dense_bytes_per_iteration);
  }
  return fmt::format(
      "{{\n  \"model\": {},\n  \"data\": {},\n  \"parameters\": {},\n  \"epochs\": {},\n  \"iterations\": {},\n"
      "  \"batch_size\": {},\n  \"best_epoch\": {},\n  \"train_loss\": {:.9g},\n  \"test_loss\": {:.9g},\n{}"
      "  \"samples_per_second\": {:.6g},\n  \"seconds\": {:.6g},\n  \"runner\": {},\n{}"
      "  \"time_shares\": {{\"schedule\": {:.4f}, \"forward\": {:.4f}, \"backward\": {:.4f}, \"weight_gradients\": {:.4f}}},\n"
      "  \"gemm_gflops\": {:.4g},\n  \"history\": [\n    {}\n  ]\n}}\n",
      json_quote(model), json_quote(data), parameters, epochs, iterations, batch_size, best_epoch, train_loss,
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

GraphTrainer::GraphTrainer(config::Document doc, Progress::Mode progress, RunnerFactory runner)
    : doc_(std::move(doc)), progress_mode_(progress) {
  const config::Section& root = doc_.root();
  const TrainSettings settings = read_replica_settings(doc_);
  if (settings.workers > 1 || root.get_or<int64_t>("nodes", 0) > 0)
    throw root.error(settings.workers > 1 ? "workers" : "nodes",
                     "this trainer runs one replica; data-parallel replicas and remote nodes train through "
                     "compute::DataParallelTrainer (taihu-train chooses it)");
  epochs_ = settings.epochs;
  batch_size_ = settings.batch_size;
  test_batch_size_ = settings.test_batch_size;
  seed_ = settings.seed;
  display_ = settings.display;

  cavs::check_model_type(doc_.section("model"));
  data_ = load_graph_dataset(doc_, doc_.section("data"), seed_);
  const std::string loss =
      root.get_choice("loss", {"per_sample", "per_vertex"}, data_.language_model ? "per_vertex" : "per_sample");
  per_vertex_loss_ = loss == "per_vertex";

  const config::Section& model = doc_.section("model");
  model_type_ = model.get_or<std::string>("type", "");
  model_ = std::make_unique<cavs::VertexFunction>(cavs::build_model(model, data_, seed_));
  const int64_t per_epoch = (static_cast<int64_t>(data_.train.size()) + batch_size_ - 1) / batch_size_;
  solver_ = Solver::create(doc_.section("solver"), model_->param_pointers(), epochs_ * per_epoch);
  if (runner) {
    runner_ = runner(*model_, doc_);
    runner_name_ = "actors";
  } else {
    runner_ = std::make_unique<cavs::InlineRunner>(*model_);
    runner_name_ = "inline";
  }

  const config::Section& output = doc_.section("output");
  const std::filesystem::path dir = output.get_or<std::string>("dir", "out");
  const std::string metrics = output.get_or<std::string>("metrics", "metrics.jsonl");
  if (!metrics.empty()) metrics_ = MetricsLog(dir / metrics);
  const std::string checkpoint = output.get_or<std::string>("checkpoint", "checkpoint.ckpt");
  if (!checkpoint.empty()) checkpoint_path_ = dir / checkpoint;
  keep_all_checkpoints_ = output.get_or<bool>("keep_all", false);

  doc_.section("blas").mark_all_used();  // read by the app before the trainer exists
  doc_.reject_unused();
  int64_t parameters = 0;
  for (const auto& p : model_->params()) parameters += p.blob->count();
  spdlog::info("model '{}' on {} data: {} parameters, vocabulary {}, {} classes; {} training graphs ({} vertices), "
               "{} dev, {} test",
               model_type_, data_.source, parameters, data_.vocabulary_size, data_.num_classes, data_.train.size(),
               data_.train_vertices(), data_.dev.size(), data_.test.size());
}

GraphTrainer::~GraphTrainer() = default;

const char* GraphTrainer::sample_unit() const {
  if (data_.language_model) return "sentences";
  return data_.source == "dag" ? "graphs" : "trees";
}

GraphEvaluation GraphTrainer::evaluate(const std::vector<InputGraph>& graphs) {
  return evaluate_graphs(*runner_, graphs, test_batch_size_);
}

Checkpoint GraphTrainer::make_checkpoint() const {
  return capture_checkpoint(model_type_, std::as_const(*model_).param_pointers(), *solver_, seed_,
                            TrainPosition{epoch_, 0, elapsed_, 0.0});
}

void GraphTrainer::write_checkpoint() {
  if (!checkpoint_path_.empty()) save_checkpoint_files(make_checkpoint(), checkpoint_path_, keep_all_checkpoints_);
}

void GraphTrainer::resume(const std::filesystem::path& path) {
  const Checkpoint c = load_checkpoint(path);
  const TrainPosition position = restore_checkpoint(c, model_type_, model_->param_pointers(), *solver_, seed_);
  require(position.batch == 0, "checkpoint '{}' was written in the middle of epoch {}; this trainer resumes from "
          "epoch checkpoints", path.string(), position.epoch + 1);
  epoch_ = position.epoch;
  elapsed_ = position.elapsed_seconds;
  spdlog::info("resumed from '{}' after epoch {} (iteration {})", path.string(), epoch_, c.iteration);
}

GraphTrainReport GraphTrainer::run() {
  enable_flush_to_zero();
  GraphTrainReport report;
  report.model = model_type_;
  report.data = data_.source;
  report.language_model = data_.language_model;
  report.has_dev = !data_.dev.empty();
  for (const auto& p : model_->params()) report.parameters += p.blob->count();
  report.batch_size = batch_size_;
  report.runner = runner_name_;

  const auto n = static_cast<int64_t>(data_.train.size());
  const int64_t per_epoch = (n + batch_size_ - 1) / batch_size_;
  std::vector<InputGraph> batch;
  batch.reserve(static_cast<size_t>(batch_size_));
  double train_seconds = 0.0;
  int64_t trained_samples = 0, trained_vertices = 0;
  runner_->reset_stats();
  model_->zero_diffs();  // from here on the runner zeroes only what each batch touched

  while (epoch_ < epochs_) {
    GraphEpochResult result;
    result.epoch = epoch_ + 1;
    const auto order = graph_epoch_order(n, seed_, epoch_);
    Progress progress(fmt::format("epoch {}/{}", epoch_ + 1, epochs_), per_epoch, batch_size_, progress_mode_,
                      display_, sample_unit());
    cavs::GraphMetrics epoch_metrics;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < per_epoch; ++b) {
      batch.clear();
      for (int64_t i = b * batch_size_; i < std::min(n, (b + 1) * batch_size_); ++i)
        batch.push_back(data_.train[static_cast<size_t>(order[static_cast<size_t>(i)])]);
      const int64_t labelled = cavs::count_labelled(batch);
      const float scale = per_vertex_loss_ ? 1.0f / static_cast<float>(std::max<int64_t>(labelled, 1))
                                           : 1.0f / static_cast<float>(batch.size());
      const cavs::GraphMetrics m = runner_->train(batch, scale);
      if (!std::isfinite(m.loss)) {
        progress.finish("stopped");
        throw NumericError(fmt::format(
            "loss became {} at iteration {} (epoch {}, batch {}); training stopped. {}Lower solver.base_lr or "
            "set solver.clip_gradients.",
            std::isnan(m.loss) ? "NaN" : "infinite", solver_->iteration() + 1, epoch_ + 1, b + 1,
            checkpoint_path_.empty() || !std::filesystem::exists(checkpoint_path_)
                ? std::string()
                : fmt::format("The last good checkpoint '{}' is intact. ", checkpoint_path_.string())));
      }
      const float lr = solver_->learning_rate();
      solver_->step();
      runner_->zero_gradients();
      epoch_metrics.merge(m);
      progress.update(b + 1, fmt::format("loss {:.4f}", epoch_metrics.mean_loss()));
      if (display_ > 0 && solver_->iteration() % display_ == 0)
        metrics_.write({{"type", std::string("train")},
                        {"epoch", epoch_ + 1},
                        {"iteration", solver_->iteration()},
                        {"loss", m.mean_loss()},
                        {"lr", static_cast<double>(lr)},
                        {"samples_per_second", progress.items_per_second()}});
    }
    result.seconds = seconds_since(start);
    result.train_loss = epoch_metrics.mean_loss();
    result.samples_per_second = static_cast<double>(epoch_metrics.samples) / std::max(result.seconds, 1e-9);
    result.vertices_per_second = static_cast<double>(epoch_metrics.vertices) / std::max(result.seconds, 1e-9);
    train_seconds += result.seconds;
    trained_samples += epoch_metrics.samples;
    trained_vertices += epoch_metrics.vertices;
    progress.finish(fmt::format("train loss {:.4f}", result.train_loss));

    if (!data_.dev.empty()) result.dev = evaluate(data_.dev);
    result.test = evaluate(data_.test);
    log_graph_epoch(result, epochs_, !data_.dev.empty(), data_.language_model, sample_unit(), solver_->iteration(), metrics_);
    history_.push_back(result);
    ++epoch_;
    elapsed_ += result.seconds;
    write_checkpoint();
  }

  report.epochs = epochs_;
  report.iterations = solver_->iteration();
  report.set_history(history_);
  report.seconds = train_seconds;
  report.samples_per_second = train_seconds > 0 ? static_cast<double>(trained_samples) / train_seconds : 0.0;
  report.vertices_per_second = train_seconds > 0 ? static_cast<double>(trained_vertices) / train_seconds : 0.0;
  const cavs::ExecutorStats s = runner_->stats();
  const double total = s.schedule_seconds + s.forward_seconds + s.backward_seconds + s.weight_gradient_seconds;
  if (total > 0) {
    report.schedule_share = s.schedule_seconds / total;
    report.forward_share = s.forward_seconds / total;
    report.backward_share = s.backward_seconds / total;
    report.weight_gradient_share = s.weight_gradient_seconds / total;
    report.gemm_gflops = s.gemm_flops / total * 1e-9;
  }
  return report;
}

}  // namespace taihu
