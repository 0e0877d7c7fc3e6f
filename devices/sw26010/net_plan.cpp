#include "devices/sw26010/net_plan.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "core/common/check.hpp"
#include "core/layers/batch_norm.hpp"
#include "core/layers/convolution.hpp"
#include "core/layers/window_options.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/conv_bias.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

namespace {

constexpr int groups = Chip::groups;

// Per-group main-memory buffers, shared by all layers of the group (layers
// run one at a time): slots below.
enum Slot : int { col_slot = 0, hcwn_in_slot, hcwn_out_slot, weight_partial_slot, bias_partial_slot };

Shape with_batch(const Shape& s, std::int64_t batch) {
  if (s.rank() == 0) return s;
  auto dims = s.dims();
  dims[0] = batch;
  return Shape(dims);
}

std::int64_t per_sample(const Blob& b) {
  const Shape& s = b.shape();
  return s.rank() == 0 || s[0] == 0 ? s.count() : s.count() / s[0];
}

void add_to(KernelStats& total, const KernelStats& s) {
  if (total.kernel.empty()) total.kernel = s.kernel;
  total += s;
}

}  // namespace

// ---------------------------------------------------------------- layer work

struct NetPlan::LayerWork {
  NetPlan* plan = nullptr;
  std::size_t index = 0;
  Placement placement = Placement::device;
  std::string method;
  std::int64_t modelled_batch = -1;  // host_modelled: the share `modelled` is for
  LayerTiming modelled;

  virtual ~LayerWork() = default;
  virtual int phases(Pass) const { return 0; }
  virtual Stage stage(Pass pass, int) const { return pass == Pass::forward ? Stage::forward : Stage::data_gradient; }
  // A phase that only core group 0 runs (the weight-gradient sum).
  virtual bool group0_only(Pass, int) const { return false; }
  virtual void before(Pass, int) {}
  virtual KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int phase) { return {}; }
  virtual void finish(Pass) {}
  // Every pass on the device in the implicit layout (layout_runs.hpp).
  virtual bool implicit_throughout() const { return false; }

  Net& net() const { return plan->net(); }
  Layer& layer() const { return net().layer(index); }
  const BlobVec& bottom() const { return net().layer_bottoms(index); }
  const BlobVec& top() const { return net().layer_tops(index); }
  bool down(std::size_t k) const {
    const auto& p = net().layer_propagate_down(index);
    return k < p.size() && p[k];
  }
  const config::Section* options() const { return net().description().find("layer", layer().name()); }
  Scratch& scratch(int g) const { return *plan->scratch_[std::size_t(g)]; }
  CoreGroup& cg(int g) const { return plan->group(g); }
  std::int64_t largest_share() const { return (net().batch() + groups - 1) / groups; }
  // Whether group g works this pass (its share of the batch is not empty).
  bool active(int g) const { return plan->share(g).second > plan->share(g).first; }
};

