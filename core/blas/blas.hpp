#pragma once
// taihu's BLAS layer: row-major wrappers over OpenBLAS's CBLAS interface.
// Which OpenBLAS kernel runs is decided at start-up by kernel_selection.hpp.
//
// Results do not depend on the thread count: OpenBLAS runs single-threaded
// and gemm/gemv are cut into tiles fixed by their shape, run on taihu's pool
// (core/blas/tiling.hpp; core/kernels/parallel.hpp) on compute_threads()
// threads (core/kernels/compute_threads.hpp).

#include <cstdint>

namespace taihu::blas {

enum class Trans { no, yes };

// C (M x N) = alpha * op(A) * op(B) + beta * C; op(A) is M x K, op(B) is K x N.
// Leading dimensions are those of the stored (untransposed) matrices.
void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// Same with packed leading dimensions.
void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c);
// y = alpha * op(A) * x + beta * y, A stored M x N.
void gemv(Trans trans_a, int64_t m, int64_t n, float alpha, const float* a, const float* x, float beta,
          float* y);
void axpy(int64_t n, float alpha, const float* x, float* y);
void scal(int64_t n, float alpha, float* x);
float dot(int64_t n, const float* x, const float* y);
float nrm2(int64_t n, const float* x);
float asum(int64_t n, const float* x);

}  // namespace taihu::blas
