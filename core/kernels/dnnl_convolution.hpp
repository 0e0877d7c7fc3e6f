#pragma once
// Convolutions by oneDNN's JIT-generated direct kernels (libdnnl-dev), which
// keep tiles in the caches and use the CPU's full vector width: on an
// AVX-512 CPU 2-3x the speed of im2col + SGEMM on ResNet's 3x3 layers.
//
// oneDNN runs on taihu's own thread pool, one single-threaded oneDNN call
// per piece of work, never on OpenMP threads of its own (which would
// compete with the pool and with BLAS for the cores). The pieces are cut by
// the shape alone, and every output element is computed inside one piece,
// so the results do not depend on the thread count:
//   forward, data gradient  pieces of images (each image's output is its own)
//   weight gradient         pieces of output channels (within a group), each
//                           over the whole batch (oneDNN's own threading
//                           would split the sum over images by thread count)
// Like a BLAS kernel, the bits depend on the CPU's instruction set
// (DNNL_MAX_CPU_ISA caps it).
//
// Tensors are taihu's NCHW blobs and OIHW weights; each piece reorders its
// images into oneDNN's blocked layout and back.

#include <cstdint>
#include <memory>
#include <string>

#include "core/kernels/im2col.hpp"

namespace taihu {

class DnnlConvolution {
 public:
  enum class Pass { forward, data_gradient, weight_gradient };

  // Null when oneDNN has no JIT kernel for this convolution's forward pass on
  // this CPU (it would run its reference or GEMM code). Grouped convolutions
  // run as oneDNN's grouped kernels, their weight gradients group by group.
  static std::unique_ptr<DnnlConvolution> create(const ConvGeometry& geometry, int64_t num_output, int64_t group,
                                                 bool bias);
  ~DnnlConvolution();
  DnnlConvolution(const DnnlConvolution&) = delete;
  DnnlConvolution& operator=(const DnnlConvolution&) = delete;

  // The kernel oneDNN chose for a pass, e.g. "jit:avx512_core"; empty when
  // it has no JIT kernel for that pass (only the forward one is required).
  const std::string& kernel(Pass pass) const;
  bool has_kernel(Pass pass) const { return !kernel(pass).empty(); }

  // y = conv(x, weight) + bias (bias may be null).
  void forward(const float* x, const float* weight, const float* bias, float* y, int64_t batch);
  // dx = the gradient of the input (overwritten).
  void backward_data(const float* dy, const float* weight, float* dx, int64_t batch);
  // dweight += the weight gradient, dbias += the bias gradient (dbias may be null).
  void backward_weights(const float* x, const float* dy, float* dweight, float* dbias, int64_t batch);

 private:
  struct Impl;
  explicit DnnlConvolution(std::unique_ptr<Impl> impl);
  void backward_weights_by_images(const float* x, const float* dy, float* dweight, float* dbias, int64_t batch);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taihu