namespace {

using LayerWork = NetPlan::LayerWork;

// Weight and bias gradients of a layer whose batch is split over the groups:
// group 0 accumulates into the parameter diffs, groups 1-3 into their own
// zeroed buffers, which CG 0 then adds (P §V-A).
struct GradientPartials {
  float* weight(const LayerWork& w, int g, std::int64_t n, Blob& param) const {
    if (g == 0) return param.diff().ptr();
    float* p = w.scratch(g).get(weight_partial_slot, n);
    std::fill(p, p + n, 0.0f);
    return p;
  }
  float* bias(const LayerWork& w, int g, std::int64_t n, Blob& param) const {
    if (g == 0) return param.diff().ptr();
    float* p = w.scratch(g).get(bias_partial_slot, n);
    std::fill(p, p + n, 0.0f);
    return p;
  }
  // On CG 0: diff += the other groups' partials, on its MPE (caffe_axpy is the
  // host BLAS in swCaffe's build, iteration.hpp).
  static KernelStats sum(const LayerWork& w, Blob* weight, Blob* bias) {
    KernelStats total;
    for (int g = 1; g < groups; ++g) {
      if (!w.active(g)) continue;
      if (weight) {
        const std::int64_t n = weight->count();
        float* d = weight->diff().ptr();
        add_to(total, axpy_mpe(w.cg(0), w.scratch(g).get(weight_partial_slot, n), d, n));
      }
      if (bias) {
        const std::int64_t n = bias->count();
        float* d = bias->diff().ptr();
        add_to(total, axpy_mpe(w.cg(0), w.scratch(g).get(bias_partial_slot, n), d, n));
      }
    }
    return total;
  }
};

// Backward phases of a layer with weights: weights | data (if needed) | sum on CG 0.
struct WeightedWork : LayerWork {
  bool needs_data() const { return down(0); }
  int phases(Pass pass) const override { return pass == Pass::forward ? 1 : (needs_data() ? 3 : 2); }
  bool is_data_phase(int phase) const { return needs_data() && phase == 1; }
  bool is_sum_phase(Pass pass, int phase) const { return pass == Pass::backward && phase == phases(pass) - 1; }
  Stage stage(Pass pass, int phase) const override {
    if (pass == Pass::forward) return Stage::forward;
    return is_data_phase(phase) ? Stage::data_gradient : Stage::weight_gradient;
  }
  bool group0_only(Pass pass, int phase) const override { return is_sum_phase(pass, phase); }
};

// ---- Convolution: each pass explicit (im2col + GEMM, col2im) or implicit (H x C x W x N).
struct ConvWork final : WeightedWork {
  ConvShape s;  // one convolution group
  std::int64_t conv_groups = 1, in_size = 0, out_size = 0, out_plane = 0, weights_per_group = 0;
  bool has_bias = false;
  ConvMethod conv_method = ConvMethod::explicit_gemm;
  ConvMethod weight_gradient_method = ConvMethod::explicit_gemm, data_gradient_method = ConvMethod::explicit_gemm;
  AlignedVector<float> implicit_filters, adjoint_filters;
  std::array<AlignedVector<float>, groups> implicit_weight_gradients;  // per core group (run concurrently)
  // Inside a run of implicit convolutions: x or y already in the implicit layout
  bool x_implicit = false, y_implicit = false;

  void setup(const ConvGeometry& geo, const Blob& weight) {
    conv_groups = geo.channels / weight.shape()[1];
    s.channels = geo.channels / conv_groups, s.height = geo.height, s.width = geo.width;
    s.num_output = weight.shape()[0] / conv_groups;
    s.kernel_h = geo.kernel_h, s.kernel_w = geo.kernel_w, s.stride_h = geo.stride_h, s.stride_w = geo.stride_w;
    s.pad_h = geo.pad_h, s.pad_w = geo.pad_w;
    out_plane = s.out_height() * s.out_width();
    in_size = geo.channels * s.height * s.width;
    out_size = s.num_output * conv_groups * out_plane;
    weights_per_group = s.num_output * s.col_rows();
    has_bias = layer().params().size() > 1;
  }
  Blob& weight() const { return *layer().params()[0].blob; }
  Blob* bias() const { return has_bias ? layer().params()[1].blob.get() : nullptr; }

  // swCaffe times both methods in its first iterations and keeps the faster
  // (timed once per geometry and batch share); the implicit backward kernels
  // work on whole tensors: one convolution group
  ConvChoice choice() const {
    ConvChoice c = plan->conv_choice(s, largest_share(), conv_groups);
    if (conv_groups != 1) c.weight_gradient = c.data_gradient = ConvMethod::explicit_gemm;
    return c;
  }
  bool implicit_throughout() const override { return choice().implicit_throughout(needs_data()); }
  // A layout conversion: computed (the blobs hold Caffe's layout), charged
  // unless the tensor is inside a run (swCaffe's transform layer, layout_runs.hpp).
  static void add_transform(KernelStats& total, const KernelStats& t, bool inside_run) {
    if (!inside_run) add_to(total, t);
  }

