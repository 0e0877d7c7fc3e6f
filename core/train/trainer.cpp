#include "core/train/trainer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/data/batch_source.hpp"
#include "core/data/dataset.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"

namespace taihu {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string TrainReport::to_json() const {
  std::string epochs_json;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& e = history[i];
    epochs_json += (i ? ",\n    " : "") +
                   taihu::to_json({{"epoch", e.epoch},
                                   {"train_loss", e.train_loss},
                                   {"test_loss", e.test_loss},
                                   {"test_accuracy", e.test_accuracy},
                                   {"seconds", e.seconds},
                                   {"images_per_second", e.images_per_second}});
  }
  std::string buckets_json;
  if (!buckets.empty()) {
    buckets_json = "\n  \"buckets\": [";
    for (size_t i = 0; i < buckets.size(); ++i) {
      buckets_json += (i ? ",\n    " : "\n    ") +
                      taihu::to_json({{"elements", buckets[i].elements},
                                      {"algorithm", buckets[i].algorithm},
                                      {"predicted_seconds", buckets[i].predicted_seconds}});
    }
    buckets_json += fmt::format(
        "\n  ],\n  \"exposed_comm_seconds\": {:.6g},\n  \"comm_hidden_fraction\": {:.4f},\n"
        "  \"bytes_sent_per_iteration\": {:.9g},\n  \"dense_bytes_per_iteration\": {:.9g},",
        exposed_comm_seconds, comm_hidden_fraction, bytes_sent_per_iteration, dense_bytes_per_iteration);
  }
  std::string device_json;
  if (device != "cpu") {
    const DeviceReport& d = device_report;
    std::string layers_json;
    for (size_t i = 0; i < d.layers.size(); ++i) {
      const auto& l = d.layers[i];
      layers_json += (i ? ",\n    " : "\n    ") +
                     taihu::to_json({{"name", l.name},
                                     {"type", l.type},
                                     {"method", l.method},
                                     {"simulated", std::string(l.simulated ? "true" : "false")},
                                     {"forward_seconds", l.forward_seconds},
                                     {"backward_seconds", l.backward_seconds()},
                                     {"data_gradient_seconds", l.data_gradient_seconds},
                                     {"weight_gradient_seconds", l.weight_gradient_seconds}});
    }
    // "simulated" is a JSON boolean, not a string
    for (const char* b : {"true", "false"}) {
      const std::string quoted = fmt::format("\"simulated\": \"{}\"", b), plain = fmt::format("\"simulated\": {}", b);
      for (size_t at = layers_json.find(quoted); at != std::string::npos; at = layers_json.find(quoted, at))
        layers_json.replace(at, quoted.size(), plain);
    }
    device_json = fmt::format(
        "\n  \"device\": {},\n  \"simulated_iterations\": {},\n  \"simulated_iteration_seconds\": {:.6g},"
        "\n  \"simulated_images_per_second\": {:.6g},\n  \"host_seconds_per_simulated_iteration\": {:.6g},"
        "\n  \"host_cpu_seconds_per_simulated_iteration\": {:.6g},\n  \"layers\": [{}\n  ],",
        json_quote(device), d.iterations, d.simulated_iteration_seconds(), d.simulated_images_per_second(),
        d.iterations ? d.host_seconds / double(d.iterations) : 0.0,
        d.iterations ? d.host_cpu_seconds / double(d.iterations) : 0.0, layers_json);
  }
  return fmt::format(
      "{{\n  \"net\": {},\n  \"parameters\": {},\n  \"epochs\": {},\n  \"iterations\": {},\n"
      "  \"batch_size\": {},\n  \"train_loss\": {:.9g},\n  \"test_loss\": {:.9g},\n"
      "  \"test_accuracy\": {:.9g},\n  \"images_per_second\": {:.6g},\n  \"seconds\": {:.6g},\n"
      "  \"blas_kernel\": {},\n  \"workers\": {},{}{}\n  \"history\": [\n    {}\n  ]\n}}\n",
      json_quote(net), parameters, epochs, iterations, batch_size, train_loss, test_loss, test_accuracy,
      images_per_second, seconds, json_quote(blas_kernel), workers, buckets_json, device_json, epochs_json);
}

