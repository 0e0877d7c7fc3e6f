#include "core/net/net.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/common/check.hpp"
#include "core/common/excerpt.hpp"
#include "core/common/sync_wait.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

struct Net::LayerDraft {
  LayerSpec spec;
  std::optional<Phase> only_in;
  std::optional<float> loss_weight;
};

Net::Net(std::shared_ptr<const config::Document> description, int64_t batch, uint64_t seed, Storage storage)
    : description_(std::move(description)), batch_(batch), storage_(storage) {
  std::optional<ShapesOnly> shapes_only;
  if (storage_ == Storage::parameters_only) shapes_only.emplace();
  const config::Document& doc = *description_;
  const config::Section& net = doc.section("net");
  name_ = net.get_or<std::string>("name", "net");
  const bool fuse = net.get_or<bool>("fuse", true);
  share_values_ = net.get_or<bool>("share_values", true) && storage_ == Storage::full;
  share_gradients_ = net.get_or<bool>("share_gradients", true) && storage_ == Storage::full;
  net.reject_unused();

  read_inputs(doc);
  std::vector<LayerDraft> drafts = read_layers(doc);
  insert_splits(drafts);

  std::set<std::string> consumed;
  for (const auto& draft : drafts) layers_.push_back(make_node(draft, seed, consumed));
  for (const auto& [blob_name, blob] : blobs_) {
    (void)blob;
    if (!consumed.count(blob_name)) output_names_.push_back(blob_name);
  }

  // Blobs a fused run may hold inside get no storage while the layers set up:
  // allocated and freed once the runs are known, they would still have
  // raised the process's peak (ResNet-50 at batch 32: by 2.7 GB).
  std::vector<Blob*> maybe_inside;
  if (fuse) maybe_inside = possible_intermediates(layers_);
  for (Blob* b : maybe_inside) b->set_shape_only(true);
  // Likewise the values and gradients, which take shared buffers once their
  // lifetimes are known.
  for (auto& [blob_name, blob] : blobs_)
    if (std::find(input_names_.begin(), input_names_.end(), blob_name) == input_names_.end()) {
      if (share_values_) blob->data().set_shape_only(true);
      if (share_gradients_) blob->diff().set_shape_only(true);
    }

  // Set up in order, each layer seeing its bottoms' final shapes.
  for (const auto& name : input_names_) {
    std::vector<int64_t> dims{batch_};
    for (auto d : input_shapes_[name].dims()) dims.push_back(d);
    blobs_[name]->reshape(Shape(dims));
  }
  for (auto& node : layers_) {
    try {
      node.layer->setup(node.bottom, node.top);
      node.layer->reshape(node.bottom, node.top);
    } catch (const ResourceError& e) {
      const config::Section* s = doc.find("layer", node.layer->name());
      raise<ResourceError>("{}: layer '{}' ({}), at {} samples per batch: {}", s ? s->where().str() : "<net>",
                           excerpt(node.layer->name()), node.layer->type(), batch_, e.what());
    }
  }
  for (const config::Section* s : doc.sections("layer")) s->reject_unused("this layer type");
  plan_backward();
  if (fuse) fused_runs_ = fuse_runs(layers_);
  store_fused_intermediates(false);
  group_blobs();
  plan_storage_sharing();  // storage for every blob outside the runs
}

void Net::read_inputs(const config::Document& doc) {
  for (const config::Section* input : doc.sections("input")) {
    require<ConfigError>(!input->name().empty(), "{}: an [input] section needs a blob name", input->where().str());
    std::vector<int64_t> dims = input->get_list_or<int64_t>("shape", {});
    for (const int64_t d : dims)
      if (d < 1) throw input->error("shape", fmt::format("every dimension must be at least 1, not {}", d));
    input->reject_unused();
    input_names_.push_back(input->name());
    input_shapes_[input->name()] = Shape(dims);
    blobs_[input->name()] = std::make_shared<Blob>();
  }
}

