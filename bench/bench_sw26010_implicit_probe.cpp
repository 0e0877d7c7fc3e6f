// Probe (issue 16, not part of the model): swCaffe's two implicit kernels
// replayed step by step on the model's CPE primitives, to ask what the
// published times (P Table II, `impl`) imply for their inner GEMM loop.
//
// The weight gradient is sw_slave_conv_pad_float2double.c's conv_pad_float__
// with the batch and the input channels swapped (sw_conv_layer_impl.c,
// sw_conv_backward_pad_impl_f). Per CPE that kernel:
//   - for every group of tap columns its LDM holds ("Costride": 3, fewer for
//     the deep layers), tap row, output row and valid input pixel: GETs the x
//     pixel (batch/8 blocks of Ni/8 floats), waits, widens it in place;
//   - for every tap column of the group that pixel meets: GETs the dY pixel
//     (No/8 blocks of batch/8 floats = 64 B), waits, widens it in place, and
//     runs the double-precision RLC GEMM (gemm.S: 8 rounds, per round
//     (Ni/8)(No/8)/64 register blocks of batch/8 iterations), the 64 CPEs in
//     lock-step;
//   - per tap row: narrows its dW taps and PUTs them (Ni/8-float blocks).
// The forward is sw_slave_conv_pad_float.c's conv_pad_float: the same loop
// nest over groups of output columns, the x pixel and then a filter tap per
// step, float data and the single-precision gemmfloat (probe_forward_seconds).
// Every DMA is waited for at once ("No overlap input DMA and weight DMA").
// The model's generic gemm_batch instead moves per-CPE tiles of its own
// blocking; the probe shows what the kernels' own structure costs.
//
// For each shape it prints the probe's time at the loop cost the model uses for
// that kernel (17 cycles per 16 vmad, hand-scheduled DP, D §VI-B; 25 for the
// straightforward SP loop, T §3.7) and the loop cost that would reproduce the
// published time, with and without the model's layout transforms (P does not
// say whether its implicit times include them). Both the model's kernel and the
// probe include the bias (gradient) as the model charges it.
//
//   build/bench/bench_sw26010_implicit_probe [--config=INI]
#include <algorithm>
#include <cstdio>
#include <string>

#include "bench/bench_args.hpp"
#include "devices/sw26010/conv_passes.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/params.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {

struct Shape {
  const char* layer;
  int channels, num_output, size;
  double forward, weight_gradient;  // P Table II, implicit, seconds for B = 128 on one CG (0: not published)
};

// Seconds of swCaffe's weight-gradient kernel at `cycles_per_16` in the inner loop.
double probe_weight_gradient_seconds(const Params& params, const Shape& l, int batch, double cycles_per_16) {
  CoreGroup cg(0, params);
  cg.set_numerics(false);
  float* mem = timing_address();
  const int ni = l.channels, no = l.num_output, hw = l.size, taps = 3, pad = 1;
  const std::size_t x_block = std::size_t(ni / 8) * 4, dy_block = std::size_t(batch / 8) * 4;
  // swCaffe's host code sizes the row of taps kept in LDM (sw_conv_layer_impl.c, "Costride"): for the
  // deep layers fewer than 3 fit, and every input pixel is fetched again for each group of taps
  const int stride = std::min(taps, (64 * 55 * 1024 / 8 - batch * ni - batch * no) / (no * ni));
  const KernelStats k = cg.run("wgrad_probe", [&](Cpe& cpe) {
    // floats land in the first half of each double buffer and are widened in place
    auto* x = static_cast<float*>(cpe.ldm_alloc(std::size_t(ni) * batch / 64 * 8, "x pixel"));
    auto* dy = static_cast<float*>(cpe.ldm_alloc(std::size_t(no) * batch / 64 * 8, "dY pixel"));
    auto* dw = static_cast<float*>(cpe.ldm_alloc(std::size_t(ni) * no / 64 * 8 * stride, "dW, a group of taps"));
    DmaReply reply;
    int expected = 0;
    for (int first = 0; first < taps; first += stride) {
      const int last = std::min(first + stride, taps);  // tap columns [first, last)
      for (int tap_row = 0; tap_row < taps; ++tap_row) {
        for (int out_row = 0; out_row < hw; ++out_row) {
          const int in_row = tap_row + out_row - pad;
          if (in_row < 0 || in_row >= hw) continue;
          for (int in_col = first - pad; in_col < std::min(first + stride + hw, hw + 2 * pad) - pad; ++in_col) {
            if (in_col < 0 || in_col >= hw) continue;
            cpe.dma_get_strided(x, mem, std::size_t(batch / 8), x_block, 8 * x_block, reply);
            cpe.dma_wait(reply, ++expected);
            cpe.charge_widen(double(ni) * batch / 64);
            for (int tap_col = first; tap_col < last; ++tap_col) {
              const int out_col = in_col + pad - tap_col;
              if (out_col < 0 || out_col >= hw) continue;
              cpe.dma_get_strided(dy, mem, std::size_t(no / 8), dy_block, 8 * dy_block, reply);
              cpe.dma_wait(reply, ++expected);
              cpe.charge_widen(double(no) * batch / 64);
              cpe.sync(Scope::array);  // the RLC rounds need every CPE
              cpe.charge_gemm_inner(8.0 * (ni / 8) * (no / 8) / 64, batch / 8, cycles_per_16);
            }
          }
        }
        cpe.charge_widen(double(ni) * no / 64 * (last - first));  // narrow the taps, PUT one at a time
        for (int tap_col = first; tap_col < last; ++tap_col) {
          cpe.dma_put_strided(mem, dw + std::size_t(tap_col - first) * ni * no / 64, std::size_t(no / 8), x_block,
                              8 * x_block, reply);
          cpe.dma_wait(reply, ++expected);
        }
      }
    }
  });
  return k.seconds(params);
}

