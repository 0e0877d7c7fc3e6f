#include "core/blas/blas.hpp"

#include <cblas.h>

namespace taihu::blas {

namespace {
CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::yes ? CblasTrans : CblasNoTrans; }
}  // namespace

void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  const int64_t lda = trans_a == Trans::no ? k : m;
  const int64_t ldb = trans_b == Trans::no ? n : k;
  gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

void gemv(Trans trans_a, int64_t m, int64_t n, float alpha, const float* a, const float* x, float beta,
          float* y) {
  cblas_sgemv(CblasRowMajor, to_cblas(trans_a), static_cast<blasint>(m), static_cast<blasint>(n), alpha,
              a, static_cast<blasint>(n), x, 1, beta, y, 1);
}

void axpy(int64_t n, float alpha, const float* x, float* y) {
  cblas_saxpy(static_cast<blasint>(n), alpha, x, 1, y, 1);
}

void scal(int64_t n, float alpha, float* x) { cblas_sscal(static_cast<blasint>(n), alpha, x, 1); }

float dot(int64_t n, const float* x, const float* y) {
  return cblas_sdot(static_cast<blasint>(n), x, 1, y, 1);
}

float nrm2(int64_t n, const float* x) { return cblas_snrm2(static_cast<blasint>(n), x, 1); }

float asum(int64_t n, const float* x) { return cblas_sasum(static_cast<blasint>(n), x, 1); }

void set_threads(int threads) { openblas_set_num_threads(threads); }

int threads() { return openblas_get_num_threads(); }

}  // namespace taihu::blas
