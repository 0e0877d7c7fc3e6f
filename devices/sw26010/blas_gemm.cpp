#include "devices/sw26010/blas_gemm.hpp"

#include <algorithm>
#include <cmath>

namespace taihu::sw26010 {

double inner_loop_cycles(const Params& params, std::int64_t m, std::int64_t n, std::int64_t k) {
  // 64 CPEs, each a 4-wide double FMA per vmad; 16 vmads per gemm_cycles_per_16_vmad
  constexpr double vmads_per_cycle_at_peak = 64.0;
  const double vmads = double(m) * double(n) * double(k) / 4.0;
  return vmads / vmads_per_cycle_at_peak * params.gemm_cycles_per_16_vmad / 16.0;
}

bool blas_gemm_covers(const BlasGemmParams& blas, std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::min({m, n, k}) >= blas.min_dimension;
}

double blas_gemm_cycles(const Params& params, const BlasGemmParams& blas, std::int64_t m, std::int64_t n,
                        std::int64_t k) {
  const auto slow_down = [&blas](double half, std::int64_t extent) {
    return half > 0 ? std::pow(half / double(extent), blas.exponent) : 0.0;
  };
  return blas.call_cycles +
         inner_loop_cycles(params, m, n, k) *
             (1.0 + slow_down(blas.m_half, m) + slow_down(blas.n_half, n) + slow_down(blas.k_half, k));
}

KernelStats blas_gemm(CoreGroup& cg, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                      float beta, float* c, std::int64_t ldc) {
  const Params& params = cg.params();
  if (!blas_gemm_covers(params.blas_gemm, m, n, k))
    return gemm(cg, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  // the numbers as swGEMM computes them; the time is the vendor model's (its traffic is not known)
  if (cg.numerics()) gemm(cg, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  KernelStats stats;
  stats.kernel = "blas_gemm";
  stats.cycles = std::int64_t(std::llround(blas_gemm_cycles(params, params.blas_gemm, m, n, k)));
  return stats;
}

}  // namespace taihu::sw26010