  void before(Pass pass, int phase) override {
    if (pass != Pass::forward) return;
    const ConvChoice chosen = choice();
    conv_method = chosen.method;
    weight_gradient_method = chosen.weight_gradient, data_gradient_method = chosen.data_gradient;
    method = chosen.describe();
    const LayerLayouts& layouts = plan->layouts(index);
    x_implicit = layouts.bottom_implicit, y_implicit = layouts.top_implicit;
    if (data_gradient_method == ConvMethod::implicit) {
      // the weights do not change between this forward pass and its backward pass
      adjoint_filters.resize(std::size_t(weight().count()));
      filters_to_implicit_data_gradient(s, weight().data().ptr(), adjoint_filters.data());
    }
    if (conv_method == ConvMethod::implicit) {
      // per convolution group: kh x kw x No/g x C/g
      implicit_filters.resize(std::size_t(weight().count()));
      for (std::int64_t k = 0; k < conv_groups; ++k)
        filters_to_implicit(s, weight().data().ptr() + k * weights_per_group,
                            implicit_filters.data() + k * weights_per_group);
    }
  }

  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int phase) override {
    CoreGroup& c = cg(g);
    const float* x = bottom()[0]->data().ptr() + begin * in_size;
    const float* w = weight().data().ptr();
    const std::int64_t group_in = s.channels * s.height * s.width, group_out = s.num_output * out_plane;
    KernelStats total;
    if (pass == Pass::forward) {
      float* y = top()[0]->data().ptr() + begin * out_size;
      const float* b = has_bias ? bias()->data().ptr() : nullptr;
      if (conv_method == ConvMethod::implicit) {
        float* xi = scratch(g).get(hcwn_in_slot, count * in_size);
        float* yi = scratch(g).get(hcwn_out_slot, count * out_size);
        const std::int64_t channels = s.channels * conv_groups, outputs = s.num_output * conv_groups;
        add_transform(total, to_hcwn(c, x, xi, count, channels, s.height, s.width), x_implicit);
        if (conv_groups == 1) {
          add_to(total, conv_forward_implicit(c, s, count, xi, implicit_filters.data(), nullptr, yi));
        } else {
          // each group on its channel slice of the H x C x W x N tensors
          const std::int64_t x_pitch = channels * s.width * count, y_pitch = outputs * s.out_width() * count;
          for (std::int64_t k = 0; k < conv_groups; ++k)
            add_to(total, conv_forward_implicit(c, s, count, xi + k * s.channels * s.width * count,
                                                implicit_filters.data() + k * weights_per_group, nullptr,
                                                yi + k * s.num_output * s.out_width() * count, x_pitch, y_pitch));
        }
        add_transform(total, to_nchw(c, yi, y, count, outputs, s.out_height(), s.out_width()), y_implicit);
        // the bias on the N x C x H x W output, as swCaffe adds it after either method (conv_bias.hpp)
        if (b) add_to(total, conv_bias_forward(c, count, outputs, out_plane, b, y));
        return total;
      }
      float* col = scratch(g).get(col_slot, s.col_rows() * out_plane);
      if (conv_groups == 1) return conv_forward_explicit(c, s, count, x, w, b, y, col);
      for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t k = 0; k < conv_groups; ++k)
          add_to(total, conv_forward_explicit(c, s, 1, x + i * in_size + k * group_in, w + k * weights_per_group,
                                              nullptr, y + i * out_size + k * group_out, col));
      if (b) add_to(total, conv_bias_forward(c, count, s.num_output * conv_groups, out_plane, b, y));
      return total;
    }
    if (is_sum_phase(pass, phase)) return GradientPartials::sum(*this, &weight(), bias());
    const float* dy = top()[0]->diff().ptr() + begin * out_size;
    const std::int64_t rows = s.col_rows();
    float* col = scratch(g).get(col_slot, rows * out_plane);
    if (is_data_phase(phase)) {
      float* dx = bottom()[0]->diff().ptr() + begin * in_size;
      if (data_gradient_method == ConvMethod::implicit) {
        float* dyi = scratch(g).get(hcwn_out_slot, count * out_size);
        float* dxi = scratch(g).get(hcwn_in_slot, count * in_size);
        add_transform(total, to_hcwn(c, dy, dyi, count, s.num_output, s.out_height(), s.out_width()), y_implicit);
        add_to(total, conv_data_gradient_implicit(c, s, count, dyi, adjoint_filters.data(), dxi));
        add_transform(total, to_nchw(c, dxi, dx, count, s.channels, s.height, s.width), x_implicit);
        return total;
      }
      for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t k = 0; k < conv_groups; ++k) {
          float* dxi = dx + i * in_size + k * group_in;
          float* target = s.pointwise() ? dxi : col;
          add_to(total, gemm(c, Transpose::yes, Transpose::no, rows, out_plane, s.num_output, 1.0f,
                             w + k * weights_per_group, rows, dy + i * out_size + k * group_out, out_plane, 0.0f,
                             target, out_plane));
          if (!s.pointwise()) add_to(total, col2im(c, s, col, dxi));
        }
      return total;
    }
    // weight gradients of this group's images
    GradientPartials partials;
    float* dw = partials.weight(*this, g, weight().count(), weight());
    if (weight_gradient_method == ConvMethod::implicit) {
      // dW in the implicit layout (kh x kw x No x C) from zero, then added into this group's
      // partial in Caffe's layout on the host (the weight transform, not charged: T Table 5)
      float* xi = scratch(g).get(hcwn_in_slot, count * in_size);
      float* dyi = scratch(g).get(hcwn_out_slot, count * out_size);
      add_transform(total, to_hcwn(c, x, xi, count, s.channels, s.height, s.width), x_implicit);
      add_transform(total, to_hcwn(c, dy, dyi, count, s.num_output, s.out_height(), s.out_width()), y_implicit);
      auto& dwi = implicit_weight_gradients[std::size_t(g)];
      dwi.assign(std::size_t(weight().count()), 0.0f);
      add_to(total, conv_weight_gradient_implicit(c, s, count, xi, dyi, dwi.data(), nullptr));
      if (c.numerics())
        for (std::int64_t o = 0; o < s.num_output; ++o)
          for (std::int64_t ch = 0; ch < s.channels; ++ch)
            for (std::int64_t kh = 0; kh < s.kernel_h; ++kh)
              for (std::int64_t kw = 0; kw < s.kernel_w; ++kw)
                dw[((o * s.channels + ch) * s.kernel_h + kh) * s.kernel_w + kw] +=
                    dwi[std::size_t(((kh * s.kernel_w + kw) * s.num_output + o) * s.channels + ch)];
    }
    for (std::int64_t i = 0; i < count && weight_gradient_method == ConvMethod::explicit_gemm; ++i)
      for (std::int64_t k = 0; k < conv_groups; ++k) {
        const float* cols = x + i * in_size + k * group_in;
        if (!s.pointwise()) {
          add_to(total, im2col(c, s, cols, col));
          cols = col;
        }
        add_to(total, gemm(c, Transpose::no, Transpose::yes, s.num_output, rows, out_plane, 1.0f,
                           dy + i * out_size + k * group_out, out_plane, cols, out_plane, 1.0f,
                           dw + k * weights_per_group, rows));
      }
    if (has_bias) {
      const std::int64_t channels = s.num_output * conv_groups;
      float* db = partials.bias(*this, g, channels, *bias());
      add_to(total, conv_bias_gradient(c, count, channels, out_plane, dy, db));
    }
    return total;
  }
};

