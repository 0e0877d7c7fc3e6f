#pragma once
// The kernel-level calibration of the SW26010 model (bench_sw26010_calibration
// --level=kernel): the published whole-kernel measurements of
// shared/reference/sw26010-kernels.md beside the model's times, to show the gaps,
// not to fit them. Four parts here (a fifth, the explicit passes split into
// layout step and GEMM, in sw26010_explicit_split.hpp):
//  1. every pass of every VGG-16 convolution at B = 128 on one core group,
//     each method forced and the method the model chooses (P Table II);
//  2. swDNN's four implicit-convolution configurations (D Table III);
//  3. swGEMM at M = N = K = 1024 over its 81 blockings (TH §4.2.3, §4.3.2.3);
//  4. the layout-transform and float2double effects (T Table 5, Fig. 9).
// Everything runs timing only (no numerics); the passes run on `jobs` threads,
// each on its own core group, so the numbers do not depend on the threads.

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/conv.hpp"
#include "devices/sw26010/conv_passes.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/layout_runs.hpp"
#include "devices/sw26010/swgemm_plan.hpp"

namespace taihu::bench::sw26010_kernel_level {

using namespace taihu::sw26010;

// A published entry: seconds; `none` where the implicit path does not apply
// ("−"), `na` where the pass is not computed (conv1_1's data gradient).
constexpr double none = -1, na = -2;

struct VggLayer {
  const char* name;
  std::int64_t ni, no, size;
  double published[3][2];  // [pass][method: 0 implicit, 1 explicit]
};

// P Table II (sw26010-kernels.md §1): B = 128, one CG, 3x3, pad 1, stride 1.
inline const std::vector<VggLayer>& vgg16_layers() {
  static const std::vector<VggLayer> layers = {
      {"conv1_1", 3, 64, 224, {{none, 4.19}, {none, 1.10}, {na, na}}},
      {"conv1_2", 64, 64, 224, {{4.30, 7.79}, {none, 5.22}, {none, 14.97}}},
      {"conv2_1", 64, 128, 112, {{1.63, 2.45}, {none, 1.33}, {none, 3.61}}},
      {"conv2_2", 128, 128, 112, {{2.34, 3.14}, {2.26, 2.25}, {2.39, 6.11}}},
      {"conv3_1", 128, 256, 56, {{1.06, 0.73}, {0.92, 0.68}, {0.95, 1.69}}},
      {"conv3_2", 256, 256, 56, {{1.79, 1.14}, {1.56, 1.29}, {1.82, 3.05}}},
      {"conv3_3", 256, 256, 56, {{1.79, 1.14}, {1.56, 1.27}, {1.82, 3.03}}},
      {"conv4_1", 256, 512, 28, {{0.84, 0.69}, {0.70, 0.71}, {0.85, 0.95}}},
      {"conv4_2", 512, 512, 28, {{1.68, 1.33}, {1.27, 1.33}, {1.75, 1.89}}},
      {"conv4_3", 512, 512, 28, {{1.68, 1.33}, {1.27, 1.67}, {1.75, 1.87}}},
      {"conv5_1", 512, 512, 14, {{0.40, 0.62}, {0.31, 0.65}, {0.43, 0.80}}},
      {"conv5_2", 512, 512, 14, {{0.40, 0.63}, {0.31, 0.78}, {0.43, 0.84}}},
      {"conv5_3", 512, 512, 14, {{0.40, 0.63}, {0.31, 0.65}, {0.43, 0.84}}},
  };
  return layers;
}

inline std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

inline ConvShape vgg_shape(const VggLayer& l) { return ConvShape{l.ni, l.size, l.size, l.no, 3, 3, 1, 1, 1, 1}; }

// Runs `tasks` on `jobs` threads (each task owns its core group).
inline void run_parallel(std::vector<std::function<void()>>& tasks, int jobs) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, jobs); ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < tasks.size();) tasks[i]();
    });
  for (auto& th : pool) th.join();
}

struct PassResult {
  ConvPassTime model[2];  // [0 implicit, 1 explicit]
  bool implicit_run = false;
};

