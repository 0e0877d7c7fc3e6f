// taihu's BLAS products are tiled by shape alone (core/blas/tiling.hpp): they
// must be correct for every transpose and leading dimension, and
// bit-identical whatever the thread count and wherever the operands lie in
// memory. Whatever OpenBLAS kernel runs: CI repeats the suite with another.

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/blas/blas.hpp"
#include "core/blas/tiling.hpp"
#include "core/common/random.hpp"
#include "core/kernels/compute_threads.hpp"

using namespace taihu;
using blas::Trans;

namespace {

struct Product {
  Trans ta, tb;
  int64_t m, n, k;
};

// n random values, after `shift` zeros.
std::vector<float> random_values(int64_t n, uint64_t seed, int64_t shift = 0) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shift + n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(shift + i)] = rng.uniform(-1.0f, 1.0f);
  return v;
}

// C = 0.75 op(A) op(B) + 0.5 C, with every leading dimension padded by 3 and
// the operands starting `shift` floats into their buffers.
std::vector<float> product(const Product& p, int threads, int64_t shift) {
  const int64_t a_rows = p.ta == Trans::no ? p.m : p.k, a_cols = p.ta == Trans::no ? p.k : p.m;
  const int64_t b_rows = p.tb == Trans::no ? p.k : p.n, b_cols = p.tb == Trans::no ? p.n : p.k;
  const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = p.n + 3;
  const auto a = random_values(a_rows * lda, 1, shift), b = random_values(b_rows * ldb, 2, shift);
  auto c = random_values(p.m * ldc, 3, shift);
  const int saved = compute_threads();
  set_compute_threads(threads);
  blas::gemm(p.ta, p.tb, p.m, p.n, p.k, 0.75f, a.data() + shift, lda, b.data() + shift, ldb, 0.5f,
             c.data() + shift, ldc);
  set_compute_threads(saved);
  // Checked against a double-precision product here, once per call.
  const auto c0 = random_values(p.m * ldc, 3, shift);
  auto at = [&](const std::vector<float>& v, int64_t ld, bool t, int64_t r, int64_t col) {
    return static_cast<double>(t ? v[static_cast<size_t>(shift + col * ld + r)] : v[static_cast<size_t>(shift + r * ld + col)]);
  };
  for (int64_t i = 0; i < p.m; i += std::max<int64_t>(1, p.m / 7))
    for (int64_t j = 0; j < p.n; j += std::max<int64_t>(1, p.n / 7)) {
      double sum = 0.0;
      for (int64_t l = 0; l < p.k; ++l) sum += at(a, lda, p.ta == Trans::yes, i, l) * at(b, ldb, p.tb == Trans::yes, l, j);
      const double expected = 0.75 * sum + 0.5 * c0[static_cast<size_t>(shift + i * ldc + j)];
      REQUIRE(c[static_cast<size_t>(shift + i * ldc + j)] == doctest::Approx(expected).epsilon(1e-4).scale(1.0));
    }
  return {c.begin() + shift, c.end()};
}

}  // namespace

TEST_SUITE("blas") {
  TEST_CASE("tiles depend on the shape only, cover the output and keep aligned boundaries") {
    CHECK(blas::gemm_tiling(8, 8, 8).tiles == 1);
    const auto big = blas::gemm_tiling(64, 100000, 576);
    CHECK_FALSE(big.split_rows);
    CHECK(big.tiles == blas::max_tiles);
    CHECK(blas::gemm_tiling(4096, 64, 512).split_rows);
    for (int64_t extent : {1, 63, 64, 65, 1000, 4097})
      for (int64_t tiles = 1; tiles <= std::min<int64_t>(blas::max_tiles, blas::tile_units(extent)); ++tiles) {
        int64_t covered = 0;
        for (int64_t i = 0; i < tiles; ++i) {
          const auto r = blas::tile_range(extent, tiles, i);
          REQUIRE(r.begin == covered);
          REQUIRE(r.end > r.begin);
          REQUIRE((r.begin % blas::tile_align) == 0);
          covered = r.end;
        }
        REQUIRE(covered == extent);
      }
  }

  TEST_CASE("gemm is correct and bit-identical on 1, 2 and 3 threads and at any address") {
    const std::vector<Product> products = {
        {Trans::no, Trans::no, 3, 5, 7},           // one tile
        {Trans::no, Trans::no, 50, 4096, 500},     // LeNet's conv2 at batch 64: column tiles
        {Trans::yes, Trans::no, 700, 130, 300},    // row tiles, A transposed
        {Trans::no, Trans::yes, 16, 1000, 2304},   // a small-batch inner product
        {Trans::yes, Trans::yes, 333, 257, 129},   // both transposed, ragged edges
        {Trans::no, Trans::yes, 1030, 70, 200},
    };
    for (const Product& p : products) {
      CAPTURE(p.m);
      CAPTURE(p.n);
      CAPTURE(p.k);
      CAPTURE(static_cast<int>(p.ta));
      CAPTURE(static_cast<int>(p.tb));
      const auto one = product(p, 1, 0);
      for (int threads : {2, 3})
        for (int64_t shift : {0, 1, 5}) {
          CAPTURE(threads);
          CAPTURE(shift);
          const auto other = product(p, threads, shift);
          REQUIRE(std::memcmp(one.data(), other.data(), one.size() * sizeof(float)) == 0);
        }
    }
  }

  TEST_CASE("gemv is correct and bit-identical on 1 and 2 threads, both orientations") {
    for (Trans t : {Trans::no, Trans::yes})
      for (auto dims : {std::pair<int64_t, int64_t>{65, 2000}, {3000, 300}, {17, 700}, {5, 3}}) {
        const int64_t m = dims.first, n = dims.second;
        CAPTURE(m);
        CAPTURE(n);
        const auto a = random_values(m * n, 4);
        const auto x = random_values(t == Trans::no ? n : m, 5);
        const auto y0 = random_values(t == Trans::no ? m : n, 6);
        std::vector<std::vector<float>> results;
        for (int threads : {1, 2}) {
          auto y = y0;
          const int saved = compute_threads();
          set_compute_threads(threads);
          blas::gemv(t, m, n, 1.5f, a.data(), x.data(), 0.25f, y.data());
          set_compute_threads(saved);
          results.push_back(y);
        }
        REQUIRE(results[0] == results[1]);
        for (size_t i = 0; i < results[0].size(); i += 7) {
          double sum = 0.0;
          for (int64_t l = 0; l < (t == Trans::no ? n : m); ++l)
            sum += t == Trans::no ? double(a[i * n + l]) * x[l] : double(a[l * n + i]) * x[l];
          REQUIRE(results[0][i] == doctest::Approx(1.5 * sum + 0.25 * y0[i]).epsilon(1e-4).scale(1.0));
        }
      }
  }
}