// ---- InnerProduct (axis 1): y = x W^T + b.
struct InnerProductWork final : WeightedWork {
  std::int64_t inputs = 0, outputs = 0;
  bool has_bias = false;
  AlignedVector<float> bias_rows, ones;  // the bias replicated per sample; ones for its gradient

  Blob& weight() const { return *layer().params()[0].blob; }
  Blob* bias() const { return has_bias ? layer().params()[1].blob.get() : nullptr; }
  void setup() {
    outputs = weight().shape()[0];
    inputs = weight().shape()[1];
    has_bias = layer().params().size() > 1;
  }
  void before(Pass pass, int phase) override {
    const std::int64_t q = largest_share();
    if (pass == Pass::forward && has_bias) {
      bias_rows.resize(std::size_t(q * outputs));
      const float* b = bias()->data().ptr();
      for (std::int64_t i = 0; i < q; ++i) std::copy(b, b + outputs, bias_rows.begin() + i * outputs);
    }
    if (pass == Pass::backward && phase == 0) ones.assign(std::size_t(q), 1.0f);
  }
  KernelStats run(int g, std::int64_t begin, std::int64_t count, Pass pass, int phase) override {
    CoreGroup& c = cg(g);
    const float* x = bottom()[0]->data().ptr() + begin * inputs;
    const float* w = weight().data().ptr();
    KernelStats total;
    if (pass == Pass::forward) {
      float* y = top()[0]->data().ptr() + begin * outputs;
      add_to(total, gemm(c, Transpose::no, Transpose::yes, count, outputs, inputs, 1.0f, x, inputs, w, inputs, 0.0f,
                         y, outputs));
      if (has_bias) add_to(total, eltwise_sum(c, y, bias_rows.data(), y, count * outputs));
      return total;
    }
    if (is_sum_phase(pass, phase)) return GradientPartials::sum(*this, &weight(), bias());
    const float* dy = top()[0]->diff().ptr() + begin * outputs;
    if (is_data_phase(phase)) {
      float* dx = bottom()[0]->diff().ptr() + begin * inputs;
      return gemm(c, Transpose::no, Transpose::no, count, inputs, outputs, 1.0f, dy, outputs, w, inputs, 0.0f, dx,
                  inputs);
    }
    GradientPartials partials;
    float* dw = partials.weight(*this, g, weight().count(), weight());
    add_to(total, gemm(c, Transpose::yes, Transpose::no, outputs, inputs, count, 1.0f, dy, outputs, x, inputs, 1.0f,
                       dw, inputs));
    if (has_bias) {
      float* db = partials.bias(*this, g, outputs, *bias());
      add_to(total, gemm(c, Transpose::no, Transpose::no, 1, outputs, count, 1.0f, ones.data(), count, dy, outputs,
                         1.0f, db, outputs));
    }
    return total;
  }
};

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

