#include "core/net/fusion.hpp"

#include <fmt/format.h>

#include <map>

#include "core/layers/batch_norm.hpp"
#include "core/layers/eltwise.hpp"
#include "core/layers/relu.hpp"
#include "core/layers/scale.hpp"

namespace taihu {

namespace {

// BatchNorm, then optionally a Scale over its channels, then optionally a ReLU.
class BatchNormRun final : public FusedRun {
 public:
  BatchNormRun(size_t first, size_t last, NetNode& norm, NetNode* scale, NetNode* relu)
      : FusedRun(first, last), norm_(norm), scale_(scale), relu_(relu), out_(relu ? relu : scale) {}

  std::string kind() const override {
    return std::string("BatchNorm") + (scale_ ? "+Scale" : "") + (relu_ ? "+ReLU" : "");
  }

  void forward() override { batch_norm().forward_with(*norm_.bottom[0], *out_->top[0], epilogue(false)); }

  void backward() override {
    Tensor* bottom_diff = norm_.needs_backward && norm_.propagate_down[0] ? &norm_.bottom[0]->diff() : nullptr;
    batch_norm().backward_with(*out_->top[0], *norm_.bottom[0], bottom_diff, epilogue(true));
  }

  // The epilogue's gradient is recomputed from the BatchNorm's input.
  std::vector<const Blob*> backward_reads() const override { return {norm_.bottom[0]}; }

 private:
  BatchNormLayer& batch_norm() { return static_cast<BatchNormLayer&>(*norm_.layer); }

  BatchNormLayer::Epilogue epilogue(bool with_diffs) {
    BatchNormLayer::Epilogue e;
    if (scale_) {
      auto& layer = static_cast<ScaleLayer&>(*scale_->layer);
      Blob* gamma = layer.learned_gamma();
      Blob* beta = layer.beta();
      e.gamma = gamma->data().ptr();
      e.beta = beta ? beta->data().ptr() : nullptr;
      if (with_diffs && scale_->needs_backward) {
        e.gamma_diff = gamma->diff().ptr();
        e.beta_diff = beta ? beta->diff().ptr() : nullptr;
      }
    }
    if (relu_) {
      e.relu = true;
      e.relu_slope = static_cast<const ReLULayer&>(*relu_->layer).negative_slope();
    }
    return e;
  }

  NetNode& norm_;
  NetNode* scale_;
  NetNode* relu_;
  NetNode* out_;  // the last layer: its top is the run's output
};

// An Eltwise sum, then a ReLU with slope >= 0.
class EltwiseReluRun final : public FusedRun {
 public:
  EltwiseReluRun(size_t first, NetNode& sum, NetNode& relu) : FusedRun(first, first + 1), sum_(sum), relu_(relu) {}

  std::string kind() const override { return "Eltwise+ReLU"; }

  void forward() override { eltwise().forward_then_relu(sum_.bottom, *relu_.top[0], slope()); }

  void backward() override {
    if (sum_.needs_backward) eltwise().backward_through_relu(*relu_.top[0], slope(), sum_.propagate_down, sum_.bottom);
  }

  // The ReLU's sign, from its output; the sum reads no value.
  std::vector<const Blob*> backward_reads() const override { return {relu_.top[0]}; }

 private:
  EltwiseLayer& eltwise() { return static_cast<EltwiseLayer&>(*sum_.layer); }
  float slope() const { return static_cast<const ReLULayer&>(*relu_.layer).negative_slope(); }