Net::Node Net::make_node(const LayerDraft& draft, uint64_t seed, std::set<std::string>& consumed) {
  Node node;
  for (const auto& b : draft.spec.bottoms) {
    if (!has_blob(b))
      throw ConfigError(fmt::format("{}: layer '{}' reads blob '{}', which no earlier layer or input produces",
                                    draft.spec.options ? draft.spec.options->where().str() : "<net>",
                                    excerpt(draft.spec.name), excerpt(b)));
    node.bottom.push_back(blob_for(b));
    consumed.insert(b);
  }
  for (const auto& t : draft.spec.tops) node.top.push_back(blob_for(t));
  node.layer = LayerRegistry::instance().create(draft.spec);
  Layer& layer = *node.layer;
  const auto where = draft.spec.options ? draft.spec.options->where().str() : std::string("<net>");
  auto count_error = [&](const char* what, size_t n, int lo, int hi) {
    throw ConfigError(fmt::format("{}: layer '{}' ({}) takes {}{} {}, got {}", where, excerpt(layer.name()),
                                  layer.type(), lo, hi == lo ? "" : fmt::format(" to {}", hi), what, n));
  };
  const size_t nb = node.bottom.size(), nt = node.top.size();
  if (static_cast<int>(nb) < layer.min_bottoms() || static_cast<int>(nb) > layer.max_bottoms())
    count_error("bottoms", nb, layer.min_bottoms(), layer.max_bottoms());
  if (static_cast<int>(nt) < layer.min_tops() || static_cast<int>(nt) > layer.max_tops())
    count_error("tops", nt, layer.min_tops(), layer.max_tops());
  for (size_t t = 0; t < nt; ++t)
    for (size_t b = 0; b < nb; ++b)
      if (node.top[t] == node.bottom[b] && !(t == 0 && b == 0 && layer.supports_in_place()))
        throw ConfigError(fmt::format("{}: layer '{}' ({}) cannot work in place on blob '{}'", where,
                                      excerpt(layer.name()), layer.type(), excerpt(draft.spec.tops[t])));
  node.loss_weight = draft.loss_weight.value_or(layer.default_loss_weight());
  node.only_in = draft.only_in;
  node.propagate_down.assign(nb, false);
  layer.seed(seed);
  return node;
}

void Net::group_blobs() {
  for (auto [groups, root] :
       {std::pair{&value_groups_, &Blob::data_root}, std::pair{&gradient_groups_, &Blob::view_root}}) {
    std::map<const Blob*, size_t> group_of_root;
    std::set<Blob*> seen;
    for (auto& node : layers_)
      for (const BlobVec* blobs : {&node.bottom, &node.top})
        for (Blob* b : *blobs) {
          if (!seen.insert(b).second) continue;  // in the order the layers name them: deterministic buffers
          auto [it, added] = group_of_root.emplace(&(b->*root)(), groups->size());
          if (added) groups->emplace_back();
          (*groups)[it->second].push_back(b);
        }
  }
}

StepPlan Net::step_plan() const {
  StepPlan steps;
  const size_t n = layers_.size();
  steps.forward.resize(n);
  steps.backward.assign(n, StepPlan::none);
  steps.backward_reads.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = layers_[i];
    // An executor runs the layers one by one; otherwise a fused run computes at
    // its first layer forward and at its last backward.
    const FusedRun* run =
        !executor_ && node.fused_run >= 0 ? fused_runs_[static_cast<size_t>(node.fused_run)].get() : nullptr;
    steps.forward[i] = run ? run->first() : i;
    if (!node.needs_backward || !node.active(Phase::train)) continue;
    steps.backward[i] = 2 * n - 1 - (run ? run->last() : i);
    auto& reads = steps.backward_reads[i];
    if (run) {
      if (i == run->last()) reads = run->backward_reads();
      continue;
    }
    for (size_t k = 0; k < node.bottom.size(); ++k)
      if (node.layer->backward_reads_bottom(k)) reads.push_back(node.bottom[k]);
    for (size_t t = 0; t < node.top.size(); ++t)
      if (node.layer->backward_reads_top(t)) reads.push_back(node.top[t]);
  }
  return steps;
}

