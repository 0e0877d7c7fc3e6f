#include "core/data/image_resize.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/check.hpp"

namespace taihu {

namespace {

// Bilinear interpolation's kernel; stretched by the downscale factor it is
// also the antialiasing filter.
double triangle(double x) { return std::max(0.0, 1.0 - std::abs(x)); }

// Output x = sum over taps of weight * input, per channel. Each input row is
// first widened to floats, RGB padded to 4 lanes: the taps' loop is then one
// 4-wide multiply-add per tap, which the compiler vectorises, instead of three
// scalar conversions and multiply-adds. C and the lane count are template
// arguments so the loops unroll and the accumulators stay in registers.
template <int C>
void resample_rows(const Image& image, int first_row, int end_row, const AxisWeights& taps, std::vector<float>& wide,
                   float* out) {
  constexpr int lanes = C == 3 ? 4 : 1;
  const size_t in_stride = static_cast<size_t>(image.width) * C;
  const int outputs = static_cast<int>(taps.first.size());
  // The input columns the window reaches.
  const int first_column = *std::min_element(taps.first.begin(), taps.first.end());
  int end_column = 0;
  for (int x = 0; x < outputs; ++x) end_column = std::max(end_column, taps.first[x] + taps.count[x]);
  wide.resize(static_cast<size_t>(end_column - first_column) * lanes);
  for (int y = first_row; y < end_row; ++y) {
    const uint8_t* in =
        image.pixels.data() + static_cast<size_t>(y) * in_stride + static_cast<size_t>(first_column) * C;
    for (int x = 0; x < end_column - first_column; ++x) {
      for (int c = 0; c < lanes; ++c) {
        wide[static_cast<size_t>(x) * lanes + c] = c < C ? static_cast<float>(in[x * C + c]) : 0.0f;
      }
    }
    for (int x = 0; x < outputs; ++x, out += C) {
      const float* source = wide.data() + static_cast<size_t>(taps.first[x] - first_column) * lanes;
      const float* weight = taps.weights.data() + static_cast<size_t>(x) * taps.stride;
      float sum[lanes] = {};
      for (int k = 0; k < taps.count[x]; ++k, source += lanes) {
        for (int c = 0; c < lanes; ++c) sum[c] += weight[k] * source[c];
      }
      for (int c = 0; c < C; ++c) out[c] = sum[c];
    }
  }
}

}  // namespace

// PIL's precompute_coeffs (libImaging/Resample.c) with the bilinear filter:
// output i is centred on input coordinate (i + 0.5) * scale, and a downscale
// by `scale` widens the triangle to `scale` input pixels each side.
void AxisWeights::compute(int in_size, int out_size, int begin, int outputs) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  first.resize(static_cast<size_t>(outputs));
  count.resize(static_cast<size_t>(outputs));
  weights.assign(static_cast<size_t>(outputs) * static_cast<size_t>(stride), 0.0f);
  std::vector<double> raw(static_cast<size_t>(stride));
  for (int i = 0; i < outputs; ++i) {
    const double centre = (begin + i + 0.5) * scale;
    // PIL rounds the bounds by truncating x + 0.5; a negative low bound
    // truncates towards 0, which the clamp gives anyway.
    int low = std::max(static_cast<int>(centre - support + 0.5), 0);
    int high = std::min(static_cast<int>(centre + support + 0.5), in_size);
    double total = 0.0;
    for (int k = low; k < high; ++k) {
      raw[static_cast<size_t>(k - low)] = triangle((k - centre + 0.5) / filter_scale);
      total += raw[static_cast<size_t>(k - low)];
    }
    // Taps of weight 0 at the ends (an edge of the triangle falling on a
    // pixel centre, as in every tap of a 1:1 axis) cost time and add nothing.
    int skip = 0;
    while (low + skip < high && raw[static_cast<size_t>(skip)] == 0.0) ++skip;
    while (high > low + skip && raw[static_cast<size_t>(high - 1 - low)] == 0.0) --high;
    float* out = weights.data() + static_cast<size_t>(i) * static_cast<size_t>(stride);
    for (int k = low + skip; k < high; ++k) {
      out[k - low - skip] = static_cast<float>(raw[static_cast<size_t>(k - low)] / total);
    }
    first[static_cast<size_t>(i)] = low + skip;
    count[static_cast<size_t>(i)] = high - low - skip;
  }
}

void WindowResizer::start(const Image& image, int out_height, int out_width, int top, int left, int height, int width) {
  require(top >= 0 && left >= 0 && height > 0 && width > 0 && top + height <= out_height && left + width <= out_width,
          "resize window {}x{} at ({}, {}) outside the output {}x{}", height, width, top, left, out_height, out_width);
  horizontal_.compute(image.width, out_width, left, width);
  vertical_.compute(image.height, out_height, top, height);
  // The input rows the window's vertical taps reach.
  first_row_ = *std::min_element(vertical_.first.begin(), vertical_.first.end());
  int end_row = 0;
  for (size_t y = 0; y < vertical_.first.size(); ++y)
    end_row = std::max(end_row, vertical_.first[y] + vertical_.count[y]);
  row_length_ = width * image.channels;
  rows_.resize(static_cast<size_t>(end_row - first_row_) * static_cast<size_t>(row_length_));
  line_.resize(static_cast<size_t>(row_length_));
  if (image.channels == 1) {
    resample_rows<1>(image, first_row_, end_row, horizontal_, wide_, rows_.data());
  } else {
    resample_rows<3>(image, first_row_, end_row, horizontal_, wide_, rows_.data());
  }
}

const float* WindowResizer::row(int y) {
  const auto length = static_cast<size_t>(row_length_);
  const float* weight = vertical_.weights.data() + static_cast<size_t>(y) * static_cast<size_t>(vertical_.stride);
  const int taps = vertical_.count[static_cast<size_t>(y)];
  const float* source =
      rows_.data() + static_cast<size_t>(vertical_.first[static_cast<size_t>(y)] - first_row_) * length;
  // A single tap has weight 1 (a 1:1 axis): the row is already there.
  if (taps == 1) return source;
  // Whole rows at a time, tap by tap: contiguous, so the compiler vectorises.
  float* line = line_.data();
  for (size_t i = 0; i < length; ++i) line[i] = weight[0] * source[i];
  for (int k = 1; k < taps; ++k) {
    const float* next = source + static_cast<size_t>(k) * length;
    for (size_t i = 0; i < length; ++i) line[i] += weight[k] * next[i];
  }
  return line;
}

}  // namespace taihu
