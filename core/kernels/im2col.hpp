#pragma once
// im2col / col2im for 2-D convolution on NCHW images.
//
// im2col lays one image out as a matrix with C*kh*kw rows (channel major, then
// kernel row, then kernel column) and one column per output position, so that
// convolution becomes a GEMM with the (num_output x C*kh*kw) weight matrix.
// Both functions work on a band of output rows and take the column matrix's
// row stride, so a caller can place several images (or part of one) side by
// side in one buffer and multiply them with a single GEMM.

#include <cstdint>
#include <string>

namespace taihu {

struct ConvGeometry {
  int64_t channels = 0, height = 0, width = 0;  // input image
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;

  int64_t extent_h() const { return dilation_h * (kernel_h - 1) + 1; }
  int64_t extent_w() const { return dilation_w * (kernel_w - 1) + 1; }
  // <= 0 when the (dilated) kernel does not fit the padded input.
  int64_t out_height() const { return (height + 2 * pad_h - extent_h()) / stride_h + 1; }
  int64_t out_width() const { return (width + 2 * pad_w - extent_w()) / stride_w + 1; }
  int64_t out_size() const { return out_height() * out_width(); }
  int64_t col_rows() const { return channels * kernel_h * kernel_w; }
  // A 1x1, stride-1, unpadded convolution: the image already is its column matrix.
  bool is_pointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};

// Writes the columns of output rows [row_begin, row_end) of `image` (C x H x W)
// into `col`: col_rows() rows of (row_end - row_begin) * out_width() values,
// consecutive rows `ld` floats apart. Padding reads as zero. Large calls are
// split over channels and run on parallel_threads() threads.
void im2col(const float* image, const ConvGeometry& g, int64_t row_begin, int64_t row_end, float* col, int64_t ld);
// Whole image, packed (ld = out_size()).
void im2col(const float* image, const ConvGeometry& g, float* col);

// Serial versions for channels [channel_begin, channel_end) only; `col`
// still points at the whole column matrix. For callers that parallelise
// over images and channels themselves.
void im2col_channels(const float* image, const ConvGeometry& g, int64_t channel_begin, int64_t channel_end,
                     int64_t row_begin, int64_t row_end, float* col, int64_t ld);
void col2im_add_channels(const float* col, int64_t ld, const ConvGeometry& g, int64_t channel_begin,
                         int64_t channel_end, int64_t row_begin, int64_t row_end, float* image);

// The adjoint of im2col: adds every column value back into the image position
// it was read from (padding positions are dropped). Accumulates into `image`.
void col2im_add(const float* col, int64_t ld, const ConvGeometry& g, int64_t row_begin, int64_t row_end, float* image);
// Whole image, packed; overwrites `image`.
void col2im(const float* col, const ConvGeometry& g, float* image);

}  // namespace taihu
