#include "core/layers/lrn.hpp"

#include <algorithm>
#include <cmath>

#include "core/layers/registry.hpp"

namespace taihu {

LrnLayer::LrnLayer(const LayerSpec& spec) : Layer(spec) {
  local_size_ = options().get_or<int>("local_size", 5);
  if (local_size_ < 1 || local_size_ % 2 == 0)
    throw options().error("local_size", "must be a positive odd number");
  alpha_ = options().get_or<float>("alpha", 1.0f);
  beta_ = options().get_or<float>("beta", 0.75f);
  k_ = options().get_or<float>("k", 1.0f);
  if (!(k_ > 0.0f)) throw options().error("k", "must be positive (it keeps the scale above zero)");
  if (!(alpha_ >= 0.0f)) throw options().error("alpha", "must not be negative");
  across_channels_ =
      options().get_choice("norm_region", {"across_channels", "within_channel"}, "across_channels") ==
      "across_channels";
}

void LrnLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  if (shape.rank() != 4) shape_error("expected N x C x H x W, got " + shape.str());
  if (top[0] == bottom[0]) shape_error("cannot work in place");
  num_ = shape[0];
  channels_ = shape[1];
  height_ = shape[2];
  width_ = shape[3];
  top[0]->reshape(shape);
  scale_.reshape(shape);
  power_.reshape(shape);
  const Shape image{channels_, height_, width_};
  work_.reshape(image);
  window_.reshape(image);
  row_sums_.reshape(Shape{height_, width_});
}

void LrnLayer::channel_window_sum(const float* in, float* out, int64_t planes, int64_t plane) const {
  // A sliding window over channels: add the plane entering, drop the one leaving.
  const int64_t half = local_size_ / 2;
  std::fill_n(out, plane, 0.0f);
  for (int64_t c = 0; c <= std::min(half, planes - 1); ++c) {
    const float* p = in + c * plane;
    for (int64_t i = 0; i < plane; ++i) out[i] += p[i];
  }
  for (int64_t c = 1; c < planes; ++c) {
    float* cur = out + c * plane;
    const float* prev = cur - plane;
    const int64_t enter = c + half, leave = c - half - 1;
    const float* add = enter < planes ? in + enter * plane : nullptr;
    const float* sub = leave >= 0 ? in + leave * plane : nullptr;
    if (add != nullptr && sub != nullptr)
      for (int64_t i = 0; i < plane; ++i) cur[i] = prev[i] + add[i] - sub[i];
    else if (add != nullptr)
      for (int64_t i = 0; i < plane; ++i) cur[i] = prev[i] + add[i];
    else if (sub != nullptr)
      for (int64_t i = 0; i < plane; ++i) cur[i] = prev[i] - sub[i];
    else
      std::copy_n(prev, plane, cur);
  }
}

void LrnLayer::spatial_window_sum(const float* in, float* out, int64_t height, int64_t width) {
  // Separable box sum: a sliding sum along each row, then rows added along
  // each column (vectorised across the row).
  const int64_t half = local_size_ / 2;
  float* rows = row_sums_.ptr();
  for (int64_t h = 0; h < height; ++h) {
    const float* src = in + h * width;
    float* dst = rows + h * width;
    float s = 0.0f;
    for (int64_t j = 0; j <= std::min(half, width - 1); ++j) s += src[j];
    dst[0] = s;
    for (int64_t w = 1; w < width; ++w) {
      if (w + half < width) s += src[w + half];
      if (w - half - 1 >= 0) s -= src[w - half - 1];
      dst[w] = s;
    }
  }
  for (int64_t h = 0; h < height; ++h) {
    float* dst = out + h * width;
    std::fill_n(dst, width, 0.0f);
    const int64_t lo = std::max<int64_t>(0, h - half), hi = std::min<int64_t>(height - 1, h + half);
    for (int64_t r = lo; r <= hi; ++r) {
      const float* src = rows + r * width;
      for (int64_t w = 0; w < width; ++w) dst[w] += src[w];
    }
  }
}

void LrnLayer::negative_power(const float* scale, float* out, int64_t n) const {
  // The common exponents avoid pow(), which does not vectorise.
  if (beta_ == 0.75f) {
    for (int64_t i = 0; i < n; ++i) {
      const float r = std::sqrt(scale[i]);
      out[i] = 1.0f / (r * std::sqrt(r));
    }
  } else if (beta_ == 0.5f) {
    for (int64_t i = 0; i < n; ++i) out[i] = 1.0f / std::sqrt(scale[i]);
  } else if (beta_ == 1.0f) {
    for (int64_t i = 0; i < n; ++i) out[i] = 1.0f / scale[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = std::pow(scale[i], -beta_);
  }
}

void LrnLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const int64_t plane = height_ * width_, image = channels_ * plane;
  const float n = across_channels_ ? static_cast<float>(local_size_)
                                   : static_cast<float>(local_size_ * local_size_);
  const float coeff = alpha_ / n;
  float* squares = work_.ptr();
  // One image at a time, so that its intermediates stay in cache.
  for (int64_t b = 0; b < num_; ++b) {
    const int64_t off = b * image;
    const float* x = bottom[0]->data().ptr() + off;
    float* scale = scale_.ptr() + off;
    float* power = power_.ptr() + off;
    float* y = top[0]->data().ptr() + off;
    for (int64_t i = 0; i < image; ++i) squares[i] = x[i] * x[i];
    if (across_channels_) {
      channel_window_sum(squares, scale, channels_, plane);
    } else {
      for (int64_t c = 0; c < channels_; ++c)
        spatial_window_sum(squares + c * plane, scale + c * plane, height_, width_);
    }
    for (int64_t i = 0; i < image; ++i) scale[i] = k_ + coeff * scale[i];
    negative_power(scale, power, image);
    for (int64_t i = 0; i < image; ++i) y[i] = x[i] * power[i];
  }
}

void LrnLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                        const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  // dx = dy * scale^-beta - (2 alpha beta / n) * x * window_sum(dy * y / scale);
  // the window is symmetric, so the positions whose window holds x are x's window.
  // y is recomputed as x * scale^-beta since an in-place successor may own the top.
  const int64_t plane = height_ * width_, image = channels_ * plane;
  const float n = across_channels_ ? static_cast<float>(local_size_)
                                   : static_cast<float>(local_size_ * local_size_);
  const float coeff = 2.0f * alpha_ * beta_ / n;
  float* ratio = work_.ptr();
  float* sums = window_.ptr();
  for (int64_t b = 0; b < num_; ++b) {
    const int64_t off = b * image;
    const float* x = bottom[0]->data().ptr() + off;
    const float* dy = top[0]->diff().ptr() + off;
    const float* scale = scale_.ptr() + off;
    const float* p = power_.ptr() + off;
    float* dx = bottom[0]->diff().ptr() + off;
    for (int64_t i = 0; i < image; ++i) ratio[i] = dy[i] * x[i] * p[i] / scale[i];
    if (across_channels_) {
      channel_window_sum(ratio, sums, channels_, plane);
    } else {
      for (int64_t c = 0; c < channels_; ++c)
        spatial_window_sum(ratio + c * plane, sums + c * plane, height_, width_);
    }
    for (int64_t i = 0; i < image; ++i) dx[i] = dy[i] * p[i] - coeff * x[i] * sums[i];
  }
}

TAIHU_REGISTER_LAYER("LRN", LrnLayer);

}  // namespace taihu
