#pragma once
// How swGEMM runs one memory-level GEMM call (TH §4.2; C-swgemm
// src/sw_sgemm_std.c; sw26010-kernels.md §3):
//  - blocks must divide M, N and K: blkN from 128 in steps of 128, blkM and
//    blkK from 32 in steps of 32 (up to 2048), so other shapes are padded up;
//  - the block is chosen on the MPE by swGEMM's own model, not by trial runs:
//    T_est = max(T_compute, T_dma) + T_init_dma, T_compute from the fitted
//    coefficients (a, b, c, d), T_dma from the strided-DMA map MBW_map
//    (reference Table C), among blockings whose tiles fit the LDM;
//  - a padded call pads A and B and copies C back in CPE passes of their own.
// swGEMM's interface is row-major like the model's C (m x n) = op(A) op(B): its
// blkM runs along m, its blkN along n. Its CPE kernel works on the column-major
// transpose C^T, so blkN is the contiguous width of the B and C tiles, and the
// strided-DMA rate T_dma charges every tile at (src/sw_sgemm_std.c).

#include <cstdint>

#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/params.hpp"

namespace taihu::sw26010 {

struct SwgemmPlan {
  GemmBlocking blocking;                         // the model's per-CPE tiles (the block / 8)
  std::int64_t padded_m = 0, padded_n = 0, padded_k = 0;  // the model's m, n, k padded to the block grid
  bool padded() const;
  double estimated_seconds = 0;  // swGEMM's T_est for the chosen block
};

// swGEMM's T_est (seconds) for its row-major M x N x K call with blocks
// blk_m x blk_n x blk_k (each dividing its dimension).
double swgemm_estimate(std::int64_t m, std::int64_t n, std::int64_t k, int blk_m, int blk_n, int blk_k);

// The plan for the model's row-major C (m x n) += op(A) (m x k) op(B) (k x n):
// the block swGEMM's search picks among those that also fit the model's LDM
// layout within the LDM budget (GemmBlocking::ldm_bytes). Memoised per shape.
SwgemmPlan plan_swgemm(std::int64_t m, std::int64_t n, std::int64_t k, const Params& params);

}  // namespace taihu::sw26010
