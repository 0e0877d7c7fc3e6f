#include "devices/sw26010/batch_norm.hpp"

#include <algorithm>
#include <vector>

#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

namespace {

// One pass of sw_slave_batch_norm.c over the planes: CPE k takes channels k,
// k + 64, ... of every image, image by image; per plane it GETs `gets` planes
// (each waited), loads `glds` words directly, runs `chain_cycles` per element
// of scalar work and `vector_ops` per 4 elements, then PUTs `puts` planes
// (each waited). Timing only: no data moves, and every plane starts on a
// 128-B boundary (what the cost depends on), so one address serves for all.
KernelStats plane_pass(CoreGroup& cg, const char* name, std::int64_t batch, std::int64_t channels,
                       std::int64_t spatial, int gets, int glds, double chain_cycles, double vector_ops, int puts) {
  float* origin = timing_address();
  const std::int64_t plane_floats = (spatial + 31) / 32 * 32;
  TimingOnly timing(cg);
  return cg.run(name, [&](Cpe& cpe) {
    // the kernel's buffers: planes (two forward, three backward) and four floats per channel
    // (forward mean, variance, divisor, reciprocal; backward mean, variance, alpha, beta)
    std::vector<float*> in(std::size_t(gets == 2 ? 3 : 2));
    for (auto& b : in) b = cpe.ldm_array<float>(std::size_t(plane_floats) + 8, "plane");
    for (const char* what : {"mean", "variance", gets == 2 ? "alpha" : "divisor", gets == 2 ? "beta" : "reciprocal"})
      cpe.ldm_array<float>(std::size_t(channels), what);
    DmaReply r;
    int expected = 0;
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t c = cpe.id(); c < channels; c += cpes_per_group) {
        for (int g = 0; g < gets; ++g) {
          cpe.dma_get(in[std::size_t(g)], origin, std::size_t(spatial) * 4, r);
          cpe.dma_wait(r, ++expected);
        }
        cpe.charge(std::int64_t(glds * cpe.params().gld_latency_cycles + chain_cycles * double(spatial)));
        if (vector_ops > 0) cpe.charge_elementwise(double(spatial), vector_ops, double(gets + puts));
        for (int p = 0; p < puts; ++p) {
          cpe.dma_put(origin, in[0], std::size_t(spatial) * 4, r);
          cpe.dma_wait(r, ++expected);
        }
      }
  });
}

// Caffe's element-wise passes on the CPEs (swCaffe's sw_* kernels), timing only.
struct Streams {
  CoreGroup& cg;
  std::int64_t n;
  std::int64_t copy() {
    TimingOnly timing(cg);
    return sw26010::copy(cg, timing_address(), timing_address(), n).cycles;
  }
  std::int64_t binary() {
    TimingOnly timing(cg);
    float* p = timing_address();
    return eltwise_sum(cg, p, p, p, n).cycles;
  }
};

}  // namespace

BatchNormTiming time_batch_norm(CoreGroup& cg, std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                                bool in_place) {
  const Params& p = cg.params();
  const std::int64_t n = batch * channels * spatial;
  Streams cpe{cg, n};
  BatchNormTiming t;
  if (!in_place) t.forward += cpe.copy();  // caffe_copy(bottom -> top)
  else t.backward += cpe.copy();           // caffe_copy(top diff -> x_norm diff)
  // the sums' additions chain: each waits for the previous one (FP latency)
  const double chain = p.fp_latency_cycles;
  if (spatial < batch_norm_multi_pass_spatial) {
    t.forward += plane_pass(cg, "batch_norm_statistics", batch, channels, spatial, 1, 0, chain, 0, 0).cycles;
    t.forward += plane_pass(cg, "batch_norm_normalise", batch, channels, spatial, 1, 0, 0, 2, 3).cycles;
    t.backward += plane_pass(cg, "batch_norm_gradient_statistics", batch, channels, spatial, 2, 0, chain, 0, 0).cycles;
    t.backward += plane_pass(cg, "batch_norm_gradient", batch, channels, spatial, 2, 1, 0, 3, 1).cycles;
    return t;
  }
  t.multi_pass = true;
  const auto mpe_read = [&] { return cg.mpe_copy(4.0 * double(n)); };  // gemv over the tensor on the MPE
  // forward: mean (gemv), subtract (K = 1 GEMM into top), sqr, variance (gemv),
  // the divisor broadcast (K = 1 GEMM into temp), div, copy to x_norm
  t.forward += mpe_read() + cpe.copy() + cpe.copy() + mpe_read() + cpe.copy() + cpe.binary() + cpe.copy();
  // backward: mul, gemv, K = 1 GEMM, mul, gemv, K = 1 GEMM (accumulating), axpby (MPE), div
  t.backward += cpe.binary() + mpe_read() + cpe.copy() + cpe.binary() + mpe_read() + cpe.binary() +
                cg.mpe_copy(12.0 * double(n)) + cpe.binary();
  return t;
}

}  // namespace taihu::sw26010
