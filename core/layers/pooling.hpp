#pragma once
// 2-D max or average pooling on NCHW blobs, with Caffe's semantics ("Pooling").
//
//   pool = max               # max | ave
//   kernel_size = 3          # or "3 2", or kernel_h + kernel_w
//   stride = 2               # or stride_h + stride_w (default 1)
//   pad = 0                  # or pad_h + pad_w; must be smaller than the kernel
//   global_pooling = false   # true: the window is the whole image
//   round_mode = ceil        # ceil | floor (as Caffe's PoolingParameter)
//
// Output size is ceil((in + 2 pad - kernel) / stride) + 1, less one if the
// last window would start in the padding (Caffe's, and PyTorch's and ONNX's
// ceil_mode); with round_mode = floor, floor((in + 2 pad - kernel) / stride)
// + 1 (PyTorch's and ONNX's default, which models imported from ONNX need).
// Average pooling divides by the
// window size clipped to the padded input (padding counts as zeros, the area
// beyond it does not). Max pooling remembers the argmax for backward.

#include <cstdint>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {

class PoolingLayer final : public Layer {
 public:
  enum class Method { max, average };

  explicit PoolingLayer(const LayerSpec& spec);
  const char* type() const override { return "Pooling"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  // Backward spreads the gradient by the window (average) or the winners it
  // kept (max): no value.
  bool backward_reads_bottom(size_t) const override { return false; }
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

 private:
  // Output position -> input window [begin, end) along one axis, clipped to
  // the input; `divisor` is the window clipped to the padded input only.
  struct Window {
    int64_t begin, end, padded_size;
  };
  Window window(int64_t out, int64_t stride, int64_t pad, int64_t kernel, int64_t in) const;

  Method method_ = Method::max;
  bool global_ = false;
  bool floor_ = false;  // round_mode = floor
  int64_t kernel_h_ = 0, kernel_w_ = 0, stride_h_ = 1, stride_w_ = 1, pad_h_ = 0, pad_w_ = 0;
  // The effective kernel (global pooling: the whole image).
  int64_t eff_kernel_h_ = 0, eff_kernel_w_ = 0;
  int64_t in_h_ = 0, in_w_ = 0, out_h_ = 0, out_w_ = 0;
  std::vector<int32_t> argmax_;  // index within the input plane, per output element
};

}  // namespace taihu
