#pragma once
// Antialiased resizing of 8-bit images as PIL's Image.resize(BILINEAR) does
// it (torchvision's Resize on PIL images): a triangle filter whose support
// widens with the downscale factor, so every input pixel contributes and
// fine detail averages out instead of aliasing; separable, rows first, then
// columns. Only a window of the output is computed (the crop that follows),
// and the result stays float, not rounded back to 8 bits as PIL does: its
// values differ from PIL's by at most about half a grey level.

#include <cstdint>
#include <vector>

#include "core/data/image_codec.hpp"

namespace taihu {

// The filter taps of one axis: for each output index, a run of input indices
// and their weights (which sum to 1).
struct AxisWeights {
  int stride = 0;          // weights stored per output
  std::vector<int> first;  // first input index of each output
  std::vector<int> count;  // taps of each output
  std::vector<float> weights;

  // Outputs [begin, begin + outputs) of resizing `in_size` to `out_size`.
  void compute(int in_size, int out_size, int begin, int outputs);
};

// One resize of one image, computed row by row for the consumer; reused
// across images, so the buffers (and weights) stop allocating once grown.
// Not thread-safe: one per thread.
class WindowResizer {
 public:
  // Resizes `image` to out_height x out_width and prepares the window of
  // height x width output pixels at (top, left): runs the horizontal pass
  // over the input rows the window needs.
  void start(const Image& image, int out_height, int out_width, int top, int left, int height, int width);
  // Row y of the window (0 <= y < height): width x channels floats, channels
  // interleaved; valid until the next call.
  const float* row(int y);

 private:
  AxisWeights horizontal_;
  AxisWeights vertical_;
  std::vector<float> wide_;  // one input row as floats (RGB padded to 4)
  std::vector<float> rows_;  // the horizontal pass: input rows x window width x channels
  std::vector<float> line_;  // one output row
  int first_row_ = 0;        // input row of rows_[0]
  int row_length_ = 0;       // floats per row
};

}  // namespace taihu
