#pragma once
// Part 7 of the kernel-level report (bench_sw26010_calibration --level=kernel):
// the outputs that the two lock-step parameters move (swDNN's rows, swGEMM's
// best, worst and own block at 1024^3), each at the central values and over
// the parameters' ranges (devices/sw26010/lockstep_range.hpp). The ranges
// come from published facts (config/devices/sw26010.ini says which); no value
// inside them is chosen by scoring against these rows.

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <vector>

#include "bench/sw26010_kernel_level.hpp"
#include "devices/sw26010/lockstep_range.hpp"

namespace taihu::bench::sw26010_kernel_level {

struct LockstepRange {
  // per swDNN row: [float2double, double data]
  std::vector<std::array<OutputRange, 2>> swdnn;
  OutputRange gemm_best, gemm_worst, gemm_own;
};

inline LockstepRange measure_lockstep_range(const Params& params, const Report& rep, int jobs) {
  // setting 0: the central values; 1-4: the corners
  std::vector<Params> settings{params};
  for (const Params& corner : lockstep_corners(params)) settings.push_back(corner);
  const std::size_t rows = rep.swdnn.size(), blocks = rep.gemm.size();
  std::vector<std::array<double, 2>> swdnn(rows * settings.size());
  std::vector<double> gemm_gflops(blocks * settings.size(), 0.0), own(settings.size(), 0.0);
  const auto run = [&settings](std::size_t s, const Report::GemmPoint& g, double& gflops) {
    gflops = swgemm_cube_gflops(settings[s], g);
  };
  std::vector<std::function<void()>> tasks;
  for (std::size_t s = 0; s < settings.size(); ++s) {
    for (std::size_t i = 0; i < rows; ++i)
      for (int precision = 0; precision < 2; ++precision)
        tasks.push_back([&, s, i, precision] {
          const auto& d = rep.swdnn[i];
          const auto t = time_conv_pass(settings[s], swdnn_shape(d), 128, ConvPass::forward, ConvMethod::implicit,
                                        precision ? GemmPrecision::double_data : GemmPrecision::float2double, d.step);
          swdnn[s * rows + i][std::size_t(precision)] =
              2.0 * 128 * d.ni * d.no * 9 * 32 * 32 / seconds(settings[s], t.cycles - t.bias) / 1e9;
        });
    for (std::size_t g = 0; g < blocks; ++g)
      if (rep.gemm[g].fits) tasks.push_back([&, s, g] { run(s, rep.gemm[g], gemm_gflops[s * blocks + g]); });
    tasks.push_back([&, s] { run(s, rep.gemm_chosen, own[s]); });
  }
  run_parallel(tasks, jobs);

  const auto range = [&](auto&& value) {
    OutputRange r;
    r.central = r.low = r.high = value(0);
    for (std::size_t s = 1; s < settings.size(); ++s) {
      r.low = std::min(r.low, value(s));
      r.high = std::max(r.high, value(s));
    }
    return r;
  };
  LockstepRange out;
  for (std::size_t i = 0; i < rows; ++i)
    out.swdnn.push_back({range([&](std::size_t s) { return swdnn[s * rows + i][0]; }),
                         range([&](std::size_t s) { return swdnn[s * rows + i][1]; })});
  const auto extreme = [&](std::size_t s, bool best) {
    double v = best ? 0 : 1e300;
    for (std::size_t g = 0; g < blocks; ++g) {
      if (!rep.gemm[g].fits) continue;
      const double r = gemm_gflops[s * blocks + g];
      v = best ? std::max(v, r) : std::min(v, r);
    }
    return v;
  };
  out.gemm_best = range([&](std::size_t s) { return extreme(s, true); });
  out.gemm_worst = range([&](std::size_t s) { return extreme(s, false); });
  out.gemm_own = range([&](std::size_t s) { return own[s]; });
  return out;
}

// Markdown on stdout; with json, "lockstep_range" added to the open object.
inline void print_lockstep_range(const Params& params, const Report& rep, const LockstepRange& r, std::FILE* json) {
  const auto& overlap = params.gemm_lockstep_dma_overlap_range;
  const auto& step = params.gemm_lockstep_iteration_cycles_range;
  std::printf(
      "\n## 7. Across the lock-step parameters' ranges (TH Fig. 3.6)\n\n"
      "The share of a GEMM step's DMA that proceeds during the lock-step compute (central %.2f, range\n"
      "%.2f-%.2f) and the cycles each iteration of the register-communication loop pays beyond the\n"
      "calibrated loop in lock-step (central %.0f, range %.0f-%.0f); `config/devices/sw26010.ini` says\n"
      "which published facts bound each. Each output at the central values, and its lowest and highest\n"
      "over the four corners of the two ranges (every output is monotone in each parameter). Only\n"
      "swGEMM's and swDNN's kernels run this loop; the vendor GEMM (part 6) is fitted whole.\n\n"
      "| output | central (range) | published |\n|---|---|---|\n",
      params.gemm_lockstep_dma_overlap, overlap.low, overlap.high, params.gemm_lockstep_iteration_cycles, step.low,
      step.high);
  for (std::size_t i = 0; i < r.swdnn.size(); ++i) {
    const auto& d = rep.swdnn[i];
    std::printf("| swDNN %s, %s, %lld → %lld, float2double GF/s | %s | %.0f measured |\n", d.order, d.blocking,
                (long long)d.ni, (long long)d.no, r.swdnn[i][0].describe().c_str(), d.published_measured);
    std::printf("| the same, double data GF/s | %s | %.0f measured |\n", r.swdnn[i][1].describe().c_str(),
                d.published_measured);
  }
  std::printf("| swGEMM 1024³, best block GF/s | %s | 363.59 |\n", r.gemm_best.describe().c_str());
  std::printf("| swGEMM 1024³, worst block GF/s | %s | 66.83 |\n", r.gemm_worst.describe().c_str());
  std::printf("| swGEMM 1024³, the model's own block GF/s | %s | (< 1%% below the best) |\n",
              r.gemm_own.describe().c_str());
  if (json) {
    const auto j = [](const OutputRange& o) {
      return fmt::format("{{\"central\": {:.2f}, \"low\": {:.2f}, \"high\": {:.2f}}}", o.central, o.low, o.high);
    };
    std::fprintf(json, ",\n  \"lockstep_range\": {\"swdnn\": [");
    for (std::size_t i = 0; i < r.swdnn.size(); ++i)
      std::fprintf(json, "%s{\"float2double\": %s, \"double\": %s}", i ? ", " : "", j(r.swdnn[i][0]).c_str(),
                   j(r.swdnn[i][1]).c_str());
    std::fprintf(json, "], \"swgemm_best\": %s, \"swgemm_worst\": %s, \"swgemm_own\": %s}", j(r.gemm_best).c_str(),
                 j(r.gemm_worst).c_str(), j(r.gemm_own).c_str());
  }
}

}  // namespace taihu::bench::sw26010_kernel_level