void Net::plan_storage_sharing() {
  SharingRequest request;
  request.nodes = &layers_;
  request.steps = step_plan();
  request.value_groups = &value_groups_;
  request.gradient_groups = &gradient_groups_;
  // An executor computes the layers its own way: its passes may read any value.
  request.share_values = share_values_ && !executor_;
  request.share_gradients = share_gradients_;
  // What someone sees outside the passes keeps its own storage: the inputs'
  // and outputs' values and gradients (loss tops filled before backward among
  // them), values a reader asked for, and gradients zeroed before backward
  // because no reader writes them.
  request.keep_values = kept_values_;
  request.keep_gradients.insert(diffs_to_zero_.begin(), diffs_to_zero_.end());
  for (const auto* names : {&input_names_, &output_names_})
    for (const auto& name : *names) {
      request.keep_values.insert(blobs_.at(name).get());
      request.keep_gradients.insert(blobs_.at(name).get());
    }
  for (const auto& node : layers_)
    if (node.loss_weight != 0.0f)
      for (auto* keep : {&request.keep_values, &request.keep_gradients}) keep->insert(node.top.begin(), node.top.end());
  if (!executor_)
    for (const auto& run : fused_runs_)
      request.storage_less.insert(run->intermediates().begin(), run->intermediates().end());
  // The earlier arena goes first: two at once would double the peak. The
  // values and gradients in it are undefined after a pass anyway.
  for (const auto& [tensor, storage] : shared_) tensor->release_storage();
  std::vector<Tensor*> shared;
  storage_sharing_ = share_storage(request, shared);
  shared_.clear();
  for (Tensor* t : shared) shared_.emplace_back(t, t->ptr());
}

void Net::keep_values(const std::vector<std::string>& names) {
  for (const auto& name : names) kept_values_.insert(&blob(name));
  plan_storage_sharing();
}

bool Net::value_shared(const std::string& name) const {
  const Tensor* data = &blob(name).data();
  return std::any_of(shared_.begin(), shared_.end(), [&](const auto& entry) { return entry.first == data; });
}

void Net::set_executor(LayerExecutor* executor) {
  executor_ = executor;
  store_fused_intermediates(executor_ != nullptr);
  plan_storage_sharing();  // one layer at a time: other steps, and the runs' insides have storage
}

void Net::store_fused_intermediates(bool store) {
  for (const auto& run : fused_runs_)
    for (Blob* blob : run->intermediates()) blob->set_shape_only(!store);
}

Net::~Net() = default;

std::vector<Net::LayerDraft> Net::read_layers(const config::Document& doc) const {
  std::vector<LayerDraft> drafts;
  for (const config::Section* s : doc.sections("layer")) {
    require<ConfigError>(!s->name().empty(), "{}: a [layer] section needs a name, as in [layer conv1]",
                         s->where().str());
    LayerDraft d;
    d.spec.name = s->name();
    d.spec.type = s->get<std::string>("type");
    d.spec.bottoms = s->get_list_or<std::string>("bottom", {});
    d.spec.tops = s->get_list_or<std::string>("top", {});
    d.spec.options = s;
    const std::string phase = s->get_choice("phase", {"train", "test", "both"}, "both");
    if (phase == "train") d.only_in = Phase::train;
    if (phase == "test") d.only_in = Phase::test;
    if (s->has("loss_weight")) d.loss_weight = s->get<float>("loss_weight");
    drafts.push_back(std::move(d));
  }
  return drafts;
}

// A blob version read by more than one layer gets a Split layer right after
// its producer, one top per reader, so that backward sums their gradients.
void Net::insert_splits(std::vector<LayerDraft>& drafts) const {
  struct Reader {
    size_t layer;
    size_t slot;
  };
  // Producer of the current version of each blob: layer index, or npos for an input.
  constexpr size_t input = static_cast<size_t>(-1);
  std::map<std::string, size_t> producer;
  for (const auto& name : input_names_) producer[name] = input;
  std::map<std::pair<std::string, size_t>, std::vector<Reader>> readers;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const auto& spec = drafts[i].spec;
    for (size_t b = 0; b < spec.bottoms.size(); ++b) {
      auto it = producer.find(spec.bottoms[b]);
      if (it != producer.end()) readers[{spec.bottoms[b], it->second}].push_back({i, b});
    }
    for (const auto& t : spec.tops) producer[t] = i;
  }
  // Insert from the back so earlier indices stay valid.
  std::vector<std::pair<size_t, LayerDraft>> splits;
  for (auto& [version, list] : readers) {
    if (list.size() < 2) continue;
    const auto& [blob_name, source] = version;
    for (const auto& r : list) {
      const auto& spec = drafts[r.layer].spec;
      for (const auto& t : spec.tops)
        if (t == blob_name)
          throw ConfigError(fmt::format(
              "{}: layer '{}' works in place on blob '{}', which other layers also read; give it its own top",
              spec.options ? spec.options->where().str() : "<net>", excerpt(spec.name), excerpt(blob_name)));
    }
    LayerDraft split;
    split.spec.name = fmt::format("{}_split", blob_name);
    split.spec.type = "Split";
    split.spec.bottoms = {blob_name};
    for (size_t k = 0; k < list.size(); ++k) {
      const std::string top = fmt::format("{}_split_{}", blob_name, k);
      split.spec.tops.push_back(top);
      drafts[list[k].layer].spec.bottoms[list[k].slot] = top;
    }
    splits.emplace_back(source == input ? 0 : source + 1, std::move(split));
  }
  std::stable_sort(splits.begin(), splits.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [position, draft] : splits)
    drafts.insert(drafts.begin() + static_cast<std::ptrdiff_t>(position), std::move(draft));
}

