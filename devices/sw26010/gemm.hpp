#pragma once
// swCaffe-style GEMM on one core group (swGEMM's structure):
//  - C, A and B are cut into blkM x blkN x blkK blocks, each block into an 8x8
//    grid of tiles, CPE (i, j) owning tile (i, j) of each; K is innermost so
//    the C tile stays in LDM across the K loop;
//  - each tile arrives by one strided DMA, double-buffered (the next block's
//    GETs are issued before the current block is used);
//  - float tiles are widened to double in LDM, multiplied in 8 register-
//    communication steps (step t: CPE (i, t) broadcasts its A tile along row
//    i, CPE (t, j) its B tile along column j), and C is narrowed on the way out.
// Numerics: per K block each CPE runs one host dgemm over what the 8 steps
// deliver to it; cycles are charged per block from the inner kernel's count.

#include <cstdint>
#include <string>
#include <vector>

#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

enum class Transpose { no, yes };

// Blocking arithmetic for positive b: ceil(a / b), and a rounded up to a multiple of b.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

struct GemmBlocking {
  int tile_m = 32, tile_n = 32, tile_k = 48;  // per-CPE tile; the block is 8x these
  // C blocks resident in LDM at once. 1: each C block runs its K loop to the
  // end before the next (swGEMM). More: a B-stationary schedule over a window
  // of that many consecutive C blocks along N, for problems whose segments
  // read one B tile into several C blocks (the implicit convolution's input
  // column meets Kc output columns, D Alg. 2): the window's steps run grouped
  // by their B tile, which is fetched (and widened) once for the group.
  int c_blocks = 1;
  // The per-CPE LDM bytes this blocking needs.
  std::size_t ldm_bytes() const;
  // The largest tiles fitting the LDM budget for this problem, evenly sized (no padded tail block).
  static GemmBlocking choose(std::int64_t m, std::int64_t n, std::int64_t k, const Params& params);
};

// A batch of GEMMs sharing m, n and the transposes, run in one spawn:
// C_p = alpha * sum over segments s of op(A_s) op(B_s) + beta * C_p. The
// implicit convolution is one problem per output pixel with one segment per
// kernel tap that falls inside the image.
struct GemmSegment {
  const float* a;
  std::int64_t lda;
  const float* b;  // op(B)'s column n_begin
  std::int64_t ldb;
  std::int64_t k;
  // The segment contributes to C columns [n_begin, n_end) only (n_end < 0: all).
  std::int64_t n_begin = 0, n_end = -1;
};
struct GemmProblem {
  float* c;
  std::int64_t ldc;
  std::vector<GemmSegment> segments;
};
// `blocking` forces the tiles (null: GemmBlocking::choose); calibration runs
// swGEMM's blockings through it (TH §4.2.3).
KernelStats gemm_batch(CoreGroup& cg, const std::string& kernel, Transpose trans_a, Transpose trans_b, std::int64_t m,
                       std::int64_t n, float alpha, float beta, const std::vector<GemmProblem>& problems,
                       const GemmBlocking* blocking = nullptr);

// C (m x n, row-major, ldc) = alpha * op(A) * op(B) + beta * C.
KernelStats gemm(CoreGroup& cg, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                 std::int64_t ldc, const GemmBlocking* blocking = nullptr);

// The LDM-resident primitive: every CPE already holds double tiles
// (tile_m x tile_k of A, tile_k x tile_n of B, tile_m x tile_n of C); runs the
// 8 register-communication steps once. For calibration (TH §4.3.1).
KernelStats ldm_gemm_primitive(CoreGroup& cg, int tile_m, int tile_n, int tile_k);

}  // namespace taihu::sw26010
