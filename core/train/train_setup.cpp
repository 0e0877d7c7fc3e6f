#include "core/train/train_setup.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/common/check.hpp"
#include "core/common/excerpt.hpp"
#include "core/data/batch_feed.hpp"
#include "core/data/dataset.hpp"
#include "core/layers/convolution_choices.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"
#include "core/train/loss_check.hpp"

namespace taihu {

TrainSettings TrainSettings::read(const config::Section& root, const TrainSettings& d) {
  TrainSettings s;
  s.epochs = root.get_or<int64_t>("epochs", d.epochs);
  s.batch_size = root.get_or<int64_t>("batch_size", d.batch_size);
  s.test_batch_size = root.get_or<int64_t>("test_batch_size", d.test_batch_size);
  s.seed = root.get_or<uint64_t>("seed", d.seed);
  s.display = root.get_or<int64_t>("display", d.display);
  s.workers = root.get_or<int64_t>("workers", d.workers);
  s.data_blob = root.get_or<std::string>("data_blob", d.data_blob);
  s.label_blob = root.get_or<std::string>("label_blob", d.label_blob);
  s.loss_blob = root.get_or<std::string>("loss_blob", d.loss_blob);
  s.accuracy_blob = root.get_or<std::string>("accuracy_blob", d.accuracy_blob);
  if (s.epochs < 1) throw root.error("epochs", "must be at least 1");
  if (s.batch_size < 1) throw root.error("batch_size", "must be at least 1");
  if (s.test_batch_size < 1) throw root.error("test_batch_size", "must be at least 1");
  if (s.workers < 1) throw root.error("workers", "must be at least 1");
  return s;
}

std::unique_ptr<Net> build_net(const config::Document& doc, const TrainSettings& settings, int64_t batch,
                               uint64_t seed) {
  const config::Section& root = doc.root();
  const auto net_path = doc.resolve(root.get<std::string>("net"));
  auto description = std::make_shared<config::Document>(config::Document::parse_file(net_path));
  config::apply_net_overrides(doc, *description);  // layer.conv1.num_output=32 and the like
  std::unique_ptr<Net> net;
  try {
    net = std::make_unique<Net>(description, batch, seed);
  } catch (const ResourceError& e) {
    // The layer's file and line say where its sizes come from; the batch is
    // the app config's.
    throw root.error("batch_size", fmt::format("the net does not fit in this machine's memory: {}", e.what()));
  }
  const std::pair<const char*, const std::string*> blobs[] = {
      {"data_blob", &settings.data_blob}, {"label_blob", &settings.label_blob}, {"loss_blob", &settings.loss_blob}};
  for (const auto& [key, blob] : blobs)
    if (!net->has_blob(*blob))
      throw root.error(key, fmt::format("net '{}' ({}) has no blob '{}'", excerpt(net->name()), net_path.string(),
                                        excerpt(*blob)));
  return net;
}

void check_sample_shape(const config::Document& doc, const Net& net, const Dataset& data,
                        const TrainSettings& settings) {
  const auto& dims = net.blob(settings.data_blob).shape().dims();
  const Shape expected(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  if (data.sample_shape() != expected)
    throw ConfigError(fmt::format("{}: data samples have shape {}, but net input '{}' expects {}",
                                  doc.section("data").where().str(), data.sample_shape().str(), settings.data_blob,
                                  expected.str()));
}

Evaluation evaluate(Net& net, BatchFeed& test, const TrainSettings& settings, int64_t train_batch) {
  net.set_phase(Phase::test);
  test.seek(0, 0);
  double loss_sum = 0.0, accuracy_sum = 0.0;
  int64_t seen = 0;
  const bool has_accuracy = net.has_blob(settings.accuracy_blob);
  auto scalar = [&](const std::string& blob) {
    const Tensor& t = net.blob(blob).data();
    return t.count() > 0 ? static_cast<double>(t[0]) : 0.0;
  };
  Tensor& data = net.blob(settings.data_blob).data();
  Tensor& labels = net.blob(settings.label_blob).data();
  while (test.next(data, labels)) {
    const int64_t n = data.shape()[0];
    if (n != net.batch()) net.set_batch(n);
    net.forward();
    loss_sum += scalar(settings.loss_blob) * static_cast<double>(n);
    if (has_accuracy) accuracy_sum += scalar(settings.accuracy_blob) * static_cast<double>(n);
    seen += n;
  }
  net.set_phase(Phase::train);
  net.set_batch(train_batch);
  Evaluation out;
  out.loss = seen ? loss_sum / static_cast<double>(seen) : 0.0;
  out.accuracy = seen ? accuracy_sum / static_cast<double>(seen) : 0.0;
  return out;
}

Checkpoint capture_checkpoint(const std::string& name, const std::vector<const Param*>& params, Solver& solver,
                              uint64_t seed, const TrainPosition& position) {
  Checkpoint c;
  c.net_name = name;
  c.iteration = solver.iteration();
  c.epoch = position.epoch;
  c.batch = position.batch;
  c.seed = seed;
  c.elapsed_seconds = position.elapsed_seconds;
  c.epoch_loss_sum = position.epoch_loss_sum;
  for (const Param* p : params) c.params.push_back(NamedTensor::from(p->name, p->blob->data()));
  for (auto& [state_name, tensor] : solver.state()) c.solver_state.push_back(NamedTensor::from(state_name, *tensor));
  return c;
}

TrainPosition restore_checkpoint(const Checkpoint& c, const std::string& name, const std::vector<Param*>& params,
                                 Solver& solver, uint64_t seed) {
  require(c.net_name == name, "checkpoint is for '{}', not '{}'", c.net_name, name);
  require(c.seed == seed, "checkpoint was made with seed {}, the config says {}", c.seed, seed);
  require(params.size() == c.params.size(), "checkpoint has {} parameter blobs, '{}' has {}", c.params.size(), name,
          params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    require(params[i]->name == c.params[i].name, "checkpoint parameter {} is '{}', '{}' has '{}'", i, c.params[i].name,
            name, params[i]->name);
    c.params[i].restore_into(params[i]->blob->data());
  }
  // Weights imported from another framework (taihu-convert) come without
  // solver history: training from them starts the solver afresh.
  const bool imported_weights = c.iteration == 0 && c.solver_state.empty();
  auto state = solver.state();
  require(imported_weights || state.size() == c.solver_state.size(),
          "checkpoint has {} solver tensors, the solver has {}", c.solver_state.size(), state.size());
  for (size_t i = 0; i < c.solver_state.size(); ++i) c.solver_state[i].restore_into(*state[i].second);
  solver.set_iteration(c.iteration);
  return TrainPosition{c.epoch, c.batch, c.elapsed_seconds, c.epoch_loss_sum};
}

namespace {

void capture_rngs(const Net& net, Checkpoint& c) {
  for (size_t i = 0; i < net.num_layers(); ++i) c.rngs.emplace_back(net.layer(i).name(), net.layer(i).rng().state());
}

}  // namespace

Checkpoint starting_checkpoint(const Net& net, uint64_t seed) {
  Checkpoint c;
  c.net_name = net.name();
  c.seed = seed;
  for (const Param* p : net.params()) c.params.push_back(NamedTensor::from(p->name, p->blob->data()));
  capture_rngs(net, c);
  return c;
}

Checkpoint capture_checkpoint(const Net& net, Solver& solver, uint64_t seed, const TrainPosition& position) {
  Checkpoint c = capture_checkpoint(net.name(), net.params(), solver, seed, position);
  capture_rngs(net, c);
  c.kernel_choices = ConvolutionChoices::process().choices();
  return c;
}

TrainPosition restore_checkpoint(const Checkpoint& c, Net& net, Solver& solver, uint64_t seed, bool rngs) {
  const TrainPosition position = restore_checkpoint(c, net.name(), net.params(), solver, seed);
  for (size_t i = 0; rngs && i < net.num_layers() && i < c.rngs.size(); ++i) {
    require(c.rngs[i].first == net.layer(i).name(), "checkpoint layer {} is '{}', the net has '{}'", i,
            c.rngs[i].first, net.layer(i).name());
    net.layer(i).rng().set_state(c.rngs[i].second);
  }
  ConvolutionChoices::process().adopt(c.kernel_choices);
  return position;
}

void save_checkpoint_files(const Checkpoint& c, const std::filesystem::path& path, bool keep_all, bool previous_sane) {
  if (previous_sane) keep_checkpoint_as(path, sane_checkpoint_path(path));
  save_checkpoint(c, path);
  if (keep_all) {
    auto numbered = path;
    numbered.replace_filename(
        fmt::format("{}-iter{}{}", path.stem().string(), c.iteration, path.extension().string()));
    save_checkpoint(c, numbered);
  }
  spdlog::debug("checkpoint written to '{}'", path.string());
}

}  // namespace taihu
