#pragma once
// How taihu cuts a BLAS call into tiles for its threads.
//
// OpenBLAS's own threading partitions a product by the number of threads, and
// its result changes with them: on OpenBLAS 0.3.21, about half of a sweep of
// SGEMM shapes (and a tenth of SGEMV shapes) differ in the last bits between 1
// and 2 threads, on every kernel tried (Zen, Haswell, Sandybridge,
// Cooperlake). A replica's numbers would then depend on how many cores its
// process got, and a run spread over nodes could not equal the same run in
// one process. So OpenBLAS always runs single-threaded, and taihu cuts each
// call into tiles of the output whose boundaries depend on the shape alone;
// each tile is one single-threaded OpenBLAS call, whichever thread runs it.
// The result is then bit-identical for any thread count.
//
// Pure functions, so that the rule can be tested on any machine.

#include <algorithm>
#include <cstdint>

namespace taihu::blas {

// Output tiles of a product C (m x n, row-major) = op(A) op(B) with inner
// dimension k: `tiles` blocks of rows (split_rows) or of columns.
struct Tiling {
  bool split_rows = false;
  int64_t tiles = 1;
};

// Tile boundaries are multiples of this (a multiple of every OpenBLAS x86-64
// SGEMM register block, so tiles keep full-width kernels).
inline constexpr int64_t tile_align = 64;
// A tile does at least this many multiply-adds: a few tens of microseconds on
// one core, so that waking a thread and packing the shared operand again pay.
inline constexpr int64_t min_tile_macs = int64_t{1} << 21;
// At most this many tiles (enough to balance 16 or more threads).
inline constexpr int64_t max_tiles = 64;
// SGEMV tiles stream at least this many matrix elements.
inline constexpr int64_t min_tile_elements = int64_t{1} << 18;

inline int64_t tile_units(int64_t extent) { return (extent + tile_align - 1) / tile_align; }

// Splits the larger output dimension, into as many tiles as the work allows.
inline Tiling gemm_tiling(int64_t m, int64_t n, int64_t k) {
  Tiling t;
  t.split_rows = m > n;
  const int64_t extent = t.split_rows ? m : n;
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const auto by_work = static_cast<int64_t>(std::min(macs / static_cast<double>(min_tile_macs), 1e9));
  t.tiles = std::max<int64_t>(1, std::min({by_work, max_tiles, tile_units(extent)}));
  return t;
}

// y (length `outputs`) = op(A) x over `inner` elements per output.
inline int64_t gemv_tiles(int64_t outputs, int64_t inner) {
  const double elements = static_cast<double>(outputs) * static_cast<double>(inner);
  const auto by_work = static_cast<int64_t>(std::min(elements / static_cast<double>(min_tile_elements), 1e9));
  return std::max<int64_t>(1, std::min({by_work, max_tiles, tile_units(outputs)}));
}

// [begin, end) of tile i of `tiles` over `extent`: aligned, contiguous, covering.
struct TileRange {
  int64_t begin = 0;
  int64_t end = 0;
};
inline TileRange tile_range(int64_t extent, int64_t tiles, int64_t i) {
  const int64_t units = tile_units(extent);
  return {std::min(extent, tile_align * (i * units / tiles)), std::min(extent, tile_align * ((i + 1) * units / tiles))};
}

}  // namespace taihu::blas
