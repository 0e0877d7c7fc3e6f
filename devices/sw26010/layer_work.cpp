// The device work of the layer types other than the weighted ones: ReLU,
// Pooling, BatchNorm, per-channel Scale, Eltwise sum and Split; and the
// factory that picks any layer's.

#include <algorithm>
#include <cmath>

#include "core/layers/batch_norm.hpp"
#include "core/layers/window_options.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/layer_work.hpp"

namespace taihu::sw26010 {

namespace {

constexpr int groups = Chip::groups;
using LayerWork = NetPlan::LayerWork;

// ---- ReLU (in place or not; backward reads the sign from the output).
struct ReluWork final : LayerWork {
  float slope = 0.0f;
  int phases(Pass pass) const override { return pass == Pass::forward || down(0) ? 1 : 0; }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int) override {
    const std::int64_t per = per_sample(*bottom()[0]), n = count * per, at = begin * per;
    if (pass == Pass::forward)
      return relu_forward(cg(g), bottom()[0]->data().ptr() + at, top()[0]->data().ptr() + at, n, slope);
    return relu_backward(cg(g), top()[0]->data().ptr() + at, top()[0]->diff().ptr() + at,
                         bottom()[0]->diff().ptr() + at, n, slope);
  }
};

// ---- Pooling (max recomputes its argmax from the input in backward).
struct PoolWork final : LayerWork {
  PoolGeometry geo;
  int phases(Pass pass) const override { return pass == Pass::forward || down(0) ? 1 : 0; }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int) override {
    const Shape& s = bottom()[0]->shape();
    const std::int64_t in = per_sample(*bottom()[0]), out = per_sample(*top()[0]), planes = count * s[1];
    const float* x = bottom()[0]->data().ptr() + begin * in;
    if (pass == Pass::forward) return pool_forward(cg(g), geo, x, top()[0]->data().ptr() + begin * out, planes);
    return pool_backward(cg(g), geo, x, top()[0]->diff().ptr() + begin * out, bottom()[0]->diff().ptr() + begin * in,
                         planes);
  }
};

// Per-channel view of an N x C x spatial blob.
struct ChannelView {
  std::int64_t channels = 0, spatial = 0;
  static ChannelView of(const Blob& b) {
    const Shape& s = b.shape();
    return {s[1], s.count_from(2)};
  }
};

// ---- BatchNorm: statistics over all 4 groups' samples.
struct BatchNormWork final : LayerWork {
  float momentum = 0.9f, eps = 1e-5f;
  bool global = false;  // the last forward used the running statistics
  std::array<AlignedVector<double>, groups> sum, sum2;
  AlignedVector<float> mean, inv_std, scale, shift;

