#pragma once
// Part 6 of the kernel-level report (bench_sw26010_calibration --level=kernel):
// the vendor BLAS's GEMM (devices/sw26010/blas_gemm.hpp) fitted by
// cross-validation on P Table II's explicit column. The model is fitted on the
// forward passes and predicts the weight- and data-gradient passes, then the
// reverse; each entry's cross-validated prediction comes from the fit that did
// not see it. Then it is fitted on all 38 entries: what config/devices/sw26010.ini
// ships. The method the model chooses per pass follows from each.

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/sw26010_explicit_split.hpp"
#include "bench/sw26010_kernel_level.hpp"
#include "devices/sw26010/blas_gemm_fit.hpp"

namespace taihu::bench::sw26010_kernel_level {

struct ExplicitEntry {
  std::size_t layer;
  int pass;
  BlasGemmSample sample;
};

// The 38 explicit entries: 128 GEMM calls of the pass's shape, and what the
// model charges beside them (its im2col or col2im, and the bias as swCaffe adds it).
inline std::vector<ExplicitEntry> explicit_entries(const Params& params, const Report& rep,
                                                   const ExplicitSplit& split) {
  std::vector<ExplicitEntry> entries;
  const auto& layers = vgg16_layers();
  for (std::size_t i = 0; i < layers.size(); ++i)
    for (int pass = 0; pass < 3; ++pass) {
      const double published = layers[i].published[pass][1];
      if (published < 0) continue;
      const PassGemm g = pass_gemm(layers[i], pass);
      const double fixed =
          split.passes[i][std::size_t(pass)].layout_s + seconds(params, rep.vgg[i][pass].model[1].bias);
      entries.push_back({i, pass, {g.m, g.n, g.k, 128, fixed, published}});
    }
  return entries;
}

// Markdown on stdout; with json, "blas_gemm_cross_validation" added to the open object.
inline void print_blas_cross_validation(const Params& params, const Report& rep, const ExplicitSplit& split,
                                        std::FILE* json) {
  const auto& layers = vgg16_layers();
  const char* pass_names[3] = {"fwd", "wgrad", "dgrad"};
  const auto entries = explicit_entries(params, rep, split);
  const auto samples_of = [&](auto&& keep) {
    std::vector<BlasGemmSample> out;
    for (const auto& e : entries)
      if (keep(e.pass)) out.push_back(e.sample);
    return out;
  };
  const BlasGemmFit on_forward = fit_blas_gemm(params, samples_of([](int p) { return p == 0; }));
  const BlasGemmFit on_backward = fit_blas_gemm(params, samples_of([](int p) { return p != 0; }));
  const BlasGemmFit on_all = fit_blas_gemm(params, samples_of([](int) { return true; }));
  const BlasGemmParams& shipped = params.blas_gemm;
  // each entry's prediction by the fit that did not see it
  const auto held_out = [&](const ExplicitEntry& e) { return e.pass == 0 ? on_backward.params : on_forward.params; };

  std::printf(
      "\n## 6. The vendor BLAS's GEMM by cross-validation (P Table II's explicit column)\n\n"
      "swCaffe's explicit GEMMs are the vendor's `cblas_sgemm` (libswblas), not swGEMM. Model\n"
      "(`devices/sw26010/blas_gemm.hpp`): per call, `call + 2mnk/R (1 + (m_half/m)^e + (n_half/n)^e +\n"
      "(k_half/k)^e)`, R the inner loop's rate from the micro level (not fitted), one half-performance\n"
      "length per GEMM dimension. Each fit takes the published time less what the model charges beside\n"
      "the GEMM (its layout step and the bias, parts 5 and 1) and solves for the rest: for each exponent\n"
      "on a grid (0.5..3, step 0.01) the other four parameters by non-negative least squares of the\n"
      "relative errors (`devices/sw26010/blas_gemm_fit.hpp`). A fit never sees the entries it is scored\n"
      "on in the `cross-validated` column: forward entries are predicted by the fit on the 25 backward\n"
      "entries, backward entries by the fit on the 13 forward ones. `all 38`: the fit on every entry;\n"
      "`shipped`: `config/devices/sw26010.ini`'s parameters (the all-38 fit, rounded), which part 1 runs.\n\n");
  std::printf(
      "| fitted on | m_half | n_half | k_half | exponent | call (us) | rms rel. error (fitted) |\n"
      "|---|---|---|---|---|---|---|\n");
  const auto param_row = [&](const char* name, const BlasGemmParams& b, double rms) {
    std::printf("| %s | %.0f | %.0f | %.0f | %.2f | %.1f | %s |\n", name, b.m_half, b.n_half, b.k_half, b.exponent,
                params.seconds(b.call_cycles) * 1e6, rms >= 0 ? fmt::format("{:.3f}", rms).c_str() : "");
  };
  param_row("13 forward entries", on_forward.params, on_forward.rms_relative_error);
  param_row("25 backward entries", on_backward.params, on_backward.rms_relative_error);
  param_row("all 38 entries", on_all.params, on_all.rms_relative_error);
  param_row("shipped (config)", shipped, -1);

  std::printf(
      "\n| layer | pass | GEMM m x n x k | published | beside the GEMM | cross-validated | ratio | all 38 | ratio | "
      "shipped | ratio |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  struct Score {
    int within = 0, count = 0;
    std::vector<double> errors;
    void add(double ratio) {
      ++count;
      within += std::abs(ratio - 1) <= 0.15;
      errors.push_back(std::abs(ratio - 1));
    }
    double median() const {
      auto e = errors;
      std::sort(e.begin(), e.end());
      return e.empty() ? 0 : e[e.size() / 2];
    }
  };
  Score cv_forward, cv_backward, all_fit, shipped_fit;
  // the model's explicit time per entry under each parameter set, for the method choice below
  std::vector<std::array<double, 3>> explicit_s(layers.size(), {-1, -1, -1}), explicit_cv = explicit_s,
                                                                              explicit_all = explicit_s;
  const auto mark = [](double r) { return std::abs(r - 1) <= 0.15 ? "" : " ✗"; };
  if (json) std::fprintf(json, ",\n  \"blas_gemm_cross_validation\": {\"entries\": [");
  for (std::size_t j = 0; j < entries.size(); ++j) {
    const auto& e = entries[j];
    const BlasGemmSample& s = e.sample;
    const double cv = predicted_seconds(params, held_out(e), s), all = predicted_seconds(params, on_all.params, s),
                 ship = predicted_seconds(params, shipped, s);
    (e.pass == 0 ? cv_forward : cv_backward).add(cv / s.published_seconds);
    all_fit.add(all / s.published_seconds);
    shipped_fit.add(ship / s.published_seconds);
    explicit_cv[e.layer][std::size_t(e.pass)] = cv;
    explicit_all[e.layer][std::size_t(e.pass)] = all;
    explicit_s[e.layer][std::size_t(e.pass)] = ship;
    std::printf("| %s | %s | %lld x %lld x %lld | %.2f | %.3f | %.2f | %.2f%s | %.2f | %.2f%s | %.2f | %.2f%s |\n",
                layers[e.layer].name, pass_names[e.pass], (long long)s.m, (long long)s.n, (long long)s.k,
                s.published_seconds, s.fixed_seconds, cv, cv / s.published_seconds, mark(cv / s.published_seconds), all,
                all / s.published_seconds, mark(all / s.published_seconds), ship, ship / s.published_seconds,
                mark(ship / s.published_seconds));
    if (json)
      std::fprintf(json,
                   "%s\n    {\"layer\": \"%s\", \"pass\": \"%s\", \"published_s\": %.2f, \"fixed_s\": %.6f, "
                   "\"cross_validated_s\": %.6f, \"all_38_s\": %.6f, \"shipped_s\": %.6f}",
                   j ? "," : "", layers[e.layer].name, pass_names[e.pass], s.published_seconds, s.fixed_seconds, cv,
                   all, ship);
  }
  // the method per pass: implicit where swCaffe's rule allows it and the model's implicit time
  // (with its transforms) is below the explicit time under the parameter set
  const auto matches = [&](const std::vector<std::array<double, 3>>& expl) {
    std::array<int, 3> m{};
    for (std::size_t i = 0; i < layers.size(); ++i)
      for (int pass = 0; pass < 3; ++pass) {
        const int winner = published_winner(layers[i], pass);
        if (winner < 0) continue;
        const bool implicit = implicit_eligible(layers[i], pass) &&
                              seconds(params, rep.vgg[i][pass].model[0].total()) < expl[i][std::size_t(pass)];
        m[std::size_t(pass)] += (implicit ? 0 : 1) == winner;
      }
    return m;
  };
  const auto m_cv = matches(explicit_cv), m_all = matches(explicit_all), m_ship = matches(explicit_s);
  std::printf(
      "\n**Summary.** Within 15%% of the published time: cross-validated %d of 38 (forward, predicted from\n"
      "the backward fit: %d of 13, median error %.0f%%; backward, predicted from the forward fit: %d of 25,\n"
      "median %.0f%%); the all-38 fit %d of 38 (median %.0f%%); shipped %d of 38. Chosen method equal to the\n"
      "published winner (forward / weight gradient / data gradient, of 13 / 13 / 12): cross-validated\n"
      "%d / %d / %d, all-38 fit %d / %d / %d, shipped %d / %d / %d.\n",
      cv_forward.within + cv_backward.within, cv_forward.within, 100 * cv_forward.median(), cv_backward.within,
      100 * cv_backward.median(), all_fit.within, 100 * all_fit.median(), shipped_fit.within, m_cv[0], m_cv[1], m_cv[2],
      m_all[0], m_all[1], m_all[2], m_ship[0], m_ship[1], m_ship[2]);
  if (json) {
    const auto fit_json = [&](const BlasGemmParams& b, double rms) {
      return fmt::format(
          "{{\"m_half\": {:.2f}, \"n_half\": {:.2f}, \"k_half\": {:.2f}, \"exponent\": {:.2f}, "
          "\"call_cycles\": {:.1f}, \"min_dimension\": {}, \"rms_relative_error\": {:.4f}}}",
          b.m_half, b.n_half, b.k_half, b.exponent, b.call_cycles, b.min_dimension, rms);
    };
    std::fprintf(
        json,
        "\n  ],\n  \"fit_forward\": %s,\n  \"fit_backward\": %s,\n  \"fit_all\": %s,\n"
        "  \"within_15\": {\"cross_validated_forward\": %d, \"cross_validated_backward\": %d, \"all_38\": %d, "
        "\"shipped\": %d},\n  \"method_matches\": {\"cross_validated\": [%d, %d, %d], \"all_38\": [%d, %d, %d], "
        "\"shipped\": [%d, %d, %d]}}",
        fit_json(on_forward.params, on_forward.rms_relative_error).c_str(),
        fit_json(on_backward.params, on_backward.rms_relative_error).c_str(),
        fit_json(on_all.params, on_all.rms_relative_error).c_str(), cv_forward.within, cv_backward.within,
        all_fit.within, shipped_fit.within, m_cv[0], m_cv[1], m_cv[2], m_all[0], m_all[1], m_all[2], m_ship[0],
        m_ship[1], m_ship[2]);
  }
}

}  // namespace taihu::bench::sw26010_kernel_level
