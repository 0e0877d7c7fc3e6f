#pragma once
// Part 5 of the kernel-level report (bench_sw26010_calibration --level=kernel):
// every explicit pass of VGG-16 split into what the model charges for the
// layout step (im2col, or col2im for the data gradient) and for the GEMM as
// swGEMM would run it, with the GEMM time the published total leaves once the
// model's layout step is taken off. With swGEMM's GEMM the explicit column was
// where the model was furthest off, and this split showed the GEMM carrying the
// gap: swCaffe calls the vendor BLAS there, modelled in part 6 from it.
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

// The GEMM of an explicit pass as swCaffe calls it per image (conv.cpp does the
// same): forward No x HW x 9Ni, weight gradient No x 9Ni x HW (B transposed),
// data gradient 9Ni x HW x No (A transposed).
struct PassGemm {
  std::int64_t m, n, k;
  Transpose trans_a, trans_b;
};
inline PassGemm pass_gemm(const VggLayer& l, int pass) {
  const std::int64_t no = l.no, hw = l.size * l.size, rows = 9 * l.ni;
  if (pass == 0) return {no, hw, rows, Transpose::no, Transpose::no};
  if (pass == 1) return {no, rows, hw, Transpose::no, Transpose::yes};
  return {rows, hw, no, Transpose::yes, Transpose::no};
}

struct PassSplit {
  double layout_s = 0, gemm_s = 0;  // for B = 128
};
struct ExplicitSplit {
  std::vector<std::array<PassSplit, 3>> passes;  // per layer, per pass
};

inline ExplicitSplit measure_explicit_split(const Params& params, int jobs) {
  const auto& layers = vgg16_layers();
  ExplicitSplit split;
  split.passes.assign(layers.size(), {});
  std::vector<std::function<void()>> tasks;
  for (std::size_t i = 0; i < layers.size(); ++i)
    tasks.push_back([&, i] {
      CoreGroup cg(0, params);
      cg.set_numerics(false);
      float* p = timing_address();
      const ConvShape s = vgg_shape(layers[i]);
      const double scale = 128.0 / params.clock_hz;
      const double im2col_s = double(im2col(cg, s, p, p).cycles) * scale;
      const double col2im_s = double(col2im(cg, s, p, p).cycles) * scale;
      for (int pass = 0; pass < 3; ++pass) {
        const PassGemm g = pass_gemm(layers[i], pass);
        // row-major: op(A) is m x k, op(B) k x n, C m x n; lda/ldb are the stored rows' lengths
        const std::int64_t lda = g.trans_a == Transpose::no ? g.k : g.m;
        const std::int64_t ldb = g.trans_b == Transpose::no ? g.n : g.k;
        const float beta = pass == 1 ? 1.0f : 0.0f;  // the weight gradient accumulates over the images
        split.passes[i][std::size_t(pass)] = {
            pass == 2 ? col2im_s : im2col_s,
            double(gemm(cg, g.trans_a, g.trans_b, g.m, g.n, g.k, 1, p, lda, p, ldb, beta, p, g.n).cycles) * scale};
      }
    });
  run_parallel(tasks, jobs);
  return split;
}

// Markdown on stdout; with json, the same rows as "explicit_split" (the object
// print() left open stays open for part 6).
inline void print_explicit_split(const ExplicitSplit& split, std::FILE* json) {
  const auto& layers = vgg16_layers();
  const char* pass_names[3] = {"fwd", "wgrad", "dgrad"};
  std::printf("\n## 5. The explicit passes split: layout step and GEMM (P Table II's explicit column)\n\n"
              "Seconds for B = 128 on one CG (one image timed, x 128). GEMM m x n x k as swCaffe calls it per\n"
              "image (forward No x HW x 9Ni, weight gradient No x 9Ni x HW, data gradient 9Ni x HW x No).\n"
              "`layout`: the model's im2col (fwd, wgrad) or col2im (dgrad). `left for the GEMM`: the published\n"
              "explicit time minus the model's layout step, i.e. what the published GEMM took if the layout\n"
              "step is right; its rate beside swGEMM's rate in the model (what the model charged before the\n"
              "vendor GEMM of part 6). The bias is left out of both.\n"
              "`ns / col`: the published total over the column matrix's elements (9Ni x HW per image, x 128),\n"
              "from the table alone. Each column element takes part in No multiply-adds in every pass, so a pass\n"
              "whose cost follows its flops shows this column growing with No; where it stays flat while No\n"
              "grows, the published pass pays per element of the column matrix (data handling), not per flop.\n\n"
              "| layer | pass | GEMM m x n x k | layout model | swGEMM model | swGEMM GF/s | published total | "
              "left for the GEMM | its GF/s | swGEMM / left | ns / col |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  if (json) std::fprintf(json, ",\n  \"explicit_split\": [");
  bool first_json = true;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    // every column element takes part in No multiply-adds, whichever the pass
    const double column_elements = 128.0 * double(9 * l.ni) * double(l.size * l.size);
    const double flops = 2.0 * double(l.no) * column_elements;
    for (int pass = 0; pass < 3; ++pass) {
      const double published = l.published[pass][1];
      if (published < 0) continue;
      const auto [layout, gemm_s] = split.passes[i][std::size_t(pass)];
      const double left = published - layout;
      const PassGemm g = pass_gemm(l, pass);
      const std::string dims = fmt::format("{} x {} x {}", g.m, g.n, g.k);
      const double ns_per_column_element = published / column_elements * 1e9;
      std::printf("| %s | %s | %s | %.3f | %.3f | %.0f | %.2f | %.3f | %.0f | %.2f | %.2f |\n", l.name,
                  pass_names[pass], dims.c_str(), layout, gemm_s, flops / gemm_s / 1e9, published, left,
                  flops / left / 1e9, gemm_s / left, ns_per_column_element);
      if (json) {
        std::fprintf(json,
                     "%s\n    {\"layer\": \"%s\", \"pass\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                     "\"layout_s\": %.6f, \"gemm_s\": %.6f, \"published_s\": %.2f, \"left_for_gemm_s\": %.6f, "
                     "\"published_ns_per_column_element\": %.4f}",
                     first_json ? "" : ",", l.name, pass_names[pass], (long long)g.m, (long long)g.n, (long long)g.k,
                     layout, gemm_s, published, left, ns_per_column_element);
        first_json = false;
      }
    }
  }
  if (json) std::fprintf(json, "\n  ]");
}

}  // namespace taihu::bench::sw26010_kernel_level