  int phases(Pass pass) const override {
    if (pass == Pass::forward) return static_cast<const BatchNormLayer&>(layer()).uses_global_stats() ? 1 : 2;
    return down(0) ? (global ? 1 : 2) : 0;
  }
  // Adds the groups' sums (on the MPE).
  std::pair<std::vector<double>, std::vector<double>> totals(std::int64_t channels) const {
    std::vector<double> s1(std::size_t(channels), 0.0), s2(std::size_t(channels), 0.0);
    for (int g = 0; g < groups; ++g) {
      if (!active(g)) continue;
      for (std::int64_t c = 0; c < channels; ++c) s1[std::size_t(c)] += sum[std::size_t(g)][std::size_t(c)],
                                                   s2[std::size_t(c)] += sum2[std::size_t(g)][std::size_t(c)];
    }
    return {s1, s2};
  }
  void before(Pass pass, int phase) override {
    const auto view = ChannelView::of(*bottom()[0]);
    const std::int64_t C = view.channels;
    const double m = double(net().batch() * view.spatial);
    mean.resize(std::size_t(C)), inv_std.resize(std::size_t(C)), scale.resize(std::size_t(C)),
        shift.resize(std::size_t(C));
    if (pass == Pass::forward && phase == 0) {
      global = static_cast<const BatchNormLayer&>(layer()).uses_global_stats();
      if (!global) return;
      const float* running_mean = layer().params()[0].blob->data().ptr();
      const float* running_var = layer().params()[1].blob->data().ptr();
      for (std::int64_t c = 0; c < C; ++c) {
        mean[std::size_t(c)] = running_mean[c];
        inv_std[std::size_t(c)] = 1.0f / std::sqrt(running_var[c] + eps);
      }
    } else if (pass == Pass::forward) {
      const auto [s1, s2] = totals(C);
      float* running_mean = layer().params()[0].blob->data().ptr();
      float* running_var = layer().params()[1].blob->data().ptr();
      for (std::int64_t c = 0; c < C; ++c) {
        const double mu = s1[std::size_t(c)] / m;
        const double var = std::max(0.0, s2[std::size_t(c)] / m - mu * mu);
        mean[std::size_t(c)] = float(mu);
        inv_std[std::size_t(c)] = float(1.0 / std::sqrt(var + eps));
        const double unbiased = m > 1 ? var * m / (m - 1) : var;
        running_mean[c] = momentum * running_mean[c] + (1.0f - momentum) * float(mu);
        running_var[c] = momentum * running_var[c] + (1.0f - momentum) * float(unbiased);
      }
    } else if (phase == 0) {
      // global: dx = inv_std * dy (set below); batch statistics: sums first
    } else {
      // dx = a (dy + b x + d), a = inv_std, with k = mean(dy * x_hat) * inv_std:
      // b = -inv_std k, d = mu inv_std k - mean(dy)
      const auto [s_dy, s_dyx] = totals(C);
      for (std::int64_t c = 0; c < C; ++c) {
        const double a = inv_std[std::size_t(c)], mu = mean[std::size_t(c)];
        const double k = a * a * (s_dyx[std::size_t(c)] - mu * s_dy[std::size_t(c)]) / m;
        scale[std::size_t(c)] = float(-k);
        shift[std::size_t(c)] = float(mu * k - s_dy[std::size_t(c)] / m);
      }
      return;
    }
    if (pass == Pass::forward)
      for (std::int64_t c = 0; c < C; ++c) {
        scale[std::size_t(c)] = inv_std[std::size_t(c)];
        shift[std::size_t(c)] = -mean[std::size_t(c)] * inv_std[std::size_t(c)];
      }
  }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int phase) override {
    CoreGroup& c = cg(g);
    const auto view = ChannelView::of(*bottom()[0]);
    const std::int64_t per = view.channels * view.spatial, at = begin * per;
    const float* x = bottom()[0]->data().ptr() + at;
    auto& s1 = sum[std::size_t(g)];
    auto& s2 = sum2[std::size_t(g)];
    s1.assign(std::size_t(view.channels), 0.0), s2.assign(std::size_t(view.channels), 0.0);
    if (pass == Pass::forward) {
      if (phase == 0 && !global) return channel_sums(c, x, nullptr, count, view.channels, view.spatial, s1.data(), s2.data());
      return channel_affine(c, x, top()[0]->data().ptr() + at, count, view.channels, view.spatial, scale.data(),
                            shift.data());
    }
    const float* dy = top()[0]->diff().ptr() + at;
    float* dx = bottom()[0]->diff().ptr() + at;
    if (global) return channel_affine(c, dy, dx, count, view.channels, view.spatial, inv_std.data(), nullptr);
    if (phase == 0) return channel_sums(c, dy, x, count, view.channels, view.spatial, s1.data(), s2.data());
    KernelStats total;
    add_to(total, channel_affine(c, x, dx, count, view.channels, view.spatial, scale.data(), shift.data()));
    add_to(total, eltwise_sum(c, dy, dx, dx, count * per));
    add_to(total, channel_affine(c, dx, dx, count, view.channels, view.spatial, inv_std.data(), nullptr));
    return total;
  }
};

