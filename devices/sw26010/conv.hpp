#pragma once
// Convolution on one core group, both ways swCaffe does it (P §IV-B):
//  - explicit: per image, im2col on the CPEs, then the GEMM (W x col);
//    backward recomputes the columns, dW += dY col^T, dcol = W^T dY, col2im;
//  - implicit (swDNN): no column matrix; tensors in H x C x W x N layout,
//    filters as (kh, kw, No, C); per output row one GEMM problem whose K runs
//    over the kernel taps that fall inside the image (padding never
//    materialised), stepped as swCaffe's kernel does: one output pixel
//    column (the batch) per GEMM step, so a tap's filter slice is fetched
//    again for every pixel column (ImplicitStep for swDNN's two orders).
//    Stride 1 only, as the layout needs contiguous input runs.
// choose_conv_method times both (timing only, no numerics) and keeps the
// faster, as swCaffe does in its first iterations.

#include <cstdint>
#include <string>

#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

// y (batch x No x Ho x Wo) = conv(x (batch x C x H x W), w (No x C x kh x kw)) + bias (may be null).
// col: scratch of col_rows() x Ho*Wo floats.
KernelStats conv_forward_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                  const float* w, const float* bias, float* y, float* col);
// The two backward passes, as swCaffe times them apart (P Table II):
// weight gradient dw += dY col^T (im2col per image), db += sum dY (db may be null);
KernelStats conv_weight_gradient_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                          const float* dy, float* dw, float* db, float* col);
// data gradient dcol = W^T dY, dx = col2im(dcol) per image.
KernelStats conv_data_gradient_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* w,
                                        const float* dy, float* dx, float* col);
// Both: dw += .., db += .. (db may be null), dx = .. (dx may be null).
KernelStats conv_backward_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                   const float* w, const float* dy, float* dw, float* db, float* dx, float* col);
// How the implicit forward kernel steps its GEMM. Every step fetches one
// tap's filter slice (No x C) and the input it meets. The required bandwidth
// is (1/(outputs a filter fetch serves) + 1/(outputs an input fetch serves))
// x bytes / 2 per flop (D eq. 1, 2).
//  - swCaffe's kernel as P Table II times it: one output pixel column of the
//    whole batch per step, the input fetched again for each tap (the
//    default). Its source (C-swdnn1 sw_slave_conv_batch_pad_float.c) runs the
//    batch-size-aware order below with every DMA waited for, but at the
//    calibrated inner loop that order is 8-21% faster than P Table II: the
//    refetch stands in for a per-step cost the model lacks (bench/RESULTS.md,
//    SW26010 eleventh pass);
//  - swDNN's image-size-aware order (D Alg. 1): bCo output columns of bB
//    images per step, so a filter fetch serves bCo x bB outputs. The model
//    keeps the batch contiguous (H x C x W x N), so it steps the same
//    bCo x bB outputs as bCo x bB / batch whole-batch pixel columns: the
//    same traffic per step, in longer DMA runs;
//  - swDNN's batch-size-aware order (D Alg. 2; the loop nest CoStart -> Ro ->
//    Kr -> Ci -> Kc, sw26010.md §6.2): one pixel column per step, with as
//    many output columns resident in LDM as fit beside the tiles (CStride),
//    so an input column is fetched once for the Kc taps that read it
//    (GemmBlocking::c_blocks): an input fetch serves Kc x No outputs.
struct ImplicitStep {
  std::int64_t pixel_columns = 1;
  bool input_stationary = false;
  // bCo x bB outputs per step; bCo x bB must be a multiple of the batch.
  static ImplicitStep image_size_aware(std::int64_t b_co, std::int64_t b_b, std::int64_t batch);
  static ImplicitStep batch_size_aware() { return {1, true}; }
};
// The tiles (and resident C blocks) the implicit forward kernel steps with.
GemmBlocking implicit_forward_blocking(const Params& params, const ConvShape& s, std::int64_t batch,
                                       ImplicitStep step = {});

