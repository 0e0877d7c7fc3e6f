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
// at full speed, a chunk per thread, sized to stay in its core's cache
// (convolution_batched.cpp); large images are cut into bands of output rows,
// whose GEMM output goes straight into the top blob. 1x1 stride-1 unpadded convolutions
// use the input itself as the column matrix.
//
// Each pass (forward, data gradient, weight gradient) runs either by
// im2col + GEMM (below) or by oneDNN's JIT direct kernels
// (core/kernels/dnnl_convolution.hpp):
//
//   algorithm = auto         # [conv] algorithm for every layer, or per layer:
//                            # auto | measured | im2col | dnnl
//
// auto takes oneDNN wherever it has a JIT kernel for the layer on this CPU,
// im2col elsewhere (CPUs without AVX2, say) and for the passes where
// oneDNN's kernels are known to lag (1x1 weight gradients, one input
// channel per group, data gradients of up to 4, channel counts that fill
// under 3/4 of its 16-channel blocks; see plan_dnnl). The choice depends on
// the shape and the CPU alone, never on a timing, so two runs of one config compute the same
// bits. measured times both on each pass's first call and keeps the faster
// (convolution_choices.hpp), at the price of that reproducibility. A oneDNN
// pass checks itself against im2col on its first call; if it disagrees, it
// is logged and never used.
// algorithm = dnnl where oneDNN has no kernel is an error naming the layer.
//
// The bottom gradient of a stride-1 convolution is itself a convolution: of
// the top gradient with the kernel flipped and its channel axes swapped, padded
// by extent - 1 - pad. One image at a time, with at least 32 bottom channels
// per group, it is computed that way (im2col of
// the top gradient, then a GEMM with a long inner dimension that writes the
// bottom gradient directly) rather than by a GEMM with inner dimension
// num_output followed by col2im.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/kernels/dnnl_convolution.hpp"
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
  // Backward reads the input (for the weights' gradient), not the output.
  bool backward_reads_top(size_t) const override { return false; }
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) override;

  // How the batch is cut (for tests and benchmarks).
  struct Plan {
    int64_t images_per_chunk = 1;  // > 1: images batched side by side
    int64_t rows_per_band = 0;     // output rows per GEMM when images_per_chunk == 1
    // Batched backward: slots the weight and bias gradients are summed in
    // (consecutive chunks each), then added in slot order. Fixed by the shape.
    int64_t gradient_shares = 1;
    int64_t image_columns = 0;  // floats of columns when images_per_chunk == 1 (ConvolutionScratch)
  };
  const Plan& plan() const { return plan_; }
  const ConvGeometry& geometry() const { return geometry_; }

  // Bounds of the per-layer working buffers, for every convolution layer.
  struct Tuning {
    int64_t column_budget_bytes = int64_t{32} << 20;  // im2col buffer
    // Images with fewer output positions than this are batched, up to
    // target_columns GEMM columns per chunk (and within chunk_cache_bytes of
    // columns); wider images run one GEMM each (no copies).
    int64_t batch_below_columns = 512;
    int64_t target_columns = 4096;
    // One image at a time, stride 1: bottom gradient by im2col of the top
    // gradient and a GEMM (false: GEMM then col2im, as when batched).
    bool transposed_data_grad = true;
    int64_t chunk_cache_bytes = int64_t{512} << 10;
    // ... but with at least this many columns (the weight gradient's inner
    // dimension), or as many as target_columns, if fewer.
    int64_t min_chunk_columns = 256;
  };
  static Tuning& tuning();

  enum class Algorithm { automatic, measured, im2col, dnnl };
  // [conv] algorithm: the default of every layer without its own `algorithm`.
  static Algorithm& default_algorithm();
  static Algorithm parse_algorithm(const std::string& name);  // throws std::invalid_argument
  // Applies a config's [conv] section (algorithm = auto | im2col | dnnl) to every layer built after it.
  static void configure(const config::Section& conv);
  // What computes a pass: "im2col+GEMM" or "oneDNN <kernel>".
  std::string pass_kernel(DnnlConvolution::Pass pass) const;
  // Under `measured`: decides every pass not yet decided for the current
  // shape now, timing both kernels on made-up data of that shape, instead of
  // on the pass's first call. A run's rank 0 does this at start-up, so that
  // its decisions can go to every replica before any computes
  // (convolution_choices.hpp). Parameters and their gradients are untouched.
  void decide_kernels();

 private:
  void plan_chunks(int64_t batch);
  // The passes of batched small images, a chunk per thread (convolution_batched.cpp).
  void batched_forward(const float* x, float* y, int64_t batch);
  void batched_backward(const float* x, const float* dy, float* dx, float* dweight, float* dbias, int64_t batch);
  // Whether backward computes one image's bottom gradient as a convolution
  // of its top gradient (see above), and that convolution's geometry.
  bool transposed_data_grad() const;
  ConvGeometry transposed_geometry() const;
  // The bottom gradient of one image by that convolution.
  void transposed_backward(const float* dout, float* dimage);
  // The passes by im2col + GEMM: the top; the weight and bias gradients
  // (accumulated; skipped when dweight is null) and the bottom gradient
  // (skipped when dx is null).
  void im2col_forward(const float* x, float* y, int64_t batch);
  void im2col_backward(const float* x, const float* dy, float* dx, float* dweight, float* dbias, int64_t batch);
  // Sets up oneDNN for the current geometry (when the algorithm allows it).
  void plan_dnnl();
  bool uses_dnnl(DnnlConvolution::Pass pass) const { return dnnl_ && dnnl_passes_[static_cast<int>(pass)]; }
  // After a oneDNN pass's first call: whether it agrees with im2col's
  // `reference`; if not, it is logged and not used again.
  bool confirm_dnnl(DnnlConvolution::Pass pass, const float* result, const float* reference, int64_t count);
  // Under `measured`, on a pass's first call (after its self-check): whether
  // oneDNN stays, by the process's decision for this shape, made here from
  // one more timed call of each (`run_dnnl` and `run_im2col` recompute the
  // pass into the buffers that already hold each kernel's result).
  std::string decision_key(DnnlConvolution::Pass pass, int64_t batch) const;
  template <class RunDnnl, class RunIm2col>
  bool keep_dnnl_by_time(DnnlConvolution::Pass pass, int64_t batch, RunDnnl&& run_dnnl, RunIm2col&& run_im2col);

  int64_t num_output_ = 0;
  int64_t group_ = 1;
  bool bias_term_ = true;
  Filler weight_filler_;
  Filler bias_filler_;
  ConvGeometry geometry_;  // channels/height/width set from the bottom
  int64_t batch_ = 0;      // the bottom's, at the last reshape
  Plan plan_;

  Tensor ones_;   // for bias gradients
  // Floats of the flipped weights the transposed data gradient multiplies by.
  int64_t flipped_count() const {
    return geometry_.channels * num_output_ / group_ * geometry_.kernel_h * geometry_.kernel_w;
  }
  int64_t transposed_rows_per_band_ = 0;

  std::optional<Algorithm> algorithm_;  // this layer's own `algorithm`
  std::unique_ptr<DnnlConvolution> dnnl_;
  ConvGeometry dnnl_geometry_;         // what dnnl_ was made for
  bool dnnl_passes_[3] = {true, true, true};   // false: a self-check failed
  bool dnnl_checked_[3] = {false, false, false};
  bool dnnl_timed_[3] = {true, true, true};  // false: `measured` still has to time the pass
};

}  // namespace taihu
