#include "devices/sw26010/conv_bias.hpp"

#include <vector>

#include "devices/sw26010/blas_gemm.hpp"

namespace taihu::sw26010 {

KernelStats conv_bias_forward(CoreGroup& cg, std::int64_t batch, std::int64_t channels, std::int64_t plane,
                              const float* bias, float* y) {
  // bias_multiplier_: Ho*Wo ones, set once at Reshape (base_conv_layer.cpp)
  const AlignedVector<float> ones(cg.numerics() ? std::size_t(plane) : 0, 1.0f);
  const float* b = cg.numerics() ? ones.data() : timing_address();
  KernelStats total;
  for (std::int64_t i = 0; i < batch; ++i)
    total += blas_gemm(cg, Transpose::no, Transpose::no, channels, plane, 1, 1.0f, bias, 1, b, plane, 1.0f,
                       y + i * channels * plane, plane);
  total.kernel = "conv_bias_forward";
  return total;
}

double conv_bias_gemv_bytes(const Params& params, std::int64_t channels, std::int64_t plane) {
  const double matrix = 4.0 * double(channels) * double(plane);
  // a row of dY and the ones side by side in the L2, or the ones fetched again per row
  const bool ones_stay = 2.0 * 4.0 * double(plane) <= double(params.mpe_l2_bytes);
  return ones_stay ? matrix + 4.0 * double(plane) : 2.0 * matrix;
}

KernelStats conv_bias_gradient(CoreGroup& cg, std::int64_t batch, std::int64_t channels, std::int64_t plane,
                               const float* dy, float* db) {
  if (cg.numerics())
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t c = 0; c < channels; ++c) {
        const float* row = dy + (i * channels + c) * plane;
        float sum = 0;  // sgemv's dot product of the row with the ones, in float
        for (std::int64_t q = 0; q < plane; ++q) sum += row[q];
        db[c] += sum;
      }
  // The stream dominates: 2 flops per element at the MPE's 11.6 GF/s take
  // 0.17 ns, reading its 4 bytes at the 9.9 GB/s copy rate 0.4 ns.
  KernelStats stats;
  stats.kernel = "conv_bias_gradient";
  for (std::int64_t i = 0; i < batch; ++i) stats.cycles += cg.mpe_copy(conv_bias_gemv_bytes(cg.params(), channels, plane));
  return stats;
}

}  // namespace taihu::sw26010
