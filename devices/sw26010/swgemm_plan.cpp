#include "devices/sw26010/swgemm_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

namespace taihu::sw26010 {

namespace {
// swGEMM's strided-DMA map (C-swgemm MBW_map; reference Table C), MB/s, entry
// i for per-CPE blocks of (i + 1) * 16 bytes.
constexpr double mbw_map[64] = {
    3362,  6343,  9091,  11967, 14464, 10109, 10827, 13356, 14226, 16268, 17285, 19322, 20039, 8749,  16397, 17568,
    18847, 19079, 17885, 21040, 21278, 18181, 18960, 19725, 20331, 21264, 21536, 11486, 22908, 19667, 20303, 21103,
    21683, 21876, 22555, 23502, 21774, 20106, 21359, 21932, 21483, 19173, 22579, 23837, 23775, 21603, 21920, 22430,
    22826, 23274, 23631, 24176, 24429, 22369, 21537, 20850, 21515, 23763, 23601, 24484, 24605, 22800, 22922, 23485};
// bytes per second for a tile whose strided blocks are blk / 8 floats
double map_rate(int blk) {
  const int bsize = blk / 8 * 4;
  return mbw_map[std::clamp(bsize / 16 - 1, 0, 63)] * 1e6;
}

// swGEMM's compute model (C-swgemm estimite_compute_time), seconds per block
constexpr double coef_a = 9.554e-9, coef_b = 4.803e-10, coef_c = 3.852e-11, coef_d = 1.361e-5;

// swGEMM's LDM rule: A and B double-buffered, C single, all as double, < 60 KB per CPE
bool fits_swgemm_ldm(int blk_m, int blk_n, int blk_k) {
  return 8.0 * (2.0 * blk_n * blk_k + 2.0 * blk_k * blk_m + double(blk_n) * blk_m) / 64 < 60 * 1024;
}
}  // namespace

bool SwgemmPlan::padded() const { return padded_m > 0 || padded_n > 0 || padded_k > 0; }

double swgemm_estimate(std::int64_t m, std::int64_t n, std::int64_t k, int blk_m, int blk_n, int blk_k) {
  const double blocks = double(m / blk_m) * double(n / blk_n) * double(k / blk_k);
  const double t_compute =
      (coef_a * blk_n + coef_b * blk_m * blk_n + coef_c * double(blk_m) * blk_k * blk_n + coef_d) / 10 * blocks;
  // As swGEMM computes it: every tile at the rate of blkN's per-CPE block (the contiguous
  // width of its B and C tiles), except the first A tile's at blkM's.
  const double rate_n = map_rate(blk_n), rate_m = map_rate(blk_m);
  const double a_step = 4.0 * blk_m * blk_k, b_step = 4.0 * blk_n * blk_k;
  const double c_out = 4.0 * blk_m * blk_n * double(m / blk_m) * double(n / blk_n);
  const double t_dma = ((a_step + b_step) * blocks + c_out) / rate_n;
  return std::max(t_compute, t_dma) + b_step / rate_n + a_step / rate_m;
}

SwgemmPlan plan_swgemm(std::int64_t m, std::int64_t n, std::int64_t k, const Params& params) {
  static std::mutex mutex;
  static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, SwgemmPlan> memo;
  const auto key = std::tuple{m, n, k, params.ldm_budget_bytes};
  {
    std::lock_guard lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  // swGEMM's row-major dimensions are the model's: blkN (multiples of 128) runs along n, the
  // contiguous dimension of B and C, blkM (multiples of 32) along m; padded to the smallest blocks
  const std::int64_t sm = round_up(m, 32), sn = round_up(n, 128), sk = round_up(k, 32);
  SwgemmPlan plan;
  double best = std::numeric_limits<double>::infinity();
  for (int bn = 128; bn <= 2048 && bn <= sn; bn += 128) {
    if (sn % bn) continue;
    for (int bm = 32; bm <= 2048 && bm <= sm; bm += 32) {
      if (sm % bm) continue;
      for (int bk = 32; bk <= 2048 && bk <= sk; bk += 32) {
        if (sk % bk || !fits_swgemm_ldm(bm, bn, bk)) continue;
        const GemmBlocking b{bm / 8, bn / 8, bk / 8};  // the per-CPE tiles
        if (b.ldm_bytes() > std::size_t(params.ldm_budget_bytes)) continue;
        const double t = swgemm_estimate(sm, sn, sk, bm, bn, bk);
        if (t < best) best = t, plan.blocking = b, plan.estimated_seconds = t;
      }
    }
  }
  if (!std::isfinite(best)) plan.blocking = GemmBlocking::choose(m, n, k, params);  // nothing legal fits
  plan.padded_m = sm != m ? sm : 0;
  plan.padded_n = sn != n ? sn : 0;
  plan.padded_k = sk != k ? sk : 0;
  std::lock_guard lock(mutex);
  memo.emplace(key, plan);
  return plan;
}

}  // namespace taihu::sw26010
