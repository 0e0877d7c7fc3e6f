#pragma once
// Part 5 of the kernel-level report (bench_sw26010_calibration --level=kernel):
// every explicit pass of VGG-16 split into what the model charges for the
// layout step (im2col, or col2im for the data gradient) and for the GEMM, with
// the GEMM time the published total leaves once the model's layout step is
// taken off. The explicit column is where the model is furthest off (part 1),
// and this split says whether the GEMM or the layout step carries the gap: the
// next mechanism to model (a vendor-BLAS GEMM, issue 16) is chosen from it.
// Timing only; one image is timed and scaled to the batch (the explicit path
// runs image by image, each image the same kernels on the same addresses).

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/sw26010_kernel_level.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/kernels.hpp"

namespace taihu::bench::sw26010_kernel_level {

struct ExplicitSplit {
  // per layer: seconds for B = 128 of [im2col, col2im, GEMM fwd, GEMM wgrad, GEMM dgrad]
  std::vector<std::array<double, 5>> parts;
};

inline ExplicitSplit measure_explicit_split(const Params& params, int jobs) {
  const auto& layers = vgg16_layers();
  ExplicitSplit split;
  split.parts.assign(layers.size(), {});
  std::vector<std::function<void()>> tasks;
  for (std::size_t i = 0; i < layers.size(); ++i)
    tasks.push_back([&, i] {
      CoreGroup cg(0, params);
      cg.set_numerics(false);
      float* p = timing_address();
      const ConvShape s = vgg_shape(layers[i]);
      const std::int64_t m = s.num_output, n = s.out_height() * s.out_width(), k = s.col_rows();
      const double scale = 128.0 / params.clock_hz;
      auto& t = split.parts[i];
      t[0] = double(im2col(cg, s, p, p).cycles) * scale;
      t[1] = double(col2im(cg, s, p, p).cycles) * scale;
      // the three GEMMs as conv.cpp calls them per image
      t[2] = double(gemm(cg, Transpose::no, Transpose::no, m, n, k, 1, p, k, p, n, 0, p, n).cycles) * scale;
      t[3] = double(gemm(cg, Transpose::no, Transpose::yes, m, k, n, 1, p, n, p, n, 1, p, k).cycles) * scale;
      t[4] = double(gemm(cg, Transpose::yes, Transpose::no, k, n, m, 1, p, k, p, n, 0, p, n).cycles) * scale;
    });
  run_parallel(tasks, jobs);
  return split;
}

// Markdown on stdout; with json, the same rows as "explicit_split" and the
// object print() left open closed.
inline void print_explicit_split(const ExplicitSplit& split, std::FILE* json) {
  const auto& layers = vgg16_layers();
  const char* pass_names[3] = {"fwd", "wgrad", "dgrad"};
  std::printf("\n## 5. The explicit passes split: layout step and GEMM (P Table II's explicit column)\n\n"
              "Seconds for B = 128 on one CG (one image timed, x 128). GEMM m x n x k as swCaffe calls it per\n"
              "image (forward No x HW x 9Ni, weight gradient No x 9Ni x HW, data gradient 9Ni x HW x No).\n"
              "`layout`: the model's im2col (fwd, wgrad) or col2im (dgrad). `left for the GEMM`: the published\n"
              "explicit time minus the model's layout step, i.e. what the published GEMM took if the layout\n"
              "step is right; its rate beside the model's GEMM rate. The bias is left out of both.\n\n"
              "| layer | pass | GEMM m x n x k | layout model | GEMM model | GEMM model GF/s | published total | "
              "left for the GEMM | its GF/s | model / left |\n|---|---|---|---|---|---|---|---|---|---|\n");
  if (json) std::fprintf(json, ",\n  \"explicit_split\": [");
  bool first_json = true;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    const std::int64_t m = l.no, n = l.size * l.size, k = 9 * l.ni;
    const double flops = 2.0 * 128 * double(m) * double(n) * double(k);
    for (int pass = 0; pass < 3; ++pass) {
      const double published = l.published[pass][1];
      if (published < 0) continue;
      const auto& t = split.parts[i];
      const double layout = pass == 2 ? t[1] : t[0], gemm_s = t[2 + pass];
      const double left = published - layout;
      // the GEMM's m x n x k for this pass
      const std::array<std::int64_t, 3> g = pass == 0 ? std::array<std::int64_t, 3>{m, n, k}
                                            : pass == 1 ? std::array<std::int64_t, 3>{m, k, n}
                                                        : std::array<std::int64_t, 3>{k, n, m};
      const std::string dims = fmt::format("{} x {} x {}", g[0], g[1], g[2]);
      std::printf("| %s | %s | %s | %.3f | %.3f | %.0f | %.2f | %.3f | %.0f | %.2f |\n", l.name, pass_names[pass],
                  dims.c_str(), layout, gemm_s, flops / gemm_s / 1e9, published, left, flops / left / 1e9,
                  gemm_s / left);
      if (json) {
        std::fprintf(json,
                     "%s\n    {\"layer\": \"%s\", \"pass\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                     "\"layout_s\": %.6f, \"gemm_s\": %.6f, \"published_s\": %.2f, \"left_for_gemm_s\": %.6f}",
                     first_json ? "" : ",", l.name, pass_names[pass], (long long)g[0], (long long)g[1], (long long)g[2],
                     layout, gemm_s, published, left);
        first_json = false;
      }
    }
  }
  if (json) std::fprintf(json, "\n  ]\n}\n");
}

}  // namespace taihu::bench::sw26010_kernel_level
