#include "devices/sw26010/conv.hpp"

#include <algorithm>
#include <vector>

#include "core/common/check.hpp"
#include "devices/sw26010/blas_gemm.hpp"
#include "devices/sw26010/conv_bias.hpp"
#include "devices/sw26010/conv_passes.hpp"
#include "devices/sw26010/gemm.hpp"

namespace taihu::sw26010 {

namespace {
void add(KernelStats& total, const KernelStats& s) {
  if (total.kernel.empty()) total.kernel = s.kernel;
  total += s;
}

// Runs a kernel's GEMM steps at a given precision and restores the core
// group's own afterwards (the explicit GEMMs keep theirs: swGEMM's float2double).
class ScopedGemmPrecision {
 public:
  ScopedGemmPrecision(CoreGroup& cg, GemmPrecision precision) : cg_(cg), saved_(cg.gemm_precision()) {
    cg.set_gemm_precision(precision);
  }
  ~ScopedGemmPrecision() { cg_.set_gemm_precision(saved_); }
  ScopedGemmPrecision(const ScopedGemmPrecision&) = delete;
  ScopedGemmPrecision& operator=(const ScopedGemmPrecision&) = delete;

 private:
  CoreGroup& cg_;
  GemmPrecision saved_;
};
}  // namespace

const char* to_string(ConvMethod m) { return m == ConvMethod::implicit ? "implicit" : "explicit"; }

KernelStats conv_forward_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                  const float* w, const float* bias, float* y, float* col) {
  KernelStats total;
  total.kernel = "conv_forward_explicit";
  const std::int64_t out = s.out_height() * s.out_width(), in = s.channels * s.height * s.width;
  for (std::int64_t i = 0; i < batch; ++i) {
    const float* cols = x + i * in;
    if (!s.pointwise()) {
      add(total, im2col(cg, s, x + i * in, col));
      cols = col;
    }
    add(total, blas_gemm(cg, Transpose::no, Transpose::no, s.num_output, out, s.col_rows(), 1.0f, w, s.col_rows(), cols,
                    out, 0.0f, y + i * s.num_output * out, out));
  }
  // swCaffe adds the bias after all images' GEMMs, one K = 1 GEMM per image (conv_bias.hpp)
  if (bias) add(total, conv_bias_forward(cg, batch, s.num_output, out, bias, y));
  total.kernel = "conv_forward_explicit";
  return total;
}

KernelStats conv_weight_gradient_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                          const float* dy, float* dw, float* db, float* col) {
  KernelStats total;
  const std::int64_t out = s.out_height() * s.out_width(), in = s.channels * s.height * s.width;
  const std::int64_t rows = s.col_rows();
  for (std::int64_t i = 0; i < batch; ++i) {
    const float* cols = x + i * in;
    if (!s.pointwise()) {
      add(total, im2col(cg, s, x + i * in, col));
      cols = col;
    }
    // dW (No x rows) += dY (No x out) * col^T
    add(total, blas_gemm(cg, Transpose::no, Transpose::yes, s.num_output, rows, out, 1.0f, dy + i * s.num_output * out, out,
                    cols, out, 1.0f, dw, rows));
  }
  // the bias gradient: one MPE gemv per image (conv_bias.hpp)
  if (db) add(total, conv_bias_gradient(cg, batch, s.num_output, out, dy, db));
  total.kernel = "conv_weight_gradient_explicit";
  return total;
}

KernelStats conv_data_gradient_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* w,
                                        const float* dy, float* dx, float* col) {
  KernelStats total;
  const std::int64_t out = s.out_height() * s.out_width(), in = s.channels * s.height * s.width;
  const std::int64_t rows = s.col_rows();
  for (std::int64_t i = 0; i < batch; ++i) {
    float* target = s.pointwise() ? dx + i * in : col;
    add(total, blas_gemm(cg, Transpose::yes, Transpose::no, rows, out, s.num_output, 1.0f, w, rows,
                    dy + i * s.num_output * out, out, 0.0f, target, out));
    if (!s.pointwise()) add(total, col2im(cg, s, col, dx + i * in));
  }
  total.kernel = "conv_data_gradient_explicit";
  return total;
}

