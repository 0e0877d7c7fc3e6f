#pragma once
// Every output of the model across the ranges of its two lock-step parameters
// (params.hpp: gemm_lockstep_dma_overlap and gemm_lockstep_iteration_cycles). TH
// Fig. 3.6 names what the 64 CPEs' lock-step costs but publishes no number,
// so no value is picked for them by scoring against a check: each output is
// reported at the central values and over the range the published facts
// allow. An output is monotone in each parameter (more overlap never slows a
// step, a costlier step never speeds one), so its extremes lie at the
// corners of the two ranges, and the four corners are what is evaluated.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "devices/sw26010/params.hpp"

namespace taihu::sw26010 {

struct OutputRange {
  double central = 0, low = 0, high = 0;
  // "10.0 (9.1-10.3)" with `decimals` after the point
  std::string describe(int decimals = 1) const {
    return fmt::format("{:.{}f} ({:.{}f}-{:.{}f})", central, decimals, low, decimals, high, decimals);
  }
};

// The parameters at the four corners of the two ranges, everything else as `params`.
inline std::array<Params, 4> lockstep_corners(const Params& params) {
  std::array<Params, 4> corners;
  for (int i = 0; i < 4; ++i) {
    Params& p = corners[std::size_t(i)];
    p = params;
    const auto& overlap = params.gemm_lockstep_dma_overlap_range;
    const auto& step = params.gemm_lockstep_iteration_cycles_range;
    p.gemm_lockstep_dma_overlap = i & 1 ? overlap.high : overlap.low;
    p.gemm_lockstep_iteration_cycles = i & 2 ? step.high : step.low;
  }
  return corners;
}

// `central` (what `output` gives at the central values, already known) and
// the range of `output(params)` over the corners.
template <class Output>
OutputRange across_lockstep_range(const Params& params, Output&& output, double central) {
  OutputRange r{central, central, central};
  for (const Params& corner : lockstep_corners(params)) {
    const double v = double(output(corner));
    r.low = std::min(r.low, v);
    r.high = std::max(r.high, v);
  }
  return r;
}

// `output(params)` at the central values and its range over the corners.
template <class Output>
OutputRange across_lockstep_range(const Params& params, Output&& output) {
  return across_lockstep_range(params, output, double(output(params)));
}

}  // namespace taihu::sw26010
