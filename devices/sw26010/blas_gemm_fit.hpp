#pragma once
// Fitting the vendor GEMM model (blas_gemm.hpp) to measured passes: each
// sample is a pass whose published time is `fixed` (what the rest of the
// model charges: the layout step, the bias) plus `calls` GEMM calls of one
// shape. For each exponent on a grid, the other parameters enter linearly, so
// they are the non-negative least-squares solution (every subset of them
// solved, the best feasible kept) of the relative errors; the exponent with
// the least error wins. Deterministic, no starting point, no tuning.
//
// The kernel report (bench_sw26010_calibration --level=kernel) fits on the
// forward passes and predicts the backward ones, then the reverse, and fits
// all of them for config/devices/sw26010.ini.

#include <cstdint>
#include <vector>

#include "devices/sw26010/params.hpp"

namespace taihu::sw26010 {

struct BlasGemmSample {
  std::int64_t m = 0, n = 0, k = 0;
  double calls = 1;
  double fixed_seconds = 0;
  double published_seconds = 0;
};

struct BlasGemmFit {
  BlasGemmParams params;
  double rms_relative_error = 0;  // over the samples fitted
};

// The model's time for a sample under `blas`.
double predicted_seconds(const Params& params, const BlasGemmParams& blas, const BlasGemmSample& s);

// Fits call cost, the three half-performance lengths and the exponent (grid
// exponent_min..exponent_max in steps of exponent_step); min_dimension is
// the smallest dimension among the samples.
BlasGemmFit fit_blas_gemm(const Params& params, const std::vector<BlasGemmSample>& samples, double exponent_min = 0.5,
                          double exponent_max = 3.0, double exponent_step = 0.01);

}  // namespace taihu::sw26010