// ---- Scale with one bottom and a per-channel gamma (axis 1, num_axes 1).
struct ScaleWork final : LayerWork {
  bool has_bias = false;
  std::array<AlignedVector<double>, groups> sum, sum2;
  int phases(Pass pass) const override { return pass == Pass::forward ? 1 : (down(0) ? 2 : 1); }
  Stage stage(Pass pass, int phase) const override {
    return pass == Pass::forward ? Stage::forward : phase == 0 ? Stage::weight_gradient : Stage::data_gradient;
  }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int phase) override {
    CoreGroup& c = cg(g);
    const auto view = ChannelView::of(*bottom()[0]);
    const std::int64_t at = begin * view.channels * view.spatial;
    const float* gamma = layer().params()[0].blob->data().ptr();
    if (pass == Pass::forward)
      return channel_affine(c, bottom()[0]->data().ptr() + at, top()[0]->data().ptr() + at, count, view.channels,
                            view.spatial, gamma, has_bias ? layer().params()[1].blob->data().ptr() : nullptr);
    const float* dy = top()[0]->diff().ptr() + at;
    if (phase == 1)
      return channel_affine(c, dy, bottom()[0]->diff().ptr() + at, count, view.channels, view.spatial, gamma, nullptr);
    auto& s1 = sum[std::size_t(g)];
    auto& s2 = sum2[std::size_t(g)];
    s1.assign(std::size_t(view.channels), 0.0), s2.assign(std::size_t(view.channels), 0.0);
    return channel_sums(c, dy, bottom()[0]->data().ptr() + at, count, view.channels, view.spatial, s1.data(),
                        s2.data());
  }
  void finish(Pass pass) override {
    if (pass != Pass::backward) return;
    const std::int64_t C = ChannelView::of(*bottom()[0]).channels;
    float* dgamma = layer().params()[0].blob->diff().ptr();
    float* dbeta = has_bias ? layer().params()[1].blob->diff().ptr() : nullptr;
    for (int g = 0; g < groups; ++g) {
      if (!active(g)) continue;
      for (std::int64_t c = 0; c < C; ++c) {
        dgamma[c] += float(sum2[std::size_t(g)][std::size_t(c)]);
        if (dbeta) dbeta[c] += float(sum[std::size_t(g)][std::size_t(c)]);
      }
    }
  }
};

// ---- Eltwise sum with coefficients.
struct EltwiseSumWork final : LayerWork {
  std::vector<float> coeffs;
  int phases(Pass pass) const override {
    if (pass == Pass::forward) return 1;
    for (std::size_t k = 0; k < bottom().size(); ++k)
      if (down(k)) return 1;
    return 0;
  }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int) override {
    CoreGroup& c = cg(g);
    const std::int64_t per = per_sample(*top()[0]), n = count * per, at = begin * per;
    KernelStats total;
    if (pass == Pass::forward) {
      float* y = top()[0]->data().ptr() + at;
      add_to(total, eltwise_sum(c, bottom()[0]->data().ptr() + at, bottom()[1]->data().ptr() + at, y, n, coeffs[0],
                                coeffs[1]));
      for (std::size_t k = 2; k < bottom().size(); ++k)
        add_to(total, eltwise_sum(c, y, bottom()[k]->data().ptr() + at, y, n, 1.0f, coeffs[k]));
      return total;
    }
    const float* dy = top()[0]->diff().ptr() + at;
    for (std::size_t k = 0; k < bottom().size(); ++k) {
      if (!down(k)) continue;
      float* dx = bottom()[k]->diff().ptr() + at;
      add_to(total, coeffs[k] == 1.0f ? copy(c, dy, dx, n) : eltwise_sum(c, dy, dy, dx, n, coeffs[k], 0.0f));
    }
    return total;
  }
};