// Seconds of swCaffe's implicit forward kernel (sw_slave_conv_pad_float.c's conv_pad_float, float
// data, gemmfloat) at `cycles_per_16`. Per CPE: for every group of output columns kept in LDM,
// output row, tap row and valid input pixel it GETs the x pixel (Ni/8 blocks of batch/8 floats) and,
// for every tap column that pixel meets in the group, the filter tap (No/8 blocks of Ni/8 floats),
// each waited for at once, and runs the single-precision RLC GEMM (batch x No, K = Ni); then it
// PUTs the group's outputs of the row, a pixel at a time (No/8 blocks of batch/8 floats).
double probe_forward_seconds(const Params& params, const Shape& l, int batch, double cycles_per_16) {
  CoreGroup cg(0, params);
  cg.set_numerics(false);
  float* mem = timing_address();
  const int ni = l.channels, no = l.num_output, hw = l.size, taps = 3, pad = 1;
  const std::size_t x_block = std::size_t(batch / 8) * 4, w_block = std::size_t(ni / 8) * 4;
  // the output columns kept in LDM (sw_conv_layer_impl.c, sw_conv_forward_pad_impl_f's "Costride")
  const int stride = std::min(hw, (64 * 60 * 1024 / 8 - ni * batch - ni * no) / (no * batch));
  const KernelStats k = cg.run("forward_probe", [&](Cpe& cpe) {
    auto* x = static_cast<float*>(cpe.ldm_alloc(std::size_t(ni) * batch / 64 * 4, "x pixel"));
    auto* w = static_cast<float*>(cpe.ldm_alloc(std::size_t(ni) * no / 64 * 4, "filter tap"));
    auto* y = static_cast<float*>(cpe.ldm_alloc(std::size_t(no) * batch / 64 * 4 * stride, "y, a group of columns"));
    DmaReply reply;
    int expected = 0;
    for (int first = 0; first < hw; first += stride) {
      const int last = std::min(first + stride, hw);  // output columns [first, last)
      for (int out_row = 0; out_row < hw; ++out_row) {
        cpe.charge_elementwise(double(no) * batch / 64 * (last - first), 0, 1);  // zero the group
        for (int tap_row = 0; tap_row < taps; ++tap_row) {
          const int in_row = out_row + tap_row - pad;
          if (in_row < 0 || in_row >= hw) continue;
          for (int in_col = first - pad; in_col < std::min(first + stride + taps, hw + 2 * pad) - pad; ++in_col) {
            if (in_col < 0 || in_col >= hw) continue;
            cpe.dma_get_strided(x, mem, std::size_t(ni / 8), x_block, 8 * x_block, reply);
            cpe.dma_wait(reply, ++expected);
            for (int tap_col = 0; tap_col < taps; ++tap_col) {
              const int out_col = in_col + pad - tap_col;
              if (out_col < first || out_col >= last) continue;
              cpe.dma_get_strided(w, mem, std::size_t(no / 8), w_block, 8 * w_block, reply);
              cpe.dma_wait(reply, ++expected);
              cpe.sync(Scope::array);  // the RLC rounds need every CPE
              cpe.charge_gemm_inner(8.0 * (batch / 8) * (no / 8) / 64, ni / 8, cycles_per_16);
            }
          }
        }
        for (int col = first; col < last; ++col) {
          cpe.dma_put_strided(mem, y + std::size_t(col - first) * no * batch / 64, std::size_t(no / 8), x_block,
                              8 * x_block, reply);
          cpe.dma_wait(reply, ++expected);
        }
      }
    }
  });
  return k.seconds(params);
}

