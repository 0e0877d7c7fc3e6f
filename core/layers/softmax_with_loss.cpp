#include "core/layers/softmax_with_loss.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/common/check.hpp"
#include "core/kernels/elementwise.hpp"
#include "core/layers/labels.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

SoftmaxWithLossLayer::SoftmaxWithLossLayer(const LayerSpec& spec)
    : Layer(spec), axis_(options().get_or<int>("axis", 1)) {
  if (options().has("ignore_label")) ignore_label_ = options().get<int>("ignore_label");
  const std::string mode =
      options().get_choice("normalization", {"valid", "full", "batch_size", "none"}, "valid");
  normalization_ = mode == "valid"        ? Normalization::valid
                   : mode == "full"       ? Normalization::full
                   : mode == "batch_size" ? Normalization::batch_size
                                          : Normalization::none;
}

void SoftmaxWithLossLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  const ClassGeometry g = class_geometry(*this, axis_, shape, bottom[1]->shape());
  outer_ = g.outer, channels_ = g.channels, inner_ = g.inner;
  top[0]->reshape(Shape{});
  prob_.reshape(shape);
  scratch_.reshape(Shape{inner_});
}

void SoftmaxWithLossLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  kernels::softmax_forward(outer_, channels_, inner_, bottom[0]->data().ptr(), prob_.ptr(), scratch_.ptr());
  const float* prob = prob_.ptr();
  const float* labels = bottom[1]->data().ptr();
  double loss = 0.0;
  int64_t valid = 0;
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const int64_t position = o * inner_ + i;
      const int64_t label = class_label(*this, labels[position], channels_, ignore_label_, position);
      if (label < 0) continue;
      ++valid;
      // FLT_MIN keeps a fully confident wrong answer finite.
      loss -= std::log(std::max(prob[(o * channels_ + label) * inner_ + i], FLT_MIN));
    }
  }
  double normalizer = 1.0;
  switch (normalization_) {
    case Normalization::valid:
      normalizer = static_cast<double>(valid);
      break;
    case Normalization::full:
      normalizer = static_cast<double>(outer_ * inner_);
      break;
    case Normalization::batch_size:
      normalizer = static_cast<double>(outer_);
      break;
    case Normalization::none:
      break;
  }
  // With every label ignored the loss is 0, not 0 / 0.
  normalizer_ = static_cast<float>(std::max(normalizer, 1.0));
  top[0]->data()[0] = static_cast<float>(loss / normalizer_);
}

void SoftmaxWithLossLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (propagate_down[1])
    raise("layer '{}' ({}): labels (bottom[1]) have no gradient; do not propagate down to them", name(),
          type());
  if (!propagate_down[0]) return;
  float* diff = bottom[0]->diff().ptr();
  const float* labels = bottom[1]->data().ptr();
  bottom[0]->diff().copy_from(prob_);
  for (int64_t o = 0; o < outer_; ++o) {
    for (int64_t i = 0; i < inner_; ++i) {
      const int64_t position = o * inner_ + i;
      const int64_t label = class_label(*this, labels[position], channels_, ignore_label_, position);
      float* column = diff + o * channels_ * inner_ + i;
      if (label < 0) {
        for (int64_t c = 0; c < channels_; ++c) column[c * inner_] = 0.0f;
      } else {
        column[label * inner_] -= 1.0f;
      }
    }
  }
  const float scale = top[0]->diff()[0] / normalizer_;
  kernels::scale(bottom[0]->count(), scale, diff, diff);
}

TAIHU_REGISTER_LAYER("SoftmaxWithLoss", SoftmaxWithLossLayer);

}  // namespace taihu