std::string device_report_table(const DeviceReport& r, int64_t batch) {
  std::string out = fmt::format("{}: simulated time per iteration (batch {}), ms\n  {:<24} {:<16} {:<10} {:>10} {:>10} {:>10}\n",
                                r.device, batch, "layer", "type", "method", "forward", "data grad", "weight grad");
  double forward = 0, backward = 0;
  for (const auto& l : r.layers) {
    if (!l.simulated) {
      out += fmt::format("  {:<24} {:<16} {:<10} {:>10} {:>10} {:>10}\n", l.name, l.type, l.method, "host", "-", "-");
      continue;
    }
    out += fmt::format("  {:<24} {:<16} {:<10} {:>10.3f} {:>10.3f} {:>10.3f}\n", l.name, l.type, l.method,
                       1e3 * l.forward_seconds, 1e3 * l.data_gradient_seconds, 1e3 * l.weight_gradient_seconds);
    forward += l.forward_seconds;
    backward += l.backward_seconds();
  }
  out += fmt::format(
      "  simulated: forward {:.1f} ms, backward {:.1f} ms, iteration {:.1f} ms, {:.1f} images/s; host {:.1f} s "
      "({:.1f} s of CPU) per simulated iteration",
      1e3 * forward, 1e3 * backward, 1e3 * r.simulated_iteration_seconds(), r.simulated_images_per_second(),
      r.iterations ? r.host_seconds / double(r.iterations) : 0.0,
      r.iterations ? r.host_cpu_seconds / double(r.iterations) : 0.0);
  return out;
}

Trainer::Trainer(config::Document doc, Progress::Mode progress, const LayerExecutorFactory& devices)
    : doc_(std::move(doc)), progress_mode_(progress) {
  const config::Section& root = doc_.root();
  const TrainSettings settings = TrainSettings::read(root);
  if (settings.workers != 1)
    throw root.error("workers", "the single-replica Trainer runs 1 worker; more need the actor runtime");
  epochs_ = settings.epochs;
  batch_size_ = settings.batch_size;
  test_batch_size_ = settings.test_batch_size;
  seed_ = settings.seed;
  display_ = settings.display;
  data_blob_ = settings.data_blob;
  label_blob_ = settings.label_blob;
  loss_blob_ = settings.loss_blob;
  accuracy_blob_ = settings.accuracy_blob;
  settings_ = settings;

  net_ = build_net(doc_, settings, batch_size_, seed_);
  max_iterations_ = root.get_or<int64_t>("iterations", 0);
  if (max_iterations_ < 0) throw root.error("iterations", "must be >= 0 (0: run every epoch)");
  device_ = root.get_choice("device", {"cpu", "sw26010"}, "cpu");
  if (device_ != "cpu") {
    if (!devices) throw root.error("device", "this program runs nets on the cpu only");
    executor_ = devices(device_, *net_, doc_);
    net_->set_executor(executor_.get());
  }

  // Data.
  const config::Section& data = doc_.section("data");
  const DataConfig data_config = DataConfig::read(doc_, data);
  train_set_ = make_dataset(data_config, Split::train);
  test_set_ = make_dataset(data_config, Split::test);
  check_sample_shape(doc_, *net_, *train_set_, settings);
  BatchOptions train_options;
  train_options.batch_size = batch_size_;
  train_options.seed = seed_;
  train_options.shuffle = data_config.shuffle;
  train_options.drop_last = true;
  train_options.prefetch = data_config.prefetch;
  train_source_ = std::make_unique<BatchSource>(train_set_, train_options);
  BatchOptions test_options = train_options;
  test_options.batch_size = test_batch_size_;
  test_options.shuffle = false;
  test_options.drop_last = false;
  test_source_ = std::make_unique<BatchSource>(test_set_, test_options);
  require<ConfigError>(train_source_->batches_per_epoch() > 0,
                       "{}: the training set has {} samples, fewer than batch_size = {}",
                       root.where().str(), train_set_->size(), batch_size_);

  // Solver; schedules that need the run length get it from the epochs.
  solver_ = Solver::create(doc_.section("solver"), net_->learnable_params(),
                           epochs_ * train_source_->batches_per_epoch());

  // Output.
  const config::Section& output = doc_.section("output");
  const std::filesystem::path dir = output.get_or<std::string>("dir", "out");
  const std::string metrics = output.get_or<std::string>("metrics", "metrics.jsonl");
  if (!metrics.empty()) metrics_ = MetricsLog(dir / metrics);
  const std::string checkpoint = output.get_or<std::string>("checkpoint", "checkpoint.ckpt");
  if (!checkpoint.empty()) checkpoint_path_ = dir / checkpoint;
  checkpoint_every_ = output.get_or<int64_t>("checkpoint_every", 0);
  keep_all_checkpoints_ = output.get_or<bool>("keep_all", false);

  doc_.section("blas").mark_all_used();  // read by the app before the trainer exists
  // Data-parallel settings mean nothing to one replica.
  doc_.section("sync").mark_all_used();
  doc_.section("topology").mark_all_used();
  doc_.reject_unused();
  spdlog::info("net '{}': {} layers, {} learnable parameters; {} training and {} test samples",
               net_->name(), net_->num_layers(), net_->num_learnable_parameters(), train_set_->size(),
               test_set_->size());
}