// Layers the device model times but whose numbers come from the layer's CPU
// code: softmax runs on the MPE (an ordinary core), the rest are DMA-bound
// passes layer_timing models.
bool host_modelled_type(const std::string& type) {
  return type == "Softmax" || type == "SoftmaxWithLoss" || type == "LRN" || type == "Concat" || type == "Dropout";
}

}  // namespace

// ---------------------------------------------------------------- the plan

NetPlan::NetPlan(Net& net, const Params& params) : net_(net), params_(params) {
  for (int g = 0; g < groups; ++g) {
    groups_[std::size_t(g)] = std::make_unique<CoreGroup>(g, params_);
    scratch_[std::size_t(g)] = std::make_unique<Scratch>(true);
  }
  timing_group_ = std::make_unique<CoreGroup>(0, params_);
  timing_group_->set_numerics(false);
  const config::Document& doc = net.description();
  for (std::size_t i = 0; i < net.num_layers(); ++i) {
    Layer& layer = net.layer(i);
    const std::string type = layer.type();
    const config::Section* opt = doc.find("layer", layer.name());
    std::unique_ptr<LayerWork> work;
    std::string why;  // why a device type falls back to the host
    if (type == "Convolution") {
      const auto& conv = static_cast<const ConvolutionLayer&>(layer);
      const ConvGeometry& geo = conv.geometry();
      if (geo.dilation_h != 1 || geo.dilation_w != 1) {
        why = "dilation";
      } else {
        auto w = std::make_unique<ConvWork>();
        w->plan = this, w->index = i;
        w->setup(geo, *layer.params()[0].blob);
        work = std::move(w);
      }
    } else if (type == "InnerProduct") {
      if (opt && opt->get_or<int>("axis", 1) != 1) {
        why = "axis != 1";
      } else {
        auto w = std::make_unique<InnerProductWork>();
        w->plan = this, w->index = i;
        w->setup();
        work = std::move(w);
      }
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
