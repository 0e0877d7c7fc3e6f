#include "core/blas/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>

#include "core/blas/tiling.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/kernels/parallel.hpp"

namespace taihu::blas {

namespace {

CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::yes ? CblasTrans : CblasNoTrans; }
blasint as_blasint(int64_t v) { return static_cast<blasint>(v); }

}  // namespace

void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  keep_openblas_single_threaded();
  const Tiling tiling = gemm_tiling(m, n, k);
  // Tile [begin, end) of C's rows (or columns) reads the same rows of op(A)
  // (or columns of op(B)); the other operand is read whole.
  parallel_for(tiling.tiles, [&](int64_t i) {
    const TileRange r = tile_range(tiling.split_rows ? m : n, tiling.tiles, i);
    const int64_t extent = r.end - r.begin;
    const float* ta = a;
    const float* tb = b;
    float* tc = c;
    if (tiling.split_rows) {
      ta += trans_a == Trans::no ? r.begin * lda : r.begin;
      tc += r.begin * ldc;
    } else {
      tb += trans_b == Trans::no ? r.begin : r.begin * ldb;
      tc += r.begin;
    }
    cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), as_blasint(tiling.split_rows ? extent : m),
                as_blasint(tiling.split_rows ? n : extent), as_blasint(k), alpha, ta, as_blasint(lda), tb,
                as_blasint(ldb), beta, tc, as_blasint(ldc));
  });
}

void gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  const int64_t lda = trans_a == Trans::no ? k : m;
  const int64_t ldb = trans_b == Trans::no ? n : k;
  gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

void gemv(Trans trans_a, int64_t m, int64_t n, float alpha, const float* a, const float* x, float beta,
          float* y) {
  keep_openblas_single_threaded();
  // Tiles of y: rows of A (no transpose) or columns of A (transposed).
  const bool rows = trans_a == Trans::no;
  const int64_t outputs = rows ? m : n;
  const int64_t tiles = gemv_tiles(outputs, rows ? n : m);
  parallel_for(tiles, [&](int64_t i) {
    const TileRange r = tile_range(outputs, tiles, i);
    const int64_t extent = r.end - r.begin;
    cblas_sgemv(CblasRowMajor, to_cblas(trans_a), as_blasint(rows ? extent : m), as_blasint(rows ? n : extent), alpha,
                rows ? a + r.begin * n : a + r.begin, as_blasint(n), x, 1, beta, y + r.begin, 1);
  });
}

void axpy(int64_t n, float alpha, const float* x, float* y) {
  keep_openblas_single_threaded();
  cblas_saxpy(as_blasint(n), alpha, x, 1, y, 1);
}

void scal(int64_t n, float alpha, float* x) {
  keep_openblas_single_threaded();
  cblas_sscal(as_blasint(n), alpha, x, 1);
}

float dot(int64_t n, const float* x, const float* y) {
  keep_openblas_single_threaded();
  return cblas_sdot(as_blasint(n), x, 1, y, 1);
}

float nrm2(int64_t n, const float* x) {
  keep_openblas_single_threaded();
  return cblas_snrm2(as_blasint(n), x, 1);
}

float asum(int64_t n, const float* x) {
  keep_openblas_single_threaded();
  return cblas_sasum(as_blasint(n), x, 1);
}

}  // namespace taihu::blas
