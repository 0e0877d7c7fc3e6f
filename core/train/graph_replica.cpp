#include "core/train/graph_replica.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <numeric>

#include "core/cavs/model_config.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/common/random.hpp"
#include "core/common/sync_wait.hpp"
#include "core/graph/graph_dataset.hpp"
#include "core/solver/solver.hpp"

namespace taihu {

std::vector<int64_t> graph_epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(derive_seed(seed, fmt::format("graph-order/{}", epoch)));
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng.below(static_cast<uint64_t>(i) + 1))]);
  return order;
}

Scores evaluate_graphs(cavs::BatchRunner& runner, std::span<const InputGraph> graphs, int64_t batch) {
  cavs::GraphMetrics total;
  for (size_t begin = 0; begin < graphs.size(); begin += static_cast<size_t>(batch)) {
    const size_t end = std::min(graphs.size(), begin + static_cast<size_t>(batch));
    total.merge(async::sync_wait(runner.evaluate(graphs.subspan(begin, end - begin))));
  }
  return Scores{total.mean_loss(), total.accuracy(), total.root_accuracy(), total.perplexity()};
}

GraphReplica::GraphReplica(const config::Document& doc, const TrainSettings& settings, const ReplicaData& data,
                           int rank, int ranks, const RunnerFactory& runner)
    : rank_(rank), ranks_(ranks), settings_(settings), data_(data.graphs) {
  require(data_ != nullptr, "GraphReplica: no graph data set");
  const config::Section& root = doc.root();
  per_vertex_loss_ = root.get_choice("loss", {"per_sample", "per_vertex"},
                                     data_->language_model ? "per_vertex" : "per_sample") == "per_vertex";
  const int64_t global_batch = settings.batch_size * ranks;
  // One replica also trains the tail that does not fill a batch; replicas
  // leave it out, so that every rank has a full share.
  const auto graphs = static_cast<int64_t>(data_->train.size());
  per_epoch_ = ranks == 1 ? (graphs + global_batch - 1) / global_batch : graphs / global_batch;
  require<ConfigError>(per_epoch_ > 0, "{}: the training set has {} graphs, fewer than workers x batch_size = {}",
                       root.where().str(), data_->train.size(), global_batch);
  const config::Section& model = doc.section("model");
  model_type_ = model.get_or<std::string>("type", "");
  // Weights come from rank 0's broadcast; the seed only has to be valid.
  model_ = std::make_unique<cavs::VertexFunction>(cavs::build_model(model, *data_, settings.seed));
  if (runner) runner_ = runner(*model_, doc);
  if (!runner_) runner_ = std::make_unique<cavs::InlineRunner>(*model_);
  runner_name_ = dynamic_cast<const cavs::InlineRunner*>(runner_.get()) != nullptr ? "inline" : "actors";
  solver_ = Solver::create(doc.section("solver"), model_->param_pointers(), settings.epochs * per_epoch_);
  model_->zero_diffs();
  batch_.reserve(static_cast<size_t>(settings.batch_size));
}

GraphReplica::~GraphReplica() = default;

int64_t GraphReplica::learnable_parameters() const {
  int64_t n = 0;
  for (const auto& p : model_->params()) n += p.blob->count();
  return n;
}

int64_t GraphReplica::iteration() const { return solver_->iteration(); }

float GraphReplica::learning_rate() const { return solver_->learning_rate(); }

bool GraphReplica::language_model() const { return data_->language_model; }

const std::string& GraphReplica::data_source() const { return data_->source; }

const char* GraphReplica::sample_unit() const {
  if (data_->language_model) return "sentences";
  return data_->source == "dag" ? "graphs" : "trees";
}

std::vector<GradientStage> GraphReplica::gradient_stages() {
  GradientStage all{model_type_, {}};
  for (Param* p : model_->param_pointers())
    if (p->learnable && p->blob->count() > 0) all.params.push_back(p);
  return {std::move(all)};
}

// The position lives in the iteration number (see compute()); nothing to do.
void GraphReplica::seek(int64_t, int64_t) {}

async::Task<ReplicaStep> GraphReplica::compute(uint64_t iteration, StageDone stage_done) {
  enable_flush_to_zero();  // per thread: the worker's
  const int64_t epoch = static_cast<int64_t>(iteration) / per_epoch_;
  const int64_t b = static_cast<int64_t>(iteration) % per_epoch_;
  if (epoch != order_epoch_) {
    order_ = graph_epoch_order(static_cast<int64_t>(data_->train.size()), settings_.seed, epoch);
    order_epoch_ = epoch;
  }
  const int64_t first = (b * ranks_ + rank_) * settings_.batch_size;
  batch_.clear();
  const int64_t last = std::min<int64_t>(first + settings_.batch_size, static_cast<int64_t>(order_.size()));
  for (int64_t i = first; i < last; ++i)
    batch_.push_back(data_->train[static_cast<size_t>(order_[static_cast<size_t>(i)])]);
  const int64_t labelled = cavs::count_labelled(batch_);
  const float scale = per_vertex_loss_ ? 1.0f / static_cast<float>(std::max<int64_t>(labelled, 1))
                                       : 1.0f / static_cast<float>(batch_.size());
  runner_->reset_stats();
  const cavs::GraphMetrics m = co_await runner_->train(batch_, scale);
  const cavs::ExecutorStats s = runner_->stats();
  trained_ += s;
  ReplicaStep step;
  step.forward_seconds = s.schedule_seconds + s.forward_seconds;
  step.backward_seconds = s.backward_seconds + s.weight_gradient_seconds;
  stage_done(0, step.forward_seconds + step.backward_seconds);  // one stage: the gradient is final at the end
  step.loss = static_cast<float>(m.mean_loss());
  step.samples = static_cast<uint64_t>(m.samples);
  step.vertices = static_cast<uint64_t>(m.vertices);
  co_return step;
}

void GraphReplica::update() {
  // One replica's embedding gradient is in the rows its batch touched; an
  // averaged one may be in any row.
  if (ranks_ > 1)
    solver_->step();
  else
    solver_->step(runner_->sparse_gradients());
  runner_->zero_gradients();
  // The averaged gradient covers every row of an embedding table, not only
  // the rows this rank touched: clear it all. One replica's gradient is its
  // own, where zero_gradients() already cleared the rows it touched.
  if (ranks_ > 1) model_->zero_diffs();
}

ReplicaEvaluation GraphReplica::evaluate() {
  enable_flush_to_zero();
  ReplicaEvaluation e;
  e.has_dev = !data_->dev.empty();
  if (e.has_dev) e.dev = evaluate_graphs(*runner_, data_->dev, settings_.test_batch_size);
  e.test = evaluate_graphs(*runner_, data_->test, settings_.test_batch_size);
  return e;
}

Checkpoint GraphReplica::checkpoint(const TrainPosition& position) {
  return capture_checkpoint(model_type_, std::as_const(*model_).param_pointers(), *solver_, settings_.seed, position);
}

TrainPosition GraphReplica::restore(const Checkpoint& checkpoint, bool) {
  return restore_checkpoint(checkpoint, model_type_, model_->param_pointers(), *solver_, settings_.seed);
}

ReplicaFigures GraphReplica::figures() const {
  ReplicaFigures f;
  f.executor = trained_;
  f.runner = runner_name_;
  return f;
}

}  // namespace taihu
