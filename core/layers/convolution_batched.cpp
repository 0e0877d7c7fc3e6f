// ConvolutionLayer's passes for small images (plan().images_per_chunk > 1):
// the batch is cut into chunks of images laid side by side in one column
// matrix, and each chunk is gathered, multiplied and scattered by one thread,
// chunks running in parallel.
//
// Why one thread per chunk rather than one GEMM over the whole batch cut into
// tiles: a chunk's column matrix is sized to stay in that core's cache between
// its im2col and its GEMM (and, backward, between the GEMM and its col2im).
// Gathering the whole batch first, then multiplying it on all threads, wrote
// and read the columns through memory: on LeNet's conv2 (20 -> 50 channels,
// 12x12, batch 64, an 8 MB column matrix) the copies took longer than the
// GEMMs.
//
// Where there are fewer chunks (backward: shares of chunks) than threads, as
// for ResNet-50's 14x14 and 7x7 layers at batch 32 (two chunks and one), the
// chunks run one after another instead, each GEMM cut into tiles over all the
// threads and the copies around it split by channels: on a 16-core Xeon the
// weight gradients of those 1x1 layers had run on one or two threads, at the
// same ~140 GF/s with 8 threads as with 16.
//
// Bits do not depend on the thread count, nor on which of the two ways runs:
// chunks are fixed by the shape, a GEMM's tiles are fixed by its shape
// (core/blas/tiling.hpp), and the weight and bias gradients are summed per
// share of chunks, then over shares in their order.

#include <algorithm>
#include <cstring>

#include "core/blas/blas.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/convolution.hpp"
#include "core/layers/convolution_scratch.hpp"

