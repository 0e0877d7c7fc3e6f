#pragma once
// 2-D convolution on NCHW blobs, by im2col + GEMM (Caffe's "Convolution").
//
//   num_output = 64          # required
//   kernel_size = 3          # or "3 5", or kernel_h + kernel_w
//   stride = 1               # or stride_h + stride_w
//   pad = 0                  # or pad_h + pad_w
//   dilation = 1             # or "2 1"
//   group = 1                # channels and num_output must divide by it
//   bias_term = true
//   weight_filler = xavier
//   bias_filler = constant 0
//
// Parameters: weight (num_output x C/group x kh x kw), bias (num_output).
//
// Work is cut into chunks whose column matrix stays within a bounded buffer:
// small images are batched side by side so each GEMM has enough columns to run
// at full speed; large images are cut into bands of output rows, whose GEMM
// output goes straight into the top blob. 1x1 stride-1 unpadded convolutions
// use the input itself as the column matrix.

#include <cstdint>

#include "core/kernels/im2col.hpp"
#include "core/layers/filler.hpp"
#include "core/layers/layer.hpp"

namespace taihu {

class ConvolutionLayer final : public Layer {
 public:
  explicit ConvolutionLayer(const LayerSpec& spec);
  const char* type() const override { return "Convolution"; }
  void setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;
  void forward(const BlobVec& bottom, const BlobVec& top) override;
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

  // How the batch is cut (for tests and benchmarks).
  struct Plan {
    int64_t images_per_chunk = 1;  // > 1: images batched side by side
    int64_t rows_per_band = 0;     // output rows per GEMM when images_per_chunk == 1
  };
  const Plan& plan() const { return plan_; }
  const ConvGeometry& geometry() const { return geometry_; }

  // Bounds of the per-layer working buffers, for every convolution layer.
  struct Tuning {
    int64_t column_budget_bytes = int64_t{32} << 20;  // im2col buffer
    // Images with fewer output positions than this are batched, up to
    // target_columns GEMM columns; wider images run one GEMM each (no copies).
    int64_t batch_below_columns = 512;
    int64_t target_columns = 4096;
  };
  static Tuning& tuning();

 private:
  void plan_chunks(int64_t batch);
  // The column matrix of images [first, first + count) (count > 1), in col_.
  void gather_columns(const float* bottom, int64_t first, int64_t count);

  int64_t num_output_ = 0;
  int64_t group_ = 1;
  bool bias_term_ = true;
  Filler weight_filler_;
  Filler bias_filler_;
  ConvGeometry geometry_;  // channels/height/width set from the bottom
  Plan plan_;

  Tensor col_;    // column matrix (and its gradient in backward)
  Tensor batch_;  // GEMM output of batched images, or their gathered top diff
  Tensor ones_;   // for bias gradients
};

}  // namespace taihu
