#include "core/layers/accuracy.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/common/check.hpp"
#include "core/layers/labels.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

AccuracyLayer::AccuracyLayer(const LayerSpec& spec)
    : Layer(spec), top_k_(options().get_or<int>("top_k", 1)), axis_(options().get_or<int>("axis", 1)) {
  if (top_k_ < 1) throw options().error("top_k", "must be at least 1");
  if (options().has("ignore_label")) ignore_label_ = options().get<int>("ignore_label");
}

void AccuracyLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  const ClassGeometry g = class_geometry(*this, axis_, shape, bottom[1]->shape());
  outer_ = g.outer, channels_ = g.channels, inner_ = g.inner;
  if (top_k_ > channels_)
    shape_error(fmt::format("top_k = {} exceeds the {} classes of scores of shape {}", top_k_, channels_,
                            shape.str()));
  top[0]->reshape(Shape{});
}

void AccuracyLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const float* scores = bottom[0]->data().ptr();
  const float* labels = bottom[1]->data().ptr();
  int64_t correct = 0, counted = 0;
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const int64_t position = o * inner_ + i;
      const int64_t label = class_label(*this, labels[position], channels_, ignore_label_, position);
      if (label < 0) continue;
      ++counted;
      const float* column = scores + o * channels_ * inner_ + i;
      const float truth = column[label * inner_];
      // The label's rank: classes scoring higher, or equal with a lower index.
      int64_t ahead = 0;
      for (int64_t c = 0; c < channels_; ++c) {
        const float s = column[c * inner_];
        ahead += (s > truth) || (s == truth && c < label);
      }
      correct += ahead < top_k_ && !std::isnan(truth);
    }
  }
  top[0]->data()[0] = counted == 0 ? 0.0f : static_cast<float>(correct) / static_cast<float>(counted);
}

void AccuracyLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                             const BlobVec& bottom) {
  for (bool down : propagate_down)
    require(!down, "layer '{}' (Accuracy) has no gradient; it cannot feed a loss", name());
}

TAIHU_REGISTER_LAYER("Accuracy", AccuracyLayer);

}  // namespace taihu
