#pragma once
// The im2col path's working memory, per thread: what one call of a
// convolution needs only while it runs (column matrices, flipped weights,
// partial weight gradients). A call runs start to end on one thread, and the
// pool's threads live as long as the process, so one buffer of each kind,
// as large as the largest call's, serves every layer: held per layer, they
// stayed allocated in every layer that oneDNN computes as well (ResNet-50 at
// batch 32: about 0.1 GB).

#include <cstdint>

#include "core/tensor/tensor.hpp"

namespace taihu {

enum class ConvolutionScratch {
  chunk_columns,    // a batched chunk's columns (on the thread that runs the chunk)
  chunk_outputs,    // and its outputs or their gradients
  image_columns,    // one image's bands of columns, and their gradient in backward
  flipped_weights,  // per group: (C/group) x (num_output/group * kh * kw), for the transposed data gradient
  partials,         // batched backward: the shares' weight and bias gradients
  kinds
};

// At least `count` floats of this thread's buffer of that kind; the same
// buffer for a smaller count, so that one call's pieces agree.
inline float* convolution_scratch(ConvolutionScratch kind, int64_t count) {
  thread_local Tensor buffers[static_cast<int>(ConvolutionScratch::kinds)];
  Tensor& buffer = buffers[static_cast<int>(kind)];
  if (buffer.count() < count) buffer.reshape(Shape{count});
  return buffer.ptr();
}

}  // namespace taihu