KernelStats conv_backward_explicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                   const float* w, const float* dy, float* dw, float* db, float* dx, float* col) {
  KernelStats total = conv_weight_gradient_explicit(cg, s, batch, x, dy, dw, db, col);
  if (dx) total += conv_data_gradient_explicit(cg, s, batch, w, dy, dx, col);
  total.kernel = "conv_backward_explicit";
  return total;
}

void filters_to_implicit(const ConvShape& s, const float* w, float* wi) {
  for (std::int64_t o = 0; o < s.num_output; ++o)
    for (std::int64_t c = 0; c < s.channels; ++c)
      for (std::int64_t kh = 0; kh < s.kernel_h; ++kh)
        for (std::int64_t kw = 0; kw < s.kernel_w; ++kw)
          wi[((kh * s.kernel_w + kw) * s.num_output + o) * s.channels + c] =
              w[((o * s.channels + c) * s.kernel_h + kh) * s.kernel_w + kw];
}

ImplicitStep ImplicitStep::image_size_aware(std::int64_t b_co, std::int64_t b_b, std::int64_t batch) {
  require<ConfigError>(b_co > 0 && b_b > 0 && batch > 0 && b_co * b_b % batch == 0,
                       "image-size-aware step: bCo x bB = {} x {} is not a multiple of the batch {}", b_co, b_b, batch);
  return {b_co * b_b / batch};
}

GemmBlocking implicit_forward_blocking(const Params& params, const ConvShape& s, std::int64_t batch,
                                       ImplicitStep step) {
  // One GEMM step per `step.pixel_columns` output pixel columns: the C block spans them whole, so
  // a tap's filter slice is fetched (and widened) once for all of them. The tiles of M and K are
  // what one pixel column's GEMM would take; a wider step gives up K depth first where the C and
  // B tiles need the room.
  const auto budget = std::size_t(params.ldm_budget_bytes);
  GemmBlocking b = GemmBlocking::choose(s.num_output, batch, s.channels, params);
  if (step.pixel_columns > 1) {
    b.tile_n = int(ceil_div(step.pixel_columns * batch, 32) * 4);
    while (b.tile_k > 4 && b.ldm_bytes() > budget) b.tile_k -= 4;
  }
  if (step.input_stationary) {
    // the batch-size-aware order: as many C blocks (output columns) resident as fit beside the
    // tiles, at most a row's (C-swdnn1's CStride: the LDM left after the input and filter tiles)
    const std::int64_t row_blocks = ceil_div(s.out_width() * batch, 8 * b.tile_n);
    const auto with_one_more = [&b] {
      GemmBlocking wider = b;
      ++wider.c_blocks;
      return wider.ldm_bytes();
    };
    while (b.c_blocks < row_blocks && with_one_more() <= budget) ++b.c_blocks;
  }
  return b;
}

KernelStats conv_forward_implicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                  const float* w, const float* bias, float* y, std::int64_t x_row_pitch,
                                  std::int64_t y_row_pitch, ImplicitStep step) {
  require<SimulationError>(s.stride_h == 1 && s.stride_w == 1, "implicit convolution needs stride 1, got {}x{}",
                           s.stride_h, s.stride_w);
  require<ConfigError>(step.pixel_columns >= 1, "implicit convolution: {} pixel columns per step", step.pixel_columns);
  const std::int64_t ho = s.out_height(), wo = s.out_width(), n = batch;
  const std::int64_t row_in = x_row_pitch > 0 ? x_row_pitch : s.channels * s.width * n;  // one input row (C x W x N)
  const std::int64_t row_out = y_row_pitch > 0 ? y_row_pitch : s.num_output * wo * n;
  std::vector<GemmProblem> problems(static_cast<std::size_t>(ho));
  for (std::int64_t o = 0; o < ho; ++o) {
    auto& p = problems[std::size_t(o)];
    p.c = y + o * row_out;
    p.ldc = wo * n;
    for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
      const std::int64_t ih = o - s.pad_h + kh;
      if (ih < 0 || ih >= s.height) continue;
      for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
        // output columns wo whose input column wo - pad + kw is inside the image
        const std::int64_t lo = std::max<std::int64_t>(0, s.pad_w - kw);
        const std::int64_t hi = std::min(wo, s.width + s.pad_w - kw);
        if (hi <= lo) continue;
        GemmSegment seg;
        seg.a = w + (kh * s.kernel_w + kw) * s.num_output * s.channels;
        seg.lda = s.channels;
        seg.b = x + ih * row_in + (lo - s.pad_w + kw) * n;
        seg.ldb = s.width * n;
        seg.k = s.channels;
        seg.n_begin = lo * n;
        seg.n_end = hi * n;
        p.segments.push_back(seg);
      }
    }
  }
  const GemmBlocking per_step = implicit_forward_blocking(cg.params(), s, batch, step);
  KernelStats total;
  {
    const ScopedGemmPrecision precision(cg, cg.implicit_precision());
    total = gemm_batch(cg, "conv_forward_implicit", Transpose::no, Transpose::no, s.num_output, wo * n,
                                 1.0f, 0.0f, problems, &per_step);
  }
  if (bias) {
    // y is Ho x No x (Wo*N): planes of Wo*N per (row, channel)
    require<SimulationError>(row_out == s.num_output * wo * n, "implicit convolution: a bias needs contiguous rows");
    AlignedVector<float> ones(std::size_t(s.num_output), 1.0f);
    total += channel_affine(cg, y, y, ho, s.num_output, wo * n, ones.data(), bias);
  }
  total.kernel = "conv_forward_implicit";
  return total;
}