struct Report {
  std::vector<std::array<PassResult, 3>> vgg;  // per layer, per pass
  struct Swdnn {
    const char* order;
    const char* blocking;
    std::int64_t ni, no;
    double published_model, published_measured, model_gflops;
    double model_double_gflops = 0;  // double data, as D measured
    ImplicitStep step{};  // swCaffe's order, or D's image-size-aware (eq. 1) or batch-size-aware (eq. 2) order
  };
  std::vector<Swdnn> swdnn;
  struct GemmPoint {
    int bm, bn, bk;
    bool fits = true;
    double gflops = 0;
  };
  std::vector<GemmPoint> gemm;
  GemmPoint gemm_chosen;
  // the implicit forward kernel of every VGG-16 layer it applies to, per data
  // handling (T Fig. 9): [float2double, (single: the implicit column), double]
  std::vector<std::array<std::int64_t, 3>> vgg_precision;
};

inline double seconds(const Params& p, std::int64_t cycles) { return double(cycles) / p.clock_hz; }

inline bool implicit_eligible(const VggLayer& l, int pass) {
  return pass == 0 ? implicit_forward_eligible(vgg_shape(l), 128) : implicit_backward_eligible(vgg_shape(l), 128);
}
// The method the model chooses for a pass: implicit where swCaffe's rule for
// the pass allows it and it is the faster including the transforms (as
// choose_conv_method does for the forward pass), else explicit.
inline int chosen_method(const VggLayer& l, const std::array<PassResult, 3>& r, int pass) {
  if (!implicit_eligible(l, pass)) return 1;
  return r[pass].model[0].total() < r[pass].model[1].total() ? 0 : 1;
}
// The same choice against P Table II's explicit time instead of the model's: which
// method misses the model's implicit times alone would leave.
inline int chosen_against_published_explicit(const Params& params, const VggLayer& l,
                                             const std::array<PassResult, 3>& r, int pass) {
  if (!implicit_eligible(l, pass)) return 1;
  return seconds(params, r[pass].model[0].total()) < l.published[pass][1] ? 0 : 1;
}
// The published winner of a pass (-1: no entry); a tie goes to the listed-faster.
inline int published_winner(const VggLayer& l, int pass) {
  const double impl = l.published[pass][0], expl = l.published[pass][1];
  if (expl < 0) return -1;
  return impl > 0 && impl < expl ? 0 : 1;
}

// swDNN's table (D Table III): 3x3, 32 x 32 outputs, no padding (the image size is not in the reference).
inline ConvShape swdnn_shape(const Report::Swdnn& d) { return {d.ni, 34, 34, d.no, 3, 3, 1, 1, 0, 0}; }

// swGEMM at M = N = K = 1024 with the point's blocking forced (TH §4.2.3); ShapeError
// where the blocking does not fit the model's LDM layout.
inline double swgemm_cube_gflops(const Params& params, const Report::GemmPoint& g) {
  CoreGroup cg(0, params);
  cg.set_numerics(false);
  alignas(128) static float dummy[32];  // timing only: no data is read
  const GemmBlocking b{g.bm / 8, g.bn / 8, g.bk / 8};
  const auto s =
      gemm(cg, Transpose::no, Transpose::no, 1024, 1024, 1024, 1, dummy, 1024, dummy, 1024, 0, dummy, 1024, &b);
  return 2.0 * 1024 * 1024 * 1024 / seconds(params, s.cycles) / 1e9;
}

