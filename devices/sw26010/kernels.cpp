#include "devices/sw26010/kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/common/check.hpp"

namespace taihu::sw26010 {

namespace {

constexpr std::int64_t chunk_floats = 2048;

// Chunks of a N x C x spatial tensor: planes cut into pieces of <= chunk_floats.
struct Chunking {
  std::int64_t planes, spatial, per_plane, count;
  Chunking(std::int64_t planes_, std::int64_t spatial_)
      : planes(planes_), spatial(spatial_), per_plane((spatial_ + chunk_floats - 1) / chunk_floats),
        count(planes_ * per_plane) {}
  std::int64_t plane(std::int64_t chunk) const { return chunk / per_plane; }
  std::int64_t offset(std::int64_t chunk) const { return plane(chunk) * spatial + (chunk % per_plane) * chunk_floats; }
  std::int64_t length(std::int64_t chunk) const {
    return std::min(chunk_floats, spatial - (chunk % per_plane) * chunk_floats);
  }
};

// Streams up to 3 inputs through LDM chunk by chunk (CPE k takes chunks k,
// k+64, ...), double-buffered, and PUTs the output chunk if `out` is set.
// body(cpe, chunk, inputs, output, length) computes in LDM.
template <class Body>
void stream(Cpe& cpe, const Chunking& ch, const std::array<const float*, 3>& ins, int n_in, float* out, Body&& body) {
  float* in_buf[2][3] = {};
  float* out_buf[2] = {};
  for (int b = 0; b < 2; ++b) {
    for (int k = 0; k < n_in; ++k) in_buf[b][k] = cpe.ldm_array<float>(chunk_floats, "input chunk");
    if (out) out_buf[b] = cpe.ldm_array<float>(chunk_floats, "output chunk");
  }
  DmaReply gets, puts;
  int gets_expected = 0, puts_expected = 0;
  auto issue = [&](std::int64_t chunk, int b) {
    for (int k = 0; k < n_in; ++k) {
      cpe.dma_get(in_buf[b][k], ins[k] + ch.offset(chunk), std::size_t(ch.length(chunk)) * 4, gets);
      ++gets_expected;
    }
  };
  int index = 0;
  std::int64_t first = cpe.id();
  if (first < ch.count) issue(first, 0);
  std::int64_t put_done_at[2] = {0, 0};
  for (std::int64_t chunk = first; chunk < ch.count; chunk += cpes_per_group, ++index) {
    const int b = index % 2;
    cpe.dma_wait(gets, gets_expected);
    if (chunk + cpes_per_group < ch.count) issue(chunk + cpes_per_group, 1 - b);
    const auto len = ch.length(chunk);
    if (out) cpe.dma_wait(puts, int(put_done_at[b]));  // out_buf[b]'s previous PUT has left
    for (int k = 0; k < n_in; ++k) cpe.check_ready(in_buf[b][k], std::size_t(len) * 4);
    const float* const in_ptrs[3] = {in_buf[b][0], in_buf[b][1], in_buf[b][2]};
    body(cpe, chunk, in_ptrs, out_buf[b], len);
    if (out) {
      cpe.dma_put(out + ch.offset(chunk), out_buf[b], std::size_t(len) * 4, puts);
      put_done_at[b] = ++puts_expected;
    }
  }
  if (out) cpe.dma_wait(puts, puts_expected);
}

}  // namespace

KernelStats relu_forward(CoreGroup& cg, const float* x, float* y, std::int64_t n, float slope) {
  const Chunking ch(1, n);
  return cg.run("relu_forward", [&](Cpe& cpe) {
    stream(cpe, ch, {x}, 1, y, [&](Cpe& c, std::int64_t, const float* const* in, float* out, std::int64_t len) {
      if (c.numerics())
        for (std::int64_t i = 0; i < len; ++i) out[i] = in[0][i] > 0 ? in[0][i] : slope * in[0][i];
      c.charge_elementwise(double(len), 2, 2);  // compare + select; load + store
    });
  });
}

KernelStats relu_backward(CoreGroup& cg, const float* x, const float* dy, float* dx, std::int64_t n, float slope) {
  const Chunking ch(1, n);
  return cg.run("relu_backward", [&](Cpe& cpe) {
    stream(cpe, ch, {x, dy}, 2, dx, [&](Cpe& c, std::int64_t, const float* const* in, float* out, std::int64_t len) {
      if (c.numerics())
        for (std::int64_t i = 0; i < len; ++i) out[i] = in[0][i] > 0 ? in[1][i] : slope * in[1][i];
      c.charge_elementwise(double(len), 2, 3);
    });
  });
}

KernelStats copy(CoreGroup& cg, const float* x, float* y, std::int64_t n) {
  const Chunking ch(1, n);
  return cg.run("copy", [&](Cpe& cpe) {
    stream(cpe, ch, {x}, 1, y, [&](Cpe& c, std::int64_t, const float* const* in, float* out, std::int64_t len) {
      if (c.numerics()) std::memcpy(out, in[0], std::size_t(len) * 4);
      c.charge_elementwise(double(len), 0, 2);
    });
  });
}

KernelStats eltwise_sum(CoreGroup& cg, const float* a, const float* b, float* y, std::int64_t n, float ca, float cb) {
  const Chunking ch(1, n);
  return cg.run("eltwise_sum", [&](Cpe& cpe) {
    stream(cpe, ch, {a, b}, 2, y, [&](Cpe& c, std::int64_t, const float* const* in, float* out, std::int64_t len) {
      if (c.numerics())
        for (std::int64_t i = 0; i < len; ++i) out[i] = ca * in[0][i] + cb * in[1][i];
      c.charge_elementwise(double(len), 2, 3);
    });
  });
}

KernelStats channel_affine(CoreGroup& cg, const float* x, float* y, std::int64_t batch, std::int64_t channels,
                           std::int64_t spatial, const float* scale, const float* shift) {
  const Chunking ch(batch * channels, spatial);
  return cg.run("channel_affine", [&](Cpe& cpe) {
    // the per-channel coefficients come in once
    float* sc = cpe.ldm_array<float>(std::size_t(channels), "scale (a float per channel)");
    float* sh = cpe.ldm_array<float>(std::size_t(channels), "shift (a float per channel)");
    DmaReply r;
    int expected = 0;
    cpe.dma_get(sc, scale, std::size_t(channels) * 4, r), ++expected;
    if (shift) cpe.dma_get(sh, shift, std::size_t(channels) * 4, r), ++expected;
    cpe.dma_wait(r, expected);
    if (!shift) std::fill(sh, sh + channels, 0.0f);
    stream(cpe, ch, {x}, 1, y, [&](Cpe& c, std::int64_t chunk, const float* const* in, float* out, std::int64_t len) {
      const auto channel = ch.plane(chunk) % channels;
      const float a = sc[channel], b = sh[channel];
      if (c.numerics())
        for (std::int64_t i = 0; i < len; ++i) out[i] = a * in[0][i] + b;
      c.charge_elementwise(double(len), 1, 2);
    });
  });
}

KernelStats channel_sums(CoreGroup& cg, const float* x, const float* y, std::int64_t batch, std::int64_t channels,
                         std::int64_t spatial, double* sum, double* sum2) {
  const Chunking ch(batch * channels, spatial);
  // per-chunk partial sums, written by the CPEs, added by the MPE
  AlignedVector<double> partial(std::size_t(ch.count) * 2, 0.0);
  auto stats = cg.run("channel_sums", [&](Cpe& cpe) {
    // A CPE's chunks k, k+64, ... land in partial[] at stride 64 (strided PUTs
    // of 16-B blocks), a block of results at a time from two LDM buffers: one
    // fills while the other's PUT runs. (All of a CPE's results at once
    // overflowed the LDM at 128 images per core group: VGG's conv1_1 has
    // 128 x 64 planes of 224 x 224.)
    constexpr std::int64_t block = 32;
    double* buffers = cpe.ldm_array<double>(std::size_t(2 * block * 2), "partial sums");
    std::array<DmaReply, 2> replies;
    std::array<int, 2> puts{0, 0};
    std::int64_t index = 0;  // this CPE's chunks so far
    auto put_block = [&](std::int64_t first, std::int64_t count) {
      const auto b = std::size_t((first / block) % 2);
      cpe.dma_put_strided(partial.data() + 2 * (cpe.id() + cpes_per_group * first), buffers + b * block * 2,
                          std::size_t(count), 16, std::size_t(cpes_per_group) * 16, replies[b]);
      ++puts[b];
    };
    const std::array<const float*, 3> ins{x, y ? y : x, nullptr};
    stream(cpe, ch, ins, y ? 2 : 1, nullptr,
           [&](Cpe& c, std::int64_t, const float* const* in, float*, std::int64_t len) {
             const auto b = std::size_t((index / block) % 2);
             if (index % block == 0 && puts[b] > 0) c.dma_wait(replies[b], puts[b]);  // its last PUT is out
             double s = 0, s2 = 0;
             if (c.numerics()) {
               const float* other = y ? in[1] : in[0];
               for (std::int64_t i = 0; i < len; ++i) s += in[0][i], s2 += double(in[0][i]) * other[i];
             }
             double* results = buffers + b * block * 2;
             results[2 * (index % block)] = s, results[2 * (index % block) + 1] = s2;
             ++index;
             if (index % block == 0) put_block(index - block, block);
             c.charge_elementwise(double(len), 4, double(y ? 2 : 1));  // widen + 2 vmad per 4 elements
           });
    if (index % block != 0) put_block(index - index % block, index % block);
    for (std::size_t b = 0; b < 2; ++b)
      if (puts[b] > 0) cpe.dma_wait(replies[b], puts[b]);
  });
  std::fill(sum, sum + channels, 0.0);
  std::fill(sum2, sum2 + channels, 0.0);
  for (std::int64_t k = 0; k < ch.count; ++k) {
    const auto channel = ch.plane(k) % channels;
    sum[channel] += partial[2 * k];
    sum2[channel] += partial[2 * k + 1];
  }
  stats.cycles += cg.mpe_compute(2.0 * double(ch.count));
  return stats;
}

// ------------------------------------------------------------- pooling

namespace {
std::int64_t pooled(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad, bool floor) {
  if (floor) return (in + 2 * pad - kernel) / stride + 1;
  std::int64_t out = (in + 2 * pad - kernel + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad) --out;
  return out;
}
struct Window {
  std::int64_t begin, end, padded;
};
Window window(std::int64_t o, std::int64_t stride, std::int64_t pad, std::int64_t kernel, std::int64_t in) {
  const std::int64_t start = o * stride - pad, padded_end = std::min(start + kernel, in + pad);
  return {std::max<std::int64_t>(start, 0), std::min(padded_end, in), padded_end - start};
}
}  // namespace

std::int64_t PoolGeometry::out_height() const { return pooled(height, kernel_h, stride_h, pad_h, floor); }
std::int64_t PoolGeometry::out_width() const { return pooled(width, kernel_w, stride_w, pad_w, floor); }

namespace {
// Output-row bands of a plane whose input rows and output rows fit `budget` floats.
std::int64_t band_rows(const PoolGeometry& g, std::int64_t budget, int in_copies, int out_copies) {
  const std::int64_t ow = g.out_width(), oh = g.out_height();
  for (std::int64_t rows = oh; rows > 1; --rows) {
    const std::int64_t in_rows = std::min(g.height, (rows - 1) * g.stride_h + g.kernel_h);
    if (in_copies * in_rows * g.width + out_copies * rows * ow <= budget) return rows;
  }
  return 1;
}
}  // namespace

KernelStats pool_forward(CoreGroup& cg, const PoolGeometry& g, const float* x, float* y, std::int64_t planes) {
  const std::int64_t oh = g.out_height(), ow = g.out_width();
  const std::int64_t budget = 11 * 1024;  // floats of LDM for the input and output rows
  const std::int64_t rows = band_rows(g, budget, 1, 1);
  const std::int64_t window_rows = std::min(g.height, g.kernel_h);
  require<ShapeError>(window_rows * g.width + ow <= budget,
                      "pool_forward: one output row does not fit the LDM: its buffers 'input rows' ({} rows of {} "
                      "floats) and 'output rows' ({} floats) need {} bytes, more than the {} bytes the kernel keeps "
                      "for them",
                      window_rows, g.width, ow, 4 * (window_rows * g.width + ow), 4 * budget);
  const std::int64_t bands = (oh + rows - 1) / rows, tasks = planes * bands;
  const std::int64_t in_floats = std::min(g.height, (rows - 1) * g.stride_h + g.kernel_h) * g.width;
  return cg.run("pool_forward", [&](Cpe& cpe) {
    float* in = cpe.ldm_array<float>(std::size_t(in_floats), "input rows");
    float* out = cpe.ldm_array<float>(std::size_t(rows * ow), "output rows");
    DmaReply r;
    int expected = 0;
    for (std::int64_t t = cpe.id(); t < tasks; t += cpes_per_group) {
      const std::int64_t p = t / bands, o0 = (t % bands) * rows, o1 = std::min(oh, o0 + rows);
      const std::int64_t h0 = window(o0, g.stride_h, g.pad_h, g.kernel_h, g.height).begin;
      const std::int64_t h1 = window(o1 - 1, g.stride_h, g.pad_h, g.kernel_h, g.height).end;
      cpe.dma_wait(r, expected);  // the previous band's output has left
      cpe.dma_get(in, x + p * g.height * g.width + h0 * g.width, std::size_t((h1 - h0) * g.width) * 4, r);
      cpe.dma_wait(r, ++expected);
      cpe.check_ready(in, std::size_t((h1 - h0) * g.width) * 4);
      if (cpe.numerics()) {
        for (std::int64_t o = o0; o < o1; ++o) {
          const Window wh = window(o, g.stride_h, g.pad_h, g.kernel_h, g.height);
          for (std::int64_t q = 0; q < ow; ++q) {
            const Window ww = window(q, g.stride_w, g.pad_w, g.kernel_w, g.width);
            float acc = g.max ? -std::numeric_limits<float>::infinity() : 0.0f;
            for (std::int64_t ih = wh.begin; ih < wh.end; ++ih)
              for (std::int64_t iw = ww.begin; iw < ww.end; ++iw) {
                const float v = in[(ih - h0) * g.width + iw];
                acc = g.max ? (v > acc ? v : acc) : acc + v;
              }
            out[(o - o0) * ow + q] = g.max ? acc : acc / float(wh.padded * ww.padded);
          }
        }
      }
      // per output: kernel_h * kernel_w compares or adds, vectorised 4 wide over outputs
      cpe.charge_elementwise(double((o1 - o0) * ow), double(g.kernel_h * g.kernel_w),
                             double(g.kernel_h * g.kernel_w) + 1);
      cpe.dma_put(y + p * oh * ow + o0 * ow, out, std::size_t((o1 - o0) * ow) * 4, r);
      ++expected;
    }
    cpe.dma_wait(r, expected);
  });
}

// Longer than 80 lines for gemm_batch's reason: most of it is the program
// each CPE runs, whose row buffers and DMA count its stages share.
KernelStats pool_backward(CoreGroup& cg, const PoolGeometry& g, const float* x, const float* dy, float* dx,
                          std::int64_t planes) {
  // Tasks are bands of input rows; each gathers the output rows whose windows
  // touch the band (and, for max, the input rows of those windows).
  const std::int64_t oh = g.out_height(), ow = g.out_width();
  const std::int64_t budget = 13 * 1024;  // floats of LDM for the three row buffers
  std::int64_t band = g.height;
  auto need = [&](std::int64_t b, std::int64_t& o_lo, std::int64_t& o_hi, std::int64_t& x_lo, std::int64_t& x_hi,
                  std::int64_t i0) {
    const std::int64_t i1 = std::min(g.height, i0 + b);
    o_lo = std::max<std::int64_t>(0, (i0 + g.pad_h - g.kernel_h) / g.stride_h);
    while (o_lo < oh && window(o_lo, g.stride_h, g.pad_h, g.kernel_h, g.height).end <= i0) ++o_lo;
    o_hi = std::min(oh, (i1 - 1 + g.pad_h) / g.stride_h + 1);
    x_lo = o_hi > o_lo ? window(o_lo, g.stride_h, g.pad_h, g.kernel_h, g.height).begin : i0;
    x_hi = o_hi > o_lo ? window(o_hi - 1, g.stride_h, g.pad_h, g.kernel_h, g.height).end : i0;
  };
  // the largest x rows and dy rows any band of `b` input rows needs
  std::int64_t max_x = 0, max_o = 0;
  auto sizes = [&](std::int64_t b) {
    max_x = max_o = 0;
    for (std::int64_t i0 = 0; i0 < g.height; i0 += b) {
      std::int64_t o_lo, o_hi, x_lo, x_hi;
      need(b, o_lo, o_hi, x_lo, x_hi, i0);
      max_x = std::max(max_x, x_hi - x_lo), max_o = std::max(max_o, o_hi - o_lo);
    }
    return (g.max ? max_x * g.width : 0) + max_o * ow + b * g.width;
  };
  while (band > 1 && sizes(band) > budget) --band;
  const std::int64_t floats = sizes(band);  // (and max_x, max_o for this band)
  require<ShapeError>(floats <= budget,
                      "pool_backward: one input row does not fit the LDM: its buffers 'input rows' ({} rows of {} "
                      "floats), 'output gradient rows' ({} rows of {} floats) and 'input gradient rows' ({} floats) "
                      "need {} bytes, more than the {} bytes the kernel keeps for them",
                      g.max ? max_x : 0, g.width, max_o, ow, g.width, 4 * floats, 4 * budget);
  const std::int64_t bands = (g.height + band - 1) / band, tasks = planes * bands;
  return cg.run("pool_backward", [&](Cpe& cpe) {
    float* xin =
        g.max ? cpe.ldm_array<float>(std::size_t(std::max<std::int64_t>(max_x * g.width, 1)), "input rows") : nullptr;
    float* din = cpe.ldm_array<float>(std::size_t(std::max<std::int64_t>(max_o * ow, 1)), "output gradient rows");
    float* dout = cpe.ldm_array<float>(std::size_t(band * g.width), "input gradient rows");
    DmaReply r;
    int expected = 0;
    for (std::int64_t t = cpe.id(); t < tasks; t += cpes_per_group) {
      const std::int64_t p = t / bands, i0 = (t % bands) * band, i1 = std::min(g.height, i0 + band);
      std::int64_t o_lo, o_hi, x_lo, x_hi;
      need(band, o_lo, o_hi, x_lo, x_hi, i0);
      cpe.dma_wait(r, expected);
      if (o_hi > o_lo) {
        cpe.dma_get(din, dy + p * oh * ow + o_lo * ow, std::size_t((o_hi - o_lo) * ow) * 4, r), ++expected;
        if (g.max)
          cpe.dma_get(xin, x + p * g.height * g.width + x_lo * g.width, std::size_t((x_hi - x_lo) * g.width) * 4, r),
              ++expected;
      }
      cpe.dma_wait(r, expected);
      cpe.check_ready(din, std::size_t((o_hi - o_lo) * ow) * 4);
      cpe.check_ready(dout, std::size_t((i1 - i0) * g.width) * 4);
      if (cpe.numerics()) {
        std::fill(dout, dout + (i1 - i0) * g.width, 0.0f);
        for (std::int64_t o = o_lo; o < o_hi; ++o) {
          const Window wh = window(o, g.stride_h, g.pad_h, g.kernel_h, g.height);
          for (std::int64_t q = 0; q < ow; ++q) {
            const Window ww = window(q, g.stride_w, g.pad_w, g.kernel_w, g.width);
            const float grad = din[(o - o_lo) * ow + q];
            if (g.max) {
              float best = -std::numeric_limits<float>::infinity();
              std::int64_t bh = wh.begin, bw = ww.begin;
              for (std::int64_t ih = wh.begin; ih < wh.end; ++ih)
                for (std::int64_t iw = ww.begin; iw < ww.end; ++iw)
                  if (xin[(ih - x_lo) * g.width + iw] > best) best = xin[(ih - x_lo) * g.width + iw], bh = ih, bw = iw;
              if (bh >= i0 && bh < i1) dout[(bh - i0) * g.width + bw] += grad;
            } else {
              const float share = grad / float(wh.padded * ww.padded);
              for (std::int64_t ih = std::max(wh.begin, i0); ih < std::min(wh.end, i1); ++ih)
                for (std::int64_t iw = ww.begin; iw < ww.end; ++iw) dout[(ih - i0) * g.width + iw] += share;
            }
          }
        }
      }
      cpe.charge_elementwise(double((o_hi - o_lo) * ow), double(g.kernel_h * g.kernel_w) * (g.max ? 2 : 1),
                             double(g.kernel_h * g.kernel_w) * 2);
      cpe.dma_put(dx + p * g.height * g.width + i0 * g.width, dout, std::size_t((i1 - i0) * g.width) * 4, r);
      cpe.dma_wait(r, ++expected);
    }
  });
}

// ---------------------------------------------------- layout transform

namespace {
// Moves (n, c, h, w) <-> (h, c, w, n): each task is (c, h, a run of w, a block
// of images) and holds an images x run block, transposed in LDM. Runs are as
// long as a buffer allows with all the images in one block (n <= budget);
// a larger batch is cut into blocks of `budget` images, so the buffers have
// the same size at any batch.
KernelStats transform(CoreGroup& cg, const char* name, bool to_hwcn, const float* src, float* dst, std::int64_t n,
                      std::int64_t c, std::int64_t h, std::int64_t w) {
  const std::int64_t budget = 4096;  // floats per buffer
  const std::int64_t block_images = std::clamp<std::int64_t>(n, 1, budget);
  const std::int64_t run = std::max<std::int64_t>(1, std::min(w, budget / block_images));
  const std::int64_t runs = (w + run - 1) / run, image_blocks = (n + block_images - 1) / block_images;
  const std::int64_t tasks = c * h * runs * image_blocks;
  return cg.run(name, [&](Cpe& cpe) {
    float* a = cpe.ldm_array<float>(std::size_t(budget), "source block");
    float* b = cpe.ldm_array<float>(std::size_t(budget), "transposed block");
    DmaReply r;
    int expected = 0;
    for (std::int64_t t = cpe.id(); t < tasks; t += cpes_per_group) {
      const std::int64_t ch = t / (h * runs * image_blocks), row = (t / (runs * image_blocks)) % h;
      const std::int64_t w0 = (t / image_blocks % runs) * run, len = std::min(run, w - w0);
      const std::int64_t i0 = (t % image_blocks) * block_images, images = std::min(block_images, n - i0);
      // image i0's run in N x C x H x W (image i: + i * c*h*w) and in H x C x W x N (pixel j: + j * n)
      const float* nchw_origin = (to_hwcn ? src : dst) + (i0 * c + ch) * h * w + row * w + w0;
      const float* hwcn_origin = (to_hwcn ? dst : src) + ((row * c + ch) * w + w0) * n + i0;
      const std::size_t nchw_pitch = std::size_t(c * h * w) * 4, hwcn_pitch = std::size_t(n) * 4;
      cpe.dma_wait(r, expected);
      if (to_hwcn) {
        cpe.dma_get_strided(a, nchw_origin, std::size_t(images), std::size_t(len) * 4, nchw_pitch, r);
      } else {
        // contiguous when the block holds the whole batch
        cpe.dma_get_strided(a, hwcn_origin, std::size_t(len), std::size_t(images) * 4, hwcn_pitch, r);
      }
      cpe.dma_wait(r, ++expected);
      cpe.check_ready(a, std::size_t(images * len) * 4);
      cpe.check_ready(b, std::size_t(images * len) * 4);
      if (cpe.numerics()) {
        if (to_hwcn) {
          for (std::int64_t i = 0; i < images; ++i)
            for (std::int64_t j = 0; j < len; ++j) b[j * images + i] = a[i * len + j];
        } else {
          for (std::int64_t j = 0; j < len; ++j)
            for (std::int64_t i = 0; i < images; ++i) b[i * len + j] = a[j * images + i];
        }
      }
      cpe.charge_elementwise(double(images * len), 1, 2);  // 4x4 shuffles on P0, loads/stores on P1
      if (to_hwcn) {
        cpe.dma_put_strided(const_cast<float*>(hwcn_origin), b, std::size_t(len), std::size_t(images) * 4,
                            hwcn_pitch, r);
      } else {
        cpe.dma_put_strided(const_cast<float*>(nchw_origin), b, std::size_t(images), std::size_t(len) * 4,
                            nchw_pitch, r);
      }
      ++expected;
    }
    cpe.dma_wait(r, expected);
  });
}
}  // namespace

KernelStats to_hcwn(CoreGroup& cg, const float* nchw, float* hcwn, std::int64_t n, std::int64_t c, std::int64_t h,
                    std::int64_t w) {
  return transform(cg, "to_hcwn", true, nchw, hcwn, n, c, h, w);
}

KernelStats to_nchw(CoreGroup& cg, const float* hwcn, float* nchw, std::int64_t n, std::int64_t c, std::int64_t h,
                    std::int64_t w) {
  return transform(cg, "to_nchw", false, hwcn, nchw, n, c, h, w);
}

// ------------------------------------------------------------ softmax

KernelStats softmax_mpe(CoreGroup& cg, const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  KernelStats stats;
  stats.kernel = "softmax_mpe";
  if (cg.numerics()) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* in = x + r * cols;
      float* out = y + r * cols;
      const float top = *std::max_element(in, in + cols);
      double total = 0;
      for (std::int64_t j = 0; j < cols; ++j) total += out[j] = std::exp(in[j] - top);
      const float inv = float(1.0 / total);
      for (std::int64_t j = 0; j < cols; ++j) out[j] *= inv;
    }
  }
  // max, subtract, exp (~20 flops), sum, scale per element; read and write through the caches
  const double elements = double(rows) * double(cols);
  stats.cycles = cg.mpe_compute(24.0 * elements) + cg.mpe_copy(8.0 * elements);
  return stats;
}

}  // namespace taihu::sw26010
