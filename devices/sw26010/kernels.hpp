#pragma once
// Layer kernels written against the SW26010 model, one core group each. All
// tensors are float in main memory; each call is one athread spawn/join (or a
// few) and returns the simulated time with the DMA and communication counts.
// The memory-bound kernels give each CPE whole chunks (<= 2048 floats, per
// plane where channels matter) and double-buffer the DMA; they charge P0/P1
// issue per 4 elements, so DMA dominates as on the real chip.

#include <cstdint>
#include <vector>

#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

// ---- elementwise (ReLU, eltwise sum)
// y = x > 0 ? x : slope * x
KernelStats relu_forward(CoreGroup& cg, const float* x, float* y, std::int64_t n, float slope = 0.0f);
// dx = x > 0 ? dy : slope * dy
KernelStats relu_backward(CoreGroup& cg, const float* x, const float* dy, float* dx, std::int64_t n,
                          float slope = 0.0f);
// y = x (a DMA-streamed copy: concat, split, dropout's mask pass)
KernelStats copy(CoreGroup& cg, const float* x, float* y, std::int64_t n);
// y = ca * a + cb * b
KernelStats eltwise_sum(CoreGroup& cg, const float* a, const float* b, float* y, std::int64_t n, float ca = 1.0f,
                        float cb = 1.0f);

// ---- per-channel (BatchNorm, Scale, bias) on N x C x spatial tensors
// y[n, c, :] = scale[c] * x[n, c, :] + shift[c]  (shift may be null). Each
// CPE holds all the coefficients beside its chunks: at most 4096 channels.
KernelStats channel_affine(CoreGroup& cg, const float* x, float* y, std::int64_t batch, std::int64_t channels,
                           std::int64_t spatial, const float* scale, const float* shift);
// sum[c] = sum of x[n, c, :]; sum2[c] = sum of x * y (y = x when y is null).
// The per-plane partial sums leave by DMA and the MPE adds them (charged).
KernelStats channel_sums(CoreGroup& cg, const float* x, const float* y, std::int64_t batch, std::int64_t channels,
                         std::int64_t spatial, double* sum, double* sum2);

// ---- pooling (Caffe's windows: ceil mode, padding)
struct PoolGeometry {
  std::int64_t height = 0, width = 0, kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  bool max = true;
  bool floor = false;  // round_mode = floor (PyTorch's sizes); Caffe's ceiling otherwise
  std::int64_t out_height() const;
  std::int64_t out_width() const;
};
KernelStats pool_forward(CoreGroup& cg, const PoolGeometry& g, const float* x, float* y, std::int64_t planes);
// dx from dy (max pooling recomputes the argmax from x, first maximum wins).
KernelStats pool_backward(CoreGroup& cg, const PoolGeometry& g, const float* x, const float* dy, float* dx,
                          std::int64_t planes);

// ---- convolution pieces (dilation 1)
struct ConvShape {
  std::int64_t channels = 0, height = 0, width = 0, num_output = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t out_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  std::int64_t out_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  std::int64_t col_rows() const { return channels * kernel_h * kernel_w; }
  bool pointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};
// One image (C x H x W) to its column matrix (C*kh*kw x Ho*Wo), on the CPEs as
// swCaffe's kernel runs (im2col.cpp): a block of input rows per CPE, each row
// GET once (a pad row zeroed) and its kh*kw output segments PUT one by one,
// synchronously.
KernelStats im2col(CoreGroup& cg, const ConvShape& s, const float* image, float* col);
// The adjoint: image (overwritten) from the column matrix; per input row (runs
// of interior rows with stride 1) a GET per tap, a scalar add loop, one PUT.
KernelStats col2im(CoreGroup& cg, const ConvShape& s, const float* col, float* image);

// ---- layout transform between N x C x H x W and the implicit convolution's
// H x C x W x N (batch innermost, as swDNN; rows of W*N contiguous per channel);
// any batch (blocks of 4096 images in LDM)
KernelStats to_hcwn(CoreGroup& cg, const float* nchw, float* hcwn, std::int64_t n, std::int64_t c, std::int64_t h,
                    std::int64_t w);
KernelStats to_nchw(CoreGroup& cg, const float* hcwn, float* nchw, std::int64_t n, std::int64_t c, std::int64_t h,
                    std::int64_t w);

// ---- softmax over the last axis, on the MPE (T §4.1): rows x cols
KernelStats softmax_mpe(CoreGroup& cg, const float* x, float* y, std::int64_t rows, std::int64_t cols);

}  // namespace taihu::sw26010
