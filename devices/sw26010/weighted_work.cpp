// Convolution and InnerProduct as device work: forward per group, backward in
// phases (weight gradients | data gradients | CG 0 adds the groups' partials).

#include <algorithm>

#include "core/layers/convolution.hpp"
#include "devices/sw26010/blas_gemm.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/conv_bias.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/layer_work.hpp"

namespace taihu::sw26010 {

namespace {

constexpr int groups = Chip::groups;
using LayerWork = NetPlan::LayerWork;

// Weight and bias gradients of a layer whose batch is split over the groups:
// group 0 accumulates into the parameter diffs, groups 1-3 into their own
// zeroed buffers, which CG 0 then adds (P §V-A).
struct GradientPartials {
  float* weight(const LayerWork& w, int g, std::int64_t n, Blob& param) const {
    if (g == 0) return param.diff().ptr();
    float* p = w.scratch(g).get(LayerWork::weight_partial_slot, n);
    std::fill(p, p + n, 0.0f);
    return p;
  }
  float* bias(const LayerWork& w, int g, std::int64_t n, Blob& param) const {
    if (g == 0) return param.diff().ptr();
    float* p = w.scratch(g).get(LayerWork::bias_partial_slot, n);
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
        LayerWork::add_to(total, axpy_mpe(w.cg(0), w.scratch(g).get(LayerWork::weight_partial_slot, n), d, n));
      }
      if (bias) {
        const std::int64_t n = bias->count();
        float* d = bias->diff().ptr();
        LayerWork::add_to(total, axpy_mpe(w.cg(0), w.scratch(g).get(LayerWork::bias_partial_slot, n), d, n));
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
          add_to(total, blas_gemm(c, Transpose::yes, Transpose::no, rows, out_plane, s.num_output, 1.0f,
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
        add_to(total, blas_gemm(c, Transpose::no, Transpose::yes, s.num_output, rows, out_plane, 1.0f,
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
      add_to(total, blas_gemm(c, Transpose::no, Transpose::yes, count, outputs, inputs, 1.0f, x, inputs, w, inputs, 0.0f,
                         y, outputs));
      if (has_bias) add_to(total, eltwise_sum(c, y, bias_rows.data(), y, count * outputs));
      return total;
    }
    if (is_sum_phase(pass, phase)) return GradientPartials::sum(*this, &weight(), bias());
    const float* dy = top()[0]->diff().ptr() + begin * outputs;
    if (is_data_phase(phase)) {
      float* dx = bottom()[0]->diff().ptr() + begin * inputs;
      return blas_gemm(c, Transpose::no, Transpose::no, count, inputs, outputs, 1.0f, dy, outputs, w, inputs, 0.0f, dx,
                  inputs);
    }
    GradientPartials partials;
    float* dw = partials.weight(*this, g, weight().count(), weight());
    add_to(total, blas_gemm(c, Transpose::yes, Transpose::no, outputs, inputs, count, 1.0f, dy, outputs, x, inputs, 1.0f,
                       dw, inputs));
    if (has_bias) {
      float* db = partials.bias(*this, g, outputs, *bias());
      add_to(total, blas_gemm(c, Transpose::no, Transpose::no, 1, outputs, count, 1.0f, ones.data(), count, dy, outputs,
                         1.0f, db, outputs));
    }
    return total;
  }
};

}  // namespace

std::unique_ptr<LayerWork> make_convolution_work(NetPlan& plan, std::size_t i, std::string& why) {
  Layer& layer = plan.net().layer(i);
  const ConvGeometry& geo = static_cast<const ConvolutionLayer&>(layer).geometry();
  if (geo.dilation_h != 1 || geo.dilation_w != 1) {
    why = "dilation";
    return nullptr;
  }
  auto w = std::make_unique<ConvWork>();
  w->plan = &plan, w->index = i;
  w->setup(geo, *layer.params()[0].blob);
  return w;
}

std::unique_ptr<LayerWork> make_inner_product_work(NetPlan& plan, std::size_t i, std::string& why) {
  const config::Section* opt = plan.net().description().find("layer", plan.net().layer(i).name());
  if (opt && opt->get_or<int>("axis", 1) != 1) {
    why = "axis != 1";
    return nullptr;
  }
  auto w = std::make_unique<InnerProductWork>();
  w->plan = &plan, w->index = i;
  w->setup();
  return w;
}

}  // namespace taihu::sw26010