namespace taihu {

using blas::Trans;

namespace {

struct Chunk {
  int64_t first = 0, count = 0;  // images [first, first + count)
};

Chunk chunk_of(int64_t index, int64_t images_per_chunk, int64_t batch) {
  const int64_t first = index * images_per_chunk;
  return {first, std::min(images_per_chunk, batch - first)};
}

// Calls fn(unit) for units [0, count): concurrently, one thread per unit,
// when there are units for every thread; otherwise in order, so that the
// parallel_for calls inside fn (GEMM tiles, copies) get the threads.
template <class Fn>
void for_each_unit(int64_t count, Fn&& fn) {
  if (count >= parallel_threads()) return parallel_for(count, fn);
  for (int64_t unit = 0; unit < count; ++unit) fn(unit);
}

// fn(begin, end) over ranges of channels in [0, channels), `floats_per_channel`
// copied each: split over the threads when called outside a parallel_for, one
// range of all channels inside one (a chunk per thread, as before).
template <class Fn>
void for_channel_ranges(int64_t channels, int64_t floats_per_channel, Fn&& fn) {
  parallel_ranges(channels, parallel_grain() / std::max<int64_t>(floats_per_channel, 1), fn);
}

// Column matrix of images [first, first + count): the images side by side,
// `ld` = count * out_size floats per row.
void gather_columns(const ConvGeometry& g, const float* bottom, Chunk chunk, float* col) {
  const int64_t out_size = g.out_size();
  const int64_t ld = chunk.count * out_size;
  const int64_t image_size = g.channels * g.height * g.width;
  for_channel_ranges(g.channels, ld * g.kernel_h * g.kernel_w, [&](int64_t begin, int64_t end) {
    for (int64_t j = 0; j < chunk.count; ++j) {
      const float* image = bottom + (chunk.first + j) * image_size;
      if (!g.is_pointwise()) {
        im2col_channels(image, g, begin, end, 0, g.out_height(), col + j * out_size, ld);
        continue;
      }
      for (int64_t c = begin; c < end; ++c)
        std::memcpy(col + c * ld + j * out_size, image + c * out_size, out_size * sizeof(float));
    }
  });
}

}  // namespace

void ConvolutionLayer::batched_forward(const float* x, float* y, int64_t batch) {
  const ConvGeometry& g = geometry_;
  const int64_t out_size = g.out_size();
  const int64_t m = num_output_ / group_;
  const int64_t k = g.col_rows() / group_;
  const float* weight = params()[0].blob->data().ptr();
  const float* bias = bias_term_ ? params()[1].blob->data().ptr() : nullptr;
  const int64_t per_chunk = plan_.images_per_chunk;

  for_each_unit((batch + per_chunk - 1) / per_chunk, [&](int64_t index) {
    const Chunk chunk = chunk_of(index, per_chunk, batch);
    const int64_t ld = chunk.count * out_size;
    float* col = convolution_scratch(ConvolutionScratch::chunk_columns, g.col_rows() * ld);
    float* out = convolution_scratch(ConvolutionScratch::chunk_outputs, num_output_ * ld);
    gather_columns(g, x, chunk, col);
    for (int64_t grp = 0; grp < group_; ++grp)
      blas::gemm(Trans::no, Trans::no, m, ld, k, 1.0f, weight + grp * m * k, k, col + grp * k * ld, ld, 0.0f,
                 out + grp * m * ld, ld);
    // Each image's block of columns to its place in the top, plus the bias.
    for_channel_ranges(num_output_, ld, [&](int64_t begin, int64_t end) {
      for (int64_t j = 0; j < chunk.count; ++j)
        for (int64_t o = begin; o < end; ++o) {
          const float* src = out + o * ld + j * out_size;
          float* dst = y + ((chunk.first + j) * num_output_ + o) * out_size;
          const float b = bias ? bias[o] : 0.0f;
          for (int64_t p = 0; p < out_size; ++p) dst[p] = src[p] + b;
        }
    });
  });
}

void ConvolutionLayer::batched_backward(const float* x, const float* dy, float* dx, float* dweight, float* dbias,
                                        int64_t batch) {
  const ConvGeometry& g = geometry_;
  const int64_t out_size = g.out_size();
  const int64_t image_size = g.channels * g.height * g.width;
  const int64_t plane = g.height * g.width;
  const int64_t m = num_output_ / group_;
  const int64_t k = g.col_rows() / group_;
  const float* weight = params()[0].blob->data().ptr();
  const int64_t per_chunk = plan_.images_per_chunk;
  const int64_t chunks = (batch + per_chunk - 1) / per_chunk;
  // Shares of consecutive chunks, each summing its weight and bias gradients
  // in its own slot; one share adds straight into the parameters' diffs.
  const int64_t shares = std::min(chunks, plan_.gradient_shares);
  const int64_t weight_count = num_output_ * k;
  const int64_t slot = weight_count + num_output_;
  // (No slots when no parameter gradient is wanted.) The calling thread's
  // buffer, which the pool's threads fill.
  const bool into_slots = shares > 1 && (dweight || dbias);
  float* const partials = into_slots ? convolution_scratch(ConvolutionScratch::partials, shares * slot) : nullptr;

  for_each_unit(shares, [&](int64_t share) {
    float* share_weight = into_slots ? partials + share * slot : dweight;
    float* share_bias = into_slots ? partials + share * slot + weight_count : dbias;
    const int64_t chunk_begin = share * chunks / shares, chunk_end = (share + 1) * chunks / shares;
    for (int64_t index = chunk_begin; index < chunk_end; ++index) {
      const Chunk chunk = chunk_of(index, per_chunk, batch);
      const int64_t ld = chunk.count * out_size;
      // First chunk of a slot overwrites it; the parameters' diffs accumulate.
      const float beta = shares > 1 && index == chunk_begin ? 0.0f : 1.0f;
      float* col = convolution_scratch(ConvolutionScratch::chunk_columns, g.col_rows() * ld);
      float* douts = convolution_scratch(ConvolutionScratch::chunk_outputs, num_output_ * ld);
      // The images' top gradients side by side: num_output x ld.
      for_channel_ranges(num_output_, ld, [&](int64_t begin, int64_t end) {
        for (int64_t j = 0; j < chunk.count; ++j)
          for (int64_t o = begin; o < end; ++o)
            std::memcpy(douts + o * ld + j * out_size, dy + ((chunk.first + j) * num_output_ + o) * out_size,
                        out_size * sizeof(float));
      });
      if (dbias) blas::gemv(Trans::no, num_output_, ld, 1.0f, douts, ones_.ptr(), beta, share_bias);
      if (dweight) {
        gather_columns(g, x, chunk, col);
        for (int64_t grp = 0; grp < group_; ++grp)
          blas::gemm(Trans::no, Trans::yes, m, k, ld, 1.0f, douts + grp * m * ld, ld, col + grp * k * ld, ld, beta,
                     share_weight + grp * m * k, k);
      }
      if (!dx) continue;
      // The column gradient replaces the columns, then goes back to the images.
      for (int64_t grp = 0; grp < group_; ++grp)
        blas::gemm(Trans::yes, Trans::no, k, ld, m, 1.0f, weight + grp * m * k, k, douts + grp * m * ld, ld, 0.0f,
                   col + grp * k * ld, ld);
      for_channel_ranges(g.channels, ld * g.kernel_h * g.kernel_w, [&](int64_t begin, int64_t end) {
        for (int64_t j = 0; j < chunk.count; ++j) {
          float* image = dx + (chunk.first + j) * image_size;
          if (g.is_pointwise()) {
            for (int64_t c = begin; c < end; ++c)
              std::memcpy(image + c * out_size, col + c * ld + j * out_size, out_size * sizeof(float));
            continue;
          }
          std::fill_n(image + begin * plane, (end - begin) * plane, 0.0f);
          col2im_add_channels(col + j * out_size, ld, g, begin, end, 0, g.out_height(), image);
        }
      });
    }
  });
  if (!into_slots) return;
  // The shares' sums, in share order, into the parameters' diffs.
  auto add_shares = [&](float* diff, int64_t offset, int64_t count) {
    parallel_ranges(count, parallel_grain() / shares, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float sum = 0.0f;
        for (int64_t share = 0; share < shares; ++share) sum += partials[share * slot + offset + i];
        diff[i] += sum;
      }
    });
  };
  if (dweight) add_shares(dweight, 0, weight_count);
  if (dbias) add_shares(dbias, weight_count, num_output_);
}

}  // namespace taihu