ConvShape data_gradient_shape(const ConvShape& s) {
  ConvShape a = s;
  a.channels = s.num_output, a.num_output = s.channels;
  a.height = s.out_height(), a.width = s.out_width();
  a.pad_h = s.kernel_h - 1 - s.pad_h, a.pad_w = s.kernel_w - 1 - s.pad_w;
  return a;
}

void filters_to_implicit_data_gradient(const ConvShape& s, const float* w, float* wa) {
  for (std::int64_t o = 0; o < s.num_output; ++o)
    for (std::int64_t c = 0; c < s.channels; ++c)
      for (std::int64_t kh = 0; kh < s.kernel_h; ++kh)
        for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
          const std::int64_t fh = s.kernel_h - 1 - kh, fw = s.kernel_w - 1 - kw;
          wa[((fh * s.kernel_w + fw) * s.channels + c) * s.num_output + o] =
              w[((o * s.channels + c) * s.kernel_h + kh) * s.kernel_w + kw];
        }
}

KernelStats conv_data_gradient_implicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* dy,
                                        const float* w_adjoint, float* dx) {
  require<SimulationError>(s.stride_h == 1 && s.stride_w == 1 && s.pad_h < s.kernel_h && s.pad_w < s.kernel_w,
                           "implicit data gradient needs stride 1 and padding below the kernel size");
  KernelStats total = conv_forward_implicit(cg, data_gradient_shape(s), batch, dy, w_adjoint, nullptr, dx);
  total.kernel = "conv_data_gradient_implicit";
  return total;
}

