#pragma once
// The time of one pass of a convolution on one core group with the method
// forced, timing only: the unit swCaffe publishes its per-layer measurements
// in (P Table II: forward, weight gradient and data gradient, implicit and
// explicit, at B = 128 on one CG). The kernel-level calibration
// (bench_sw26010_calibration --level=kernel) compares these with the table.

#include <cstdint>

#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/params.hpp"

namespace taihu::sw26010 {

enum class ConvPass { forward, weight_gradient, data_gradient };
const char* to_string(ConvPass p);

struct ConvPassTime {
  bool modelled = false;         // false: the model has no kernel for this pass and method
  std::int64_t cycles = 0;       // the convolution kernels (bias and its gradient included)
  std::int64_t bias = 0;         // of `cycles`, the bias (forward) or its gradient (weight gradient)
  // implicit: the layout transforms, not in `cycles`, of the tensors on the
  // input side (x, dx) and the output side (y, dy)
  std::int64_t input_transforms = 0, output_transforms = 0;
  std::int64_t transforms() const { return input_transforms + output_transforms; }
  std::int64_t total() const { return cycles + transforms(); }
};

// One pass with `method` forced, whatever swCaffe's dispatch rule says (the
// published table times implicit where the rule would not pick it). The
// implicit kernels need stride 1.
// `precision`: how the implicit kernels' GEMMs treat their data (core_group.hpp;
// T Fig. 9), by default as swCaffe's do (single: gemmfloat); the explicit
// GEMMs widen in LDM (float2double, swGEMM's) and the other kernels (im2col,
// transforms) move floats either way. `step`: the implicit forward kernel's
// outputs per GEMM step (swCaffe's by default; conv.hpp).
ConvPassTime time_conv_pass(const Params& params, const ConvShape& s, std::int64_t batch, ConvPass pass,
                            ConvMethod method, GemmPrecision precision = GemmPrecision::single,
                            ImplicitStep step = {});

}  // namespace taihu::sw26010
