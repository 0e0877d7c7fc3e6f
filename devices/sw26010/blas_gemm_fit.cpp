#include "devices/sw26010/blas_gemm_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "core/common/check.hpp"
#include "devices/sw26010/blas_gemm.hpp"

namespace taihu::sw26010 {

namespace {

constexpr std::size_t unknowns = 4;  // call cycles, m_half^e, n_half^e, k_half^e
using Row = std::array<double, unknowns>;

// Least squares over the columns in `mask` by the normal equations (4 x 4 at
// most, well scaled by the caller); nullopt if singular.
std::optional<Row> solve_subset(const std::vector<Row>& rows, const std::vector<double>& target, unsigned mask) {
  std::array<std::size_t, unknowns> cols{};
  std::size_t n = 0;
  for (std::size_t j = 0; j < unknowns; ++j)
    if (mask >> j & 1u) cols[n++] = j;
  std::array<std::array<double, unknowns + 1>, unknowns> a{};  // [A^T A | A^T b] over the chosen columns
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) a[i][j] += rows[r][cols[i]] * rows[r][cols[j]];
      a[i][n] += rows[r][cols[i]] * target[r];
    }
  for (std::size_t c = 0; c < n; ++c) {  // Gauss-Jordan with partial pivoting
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-300) return std::nullopt;
    std::swap(a[c], a[pivot]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  Row x{};
  for (std::size_t i = 0; i < n; ++i) x[cols[i]] = a[i][n] / a[i][i];
  return x;
}

}  // namespace

double predicted_seconds(const Params& params, const BlasGemmParams& blas, const BlasGemmSample& s) {
  return s.fixed_seconds + s.calls * params.seconds(blas_gemm_cycles(params, blas, s.m, s.n, s.k));
}

BlasGemmFit fit_blas_gemm(const Params& params, const std::vector<BlasGemmSample>& samples, double exponent_min,
                          double exponent_max, double exponent_step) {
  require(!samples.empty(), "fit_blas_gemm: no samples");
  require(exponent_step > 0 && exponent_min > 0 && exponent_max >= exponent_min,
          "fit_blas_gemm: exponent grid {}..{} step {}", exponent_min, exponent_max, exponent_step);
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (const auto& s : samples) smallest = std::min({smallest, s.m, s.n, s.k});

  BlasGemmFit best;
  best.rms_relative_error = std::numeric_limits<double>::infinity();
  const int steps = int(std::lround((exponent_max - exponent_min) / exponent_step));
  for (int step = 0; step <= steps; ++step) {
    const double e = exponent_min + step * exponent_step;
    // relative error r = (fixed + calls (call + inner (1 + sum a_d d^-e)) - published) / published,
    // linear in (call, a_m, a_n, a_k); each column scaled to unit size so the normal equations stay
    // well conditioned across the units (cycles against lengths to the power e)
    std::vector<Row> rows;
    std::vector<double> target;
    for (const auto& s : samples) {
      const double inner = s.calls * params.seconds(inner_loop_cycles(params, s.m, s.n, s.k));
      rows.push_back({s.calls * params.seconds(1.0) / s.published_seconds,
                      inner * std::pow(double(s.m), -e) / s.published_seconds,
                      inner * std::pow(double(s.n), -e) / s.published_seconds,
                      inner * std::pow(double(s.k), -e) / s.published_seconds});
      target.push_back((s.published_seconds - s.fixed_seconds - inner) / s.published_seconds);
    }
    Row scale{};
    for (const auto& r : rows)
      for (std::size_t j = 0; j < unknowns; ++j) scale[j] = std::max(scale[j], std::abs(r[j]));
    for (auto& r : rows)
      for (std::size_t j = 0; j < unknowns; ++j)
        if (scale[j] > 0) r[j] /= scale[j];
    for (unsigned mask = 0; mask < (1u << unknowns); ++mask) {
      Row x{};
      if (mask != 0) {
        const auto solved = solve_subset(rows, target, mask);
        if (!solved) continue;
        x = *solved;
      }
      if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
      double sum = 0;
      for (std::size_t r = 0; r < rows.size(); ++r) {
        double fit = 0;
        for (std::size_t j = 0; j < unknowns; ++j) fit += rows[r][j] * x[j];
        sum += (fit - target[r]) * (fit - target[r]);
      }
      const double rms = std::sqrt(sum / double(rows.size()));
      if (rms >= best.rms_relative_error) continue;
      const auto unscaled = [&](std::size_t j) { return scale[j] > 0 ? x[j] / scale[j] : 0.0; };
      best.rms_relative_error = rms;
      best.params.call_cycles = unscaled(0);
      best.params.m_half = std::pow(unscaled(1), 1.0 / e);
      best.params.n_half = std::pow(unscaled(2), 1.0 / e);
      best.params.k_half = std::pow(unscaled(3), 1.0 / e);
      best.params.exponent = e;
      best.params.min_dimension = int(smallest);
    }
  }
  return best;
}

}  // namespace taihu::sw26010
