#include "core/train/net_replica.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>

#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/common/random.hpp"
#include "core/data/batch_source.hpp"
#include "core/layers/convolution.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"

namespace taihu {

namespace {
double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// What computes the net on the CPU: the fused runs, and each convolution's
// kernels per pass, counted ("12 x forward oneDNN jit:avx512_core, ...").
void log_cpu_kernels(const Net& net) {
  if (!net.fused_runs().empty())
    spdlog::info("net '{}': layers computed in fused runs (core/net/fusion.hpp): {}", net.name(),
                 describe_fused_runs(net.fused_runs()));
  std::map<std::string, int> kernels;
  for (size_t i = 0; i < net.num_layers(); ++i) {
    const auto* conv = dynamic_cast<const ConvolutionLayer*>(&net.layer(i));
    if (!conv) continue;
    using Pass = DnnlConvolution::Pass;
    ++kernels["forward " + conv->pass_kernel(Pass::forward)];
    ++kernels["data gradient " + conv->pass_kernel(Pass::data_gradient)];
    ++kernels["weight gradient " + conv->pass_kernel(Pass::weight_gradient)];
  }
  std::string text;
  for (const auto& [kernel, count] : kernels) text += fmt::format("{}{} x {}", text.empty() ? "" : ", ", count, kernel);
  if (!text.empty()) spdlog::info("net '{}': convolutions by {}", net.name(), text);
}
}  // namespace

NetReplica::NetReplica(const config::Document& doc, const TrainSettings& settings, const ReplicaData& data,
                       int rank, int ranks, const ReplicaServices& services)
    : rank_(rank), settings_(settings) {
  const int64_t global_batch = settings.batch_size * ranks;
  // Before the net: its blobs hold a batch each, and a batch the data cannot
  // fill must not cost their memory (and minutes) first. (Compared per rank:
  // a made-up batch_size x ranks may overflow.)
  require<ConfigError>(data.train->size() / ranks >= settings.batch_size,
                       "{}: the training set has {} samples, fewer than workers x batch_size = {}",
                       doc.root().where().str(), data.train->size(), global_batch);
  // Seeds differ per rank (dropout); weights come from rank 0's broadcast.
  net_ = build_net(doc, settings, settings.batch_size, settings.seed + static_cast<uint64_t>(rank));
  // device = sw26010: every replica is a simulated chip of its own.
  const config::Section& root = doc.root();
  device_ = root.get_choice("device", {"cpu", "sw26010"}, "cpu");
  if (device_ != "cpu") {
    if (!services.devices) throw root.error("device", "this program runs nets on the cpu only");
    executor_ = services.devices(device_, *net_, doc);
    net_->set_executor(executor_.get());
  }
  if (rank == 0) check_sample_shape(doc, *net_, *data.train, settings);
  if (rank == 0 && !executor_) log_cpu_kernels(*net_);
  BatchOptions train_options;
  train_options.batch_size = global_batch;
  train_options.seed = settings.seed;
  train_options.shuffle = data.config.shuffle;
  train_options.augment = true;
  train_options.drop_last = true;
  train_options.prefetch = data.config.prefetch;
  train_options.decoders = data.config.decoders;
  train_options.shard_count = ranks;
  train_options.shard_index = rank;
  auto feed = [&](std::shared_ptr<const Dataset> dataset, const BatchOptions& options) -> std::unique_ptr<BatchFeed> {
    if (services.feeds) return services.feeds(std::move(dataset), options);
    return std::make_unique<BatchSource>(std::move(dataset), options);
  };
  train_ = feed(data.train, train_options);
  if (rank == 0) {
    BatchOptions test_options = train_options;
    test_options.batch_size = settings.test_batch_size;
    test_options.shuffle = false;
    test_options.augment = false;
    test_options.drop_last = false;
    test_options.shard_count = 1;
    test_options.shard_index = 0;
    test_ = feed(data.test, test_options);
  }
  solver_ = Solver::create(doc.section("solver"), net_->learnable_params(),
                           settings.epochs * train_->batches_per_epoch());
}

NetReplica::~NetReplica() = default;

const std::string& NetReplica::name() const { return net_->name(); }

int64_t NetReplica::learnable_parameters() const { return net_->num_learnable_parameters(); }

std::vector<Param*> NetReplica::params() { return net_->params(); }

int64_t NetReplica::iteration() const { return solver_->iteration(); }

float NetReplica::learning_rate() const { return solver_->learning_rate(); }

int64_t NetReplica::batches_per_epoch() const { return train_->batches_per_epoch(); }

void NetReplica::seek(int64_t epoch, int64_t batch) { train_->seek(epoch, batch); }

async::Task<ReplicaStep> NetReplica::compute(uint64_t iteration, StageDone stage_done) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Net& net = *net_;
  Tensor& data = net.blob(settings_.data_blob).data();
  Tensor& labels = net.blob(settings_.label_blob).data();
  const double waited_before = train_->wait_seconds();
  if (!co_await train_->next_async(data, labels)) {
    // End of an epoch: the source answers false once, then starts the next.
    const bool started = co_await train_->next_async(data, labels);
    require(started, "rank {}: no training batch for step {}", rank_, iteration);
  }
  ReplicaStep step;
  step.samples = static_cast<uint64_t>(data.shape()[0]);
  step.data_wait_seconds = train_->wait_seconds() - waited_before;
  // Random layers (dropout) draw from streams that are a pure function of
  // (seed, rank, iteration, layer), so resuming any replica needs no saved
  // generator state and every rank draws differently.
  const uint64_t step_seed = derive_seed(settings_.seed, fmt::format("rank {} step {}", rank_, iteration));
  for (std::size_t i = 0; i < net.num_layers(); ++i) net.layer(i).seed(step_seed);
  net.zero_param_diffs();
  if (executor_) executor_->begin_iteration(static_cast<int64_t>(step.samples));
  float loss = 0.0f;
  for (std::size_t i = 0; i < net.num_layers(); ++i) loss += co_await net.forward_layer(i);
  step.loss = loss;
  const auto forward_end = Clock::now();
  net.begin_backward();
  for (std::size_t i = net.num_layers(); i-- > 0;) {
    co_await net.backward_layer(i);
    stage_done(i, seconds_between(start, Clock::now()));
  }
  if (executor_) executor_->end_iteration();
  step.forward_seconds = seconds_between(start, forward_end);
  step.backward_seconds = seconds_between(forward_end, Clock::now());
  co_return step;
}

