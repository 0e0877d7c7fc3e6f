#include "devices/sw26010/conv_passes.hpp"

#include "devices/sw26010/conv_bias.hpp"
#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

const char* to_string(ConvPass p) {
  switch (p) {
    case ConvPass::forward: return "forward";
    case ConvPass::weight_gradient: return "weight gradient";
    case ConvPass::data_gradient: return "data gradient";
  }
  return "?";
}

ConvPassTime time_conv_pass(const Params& params, const ConvShape& s, std::int64_t batch, ConvPass pass,
                            ConvMethod method, GemmPrecision precision, ImplicitStep step) {
  // Timing only: the kernels move no data, so one aligned address serves for every tensor.
  CoreGroup cg(0, params);
  cg.set_numerics(false);
  cg.set_implicit_precision(precision);  // the explicit GEMMs keep float2double (swGEMM's)
  float* p = timing_address();
  const std::int64_t plane = s.out_height() * s.out_width();
  ConvPassTime t;
  if (method == ConvMethod::implicit) {
    if (s.stride_h != 1 || s.stride_w != 1) return t;
    t.modelled = true;
    // the tensors each pass reads or writes in the implicit layout, as transforms from or to N x C x H x W
    const std::int64_t x_in = to_hcwn(cg, p, p, batch, s.channels, s.height, s.width).cycles;
    const std::int64_t dy_in = to_hcwn(cg, p, p, batch, s.num_output, s.out_height(), s.out_width()).cycles;
    switch (pass) {
      case ConvPass::forward:
        // the bias as swCaffe adds it, on the N x C x H x W output (conv_bias.hpp)
        t.bias = conv_bias_forward(cg, batch, s.num_output, plane, p, p).cycles;
        t.cycles = conv_forward_implicit(cg, s, batch, p, p, nullptr, p, 0, 0, step).cycles + t.bias;
        t.input_transforms = x_in;
        t.output_transforms = to_nchw(cg, p, p, batch, s.num_output, s.out_height(), s.out_width()).cycles;
        break;
      case ConvPass::weight_gradient:
        t.bias = conv_bias_gradient(cg, batch, s.num_output, plane, p, p).cycles;
        t.cycles = conv_weight_gradient_implicit(cg, s, batch, p, p, p, nullptr).cycles + t.bias;
        t.input_transforms = x_in, t.output_transforms = dy_in;
        break;
      case ConvPass::data_gradient:
        t.cycles = conv_data_gradient_implicit(cg, s, batch, p, p, p).cycles;
        t.input_transforms = to_nchw(cg, p, p, batch, s.channels, s.height, s.width).cycles;
        t.output_transforms = dy_in;
        break;
    }
    return t;
  }
  t.modelled = true;
  switch (pass) {
    case ConvPass::forward:
      t.cycles = conv_forward_explicit(cg, s, batch, p, p, p, p, p).cycles;
      t.bias = conv_bias_forward(cg, batch, s.num_output, plane, p, p).cycles;  // its share, timed again
      break;
    case ConvPass::weight_gradient:
      t.cycles = conv_weight_gradient_explicit(cg, s, batch, p, p, p, p, p).cycles;
      t.bias = conv_bias_gradient(cg, batch, s.num_output, plane, p, p).cycles;
      break;
    case ConvPass::data_gradient: t.cycles = conv_data_gradient_explicit(cg, s, batch, p, p, p, p).cycles; break;
  }
  return t;
}

}  // namespace taihu::sw26010
