#include "core/kernels/im2col.hpp"

#include <algorithm>
#include <cstring>

#include "core/common/multiversion.hpp"
#include "core/kernels/parallel.hpp"

namespace taihu {

namespace {

// The output columns [first, last) whose input column ow * stride + offset lies
// inside [0, width). Computed once per kernel column, so the inner loops need
// no bounds checks and no division.
// Below this many column values a call is not worth waking another thread.
constexpr int64_t min_parallel_work = 32768;

struct ValidRange {
  int64_t first, last;
};

ValidRange valid_columns(int64_t offset, int64_t stride, int64_t width, int64_t out_width) {
  const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
  const int64_t f = std::min(first, out_width);
  return {f, std::clamp(last, f, out_width)};
}

}  // namespace

// The loops, built for AVX2 too (core/common/multiversion.hpp).
TAIHU_MULTIVERSION void im2col_channels(const float* image, const ConvGeometry& g, int64_t channel_begin, int64_t channel_end,
                     int64_t row_begin, int64_t row_end, float* col, int64_t ld) {
  const int64_t out_w = g.out_width();
  const int64_t rows = row_end - row_begin;
  const int64_t plane = g.height * g.width;
  for (int64_t c = channel_begin; c < channel_end; ++c) {
    const float* src_plane = image + c * plane;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t row_offset = ki * g.dilation_h - g.pad_h;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t col_offset = kj * g.dilation_w - g.pad_w;
        const auto [first, last] = valid_columns(col_offset, g.stride_w, g.width, out_w);
        float* dst = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        for (int64_t r = 0; r < rows; ++r, dst += out_w) {
          const int64_t ih = (row_begin + r) * g.stride_h + row_offset;
          if (ih < 0 || ih >= g.height) {
            std::fill_n(dst, out_w, 0.0f);
            continue;
          }
          std::fill_n(dst, first, 0.0f);
          // Input column of output column ow: ow * stride + col_offset.
          const float* src = src_plane + ih * g.width;
          if (g.stride_w == 1) {
            // Short rows (small images) by an inline loop: a call to memcpy
            // per row of 8 floats cost more than the copy.
            const int64_t n = last - first;
            if (n > 64) {
              std::memcpy(dst + first, src + first + col_offset, n * sizeof(float));
            } else {
              const float* from = src + first + col_offset;
              for (int64_t i = 0; i < n; ++i) dst[first + i] = from[i];
            }
          } else if (g.stride_w == 2) {  // a constant stride vectorises with shuffles
            for (int64_t ow = first; ow < last; ++ow) dst[ow] = src[ow * 2 + col_offset];
          } else {
            const int64_t s = g.stride_w;
            for (int64_t ow = first; ow < last; ++ow) dst[ow] = src[ow * s + col_offset];
          }
          std::fill_n(dst + last, out_w - last, 0.0f);
        }
      }
    }
  }
}

void im2col(const float* image, const ConvGeometry& g, int64_t row_begin, int64_t row_end, float* col, int64_t ld) {
  const int64_t per_channel = g.kernel_h * g.kernel_w * (row_end - row_begin) * g.out_width();
  parallel_ranges(g.channels, min_parallel_work / std::max<int64_t>(per_channel, 1), [&](int64_t begin, int64_t end) {
    im2col_channels(image, g, begin, end, row_begin, row_end, col, ld);
  });
}

void im2col(const float* image, const ConvGeometry& g, float* col) {
  im2col(image, g, 0, g.out_height(), col, g.out_size());
}

TAIHU_MULTIVERSION void col2im_add_channels(const float* col, int64_t ld, const ConvGeometry& g, int64_t channel_begin,
                         int64_t channel_end, int64_t row_begin, int64_t row_end, float* image) {
  const int64_t out_w = g.out_width();
  const int64_t rows = row_end - row_begin;
  const int64_t plane = g.height * g.width;
  for (int64_t c = channel_begin; c < channel_end; ++c) {
    float* dst_plane = image + c * plane;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t row_offset = ki * g.dilation_h - g.pad_h;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t col_offset = kj * g.dilation_w - g.pad_w;
        const auto [first, last] = valid_columns(col_offset, g.stride_w, g.width, out_w);
        const float* src = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        for (int64_t r = 0; r < rows; ++r, src += out_w) {
          const int64_t ih = (row_begin + r) * g.stride_h + row_offset;
          if (ih < 0 || ih >= g.height) continue;
          float* dst = dst_plane + ih * g.width;
          if (g.stride_w == 1) {
            float* shifted = dst + first + col_offset;
            const float* from = src + first;
            for (int64_t i = 0; i < last - first; ++i) shifted[i] += from[i];
          } else {
            const int64_t s = g.stride_w;
            for (int64_t ow = first; ow < last; ++ow) dst[ow * s + col_offset] += src[ow];
          }
        }
      }
    }
  }
}

// Channels write disjoint image planes, so they can run in parallel.
void col2im_add(const float* col, int64_t ld, const ConvGeometry& g, int64_t row_begin, int64_t row_end, float* image) {
  const int64_t per_channel = g.kernel_h * g.kernel_w * (row_end - row_begin) * g.out_width();
  parallel_ranges(g.channels, min_parallel_work / std::max<int64_t>(per_channel, 1), [&](int64_t begin, int64_t end) {
    col2im_add_channels(col, ld, g, begin, end, row_begin, row_end, image);
  });
}

void col2im(const float* col, const ConvGeometry& g, float* image) {
  std::fill_n(image, g.channels * g.height * g.width, 0.0f);
  col2im_add(col, g.out_size(), g, 0, g.out_height(), image);
}

}  // namespace taihu