inline Report measure(const Params& params, int jobs) {
  Report rep;
  const auto& layers = vgg16_layers();
  rep.vgg.resize(layers.size());
  std::vector<std::function<void()>> tasks;
  for (std::size_t i = 0; i < layers.size(); ++i)
    for (int pass = 0; pass < 3; ++pass)
      for (int method = 0; method < 2; ++method) {
        const auto& l = layers[i];
        const double pub = l.published[pass][method];
        // the implicit kernels run where the table or swCaffe's rule has them
        if (method == 0 && pub < 0 && !implicit_eligible(l, pass)) continue;
        if (pub == na) continue;
        if (method == 0) rep.vgg[i][pass].implicit_run = true;
        tasks.push_back([&, i, pass, method] {
          rep.vgg[i][pass].model[method] = time_conv_pass(params, vgg_shape(layers[i]), 128, ConvPass(pass),
                                                          method == 0 ? ConvMethod::implicit : ConvMethod::explicit_gemm);
        });
      }

  // swDNN (D Table III): B = 128 (what its RBW column implies), swdnn_shape.
  // The image-size-aware rows step bCo x bB outputs (ImplicitStep); the second row's bB is not
  // printed, but its RBW (23.2 GB/s by D eq. 1 with No = 256 and bCo = 8) gives bB = 32. The
  // batch-size-aware rows keep output columns resident, so an input column serves its Kc taps (D eq. 2).
  rep.swdnn = {{"image-size-aware", "bB = 32, bCo = 16", 128, 128, 368, 350, 0, 0,
                ImplicitStep::image_size_aware(16, 32, 128)},
               {"image-size-aware", "bCo = 8", 128, 256, 397, 375, 0, 0, ImplicitStep::image_size_aware(8, 32, 128)},
               {"batch-size-aware", "-", 256, 256, 422, 410, 0, 0, ImplicitStep::batch_size_aware()},
               {"batch-size-aware", "-", 128, 384, 407, 392, 0, 0, ImplicitStep::batch_size_aware()}};
  for (auto& d : rep.swdnn)
    for (const auto precision : {GemmPrecision::float2double, GemmPrecision::double_data})
      tasks.push_back([&params, &d, precision] {
        const auto t =
            time_conv_pass(params, swdnn_shape(d), 128, ConvPass::forward, ConvMethod::implicit, precision, d.step);
        // the convolution kernel alone: D's kernel adds no bias
        const double gflops = 2.0 * 128 * d.ni * d.no * 9 * 32 * 32 / seconds(params, t.cycles - t.bias) / 1e9;
        (precision == GemmPrecision::double_data ? d.model_double_gflops : d.model_gflops) = gflops;
      });

  // T Fig. 9: the implicit forward kernel over VGG-16's layers (conv1_2 .. conv5_3) with float
  // widened in LDM, straightforward single precision (swCaffe's gemmfloat: the report's implicit
  // column) and double data
  rep.vgg_precision.assign(layers.size(), {0, 0, 0});
  for (std::size_t i = 1; i < layers.size(); ++i)
    for (int k = 0; k < 3; k += 2)
      tasks.push_back([&, i, k] {
        // the convolution kernel alone (T Fig. 9 rates its GEMMs), without the bias
        const auto t = time_conv_pass(params, vgg_shape(layers[i]), 128, ConvPass::forward, ConvMethod::implicit,
                                      k == 0 ? GemmPrecision::float2double : GemmPrecision::double_data);
        rep.vgg_precision[i][std::size_t(k)] = t.cycles - t.bias;
      });

  // swGEMM's 81 blockings at 1024^3 (C-swgemm sw_sgemm_std.c): blkM in 32..1024,
  // blkN in 128..1024, blkK in 32..1024, powers of two dividing 1024, with
  // 8 (2 blkN blkK + 2 blkK blkM + blkN blkM) / 64 < 60 KB.
  for (int bm = 32; bm <= 1024; bm *= 2)
    for (int bn = 128; bn <= 1024; bn *= 2)
      for (int bk = 32; bk <= 1024; bk *= 2)
        if (8.0 * (2.0 * bn * bk + 2.0 * bk * bm + double(bn) * bm) / 64 < 60 * 1024) rep.gemm.push_back({bm, bn, bk});
  // the model's own choice: swGEMM's search (plan_swgemm); its blkM runs along the model's m, blkN along n
  const GemmBlocking own = plan_swgemm(1024, 1024, 1024, params).blocking;
  rep.gemm_chosen = {8 * own.tile_m, 8 * own.tile_n, 8 * own.tile_k};
  auto run_gemm = [&params](Report::GemmPoint& g) {
    try {
      g.gflops = swgemm_cube_gflops(params, g);
    } catch (const ShapeError&) {
      g.fits = false;  // the model's LDM layout (float staging + double tiles) needs more than swGEMM's
    }
  };
  for (auto& g : rep.gemm) tasks.push_back([&run_gemm, &g] { run_gemm(g); });
  tasks.push_back([&] { run_gemm(rep.gemm_chosen); });
  run_parallel(tasks, jobs);
  return rep;
}