// ---- Split: the tops share the bottom's data; backward adds their diffs.
struct SplitWork final : LayerWork {
  int phases(Pass pass) const override { return pass == Pass::backward && down(0) ? 1 : 0; }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass, int) override {
    CoreGroup& c = cg(g);
    const std::int64_t per = per_sample(*bottom()[0]), n = count * per, at = begin * per;
    float* dx = bottom()[0]->diff().ptr() + at;
    KernelStats total;
    add_to(total, eltwise_sum(c, top()[0]->diff().ptr() + at, top()[1]->diff().ptr() + at, dx, n));
    for (std::size_t k = 2; k < top().size(); ++k)
      add_to(total, eltwise_sum(c, dx, top()[k]->diff().ptr() + at, dx, n));
    return total;
  }
};

}  // namespace

std::unique_ptr<LayerWork> make_layer_work(NetPlan& plan, std::size_t i, std::string& why) {
  Net& net = plan.net();
  Layer& layer = net.layer(i);
  const std::string type = layer.type();
  const config::Section* opt = net.description().find("layer", layer.name());
  std::unique_ptr<LayerWork> work;
  if (type == "Convolution") {
    work = make_convolution_work(plan, i, why);
  } else if (type == "InnerProduct") {
    work = make_inner_product_work(plan, i, why);
  } else if (type == "ReLU") {
    auto w = std::make_unique<ReluWork>();
    w->slope = opt ? opt->get_or<float>("negative_slope", 0.0f) : 0.0f;
    work = std::move(w);
  } else if (type == "Pooling") {
    auto w = std::make_unique<PoolWork>();
    const Shape& in = net.layer_bottoms(i)[0]->shape();
    const Shape& out = net.layer_tops(i)[0]->shape();
    PoolGeometry& g = w->geo;
    g.height = in[2], g.width = in[3];
    g.max = !opt || opt->get_or<std::string>("pool", "max") == "max";
    g.floor = opt && opt->get_or<std::string>("round_mode", "ceil") == "floor";
    if (opt && opt->get_or<bool>("global_pooling", false)) {
      g.kernel_h = in[2], g.kernel_w = in[3];
    } else if (opt) {
      const auto k = read_height_width(*opt, "kernel_size", "kernel", std::nullopt, 1);
      g.kernel_h = k.h, g.kernel_w = k.w;
    }
    if (opt) {
      const auto stride = read_height_width(*opt, "stride", "stride", 1, 1);
      const auto pad = read_height_width(*opt, "pad", "pad", 0, 0);
      g.stride_h = stride.h, g.stride_w = stride.w, g.pad_h = pad.h, g.pad_w = pad.w;
    }
    if (g.out_height() != out[2] || g.out_width() != out[3]) why = "output size differs from the layer's";
    else work = std::move(w);
  } else if (type == "BatchNorm") {
    auto w = std::make_unique<BatchNormWork>();
    if (opt) w->momentum = opt->get_or<float>("momentum", 0.9f), w->eps = opt->get_or<float>("eps", 1e-5f);
    work = std::move(w);
  } else if (type == "Scale") {
    const Shape& in = net.layer_bottoms(i)[0]->shape();
    const bool per_channel = net.layer_bottoms(i).size() == 1 && in.rank() >= 2 && !layer.params().empty() &&
                             (!opt || (opt->get_or<int>("axis", 1) == 1 && opt->get_or<int>("num_axes", 1) == 1)) &&
                             layer.params()[0].blob->shape() == Shape{in[1]};
    if (!per_channel) {
      why = "not a per-channel scale of one bottom";
    } else {
      auto w = std::make_unique<ScaleWork>();
      w->has_bias = layer.params().size() > 1;
      work = std::move(w);
    }
  } else if (type == "Eltwise") {
    if (opt && opt->get_or<std::string>("operation", "sum") != "sum") {
      why = "operation " + opt->get<std::string>("operation");
    } else {
      auto w = std::make_unique<EltwiseSumWork>();
      w->coeffs = opt ? opt->get_list_or<float>("coeff", {}) : std::vector<float>{};
      if (w->coeffs.empty()) w->coeffs.assign(net.layer_bottoms(i).size(), 1.0f);
      work = std::move(w);
    }
  } else if (type == "Split") {
    work = std::make_unique<SplitWork>();
    work->method = "share";
  }
  return work;
}

}  // namespace taihu::sw26010