Trainer::~Trainer() = default;

bool Trainer::iteration_limit_reached() const {
  return max_iterations_ > 0 && solver_->iteration() >= max_iterations_;
}

Checkpoint Trainer::make_checkpoint() const {
  return capture_checkpoint(*net_, *solver_, seed_, TrainPosition{epoch_, batch_, elapsed_, epoch_loss_sum_});
}

void Trainer::restore(const Checkpoint& c) {
  const TrainPosition position = restore_checkpoint(c, *net_, *solver_, seed_, true);
  epoch_ = position.epoch;
  batch_ = position.batch;
  elapsed_ = position.elapsed_seconds;
  epoch_loss_sum_ = position.epoch_loss_sum;
}

void Trainer::resume(const std::filesystem::path& checkpoint) {
  restore(load_checkpoint(checkpoint));
  spdlog::info("resumed from '{}': epoch {} batch {} (iteration {})", checkpoint.string(), epoch_ + 1,
               batch_, solver_->iteration());
}

void Trainer::write_checkpoint(double unaccounted_seconds) {
  if (checkpoint_path_.empty()) return;
  Checkpoint c = make_checkpoint();
  c.elapsed_seconds += unaccounted_seconds;
  save_checkpoint_files(c, checkpoint_path_, keep_all_checkpoints_);
}

void Trainer::evaluate(EpochResult& result) {
  const Evaluation e = taihu::evaluate(*net_, *test_source_, settings_, batch_size_);
  result.test_loss = e.loss;
  result.test_accuracy = e.accuracy;
}

