#include "devices/sw26010/net_plan.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/common/check.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/layer_work.hpp"

namespace taihu::sw26010 {

namespace {

Shape with_batch(const Shape& s, std::int64_t batch) {
  if (s.rank() == 0) return s;
  auto dims = s.dims();
  dims[0] = batch;
  return Shape(dims);
}

// Layers the device model times but whose numbers come from the layer's CPU
// code: softmax runs on the MPE (an ordinary core), the rest are DMA-bound
// passes layer_timing models.
bool host_modelled_type(const std::string& type) {
  return type == "Softmax" || type == "SoftmaxWithLoss" || type == "LRN" || type == "Concat" || type == "Dropout";
}

}  // namespace

NetPlan::NetPlan(Net& net, const Params& params) : net_(net), params_(params) {
  for (int g = 0; g < Chip::groups; ++g) {
    groups_[std::size_t(g)] = std::make_unique<CoreGroup>(g, params_);
    scratch_[std::size_t(g)] = std::make_unique<Scratch>(true);
  }
  timing_group_ = std::make_unique<CoreGroup>(0, params_);
  timing_group_->set_numerics(false);
  for (std::size_t i = 0; i < net.num_layers(); ++i) {
    Layer& layer = net.layer(i);
    const std::string type = layer.type();
    std::string why;  // why a device type falls back to the host
    std::unique_ptr<LayerWork> work = make_layer_work(*this, i, why);
    if (!work) {
      work = std::make_unique<LayerWork>();
      if (host_modelled_type(type)) {
        work->placement = Placement::host_modelled;
        work->method = type.rfind("Softmax", 0) == 0 ? "MPE" : "host+model";
        spdlog::info("sw26010: layer '{}' ({}) computes with its CPU code; its time is the model's ({})",
                     layer.name(), type, work->method);
      } else {
        work->placement = Placement::host;
        work->method = "host";
        if (!why.empty())
          spdlog::warn("sw26010: layer '{}' ({}) falls back to the host CPU ({}); its time is not simulated",
                       layer.name(), type, why);
        else if (type != "Accuracy" && type != "Flatten" && type != "Reshape")
          spdlog::warn("sw26010: layer '{}' ({}) has no device kernels; it runs on the host CPU, time not simulated",
                       layer.name(), type);
      }
    }
    work->plan = this;
    work->index = i;
    if (work->method.empty()) work->method = "CPEs";  // kernels on the CPE clusters
    layers_.push_back(std::move(work));
  }
}

NetPlan::~NetPlan() = default;

Placement NetPlan::placement(std::size_t i) const { return layers_[i]->placement; }
std::string NetPlan::method(std::size_t i) const { return layers_[i]->method; }

int NetPlan::phases(std::size_t i, Pass pass) const {
  return layers_[i]->placement == Placement::device ? layers_[i]->phases(pass) : 0;
}
Stage NetPlan::stage(std::size_t i, Pass pass, int phase) const { return layers_[i]->stage(pass, phase); }
void NetPlan::before_phase(std::size_t i, Pass pass, int phase) {
  LayerWork& work = *layers_[i];
  try {
    work.before(pass, phase);  // (a convolution times its methods for the largest share)
  } catch (const Error&) {
    rethrow_with_context(fmt::format("layer '{}' ({}), {} samples per core group", work.layer().name(),
                                     work.layer().type(), work.largest_share()));
  }
}
void NetPlan::finish(std::size_t i, Pass pass) { layers_[i]->finish(pass); }

std::pair<std::int64_t, std::int64_t> NetPlan::share(int g) const {
  return Chip::split_batch(net_.batch())[std::size_t(g)];
}

KernelStats NetPlan::run(int g, std::size_t i, Pass pass, int phase) {
  LayerWork& work = *layers_[i];
  if (work.group0_only(pass, phase)) return g == 0 ? work.run(0, 0, 0, pass, phase) : KernelStats{};
  const auto [begin, end] = share(g);
  if (end <= begin) return {};
  try {
    return work.run(g, begin, end - begin, pass, phase);
  } catch (const Error&) {
    // the kernels name their buffers and sizes; the layer and the share are known here
    rethrow_with_context(fmt::format("layer '{}' ({}), {} samples on core group {}", work.layer().name(),
                                     work.layer().type(), end - begin, g));
  }
}

ConvChoice NetPlan::conv_choice(const ConvShape& s, std::int64_t batch, std::int64_t groups) {
  const std::string key = fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", s.channels, s.height, s.width,
                                      s.num_output, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h,
                                      s.pad_w, batch, groups);
  auto it = device_choices_.find(key);
  if (it == device_choices_.end())
    it = device_choices_.emplace(key, choose_conv_method(params_, s, batch, groups)).first;
  ConvChoice choice = it->second;
  if (forced_method_ && (*forced_method_ == ConvMethod::explicit_gemm || (s.stride_h == 1 && s.stride_w == 1)))
    choice.method = choice.weight_gradient = choice.data_gradient = *forced_method_;
  return choice;
}

const LayerLayouts& NetPlan::layouts(std::size_t i) {
  const std::int64_t share = layers_[i]->largest_share();
  if (layouts_share_ != share) {
    layouts_ = implicit_runs(net_, [&](std::size_t j) { return layers_[j] && layers_[j]->implicit_throughout(); });
    layouts_share_ = share;
  }
  return layouts_[i];
}

LayerTiming NetPlan::modelled_timing(std::size_t i) {
  LayerWork& work = *layers_[i];
  const std::int64_t q = work.largest_share();
  if (work.modelled_batch != q) {
    LayerShape shape;
    shape.type = net_.layer(i).type();
    shape.options = net_.description().find("layer", net_.layer(i).name());
    for (const Blob* b : net_.layer_bottoms(i)) shape.bottoms.push_back(with_batch(b->shape(), q));
    for (const Blob* b : net_.layer_tops(i)) shape.tops.push_back(with_batch(b->shape(), q));
    shape.propagate_down = !net_.layer_propagate_down(i).empty() && net_.layer_propagate_down(i)[0];
    shape.name = net_.layer(i).name();
    work.modelled = time_layer(*timing_group_, shape, timing_scratch_, &conv_choices_);
    work.modelled_batch = q;
  }
  return work.modelled;
}

}  // namespace taihu::sw26010
