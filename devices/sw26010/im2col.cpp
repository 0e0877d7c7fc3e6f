// im2col and col2im as swCaffe runs them on the CPEs (C-swcaffe
// src/caffe/swutil/sw_im2col.c and slave/sw_slave_im2col.c; sw26010.md §6.2):
//  - the C x (H + 2 pad) padded input rows are cut into 64 contiguous blocks,
//    one per CPE;
//  - im2col: per input row one GET of the row into a zero-padded LDM buffer,
//    then for every kernel column and kernel row that the row reaches one PUT
//    of an output row segment (Wo floats) straight from the buffer (stride 1;
//    with a stride a scalar loop first gathers the strided columns); every
//    transfer is waited before the next (PE mode, no double buffering);
//  - col2im: per input row (with stride 1, runs of interior rows at once, as
//    many as fit 64 KB) one GET per kernel tap of the column segment, added
//    into the row buffer by a scalar loop, then one PUT of the row(s).
// The scalar loops run at the in-order CPE's latencies: an LDM load, an FP add
// waiting for it and a store per element (TH Table 3.2), nothing overlapped.

#include <algorithm>
#include <vector>

#include "core/common/check.hpp"
#include "devices/sw26010/kernels.hpp"

namespace taihu::sw26010 {

namespace {
// The padded rows [begin, end) of CPE `id` (swCaffe's split of rows over 64 CPEs).
std::pair<std::int64_t, std::int64_t> row_block(std::int64_t rows, int id) {
  const std::int64_t base = rows / cpes_per_group, extra = rows % cpes_per_group;
  const std::int64_t begin = id * base + std::min<std::int64_t>(id, extra);
  return {begin, begin + base + (id < extra ? 1 : 0)};
}
double scalar_add_cycles(const Params& p) { return p.ldm_load_latency_cycles + p.fp_latency_cycles + p.ldm_access_cycles; }
double scalar_copy_cycles(const Params& p) { return p.ldm_load_latency_cycles + p.ldm_access_cycles; }
}  // namespace

KernelStats im2col(CoreGroup& cg, const ConvShape& s, const float* image, float* col) {
  const std::int64_t ho = s.out_height(), wo = s.out_width(), kk = s.kernel_h * s.kernel_w;
  const std::int64_t padded_h = s.height + 2 * s.pad_h, padded_w = s.width + 2 * s.pad_w;
  const bool strided = s.stride_w != 1;
  const std::int64_t buffer_floats = padded_w + (strided ? wo : 0);
  require<ShapeError>(buffer_floats * 4 <= cg.params().ldm_bytes,
                      "im2col: a padded input row does not fit the LDM: its buffers 'input row' ({} floats){} need {} "
                      "bytes, more than the {}-byte local store",
                      padded_w, strided ? fmt::format(" and 'output segment' ({} floats)", wo) : std::string(),
                      4 * buffer_floats, cg.params().ldm_bytes);
  return cg.run("im2col", [&](Cpe& cpe) {
    float* row = cpe.ldm_array<float>(std::size_t(padded_w), "input row");
    float* segment = strided ? cpe.ldm_array<float>(std::size_t(wo), "output segment") : nullptr;
    if (cpe.numerics()) std::fill(row, row + padded_w, 0.0f);
    const Params& p = cpe.params();
    DmaReply r;
    int expected = 0;
    const auto [begin, end] = row_block(s.channels * padded_h, cpe.id());
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t c = t / padded_h, ih = t % padded_h - s.pad_h;
      if (ih < 0 || ih >= s.height) {
        // a pad row: the buffer is zeroed and its segments written like any row's
        if (cpe.numerics()) std::fill(row, row + padded_w, 0.0f);
        cpe.charge_elementwise(double(padded_w), 0, 1);
      } else {
        cpe.dma_get(row + s.pad_w, image + (c * s.height + ih) * s.width, std::size_t(s.width) * 4, r);
        cpe.dma_wait(r, ++expected);
        cpe.check_ready(row + s.pad_w, std::size_t(s.width) * 4);
      }
      for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const float* from = row + kw;
        if (strided) {
          if (cpe.numerics())
            for (std::int64_t q = 0; q < wo; ++q) segment[q] = row[kw + q * s.stride_w];
          cpe.charge(std::int64_t(double(wo) * scalar_copy_cycles(p)));
          from = segment;
        }
        for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
          const std::int64_t num = ih + s.pad_h - kh;  // output row o reaches this input row with tap kh
          if (num < 0 || num % s.stride_h != 0 || num / s.stride_h >= ho) continue;
          const std::int64_t o = num / s.stride_h;
          cpe.dma_put(col + ((c * kk + kh * s.kernel_w + kw) * ho + o) * wo, from, std::size_t(wo) * 4, r);
          cpe.dma_wait(r, ++expected);
        }
      }
    }
  });
}