TrainReport Trainer::run() {
  TrainReport report;
  report.net = net_->name();
  report.parameters = net_->num_learnable_parameters();
  report.batch_size = batch_size_;
  report.blas_kernel = blas::kernel_name();
  const int64_t per_epoch = train_source_->batches_per_epoch();
  Tensor& data = net_->blob(data_blob_).data();
  Tensor& labels = net_->blob(label_blob_).data();
  double train_seconds = 0.0;
  int64_t trained_batches = 0;

  net_->set_phase(Phase::train);
  net_->set_batch(batch_size_);
  while (epoch_ < epochs_ && !iteration_limit_reached()) {
    EpochResult result;
    result.epoch = epoch_ + 1;
    train_source_->seek(epoch_, batch_);
    Progress progress(fmt::format("epoch {}/{}", epoch_ + 1, epochs_), per_epoch, batch_size_, progress_mode_,
                      display_);
    const auto start = std::chrono::steady_clock::now();
    const int64_t first_batch = batch_;
    while (batch_ < per_epoch && !iteration_limit_reached() && train_source_->next(data, labels)) {
      net_->zero_param_diffs();
      if (executor_) executor_->begin_iteration(batch_size_);
      const float loss = net_->forward_backward();
      if (executor_) executor_->end_iteration();
      if (!std::isfinite(loss)) {
        progress.finish("stopped");
        throw NumericError(fmt::format(
            "loss became {} at iteration {} (epoch {}, batch {}); training stopped. {}Lower "
            "solver.base_lr or set solver.clip_gradients.",
            std::isnan(loss) ? "NaN" : "infinite", solver_->iteration() + 1, epoch_ + 1, batch_ + 1,
            checkpoint_path_.empty() || !std::filesystem::exists(checkpoint_path_)
                ? std::string()
                : fmt::format("The last good checkpoint '{}' is intact. ", checkpoint_path_.string())));
      }
      const float lr = solver_->learning_rate();
      solver_->step();
      epoch_loss_sum_ += loss;
      ++batch_;
      progress.update(batch_, fmt::format("loss {:.4f}", epoch_loss_sum_ / static_cast<double>(batch_)));
      if (display_ > 0 && solver_->iteration() % display_ == 0)
        metrics_.write({{"type", std::string("train")},
                        {"epoch", epoch_ + 1},
                        {"iteration", solver_->iteration()},
                        {"loss", static_cast<double>(loss)},
                        {"lr", static_cast<double>(lr)},
                        {"images_per_second", progress.items_per_second()}});
      if (checkpoint_every_ > 0 && solver_->iteration() % checkpoint_every_ == 0 && batch_ < per_epoch) {
        write_checkpoint(seconds_since(start));
      }
    }
    result.seconds = seconds_since(start);
    result.train_loss = epoch_loss_sum_ / static_cast<double>(std::max<int64_t>(batch_, 1));
    result.images_per_second =
        static_cast<double>((batch_ - first_batch) * batch_size_) / std::max(result.seconds, 1e-9);
    train_seconds += result.seconds;
    trained_batches += batch_ - first_batch;
    progress.finish(fmt::format("train loss {:.4f}", result.train_loss));
    evaluate(result);
    spdlog::info("epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%", result.epoch,
                 epochs_, result.train_loss, result.test_loss, 100.0 * result.test_accuracy);
    metrics_.write({{"type", std::string("test")},
                    {"epoch", result.epoch},
                    {"iteration", solver_->iteration()},
                    {"loss", result.test_loss},
                    {"accuracy", result.test_accuracy},
                    {"train_loss", result.train_loss},
                    {"images_per_second", result.images_per_second}});
    history_.push_back(result);
    elapsed_ += result.seconds;
    if (batch_ < per_epoch && iteration_limit_reached()) {  // stopped by `iterations`: the checkpoint resumes mid-epoch
      write_checkpoint(0.0);
      break;
    }
    ++epoch_;
    batch_ = 0;
    epoch_loss_sum_ = 0.0;
    write_checkpoint(0.0);
  }

  report.epochs = epochs_;
  report.iterations = solver_->iteration();
  report.history = history_;
  if (!history_.empty()) {
    report.train_loss = history_.back().train_loss;
    report.test_loss = history_.back().test_loss;
    report.test_accuracy = history_.back().test_accuracy;
  }
  report.seconds = train_seconds;
  if (executor_) {
    report.device = device_;
    report.device_report = executor_->report();
    spdlog::info("{}", device_report_table(report.device_report, batch_size_));
  }
  report.images_per_second =
      train_seconds > 0 ? static_cast<double>(trained_batches * batch_size_) / train_seconds : 0.0;
  return report;
}

}  // namespace taihu