  NetNode& sum_;
  NetNode& relu_;
};

bool is(const NetNode& node, const char* type) { return std::string_view(node.layer->type()) == type; }

// Whether `next` can join a run whose last layer so far is `previous`: it
// reads previous's only top as its only bottom, in the same phases, and
// neither is a loss.
bool continues(const NetNode& previous, const NetNode& next) {
  return previous.top.size() == 1 && next.bottom.size() == 1 && next.bottom[0] == previous.top[0] &&
         next.only_in == previous.only_in && previous.loss_weight == 0.0f && next.loss_weight == 0.0f;
}

// Backward runs for the run's last layer whenever it runs for any layer of it
// (the fused backward is called at the last one).
bool backward_consistent(const std::vector<NetNode>& nodes, size_t first, size_t last) {
  bool any = false;
  for (size_t i = first; i <= last; ++i) any = any || nodes[i].needs_backward;
  return nodes[last].needs_backward == any;
}

std::unique_ptr<FusedRun> batch_norm_run(std::vector<NetNode>& nodes, size_t i) {
  NetNode& norm = nodes[i];
  auto& layer = static_cast<BatchNormLayer&>(*norm.layer);
  // Only feature maps: the fused pass works channel by channel over spatial rows.
  if (norm.bottom[0]->shape().rank() < 3 || layer.spatial_size() < 2) return nullptr;
  size_t last = i;
  NetNode* scale = nullptr;
  NetNode* relu = nullptr;
  if (last + 1 < nodes.size() && is(nodes[last + 1], "Scale") && continues(nodes[last], nodes[last + 1])) {
    auto& s = static_cast<ScaleLayer&>(*nodes[last + 1].layer);
    const Blob* gamma = s.learned_gamma();
    if (gamma && gamma->shape() == Shape{layer.channels()} && s.outer() == norm.bottom[0]->shape()[0] &&
        s.dim() == layer.channels() && s.inner() == layer.spatial_size() &&
        (!s.beta() || s.beta()->shape() == gamma->shape()))
      scale = &nodes[++last];
  }
  if (last + 1 < nodes.size() && is(nodes[last + 1], "ReLU") && continues(nodes[last], nodes[last + 1]))
    relu = &nodes[++last];
  if (last == i || !backward_consistent(nodes, i, last)) return nullptr;
  return std::make_unique<BatchNormRun>(i, last, norm, scale, relu);
}

std::unique_ptr<FusedRun> eltwise_relu_run(std::vector<NetNode>& nodes, size_t i) {
  NetNode& sum = nodes[i];
  if (static_cast<const EltwiseLayer&>(*sum.layer).operation() != EltwiseLayer::Operation::sum) return nullptr;
  if (i + 1 >= nodes.size() || !is(nodes[i + 1], "ReLU")) return nullptr;
  NetNode& relu = nodes[i + 1];
  // Eltwise has several bottoms: only its top and the ReLU's bottom must match.
  if (sum.top.size() != 1 || relu.bottom[0] != sum.top[0] || relu.only_in != sum.only_in || sum.loss_weight != 0.0f ||
      relu.loss_weight != 0.0f)
    return nullptr;
  // A negative slope needs the sum itself in backward, which is not written.
  if (static_cast<const ReLULayer&>(*relu.layer).negative_slope() < 0.0f) return nullptr;
  if (!backward_consistent(nodes, i, i + 1)) return nullptr;
  return std::make_unique<EltwiseReluRun>(i, sum, relu);
}

}  // namespace

std::vector<std::unique_ptr<FusedRun>> fuse_runs(std::vector<NetNode>& nodes) {
  std::vector<std::unique_ptr<FusedRun>> runs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::unique_ptr<FusedRun> run;
    if (is(nodes[i], "BatchNorm")) run = batch_norm_run(nodes, i);
    if (is(nodes[i], "Eltwise")) run = eltwise_relu_run(nodes, i);
    if (!run) continue;
    std::vector<Blob*> inside;
    for (size_t j = run->first(); j < run->last(); ++j)
      for (Blob* top : nodes[j].top)
        if (top != nodes[run->last()].top[0]) inside.push_back(top);
    run->set_intermediates(std::move(inside));
    for (size_t j = run->first(); j <= run->last(); ++j) nodes[j].fused_run = static_cast<int>(runs.size());
    i = run->last();
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<Blob*> possible_intermediates(const std::vector<NetNode>& nodes) {
  std::vector<Blob*> out;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    const NetNode& producer = nodes[i];
    const NetNode& next = nodes[i + 1];
    const bool starts_or_continues = is(producer, "BatchNorm") || is(producer, "Scale") || is(producer, "Eltwise");
    const bool joins = is(next, "Scale") || is(next, "ReLU");
    if (starts_or_continues && joins && producer.top.size() == 1 && next.bottom.size() == 1 &&
        next.bottom[0] == producer.top[0] && next.top[0] != producer.top[0])
      out.push_back(producer.top[0]);
  }
  return out;
}

std::string describe_fused_runs(const std::vector<std::unique_ptr<FusedRun>>& runs) {
  std::map<std::string, int> counts;
  for (const auto& run : runs) ++counts[run->kind()];
  std::string text;
  for (const auto& [kind, count] : counts) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", count, kind);
  return text.empty() ? "none" : text;
}

}  // namespace taihu