KernelStats col2im(CoreGroup& cg, const ConvShape& s, const float* col, float* image) {
  const std::int64_t ho = s.out_height(), wo = s.out_width(), kk = s.kernel_h * s.kernel_w;
  const std::int64_t padded_h = s.height + 2 * s.pad_h;
  const bool unit_stride = s.stride_h == 1 && s.stride_w == 1;
  const std::int64_t ldm = cg.params().ldm_bytes;
  require<ShapeError>((wo + s.width) * 4 < ldm,
                      "col2im: one input row does not fit the LDM: its buffers 'column segments' ({} floats) and "
                      "'image rows' ({} floats) need {} bytes, more than the {}-byte local store",
                      wo, s.width, 4 * (wo + s.width), ldm);
  return cg.run("col2im", [&](Cpe& cpe) {
    const auto [begin, end] = row_block(s.channels * padded_h, cpe.id());
    // rows at once: the CPE's rows, halved until the two buffers fit 64 KB (single rows with a stride)
    std::int64_t most = std::max<std::int64_t>(end - begin, 1);
    while (most > 1 && (wo + s.width) * most * 4 >= ldm) most /= 2;
    if (!unit_stride) most = 1;
    float* segs = cpe.ldm_array<float>(std::size_t(most * wo), "column segments");
    float* rows = cpe.ldm_array<float>(std::size_t(most * s.width), "image rows");
    const Params& p = cpe.params();
    DmaReply r;
    int expected = 0;
    for (std::int64_t t = begin; t < end;) {
      const std::int64_t c = t / padded_h, ih = t % padded_h - s.pad_h;
      if (ih < 0 || ih >= s.height) {
        ++t;
        continue;
      }
      // interior rows (every kernel row reaches them) go together, up to the channel's last one
      std::int64_t n = 1;
      if (unit_stride && ih >= s.kernel_h - 1 && ih <= s.height - s.kernel_h)
        n = std::min({most, end - t, s.height - s.kernel_h + 1 - ih});
      if (cpe.numerics()) std::fill(rows, rows + n * s.width, 0.0f);
      for (std::int64_t kw = 0; kw < s.kernel_w; ++kw)
        for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
          const std::int64_t num = ih + s.pad_h - kh;
          if (num < 0 || num % s.stride_h != 0 || num / s.stride_h >= ho) continue;
          const std::int64_t o = num / s.stride_h;  // rows o .. o + n - 1 of the tap's column row
          cpe.dma_get(segs, col + ((c * kk + kh * s.kernel_w + kw) * ho + o) * wo, std::size_t(n * wo) * 4, r);
          cpe.dma_wait(r, ++expected);
          cpe.check_ready(segs, std::size_t(n * wo) * 4);
          if (cpe.numerics())
            for (std::int64_t b = 0; b < n; ++b)
              for (std::int64_t q = 0; q < wo; ++q) {
                const std::int64_t iw = q * s.stride_w - s.pad_w + kw;
                if (iw >= 0 && iw < s.width) rows[b * s.width + iw] += segs[b * wo + q];
              }
          cpe.charge(std::int64_t(double(n * wo) * scalar_add_cycles(p)));
        }
      cpe.dma_put(image + (c * s.height + ih) * s.width, rows, std::size_t(n * s.width) * 4, r);
      cpe.dma_wait(r, ++expected);
      t += n;
    }
  });
}

}  // namespace taihu::sw26010