KernelStats conv_weight_gradient_implicit(CoreGroup& cg, const ConvShape& s, std::int64_t batch, const float* x,
                                          const float* dy, float* dw, float* db) {
  require<SimulationError>(s.stride_h == 1 && s.stride_w == 1, "implicit weight gradient needs stride 1, got {}x{}",
                           s.stride_h, s.stride_w);
  const std::int64_t ho = s.out_height(), wo = s.out_width(), n = batch;
  const std::int64_t row_in = s.channels * s.width * n, row_out = s.num_output * wo * n;
  std::vector<GemmProblem> problems;
  for (std::int64_t kh = 0; kh < s.kernel_h; ++kh)
    for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
      GemmProblem p;
      p.c = dw + (kh * s.kernel_w + kw) * s.num_output * s.channels;
      p.ldc = s.channels;
      // output columns whose input column is inside the image
      const std::int64_t lo = std::max<std::int64_t>(0, s.pad_w - kw);
      const std::int64_t hi = std::min(wo, s.width + s.pad_w - kw);
      // swCaffe's weight gradient (C-swcaffe sw_conv_layer_impl.c's backward calls conv_pad_float__,
      // sw_slave_conv_pad_float2double.c, with Ni and B swapped) reduces over the batch alone in each
      // GEMM call, once per (tap, output pixel): a segment per pixel, not per row, so each pays its
      // own step (tile DMAs, widening, syncs) as on the chip.
      for (std::int64_t o = 0; o < ho && hi > lo; ++o) {
        const std::int64_t ih = o - s.pad_h + kh;
        if (ih < 0 || ih >= s.height) continue;
        for (std::int64_t col = lo; col < hi; ++col) {
          GemmSegment seg;
          seg.a = dy + o * row_out + col * n;  // dY pixel: No x N
          seg.lda = wo * n;
          seg.b = x + ih * row_in + (col - s.pad_w + kw) * n;  // x pixel: C x N, used transposed
          seg.ldb = s.width * n;
          seg.k = n;
          p.segments.push_back(seg);
        }
      }
      problems.push_back(std::move(p));
    }
  KernelStats total;
  {
    // float2double whatever the forward's implicit precision: that kernel widens (its gemm is the double one)
    const ScopedGemmPrecision precision(cg, GemmPrecision::float2double);
    // every segment's k is the batch, so gemm_batch's own blocking is the one for K = batch
    total = gemm_batch(cg, "conv_weight_gradient_implicit", Transpose::no, Transpose::yes, s.num_output, s.channels,
                       1.0f, 1.0f, problems);
  }
  if (db) {
    // dY is Ho x No x (Wo N): planes of Wo N per (row, channel)
    AlignedVector<double> sum(std::size_t(s.num_output)), sum2(std::size_t(s.num_output));
    total += channel_sums(cg, dy, nullptr, ho, s.num_output, wo * n, sum.data(), sum2.data());
    if (cg.numerics())
      for (std::int64_t c = 0; c < s.num_output; ++c) db[c] += float(sum[c]);
  }
  total.kernel = "conv_weight_gradient_implicit";
  return total;
}

bool implicit_backward_eligible(const ConvShape& s, std::int64_t batch, std::int64_t groups) {
  return batch >= 64 && batch % 32 == 0 && s.channels >= 128 && s.channels % 128 == 0 && s.num_output >= 64 &&
         s.num_output % 32 == 0 && groups == 1 && s.stride_h == 1 && s.stride_w == 1;
}

bool implicit_forward_eligible(const ConvShape& s, std::int64_t batch, std::int64_t groups) {
  const auto channels_ok = [](std::int64_t n) { return n >= 64 && n % 32 == 0; };
  return batch >= 128 && channels_ok(s.channels) && channels_ok(s.num_output) && groups == 1 && s.stride_h == 1 &&
         s.stride_w == 1;
}

ConvChoice choose_conv_method(const Params& params, const ConvShape& s, std::int64_t batch, std::int64_t groups) {
  // Timing only: kernels move no data, so any 128-aligned address serves.
  CoreGroup scratch(0, params);
  scratch.set_numerics(false);
  float* p = timing_address();
  ConvChoice choice;
  choice.explicit_cycles = conv_forward_explicit(scratch, s, batch, p, p, p, p, p).cycles;
  if (implicit_forward_eligible(s, batch, groups)) {
    choice.implicit_cycles = to_hcwn(scratch, p, p, batch, s.channels, s.height, s.width).cycles +
                             conv_forward_implicit(scratch, s, batch, p, p, nullptr, p).cycles +
                             to_nchw(scratch, p, p, batch, s.num_output, s.out_height(), s.out_width()).cycles +
                             conv_bias_forward(scratch, batch, s.num_output, s.out_height() * s.out_width(), p, p).cycles;
    if (choice.implicit_cycles < choice.explicit_cycles) choice.method = ConvMethod::implicit;
  }
  if (implicit_backward_eligible(s, batch, groups)) {
    const auto faster = [&](ConvPass pass) {
      const auto impl = time_conv_pass(params, s, batch, pass, ConvMethod::implicit);
      const auto expl = time_conv_pass(params, s, batch, pass, ConvMethod::explicit_gemm);
      return impl.total() < expl.total() ? ConvMethod::implicit : ConvMethod::explicit_gemm;
    };
    choice.weight_gradient = faster(ConvPass::weight_gradient);
    choice.data_gradient = faster(ConvPass::data_gradient);
  }
  return choice;
}

std::string ConvChoice::describe() const {
  std::string d = to_string(method);
  if (weight_gradient != method || data_gradient != method)
    d += std::string(" (wgrad ") + to_string(weight_gradient) + ", dgrad " + to_string(data_gradient) + ")";
  return d;
}

}  // namespace taihu::sw26010