void NetReplica::update() { solver_->step(); }

ReplicaEvaluation NetReplica::evaluate() {
  require(test_ != nullptr, "rank {} has no test data", rank_);
  const Evaluation e = taihu::evaluate(*net_, *test_, settings_, settings_.batch_size);
  ReplicaEvaluation out;
  out.test.loss = e.loss;
  out.test.accuracy = e.accuracy;
  return out;
}

void NetReplica::decide_kernels() {
  if (executor_) return;  // a simulated device computes with its own kernels
  for (size_t i = 0; i < net_->num_layers(); ++i)
    if (auto* conv = dynamic_cast<ConvolutionLayer*>(&net_->layer(i))) conv->decide_kernels();
}

Checkpoint NetReplica::checkpoint(const TrainPosition& position) {
  return capture_checkpoint(*net_, *solver_, settings_.seed, position);
}

TrainPosition NetReplica::restore(const Checkpoint& checkpoint, bool rngs) {
  return restore_checkpoint(checkpoint, *net_, *solver_, settings_.seed, rngs);
}

ReplicaFigures NetReplica::figures() const {
  ReplicaFigures f;
  f.data_skipped = train_->dataset().skipped() + (test_ ? test_->dataset().skipped() : 0);
  f.data_left_out = train_->dataset().left_out() + (test_ ? test_->dataset().left_out() : 0);
  if (executor_) {
    f.device = executor_->report();
    f.device.device = device_;
    return f;
  }
  f.fused_runs = describe_fused_runs(net_->fused_runs());
  using Pass = DnnlConvolution::Pass;
  for (size_t i = 0; i < net_->num_layers(); ++i)
    if (const auto* conv = dynamic_cast<const ConvolutionLayer*>(&net_->layer(i)))
      f.convolutions.push_back(LayerKernels{conv->name(), conv->pass_kernel(Pass::forward),
                                            conv->pass_kernel(Pass::data_gradient),
                                            conv->pass_kernel(Pass::weight_gradient)});
  return f;
}

}  // namespace taihu
