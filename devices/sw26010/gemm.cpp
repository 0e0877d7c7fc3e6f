#include "devices/sw26010/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "core/common/check.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/swgemm_plan.hpp"

namespace taihu::sw26010 {

namespace {
// Register blocks of the inner kernel: 4 x 16 doubles of C per loop, so a
// tile_m x tile_n tile takes tile_m * tile_n / 64 loops of tile_k iterations
// (16 vmads each) per register-communication step.
double inner_loops(int tile_m, int tile_n) { return std::max(1.0, double(tile_m) * tile_n / 64.0); }

// The schedule of a batched GEMM: one step per (problem, C block, segment, K
// block), in the order the CPEs run them.
struct Step {
  std::int32_t problem, segment;
  std::int64_t mb, nb, kb;
  bool first = false, last = false;  // of its C block
  int slot = 0;                      // its C block's tile in LDM (nb's place in its window)
  bool same_b = false;               // its B tile is the previous step's: no fetch, no widening
};

struct GemmSchedule {
  std::vector<Step> steps;
  std::vector<int> b_buffer;  // per step: which of the two B buffers its tile lands in
};

// With several C blocks resident (blocking.c_blocks), a window's steps are
// grouped by B tile (B-stationary); each C block's first step loads its tile
// and its last writes it back.
GemmSchedule schedule_steps(const std::vector<GemmProblem>& problems, std::int64_t m, std::int64_t n, bool bt,
                            const GemmBlocking& blocking) {
  const std::int64_t bm = 8 * blocking.tile_m, bn = 8 * blocking.tile_n, bk = 8 * blocking.tile_k;
  const std::int64_t blocks_m = ceil_div(m, bm), blocks_n = ceil_div(n, bn);
  const int window = std::max(blocking.c_blocks, 1);
  // A step's B tile, block-wide: steps with equal keys fetch the same elements to the same places.
  using BKey = std::tuple<std::uintptr_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  const auto b_key = [&](const Step& st) -> BKey {
    if (st.segment < 0) return {};
    const GemmSegment& seg = problems[st.problem].segments[st.segment];
    const std::int64_t n_end = seg.n_end < 0 ? n : std::min(n, seg.n_end);
    const std::int64_t lo = std::max(st.nb * bn, seg.n_begin), hi = std::min(st.nb * bn + bn, n_end);
    const std::int64_t row = st.kb * bk, col = lo - seg.n_begin;
    const float* first = seg.b + (bt ? col * seg.ldb + row : row * seg.ldb + col);
    return {reinterpret_cast<std::uintptr_t>(first), seg.ldb, lo - st.nb * bn, hi - lo, std::min(bk, seg.k - row)};
  };
  GemmSchedule schedule;
  std::vector<Step>& steps = schedule.steps;
  for (std::size_t p = 0; p < problems.size(); ++p)
    for (std::int64_t mb = 0; mb < blocks_m; ++mb)
      for (std::int64_t w0 = 0; w0 < blocks_n; w0 += window) {
        const std::size_t window_begin = steps.size();
        for (std::int64_t nb = w0; nb < std::min(w0 + window, blocks_n); ++nb) {
          const std::size_t first = steps.size();
          const int slot = int(nb - w0);
          for (std::size_t s = 0; s < problems[p].segments.size(); ++s)
            for (std::int64_t kb = 0; kb < ceil_div(problems[p].segments[s].k, bk); ++kb)
              steps.push_back({std::int32_t(p), std::int32_t(s), mb, nb, kb, false, false, slot});
          if (steps.size() == first)  // C = beta C
            steps.push_back({std::int32_t(p), -1, mb, nb, 0, false, false, slot});
        }
        const auto in_window = std::span(steps).subspan(window_begin);
        if (window > 1) {
          // B-stationary: the window's steps grouped by B tile (stable: a C block's K order is kept)
          std::vector<std::pair<BKey, Step>> keyed;
          keyed.reserve(in_window.size());
          for (const Step& st : in_window) keyed.emplace_back(b_key(st), st);
          std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
          for (std::size_t x = 0; x < keyed.size(); ++x) {
            in_window[x] = keyed[x].second;
            in_window[x].same_b = x > 0 && in_window[x].segment >= 0 && in_window[x - 1].segment >= 0 &&
                                  keyed[x].first == keyed[x - 1].first;
          }
        }
        // each C block's first step loads its tile, its last writes it back
        std::vector<bool> seen(std::size_t(window), false);
        for (auto& st : in_window)
          if (!seen[std::size_t(st.slot)]) st.first = seen[std::size_t(st.slot)] = true;
        std::fill(seen.begin(), seen.end(), false);
        for (auto it = in_window.rbegin(); it != in_window.rend(); ++it)
          if (!seen[std::size_t(it->slot)]) it->last = seen[std::size_t(it->slot)] = true;
      }
  // B tiles alternate between two buffers, a step that reuses one keeps it
  std::vector<int>& b_buffer = schedule.b_buffer;
  b_buffer.assign(steps.size(), 0);
  for (std::size_t x = 1; x < steps.size(); ++x) b_buffer[x] = steps[x].same_b ? b_buffer[x - 1] : 1 - b_buffer[x - 1];
  return schedule;
}

}  // namespace

std::size_t GemmBlocking::ldm_bytes() const {
  const std::size_t ak = std::size_t(tile_m) * tile_k, bk = std::size_t(tile_k) * tile_n;
  // two float buffers of A and B (double-buffered DMA), one widened double copy, double C
  const std::size_t cc = std::size_t(tile_m) * tile_n * std::size_t(std::max(c_blocks, 1));
  return 2 * (ak + bk) * sizeof(float) + (ak + bk) * sizeof(double) + cc * (sizeof(double) + sizeof(float)) + 256;
}

GemmBlocking GemmBlocking::choose(std::int64_t m, std::int64_t n, std::int64_t k, const Params& params) {
  // As few blocks as fit in each dimension, evenly sized: a dimension the largest
  // tile does not divide is split into equal blocks rather than full ones and a
  // padded tail, whose tiles would be computed whole (the implicit kernels hold
  // exactly No / 8 output channels per CPE; C-swdnn1, sw26010.md §6.2).
  const auto even_tile = [](std::int64_t extent, std::int64_t largest) {
    const std::int64_t per_cpe = ceil_div(extent, 8), blocks = std::max<std::int64_t>(1, ceil_div(per_cpe, largest));
    return int(std::max<std::int64_t>(round_up(ceil_div(per_cpe, blocks), 4), 4));
  };
  GemmBlocking g;
  g.tile_m = even_tile(m, 32);
  g.tile_n = even_tile(n, 32);
  g.tile_k = int(std::clamp<std::int64_t>(round_up(ceil_div(k, 8), 4), 4, 256));
  while (g.tile_k > 4 && g.ldm_bytes() > std::size_t(params.ldm_budget_bytes)) g.tile_k -= 4;
  g.tile_k = even_tile(k, g.tile_k);
  return g;
}

KernelStats gemm(CoreGroup& cg, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                 std::int64_t ldc, const GemmBlocking* blocking) {
  if (blocking)
    return gemm_batch(cg, "gemm", trans_a, trans_b, m, n, alpha, beta, {GemmProblem{c, ldc, {{a, lda, b, ldb, k}}}},
                      blocking);
  // swGEMM's call: its own block choice; a shape its blocks do not divide pays the border
  // tiles of A and B copied into zero-padded buffers and C's copied back, each a CPE pass of
  // its own (TH §4.2.4 "lightweight zero-padding"), and the GEMM computes whole blocks.
  const SwgemmPlan plan = plan_swgemm(m, n, k, cg.params());
  const std::int64_t bm = 8 * plan.blocking.tile_m, bn = 8 * plan.blocking.tile_n, bk = 8 * plan.blocking.tile_k;
  const bool pad_m = m % bm != 0, pad_n = n % bn != 0, pad_k = k % bk != 0;
  KernelStats total;
  // The padding passes move the border tiles only; their time does not depend on the values,
  // so they run timing only (the GEMM below computes on the unpadded operands).
  const auto border_pass = [&](std::int64_t elements) {
    if (elements <= 0) return;
    TimingOnly timing(cg);
    total += copy(cg, timing_address(), timing_address(), elements);
  };
  border_pass((pad_m ? bm * k : 0) + (pad_k ? m * bk : 0));  // op(A): m x k
  border_pass((pad_k ? bk * n : 0) + (pad_n ? k * bn : 0));  // op(B): k x n
  total += gemm_batch(cg, "gemm", trans_a, trans_b, m, n, alpha, beta, {GemmProblem{c, ldc, {{a, lda, b, ldb, k}}}},
                      &plan.blocking);
  border_pass((pad_m ? bm * n : 0) + (pad_n ? m * bn : 0));  // C back from the padded buffer
  total.kernel = "gemm";
  return total;
}

// Longer than 80 lines, on purpose: most of it is the program each CPE runs
// (the lambda), whose LDM buffers, DMA reply count and current tiles are
// locals that its stages (fetch, widen, broadcast product, write back) all
// share; split into functions they would travel as a dozen parameters. The
// part with no CPE state, the schedule, is schedule_steps.
KernelStats gemm_batch(CoreGroup& cg, const std::string& kernel, Transpose trans_a, Transpose trans_b, std::int64_t m,
                       std::int64_t n, float alpha, float beta, const std::vector<GemmProblem>& problems,
                       const GemmBlocking* forced) {
  std::int64_t max_k = 1;
  for (const auto& p : problems)
    for (const auto& s : p.segments) max_k = std::max(max_k, s.k);
  const auto blocking = forced ? *forced : GemmBlocking::choose(m, n, max_k, cg.params());
  const int tm = blocking.tile_m, tn = blocking.tile_n, tk = blocking.tile_k;
  const std::int64_t bm = 8 * tm, bn = 8 * tn, bk = 8 * tk;
  const bool numerics = cg.numerics();
  const bool at = trans_a == Transpose::yes, bt = trans_b == Transpose::yes;
  const GemmSchedule schedule = schedule_steps(problems, m, n, bt, blocking);
  const std::vector<Step>& steps = schedule.steps;
  const std::vector<int>& b_buffer = schedule.b_buffer;
  const int window = std::max(blocking.c_blocks, 1);

  // Host scratch standing in for the registers: after the step's array sync
  // every CPE's widened tiles are final, so the first CPE to run gathers the
  // whole block (A: bm x bk, B: bk x bn) and computes its product once with one
  // large dgemm; each CPE then adds its own tile to the C tile in its LDM.
  // (The same sums as 64 per-CPE products over the broadcast panels, done at
  // host speed.)
  std::vector<double> block_a(numerics ? std::size_t(bm) * bk : 0), block_b(numerics ? std::size_t(bk) * bn : 0),
      block_c(numerics ? std::size_t(bm) * bn : 0);
  std::int64_t computed_step = -1;

  // The data handling (T Fig. 9): float2double widens in LDM; single and
  // double_data do not, single runs the slower single-precision inner loop,
  // double_data moves 8 bytes per element (timing only: the operands are
  // float). Their LDM layouts are no larger than float2double's, for which the
  // blocking was chosen. Single computes its numerics on host-side copies of
  // the tiles (what its registers would hold), so its LDM stays float only.
  const GemmPrecision precision = cg.gemm_precision();
  const bool widens = precision == GemmPrecision::float2double;
  require<SimulationError>(precision != GemmPrecision::double_data || !numerics,
                           "{}: double data is timing only (set_numerics(false))", kernel);
  const bool host_tiles = numerics && !widens;
  std::vector<std::vector<double>> host_a(host_tiles ? cpes_per_group : 0), host_b(host_a.size()),
      host_c(host_a.size());
  const std::size_t esize = precision == GemmPrecision::double_data ? 8 : 4;  // bytes per element in memory
  // an iteration of the register-communication loop: the calibrated loop (DP, or the straightforward
  // SP one) plus what running it in lock-step with DMA in flight costs each iteration (TH Fig. 3.6;
  // not published: a parameter with a range, lockstep_range.hpp)
  const Params& params = cg.params();
  const double inner_cycles = (precision == GemmPrecision::single ? params.gemm_single_cycles_per_16_vmad
                                                                  : params.gemm_cycles_per_16_vmad) +
                              params.gemm_lockstep_iteration_cycles;

  return cg.run(kernel, [&](Cpe& cpe) {
    const int i = cpe.row(), j = cpe.col();
    const std::size_t a_elems = std::size_t(tm) * tk, b_elems = std::size_t(tk) * tn;
    const auto staging = [&](std::size_t elems, const char* name) {
      return static_cast<float*>(cpe.ldm_alloc(elems * esize, name, 32));
    };
    float* fa[2] = {staging(a_elems, "A tile"), staging(a_elems, "A tile")};
    float* fb[2] = {staging(b_elems, "B tile"), staging(b_elems, "B tile")};
    double* wa = widens ? cpe.ldm_array<double>(a_elems, "A tile (double)") : nullptr;
    double* wb = widens ? cpe.ldm_array<double>(b_elems, "B tile (double)") : nullptr;
    const std::size_t c_elems = std::size_t(tm) * tn;
    std::vector<double*> wcs(std::size_t(window), nullptr);  // per resident C block
    if (widens)
      for (auto& wc : wcs) wc = cpe.ldm_array<double>(c_elems, "C tile (double)");
    if (host_tiles) {
      const auto id = std::size_t(cpe.id());
      host_a[id].resize(a_elems), host_b[id].resize(b_elems), host_c[id].resize(c_elems * wcs.size());
      wa = host_a[id].data(), wb = host_b[id].data();
      for (std::size_t c = 0; c < wcs.size(); ++c) wcs[c] = host_c[id].data() + c * c_elems;
    }
    std::vector<float*> fcs(static_cast<std::size_t>(window));
    for (auto& fc : fcs) fc = staging(c_elems, "C tile");
    DmaReply reply;
    int expected = 0;

    struct Extent {
      std::int64_t rows, cols, col_offset = 0;  // col_offset: first valid column within the tile
    };
    // This CPE's tiles of a step: op(A) rows [r0, r0+tm) x K [ka, ka+tk), op(B) K [kb, kb+tk) x cols [c0, c0+tn).
    struct Tiles {
      std::int64_t r0, c0, ka, kb;
      Extent ea, eb;
      const GemmSegment* seg;
    };
    auto tiles_of = [&](const Step& st) {
      Tiles t{};
      t.r0 = st.mb * bm + i * tm;
      t.c0 = st.nb * bn + j * tn;
      if (st.segment < 0) return t;
      t.seg = &problems[st.problem].segments[st.segment];
      const std::int64_t k = t.seg->k;
      t.ka = st.kb * bk + j * tk;
      t.kb = st.kb * bk + i * tk;
      t.ea = {std::clamp<std::int64_t>(m - t.r0, 0, tm), std::clamp<std::int64_t>(k - t.ka, 0, tk)};
      const std::int64_t n_end = t.seg->n_end < 0 ? n : std::min(n, t.seg->n_end);
      const std::int64_t lo = std::max(t.c0, t.seg->n_begin), hi = std::min(t.c0 + tn, n_end);
      t.eb = {std::clamp<std::int64_t>(k - t.kb, 0, tk), std::max<std::int64_t>(hi - lo, 0), lo - t.c0};
      return t;
    };
    // Element `offset` of a stored operand (its elements esize bytes apart).
    auto at_element = [&](const float* base, std::int64_t offset) {
      return reinterpret_cast<const std::byte*>(base) + std::size_t(offset) * esize;
    };
    // GET of a stored tile (rows x cols of op(X) at r0, c0).
    auto fetch = [&](float* dst, const float* base, std::int64_t ld, bool trans, std::int64_t r0, std::int64_t c0,
                     Extent e) {
      if (e.rows == 0 || e.cols == 0) return;
      const std::int64_t blocks = trans ? e.cols : e.rows, elems = trans ? e.rows : e.cols;
      cpe.dma_get_strided(dst, at_element(base, trans ? c0 * ld + r0 : r0 * ld + c0), std::size_t(blocks),
                          std::size_t(elems) * esize, std::size_t(ld) * esize, reply);
      ++expected;
    };
    auto issue = [&](std::size_t step) {
      const Tiles t = tiles_of(steps[step]);
      if (!t.seg) return;
      fetch(fa[step % 2], t.seg->a, t.seg->lda, at, t.r0, t.ka, t.ea);
      if (!steps[step].same_b)
        fetch(fb[b_buffer[step]], t.seg->b, t.seg->ldb, bt, t.kb, t.c0 + t.eb.col_offset - t.seg->n_begin, t.eb);
    };
    // Widen a landed tile into a row-major double tile (rows x cols) with zero padding.
    auto widen_tile = [&](double* dst, const float* src, bool trans, Extent e, int rows, int cols) {
      if (numerics) {
        std::fill(dst, dst + std::size_t(rows) * cols, 0.0);
        double* d = dst + e.col_offset;
        if (!trans) {
          for (std::int64_t r = 0; r < e.rows; ++r)
            for (std::int64_t q = 0; q < e.cols; ++q) d[r * cols + q] = src[r * e.cols + q];
        } else {
          for (std::int64_t q = 0; q < e.cols; ++q)
            for (std::int64_t r = 0; r < e.rows; ++r) d[r * cols + q] = src[q * e.rows + r];
        }
      }
      if (widens) cpe.charge_widen(double(rows) * cols);
    };

    if (!steps.empty()) issue(0);
    for (std::size_t step = 0; step < steps.size(); ++step) {
      const Step& st = steps[step];
      const GemmProblem& prob = problems[st.problem];
      const Tiles t = tiles_of(st);
      const Extent ce{std::clamp<std::int64_t>(m - t.r0, 0, tm), std::clamp<std::int64_t>(n - t.c0, 0, tn)};
      const int cur = int(step % 2), cur_b = b_buffer[step];
      double* wc = wcs[std::size_t(st.slot)];
      float* fc = fcs[std::size_t(st.slot)];
      if (st.first) {
        // C tile: beta * C (needs the old C) or zeros
        if (numerics) std::fill(wc, wc + std::size_t(tm) * tn, 0.0);
        if (beta != 0.0f && ce.rows > 0 && ce.cols > 0) {
          cpe.dma_wait(reply, expected);  // the previous C tile has left
          cpe.dma_get_strided(fc, at_element(prob.c, t.r0 * prob.ldc + t.c0), std::size_t(ce.rows),
                              std::size_t(ce.cols) * esize, std::size_t(prob.ldc) * esize, reply);
          cpe.dma_wait(reply, ++expected);
          if (numerics)
            for (std::int64_t r = 0; r < ce.rows; ++r)
              for (std::int64_t q = 0; q < ce.cols; ++q) wc[r * tn + q] = double(beta) * fc[r * ce.cols + q];
          if (widens) cpe.charge_widen(double(ce.rows) * ce.cols);
        }
      }
      if (t.seg) {
        cpe.dma_wait(reply, expected);  // this step's tiles (and any earlier PUT)
        cpe.check_ready(fa[cur], a_elems * esize);
        cpe.check_ready(fb[cur_b], b_elems * esize);
        widen_tile(wa, fa[cur], at, t.ea, tm, tk);
        if (!st.same_b) widen_tile(wb, fb[cur_b], bt, t.eb, tk, tn);
      }
      // the next step's tiles (possibly of the next C block) arrive during this one
      if (step + 1 < steps.size()) issue(step + 1);
      if (t.seg) {
        // the 8 broadcast steps need every peer's widened tiles (row and column: one array sync)
        cpe.sync(Scope::array);
        const double compute_from = double(cpe.rpcc());
        if (numerics) {
          if (computed_step != std::int64_t(step)) {
            const std::size_t wa_off = host_tiles ? 0 : reinterpret_cast<std::byte*>(wa) - cpe.ldm_base();
            const std::size_t wb_off = host_tiles ? 0 : reinterpret_cast<std::byte*>(wb) - cpe.ldm_base();
            for (int r = 0; r < 8; ++r)
              for (int q = 0; q < 8; ++q) {
                // A tile of CPE (r, q): rows r*tm.., K q*tk..; B tile of CPE (r, q): K r*tk.., cols q*tn..
                const auto peer = std::size_t(r * 8 + q);
                const auto* ta = host_tiles ? host_a[peer].data()
                                            : reinterpret_cast<const double*>(cpe.peer(r, q).ldm_base() + wa_off);
                const auto* tb = host_tiles ? host_b[peer].data()
                                            : reinterpret_cast<const double*>(cpe.peer(r, q).ldm_base() + wb_off);
                for (int x = 0; x < tm; ++x)
                  std::memcpy(block_a.data() + std::size_t(r * tm + x) * bk + q * tk, ta + x * tk, std::size_t(tk) * 8);
                for (int x = 0; x < tk; ++x)
                  std::memcpy(block_b.data() + std::size_t(r * tk + x) * bn + q * tn, tb + x * tn, std::size_t(tn) * 8);
              }
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bm), int(bn), int(bk), double(alpha),
                        block_a.data(), int(bk), block_b.data(), int(bn), 0.0, block_c.data(), int(bn));
            computed_step = std::int64_t(step);
          }
          for (int x = 0; x < tm; ++x) {
            const double* src = block_c.data() + std::size_t(i * tm + x) * bn + j * tn;
            double* dst = wc + x * tn;
            for (int y = 0; y < tn; ++y) dst[y] += src[y];
          }
        }
        cpe.charge_gemm_inner(8 * inner_loops(tm, tn), tk, inner_cycles);
        // Lock-step (TH Fig. 3.6): while the 64 CPEs run the register-
        // communication steps together, the DMA in flight (the next step's
        // tiles, a C tile going out) moves at only `overlap` of its pace, so
        // double buffering hides less than the whole transfer. What the
        // transfers still had to do when the compute began, less what they
        // did during it, is paid after it: with no overlap, the whole of it
        // (the step is compute plus DMA), however long the transfer.
        const double compute = double(cpe.rpcc()) - compute_from;
        const double remaining = cpe.dma_completion(reply) - compute_from;
        const double stalled = remaining - cpe.params().gemm_lockstep_dma_overlap * compute;
        if (stalled > 0) cpe.charge(std::int64_t(stalled + 0.5));
        // nobody overwrites its widened tiles while a peer may still read them
        cpe.sync(Scope::array);
      }
      if (st.last && ce.rows > 0 && ce.cols > 0) {
        // narrow C and write it back (the PUT overlaps the next block's start)
        cpe.dma_wait(reply, expected);
        cpe.check_ready(fc, std::size_t(ce.rows * ce.cols) * esize);
        if (numerics)
          for (std::int64_t r = 0; r < ce.rows; ++r)
            for (std::int64_t q = 0; q < ce.cols; ++q) fc[r * ce.cols + q] = float(wc[r * tn + q]);
        if (widens) cpe.charge_widen(double(ce.rows) * ce.cols);
        cpe.dma_put_strided(const_cast<std::byte*>(at_element(prob.c, t.r0 * prob.ldc + t.c0)), fc,
                            std::size_t(ce.rows), std::size_t(ce.cols) * esize, std::size_t(prob.ldc) * esize, reply);
        ++expected;
      }
    }
    cpe.dma_wait(reply, expected);
  });
}

KernelStats ldm_gemm_primitive(CoreGroup& cg, int tile_m, int tile_n, int tile_k) {
  return cg.run("ldm_gemm", [&](Cpe& cpe) {
    cpe.ldm_array<double>(std::size_t(tile_m) * tile_k, "A tile (double)");
    cpe.ldm_array<double>(std::size_t(tile_k) * tile_n, "B tile (double)");
    cpe.ldm_array<double>(std::size_t(tile_m) * tile_n, "C tile (double)");
    cpe.sync(Scope::array);
    cpe.charge_gemm_inner(8 * inner_loops(tile_m, tile_n), tile_k);
    cpe.sync(Scope::array);
  });
}

}  // namespace taihu::sw26010