Blob* Net::blob_for(const std::string& name) {
  auto& slot = blobs_[name];
  if (!slot) slot = std::make_shared<Blob>();
  return slot.get();
}

// Decides which layers run backward and which bottoms receive gradients:
// a layer needs backward if it feeds a loss and has learnable parameters or a
// bottom that itself depends on learnable parameters.
void Net::plan_backward() {
  std::set<const Blob*> contributes;  // blobs whose gradient reaches a loss
  std::vector<bool> feeds_loss(layers_.size(), false);
  for (size_t i = layers_.size(); i-- > 0;) {
    Node& node = layers_[i];
    bool feeds = node.loss_weight != 0.0f;
    for (const Blob* t : node.top) feeds = feeds || contributes.count(t);
    feeds_loss[i] = feeds && node.layer->has_backward();
    if (feeds_loss[i])
      for (const Blob* b : node.bottom) contributes.insert(b);
  }
  std::set<const Blob*> depends_on_params;
  for (size_t i = 0; i < layers_.size(); ++i) {
    Node& node = layers_[i];
    bool has_learnable = false;
    for (const auto& p : node.layer->params()) has_learnable = has_learnable || p.learnable;
    bool any_bottom = false;
    for (size_t b = 0; b < node.bottom.size(); ++b) {
      node.propagate_down[b] = feeds_loss[i] && depends_on_params.count(node.bottom[b]);
      any_bottom = any_bottom || node.propagate_down[b];
    }
    node.needs_backward = feeds_loss[i] && (has_learnable || any_bottom);
    if (node.needs_backward)
      for (const Blob* t : node.top) depends_on_params.insert(t);
  }
  // Tops of backward layers whose diff no reader writes must read as zero.
  std::set<Blob*> written;
  for (const auto& node : layers_)
    for (size_t b = 0; b < node.bottom.size(); ++b)
      if (node.propagate_down[b] && node.needs_backward) written.insert(node.bottom[b]);
  diffs_to_zero_.clear();
  for (const auto& node : layers_)
    if (node.needs_backward)
      for (Blob* t : node.top)
        if (!written.count(t) && node.loss_weight == 0.0f) diffs_to_zero_.push_back(t);
}

void Net::set_batch(int64_t batch) {
  require(batch > 0, "net '{}': batch size must be positive, got {}", name_, batch);
  batch_ = batch;
  reshape_all();
}

void Net::set_phase(Phase phase) {
  phase_ = phase;
  for (auto& node : layers_) node.layer->set_phase(phase);
}

void Net::reshape_all() {
  std::optional<ShapesOnly> shapes_only;
  if (storage_ == Storage::parameters_only) shapes_only.emplace();
  for (const auto& name : input_names_) {
    std::vector<int64_t> dims{batch_};
    for (auto d : input_shapes_[name].dims()) dims.push_back(d);
    blobs_[name]->reshape(Shape(dims));
  }
  for (auto& node : layers_) node.layer->reshape(node.bottom, node.top);
  // A tensor that outgrew its shared buffer took storage of its own: plan again.
  for (const auto& [tensor, storage] : shared_)
    if (tensor->ptr() != storage) {
      plan_storage_sharing();
      break;
    }
}

