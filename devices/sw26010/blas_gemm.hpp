#pragma once
// The vendor BLAS's GEMM on one core group: swCaffe's explicit convolutions
// and inner-product layers call cblas_sgemm from the vendor's libswblas
// (C-swcaffe math_functions.cpp, Makefile), not swGEMM. Its times were never
// published apart from P Table II's explicit column; the reference says only
// that swGEMM beats it on 162 of 180 skinny deep-learning shapes, 3.02x on
// average (TH §4.3.2). So the model is a mechanism with few parameters,
// fitted by cross-validation on that column (blas_gemm_fit.hpp):
//
//   cycles = call + (2 m n k / R) (1 + (m_half / m)^e + (n_half / n)^e + (k_half / k)^e)
//
// R is the inner loop's rate (the micro level's gemm_cycles_per_16_vmad, not
// fitted); each GEMM dimension d has a half-performance length d_half
// (Hockney): the shorter a dimension, the fewer uses each element of the
// operands it does not index gets per load, so the more the library's data
// handling weighs per flop. A short K is its own parameter because each C
// element then gets few multiply-adds per load and store.
//
// Shapes with a dimension below the fitted range (blas_gemm_min_dimension:
// swCaffe's K = 1 bias GEMMs, inner products of a few images per group) keep
// swGEMM's memory-level model: a half-performance law says nothing there.
// Numerics are swGEMM's (float widened to double in LDM, as swCaffe's kernels
// compute); only the charged cycles are the vendor model's.

#include <cstdint>

#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"

namespace taihu::sw26010 {

// The inner loop's cycles for 2 m n k flops on the 64 CPEs (the rate R above).
double inner_loop_cycles(const Params& params, std::int64_t m, std::int64_t n, std::int64_t k);
// Whether the vendor model covers the shape (every dimension >= min_dimension).
bool blas_gemm_covers(const BlasGemmParams& blas, std::int64_t m, std::int64_t n, std::int64_t k);
// One call's cycles under `blas` (the shipped model: params.blas_gemm).
double blas_gemm_cycles(const Params& params, const BlasGemmParams& blas, std::int64_t m, std::int64_t n,
                        std::int64_t k);

// C (m x n, row-major, ldc) = alpha * op(A) * op(B) + beta * C, charged as the
// vendor BLAS where it covers the shape, else as swGEMM (`gemm`).
KernelStats blas_gemm(CoreGroup& cg, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                      std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                      float beta, float* c, std::int64_t ldc);

}  // namespace taihu::sw26010