inline bool within(double model, double published, double tolerance) {
  return std::abs(model / published - 1) <= tolerance;
}

// Prints the report as markdown (the body of bench/results/sw26010/kernel.md)
// and, if json is not null, writes the same numbers there (an object left open
// for part 5, print_explicit_split, to add to and close).
inline void print(const Params& params, const Report& rep, std::FILE* json) {
  const auto& layers = vgg16_layers();
  const char* pass_names[3] = {"fwd", "wgrad", "dgrad"};
  const char* method_names[2] = {"impl", "expl"};
  std::printf("# SW26010 model: kernel-level calibration (issue 16 item 3)\n\n"
              "Produced by `build/bench/bench_sw26010_calibration --level=kernel "
              "--json=bench/results/sw26010/kernel.json > bench/results/sw26010/kernel.md` with\n"
              "`config/devices/sw26010.ini`, timing only (the model is deterministic: exact numbers). Published\n"
              "values: `shared/reference/sw26010-kernels.md`. This report shows the gaps. Nothing is fitted to\n"
              "it but the vendor BLAS's GEMM (part 6), which the reference knows only through P Table II's\n"
              "explicit column: it is fitted there by cross-validation, and part 6 reports how it predicts the\n"
              "entries each fit did not see. Targets (issue 16): every published VGG-16 entry within 15%%, the\n"
              "chosen method equal to the published winner on >= 12 of 13 layers per pass, swDNN's rates within\n"
              "10%%, swGEMM's best and worst within 15%% and the model's own block within 5%% of the model's\n"
              "best.\n\n");
  std::printf("## 1. VGG-16 convolutions, B = 128 on one core group (P Table II)\n\n");
  std::printf("Seconds for the batch. Model `impl` is the implicit kernel alone, its GEMM steps as swCaffe's\n"
              "implicit kernels run them: single precision forward and data gradient (gemmfloat), widened to\n"
              "double with the batch as each step's reduction for the weight gradient (float2double, one step per\n"
              "tap and output pixel); the explicit GEMMs are the vendor BLAS's (part 6). Both methods\n"
              "include the bias as swCaffe's layer adds it (a K = 1 GEMM per image forward, an MPE gemv per image\n"
              "for its gradient, `conv_bias.hpp`); `+tr` adds the layout\n"
              "transforms in and out that the model charges when it runs a layer implicitly. The implicit `ratio`\n"
              "is `+tr` over the published time: P Table II does not say whether its implicit times include the\n"
              "transforms, but swCaffe's implicit layer (C-swcaffe `sw_conv_layer_impl.c`, built with `SW_TRANS`)\n"
              "converts its input and filters and its output back inside every call, so a per-layer measurement of\n"
              "it includes them (the summary also counts the kernels alone). `chosen`: the method the model chooses per pass\n"
              "(implicit where swCaffe's eligibility rule for the pass allows it and it is the faster including\n"
              "transforms) against the published winner. n/m: no model kernel.\n\n");
  std::printf("| layer | pass | impl published | impl model | +tr | ratio | expl published | expl model | ratio | "
              "chosen (published) |\n|---|---|---|---|---|---|---|---|---|---|\n");
  int entries = 0, entries_within = 0, modelled = 0, modelled_within = 0;
  int kernel_alone_within = 0;  // the implicit entries scored without their transforms
  int matches[3] = {0, 0, 0}, compared[3] = {0, 0, 0};
  int matches_published_explicit[3] = {0, 0, 0};
  double sum_best_published = 0, sum_chosen_model = 0;
  if (json) std::fprintf(json, "{\n  \"clock_hz\": %.6g,\n  \"vgg16\": [\n", params.clock_hz);
  bool first_json = true;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    for (int pass = 0; pass < 3; ++pass) {
      const auto& r = rep.vgg[i][pass];
      if (l.published[pass][1] == na) {
        std::printf("| %s | %s | NA | | | | NA | | | |\n", l.name, pass_names[pass]);
        continue;
      }
      std::string cells[2];
      for (int m = 0; m < 2; ++m) {
        const double pub = l.published[pass][m];
        const auto& t = r.model[m];
        const bool run = m == 1 || r.implicit_run;
        std::string pub_s = pub < 0 ? "−" : fmt_num(pub), model_s, tr_s, ratio_s;
        if (!run || !t.modelled) model_s = pub < 0 ? "" : "n/m";
        else {
          model_s = fmt_num(seconds(params, t.cycles));
          if (m == 0) tr_s = fmt_num(seconds(params, t.total()));
        }
        if (pub > 0) {
          ++entries;
          if (run && t.modelled) {
            // implicit: with the transforms, which swCaffe's implicit layer runs inside every call
            const double ratio = seconds(params, m == 0 ? t.total() : t.cycles) / pub;
            const bool ok = within(ratio, 1, 0.15);
            ratio_s = fmt_num(ratio) + (ok ? "" : " ✗");
            ++modelled;
            modelled_within += ok;
            entries_within += ok;
            kernel_alone_within += m == 0 ? within(seconds(params, t.cycles) / pub, 1, 0.15) : ok;
          }
        }
        cells[m] = pub_s + " | " + model_s + (m == 0 ? " | " + tr_s : "") + " | " + ratio_s;
        if (json && run && t.modelled) {
          std::fprintf(json, "%s    {\"layer\": \"%s\", \"pass\": \"%s\", \"method\": \"%s\", \"published_s\": %s, "
                             "\"model_s\": %.6f, \"transforms_s\": %.6f, \"implicit_eligible\": %s}",
                       first_json ? "" : ",\n", l.name, pass_names[pass], m == 0 ? "implicit" : "explicit",
                       pub > 0 ? fmt_num(pub).c_str() : "null", seconds(params, t.cycles),
                       seconds(params, t.transforms()), implicit_eligible(l, pass) ? "true" : "false");
          first_json = false;
        }
      }
      const int chosen = chosen_method(l, rep.vgg[i], pass), winner = published_winner(l, pass);
      if (winner >= 0) {
        ++compared[pass];
        matches[pass] += chosen == winner;
        matches_published_explicit[pass] += chosen_against_published_explicit(params, l, rep.vgg[i], pass) == winner;
        sum_best_published += std::min(l.published[pass][1], l.published[pass][0] > 0 ? l.published[pass][0] : 1e9);
      }
      sum_chosen_model += seconds(params, r.model[chosen].total());
      std::printf("| %s | %s | %s | %s | %s%s (%s) |\n", l.name, pass_names[pass], cells[0].c_str(), cells[1].c_str(),
                  method_names[chosen], winner >= 0 && chosen != winner ? " ✗" : "",
                  winner >= 0 ? method_names[winner] : "-");
    }
  }
  if (json) std::fprintf(json, "\n  ],\n");
  std::printf("\n**Summary.** %d of %d published entries within 15%% (%d of them have a model kernel; %d of those "
              "within 15%%; %d with the implicit kernels scored alone, without their transforms). Chosen method "
              "equal to the published winner: forward %d of %d, weight gradient %d of %d, "
              "data gradient %d of %d; chosen against P Table II's explicit times instead of the model's (the "
              "model's implicit times kept): %d, %d and %d. Sum over all passes: published best %.2f s, model as "
              "chosen %.2f s.\n\n",
              entries_within, entries, modelled, modelled_within, kernel_alone_within, matches[0], compared[0],
              matches[1], compared[1], matches[2], compared[2], matches_published_explicit[0],
              matches_published_explicit[1], matches_published_explicit[2], sum_best_published, sum_chosen_model);
  if (json)
    std::fprintf(json,
                 "  \"vgg16_summary\": {\"entries\": %d, \"within_15\": %d, \"within_15_kernel_alone\": %d, "
                 "\"modelled\": %d, \"match_fwd\": %d, "
                 "\"match_wgrad\": %d, \"match_dgrad\": %d, \"layers_fwd\": %d, \"layers_wgrad\": %d, "
                 "\"layers_dgrad\": %d, \"match_against_published_explicit\": [%d, %d, %d], "
                 "\"published_best_sum_s\": %.4f, \"model_chosen_sum_s\": %.4f},\n",
                 entries, entries_within, kernel_alone_within, modelled, matches[0], matches[1], matches[2],
                 compared[0], compared[1], compared[2], matches_published_explicit[0], matches_published_explicit[1],
                 matches_published_explicit[2], sum_best_published, sum_chosen_model);

  std::printf("## 2. swDNN's four configurations (D Table III)\n\n"
              "The model's implicit forward kernel at B = 128 (what the RBW column implies), 3x3, 32 x 32 outputs,\n"
              "no padding (the image size is not in the reference). `step`: the outputs one GEMM step computes, so\n"
              "one fetch of a tap's filter slice serves them, and the output columns resident in LDM (`ImplicitStep`,\n"
              "conv.hpp). The image-size-aware rows step D's bCo x bB outputs, as whole-batch pixel columns (the\n"
              "model keeps the batch contiguous): D eq. 1's traffic, in longer DMA runs than bB images. The\n"
              "batch-size-aware rows step one pixel column of the batch (filter traffic 1/B) and keep as many\n"
              "output columns in LDM as fit beside the tiles (C-swdnn1's CStride), so an input column is fetched\n"
              "once for the Kc taps that read it (1/(Kc No), D eq. 2) but for the columns at a window's edges. The\n"
              "model runs each with float data widened in LDM (float2double) and with double data (D's runs are\n"
              "double data); the ratio is the double-data rate over the measured one.\n\n"
              "| loop order | blocking | Ni → No | step | published model GF/s | measured GF/s | "
              "taihu float2double GF/s | taihu double GF/s | ratio |\n|---|---|---|---|---|---|---|---|---|\n");
  if (json) std::fprintf(json, "  \"swdnn\": [");
  for (std::size_t i = 0; i < rep.swdnn.size(); ++i) {
    const auto& d = rep.swdnn[i];
    const double ratio = d.model_double_gflops / d.published_measured;
    const std::int64_t columns = d.step.pixel_columns;
    const int resident = implicit_forward_blocking(params, swdnn_shape(d), 128, d.step).c_blocks;
    std::printf("| %s | %s | %lld → %lld | %lld column%s x 128, %d resident | %.0f | %.0f | %.1f | %.1f | %.2f%s |\n",
                d.order, d.blocking, (long long)d.ni, (long long)d.no, (long long)columns, columns > 1 ? "s" : "",
                resident,
                d.published_model, d.published_measured, d.model_gflops,
                d.model_double_gflops, ratio, within(ratio, 1, 0.10) ? "" : " ✗");
    if (json)
      std::fprintf(json,
                   "%s{\"ni\": %lld, \"no\": %lld, \"measured_gflops\": %.0f, \"model_gflops\": %.2f, "
                   "\"model_double_gflops\": %.2f}",
                   i ? ", " : "", (long long)d.ni, (long long)d.no, d.published_measured, d.model_gflops,
                   d.model_double_gflops);
  }
  if (json) std::fprintf(json, "],\n");

  const Report::GemmPoint *best = nullptr, *worst = nullptr;
  int fit = 0;
  for (const auto& g : rep.gemm) {
    if (!g.fits) continue;
    ++fit;
    if (!best || g.gflops > best->gflops) best = &g;
    if (!worst || g.gflops < worst->gflops) worst = &g;
  }
  std::printf("\n## 3. swGEMM at M = N = K = 1024 (TH §4.2.3, §4.3.2.3)\n\n"
              "swGEMM's 81 blockings (blkM 32..1024, blkN 128..1024, blkK 32..1024, powers of two dividing 1024 and\n"
              "fitting its LDM formula) forced on the model's GEMM; %d of them fit the model's LDM layout.\n"
              "`T_est GF/s`: the rate swGEMM's own estimate (`swgemm_estimate`) gives each block; the model's own\n"
              "choice is the block it rates highest. Where T_est and the model's time rank the blocks differently,\n"
              "the choice falls short of the model's best.\n\n"
              "| | blkM x blkN x blkK | model GF/s | T_est GF/s | published GF/s | ratio |\n"
              "|---|---|---|---|---|---|\n",
              fit);
  const auto estimate_gflops = [](const Report::GemmPoint& g) {
    return 2.0 * 1024 * 1024 * 1024 / swgemm_estimate(1024, 1024, 1024, g.bm, g.bn, g.bk) / 1e9;
  };
  if (best && worst) {
    std::printf("| best | %d x %d x %d | %.1f | %.1f | 363.59 | %.2f%s |\n", best->bm, best->bn, best->bk,
                best->gflops, estimate_gflops(*best), best->gflops / 363.59,
                within(best->gflops, 363.59, 0.15) ? "" : " ✗");
    std::printf("| worst | %d x %d x %d | %.1f | %.1f | 66.83 | %.2f%s |\n", worst->bm, worst->bn, worst->bk,
                worst->gflops, estimate_gflops(*worst), worst->gflops / 66.83,
                within(worst->gflops, 66.83, 0.15) ? "" : " ✗");
    const auto& c = rep.gemm_chosen;
    std::printf("| model's own choice | %d x %d x %d | %.1f | %.1f | (swGEMM: < 1%% below its best) | %.2f of the "
                "model's best%s |\n",
                c.bm, c.bn, c.bk, c.gflops, estimate_gflops(c), c.gflops / best->gflops,
                c.gflops >= 0.95 * best->gflops ? "" : " ✗");
    if (json)
      std::fprintf(json,
                   "  \"swgemm\": {\"blockings\": %zu, \"fit\": %d, \"best_gflops\": %.2f, \"worst_gflops\": %.2f, "
                   "\"chosen_gflops\": %.2f, \"best\": [%d, %d, %d], \"worst\": [%d, %d, %d], \"chosen\": [%d, %d, "
                   "%d], \"estimate_gflops\": {\"best\": %.2f, \"worst\": %.2f, \"chosen\": %.2f}},\n",
                   rep.gemm.size(), fit, best->gflops, worst->gflops, c.gflops, best->bm, best->bn, best->bk, worst->bm,
                   worst->bn, worst->bk, c.bm, c.bn, c.bk, estimate_gflops(*best), estimate_gflops(*worst),
                   estimate_gflops(c));
  }

  // Layout transforms of the passes the model runs implicitly: without the
  // transform layer each layer converts what it reads and writes; with it
  // (the model's rule, layout_runs.hpp, on VGG-16 itself with the methods
  // chosen above) only at the borders of runs of implicit layers.
  auto implicit_pass = [&](std::size_t r, int pass) {
    return layers[r].published[pass][1] != na && chosen_method(layers[r], rep.vgg[r], pass) == 0;
  };
  const Net net(std::make_shared<config::Document>(
                    config::Document::parse_file(std::string(TAIHU_SOURCE_DIR) + "/config/nets/vgg16.ini")),
                1, 1);
  std::vector<int> row(net.num_layers(), -1);  // net layer -> row of the table
  for (std::size_t i = 0; i < net.num_layers(); ++i)
    for (std::size_t r = 0; r < layers.size(); ++r)
      if (net.layer(i).name() == layers[r].name) row[i] = int(r);
  const auto layouts = implicit_runs(net, [&](std::size_t i) {
    if (row[i] < 0) return false;
    for (int pass = 0; pass < 3; ++pass)
      if (layers[std::size_t(row[i])].published[pass][1] != na && !implicit_pass(std::size_t(row[i]), pass))
        return false;
    return true;
  });
  double all_passes = 0, every = 0, all_runs = 0, forward_runs = 0;
  for (std::size_t i = 0; i < net.num_layers(); ++i) {
    if (row[i] < 0) continue;
    const std::size_t r = std::size_t(row[i]);
    for (int pass = 0; pass < 3; ++pass) {
      if (!implicit_pass(r, pass)) continue;
      const ConvPassTime& t = rep.vgg[r][std::size_t(pass)].model[0];
      const double alone = seconds(params, t.transforms());
      const double in_run = seconds(params, (layouts[i].bottom_implicit ? 0 : t.input_transforms) +
                                                (layouts[i].top_implicit ? 0 : t.output_transforms));
      all_passes += alone, all_runs += in_run;
      if (pass == 0) every += alone, forward_runs += in_run;
    }
  }
  // T Fig. 9: chip TF/s of the implicit forward kernel over conv1_2 .. conv5_3 per data handling
  double tfs[3] = {0, 0, 0};
  {
    double flops = 0, cycles[3] = {0, 0, 0};
    for (std::size_t i = 1; i < layers.size(); ++i) {
      const auto& l = layers[i];
      flops += 2.0 * 128 * double(l.ni) * double(l.no) * 9 * double(l.size) * double(l.size);
      cycles[0] += double(rep.vgg_precision[i][0]);
      cycles[1] += double(rep.vgg[i][0].model[0].cycles - rep.vgg[i][0].model[0].bias);
      cycles[2] += double(rep.vgg_precision[i][2]);
    }
    for (int k = 0; k < 3; ++k) tfs[k] = 4 * flops / (cycles[k] / params.clock_hz) / 1e12;
  }
  std::printf("\n## 4. Layout transforms and float2double (T Table 5, Fig. 9)\n\n"
              "VGG-16 at B = 128, one iteration; T's CG count and passes are not stated in the reference, so these "
              "are not targets. With the transform layer, runs of implicit convolutions continue through ReLU; "
              "pooling needs Caffe's layout and ends a run (`devices/sw26010/layout_runs.hpp`).\n\n"
              "| effect | model | published | note |\n|---|---|---|---|\n"
              "| feature-map transforms, every pass run implicitly converting what it reads and writes | %.2f s | "
              "3.16 s | T Table 5, without the transform layer |\n"
              "| the same with swCaffe's transform layer at the borders of implicit runs | %.2f s | 0.73 s | T Table 5, "
              "with it |\n"
              "| forward passes only: without / with the transform layer | %.2f / %.2f s | | |\n"
              "| weight transforms | 0 (host side, not charged) | 1.86 s → 0 with the transform layer | |\n"
              "| VGG-16 implicit forward, 4 CGs: float2double / straightforward single / double data | %.3f / %.3f / "
              "%.3f TF/s (1 / %.2f / %.2f) | 1.034 / 0.775 / 1.247 TF/s (1 / 0.75 / 1.21) | T Fig. 9; "
              "the model's implicit kernel over conv1_2 .. conv5_3, total flops over total time, x 4 |\n",
              all_passes, all_runs, every, forward_runs, tfs[0], tfs[1], tfs[2], tfs[1] / tfs[0], tfs[2] / tfs[0]);
  if (json)
    std::fprintf(json,
                 "  \"transforms\": {\"all_passes_s\": %.4f, \"transform_layer_all_passes_s\": %.4f, "
                 "\"every_forward_layer_s\": %.4f, \"transform_layer_forward_s\": %.4f},\n"
                 "  \"vgg16_implicit_forward_tflops_4cg\": {\"float2double\": %.4f, \"single\": %.4f, \"double\": %.4f}",
                 all_passes, all_runs, every, forward_runs, tfs[0], tfs[1], tfs[2]);
}

}  // namespace taihu::bench::sw26010_kernel_level