float Net::forward() {
  float loss = 0.0f;
  for (size_t i = 0; i < layers_.size(); ++i) loss += async::sync_wait(forward_layer(i));
  return loss;
}

void Net::require_storage() const {
  require(storage_ == Storage::full,
          "net '{}' was built for its shapes and parameters only (Storage::parameters_only): it cannot compute",
          excerpt(name_));
}

async::Task<float> Net::forward_layer(size_t i) {
  require_storage();
  Node& node = layers_[i];
  if (!node.active(phase_)) co_return 0.0f;
  node.layer->reshape(node.bottom, node.top);
  if (executor_) {
    co_await executor_->forward(i);
  } else if (node.fused_run >= 0) {
    // The whole run at its first layer, once every layer of it has its shapes.
    FusedRun& run = *fused_runs_[static_cast<size_t>(node.fused_run)];
    if (i == run.first()) {
      for (size_t j = i + 1; j <= run.last(); ++j) layers_[j].layer->reshape(layers_[j].bottom, layers_[j].top);
      run.forward();
    }
  } else {
    node.layer->forward(node.bottom, node.top);
  }
  if (node.loss_weight == 0.0f) co_return 0.0f;
  const Tensor& out = node.top[0]->data();
  double sum = 0.0;
  for (int64_t k = 0; k < out.count(); ++k) sum += out[k];
  co_return node.loss_weight * static_cast<float>(sum);
}

void Net::backward() {
  begin_backward();
  for (size_t i = layers_.size(); i-- > 0;) async::sync_wait(backward_layer(i));
}

void Net::begin_backward() {
  require_storage();
  for (Blob* b : diffs_to_zero_) b->diff().zero();
  for (auto& node : layers_)
    if (node.loss_weight != 0.0f && node.active(phase_)) node.top[0]->diff().fill(node.loss_weight);
}

async::Task<bool> Net::backward_layer(size_t i) {
  require_storage();
  Node& node = layers_[i];
  if (!node.needs_backward || !node.active(phase_)) co_return false;
  if (executor_) {
    co_await executor_->backward(i);
  } else if (node.fused_run >= 0) {
    // Backward meets the run's last layer first.
    FusedRun& run = *fused_runs_[static_cast<size_t>(node.fused_run)];
    if (i == run.last()) run.backward();
  } else {
    node.layer->backward(node.top, node.propagate_down, node.bottom);
  }
  co_return true;
}

std::vector<std::string> Net::blob_names() const {
  std::vector<std::string> names;
  for (const auto& [name, blob] : blobs_) names.push_back(name);
  return names;
}

Blob& Net::blob(const std::string& name) {
  auto it = blobs_.find(name);
  require(it != blobs_.end(), "net '{}' has no blob '{}'", excerpt(name_), excerpt(name));
  return *it->second;
}

const Blob& Net::blob(const std::string& name) const {
  auto it = blobs_.find(name);
  require(it != blobs_.end(), "net '{}' has no blob '{}'", excerpt(name_), excerpt(name));
  return *it->second;
}

std::vector<Param*> Net::params() {
  std::vector<Param*> out;
  for (auto& node : layers_)
    for (auto& p : node.layer->params()) out.push_back(&p);
  return out;
}

std::vector<const Param*> Net::params() const {
  std::vector<const Param*> out;
  for (const auto& node : layers_)
    for (const auto& p : node.layer->params()) out.push_back(&p);
  return out;
}

std::vector<Param*> Net::learnable_params() {
  std::vector<Param*> out;
  for (Param* p : params())
    if (p->learnable) out.push_back(p);
  return out;
}

int64_t Net::num_learnable_parameters() const {
  int64_t n = 0;
  for (const Param* p : params())
    if (p->learnable) n += p->blob->count();
  return n;
}

void Net::zero_param_diffs() {
  // Each param's gradient on one thread, the params side by side (ResNet-50's
  // 100 MB took 17 ms on one core).
  const auto all = params();
  int64_t floats = 0;
  for (const Param* p : all) floats += p->blob->count();
  parallel_for_items(static_cast<int64_t>(all.size()), floats,
                     [&](int64_t i) { all[static_cast<size_t>(i)]->blob->diff().zero(); });
}

}  // namespace taihu