// x: H x C x W x batch; w: kh x kw x No x C; y: Ho x No x Wo x batch.
// Row pitches (floats between rows h of x and rows ho of y; 0: C*W*batch and
// No*Wo*batch) let one group of a grouped convolution work on its channel
// slice of the whole tensors.
KernelStats conv_forward_implicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                  const float* w, const float* bias, float* y, std::int64_t x_row_pitch = 0,
                                  std::int64_t y_row_pitch = 0, ImplicitStep step = {});
// Filters (No x C x kh x kw) to the implicit layout (kh x kw x No x C); host side (done once per update).
void filters_to_implicit(const ConvShape& s, const float* w, float* w_implicit);

// The implicit backward passes (swDNN's, P §IV-C), stride 1, in the same
// H x C x W x N layout. Data gradient: the forward kernel on the adjoint
// convolution (dy's No channels in, C out, the kernel flipped, padding
// kh - 1 - pad), filters as filters_to_implicit_data_gradient gives them;
// dx: H x C x W x batch.
KernelStats conv_data_gradient_implicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* dy,
                                        const float* w_adjoint, float* dx);
// Filters (No x C x kh x kw) to the data gradient's layout: kh x kw x C x No, flipped in both taps.
void filters_to_implicit_data_gradient(const ConvShape& s, const float* w, float* w_adjoint);
// The adjoint shape the data gradient runs the forward kernel on.
ConvShape data_gradient_shape(const ConvShape& s);
// Weight gradient: per kernel tap one GEMM problem dW_tap (No x C) += sum over
// output pixels of dY_pixel (No x N) x_pixel^T, one GEMM step of K = N per
// (tap, pixel) and its data widened to double, as swCaffe runs it (swDNN's
// float2double kernel with the batch as the reduction: C-swcaffe
// sw_slave_conv_pad_float2double.c);
// dw in the implicit filter layout (kh x kw x No x C); db += sum dY (may be null).
KernelStats conv_weight_gradient_implicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                          const float* dy, float* dw, float* db);

enum class ConvMethod { explicit_gemm, implicit };
const char* to_string(ConvMethod m);
struct ConvChoice {
  ConvMethod method = ConvMethod::explicit_gemm;  // the forward pass's
  std::int64_t explicit_cycles = 0;
  std::int64_t implicit_cycles = 0;  // 0: not eligible (implicit_forward_eligible)
  // The backward passes, each chosen apart (implicit_backward_eligible, then the faster)
  ConvMethod weight_gradient = ConvMethod::explicit_gemm, data_gradient = ConvMethod::explicit_gemm;
  // "implicit" or, when a backward pass differs from the forward,
  // "implicit (wgrad explicit, dgrad implicit)"
  std::string describe() const;
  // Every pass the layer runs is implicit (the data gradient counts only when
  // it is computed): the layer can sit inside a run of implicit layers
  // (layout_runs.hpp).
  bool implicit_throughout(bool data_gradient_needed) const {
    return method == ConvMethod::implicit && weight_gradient == ConvMethod::implicit &&
           (!data_gradient_needed || data_gradient == ConvMethod::implicit);
  }
};
// swCaffe's dispatch rule for its implicit forward kernel (C-swcaffe
// conv_layer.cpp; shared/reference/sw26010.md §6.2): batch >= 128, input and
// output channels >= 64 and multiples of 32, one group. The model's implicit
// kernel also needs stride 1. `s` is one group's shape; `batch` the images on
// the core group.
bool implicit_forward_eligible(const ConvShape& s, std::int64_t batch, std::int64_t groups = 1);
// The backward rule (same source): batch >= 64 and a multiple of 32, input
// channels >= 128 and a multiple of 128, output channels >= 64 and a multiple
// of 32; one group and stride 1 as above.
bool implicit_backward_eligible(const ConvShape& s, std::int64_t batch, std::int64_t groups = 1);
// Times each pass both ways on a scratch core group (no numerics), as swCaffe
// times its first iterations, where the pass's implicit rule allows it; else
// explicit. The implicit times include the layout transforms in and out.
ConvChoice choose_conv_method(const Params& params, const ConvShape& s, std::int64_t batch,
                              std::int64_t groups = 1);

}  // namespace taihu::sw26010