// One table: the probe against the published time and the model's own kernel.
template <class Probe>
void print_table(const char* title, const Params& params, const Shape* shapes, std::size_t count, ConvPass pass,
                 double base_cycles, Probe probe) {
  const int batch = 128;
  const double other = base_cycles + 8;
  std::printf("\n%s\n\n| layer | Ni → No | published | model kernel | probe @%.0f | ratio | transforms | "
              "implied cycles/16 vmad | the same, transforms included |\n|---|---|---|---|---|---|---|---|---|\n",
              title, base_cycles);
  for (std::size_t i = 0; i < count; ++i) {
    const Shape& l = shapes[i];
    const double published = pass == ConvPass::forward ? l.forward : l.weight_gradient;
    if (published <= 0) continue;
    ConvShape s;
    s.channels = l.channels, s.num_output = l.num_output, s.height = s.width = l.size;
    s.kernel_h = s.kernel_w = 3, s.pad_h = s.pad_w = 1;
    const ConvPassTime model = time_conv_pass(params, s, batch, pass, ConvMethod::implicit);
    // both with the bias (forward) or its gradient as the model charges it
    const double kernel = params.seconds(double(model.cycles)), bias = params.seconds(double(model.bias));
    const double transforms = params.seconds(double(model.transforms()));
    // the probe is linear in the loop cost: two points give the cost that meets the published time
    const double t0 = probe(params, l, batch, base_cycles) + bias, t1 = probe(params, l, batch, other) + bias;
    const auto implied = [&](double target) { return base_cycles + (other - base_cycles) * (target - t0) / (t1 - t0); };
    std::printf("| %s | %d → %d | %.2f | %.3f | %.3f | %.2f | %.3f | %.1f | %.1f |\n", l.layer, l.channels,
                l.num_output, published, kernel, t0, t0 / published, transforms, implied(published),
                implied(published - transforms));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config_path = bench::arg_value(argc, argv, "config", "");
  const Params params = config_path.empty() ? Params::defaults() : Params::load(config_path);
  const Shape shapes[] = {{"conv1_2", 64, 64, 224, 4.30, 0},     {"conv2_1", 64, 128, 112, 1.63, 0},
                          {"conv2_2", 128, 128, 112, 2.34, 2.26}, {"conv3_1", 128, 256, 56, 1.06, 0.92},
                          {"conv3_2", 256, 256, 56, 1.79, 1.56},  {"conv4_1", 256, 512, 28, 0.84, 0.70},
                          {"conv4_2", 512, 512, 28, 1.68, 1.27},  {"conv5_1", 512, 512, 14, 0.40, 0.31}};
  const std::size_t count = sizeof shapes / sizeof shapes[0];
  print_table("Weight gradient (conv_pad_float__, float2double, gemm.S)", params, shapes, count,
              ConvPass::weight_gradient, params.gemm_cycles_per_16_vmad, probe_weight_gradient_seconds);
  print_table("Forward (conv_pad_float, float, gemmfloat)", params, shapes, count, ConvPass::forward,
              params.gemm_single_cycles_per_16_vmad, probe_forward_seconds);
  return 0;
}
