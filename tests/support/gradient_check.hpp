#pragma once
// Finite-difference gradient checking for layers, after Caffe's checker.
//
// The objective is L = sum_j w_j * top_j with fixed random weights w, so every
// output element matters. For each checked element x of a bottom or a
// parameter, the analytic dL/dx from backward() is compared with the central
// difference (L(x+h) - L(x-h)) / 2h. Elements within `kink_range` of a kink
// (ReLU at 0, max-pooling ties) can be skipped.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu::testing {

struct GradientCheckOptions {
  float step = 1e-2f;
  float threshold = 1e-2f;   // relative tolerance (scaled by max(|a|, |n|, 1))
  float kink = 0.0f;         // input value where the layer has a kink
  float kink_range = -1.0f;  // skip inputs within this distance of kink; < 0 disables
  std::vector<size_t> bottoms_to_check;  // empty: every bottom
  bool check_params = true;
  int max_elements = 400;  // per blob; larger blobs are sampled evenly
  uint64_t seed = 1701;
};

class GradientChecker {
 public:
  explicit GradientChecker(GradientCheckOptions options = {}) : opt_(std::move(options)) {}

  // Sets the layer up, then checks every selected bottom and parameter.
  void check(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    layer.setup(bottom, top);
    layer.reshape(bottom, top);
    rng_state_ = layer.rng();
    std::vector<size_t> bottoms = opt_.bottoms_to_check;
    if (bottoms.empty())
      for (size_t i = 0; i < bottom.size(); ++i) bottoms.push_back(i);
    forward(layer, bottom, top);
    weights_.clear();
    Rng wr(opt_.seed);
    for (Blob* t : top) {
      std::vector<float> w(static_cast<size_t>(t->count()));
      for (auto& v : w) v = wr.uniform(-1.0f, 1.0f);
      weights_.push_back(std::move(w));
    }
    // Analytic gradients.
    for (auto& p : layer.params()) p.blob->diff().zero();
    for (size_t i = 0; i < top.size(); ++i)
      std::copy(weights_[i].begin(), weights_[i].end(), top[i]->diff().ptr());
    std::vector<bool> down(bottom.size(), false);
    for (size_t b : bottoms) down[b] = true;
    layer.backward(top, down, bottom);
    std::vector<std::vector<float>> analytic_bottom;
    for (Blob* b : bottom) analytic_bottom.emplace_back(b->diff().ptr(), b->diff().ptr() + b->count());
    std::vector<std::vector<float>> analytic_param;
    for (auto& p : layer.params())
      analytic_param.emplace_back(p.blob->diff().ptr(), p.blob->diff().ptr() + p.blob->count());

    for (size_t b : bottoms)
      compare(layer, bottom, top, bottom[b]->data(), analytic_bottom[b], fmt::format("bottom[{}]", b), true);
    if (opt_.check_params) {
      auto& params = layer.params();
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].learnable)
          compare(layer, bottom, top, params[i].blob->data(), analytic_param[i], params[i].name, false);
    }
  }

 private:
  void forward(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    layer.rng() = rng_state_;  // same random draws (dropout masks) every time
    layer.reshape(bottom, top);
    layer.forward(bottom, top);
  }

  double objective(Layer& layer, const BlobVec& bottom, const BlobVec& top) {
    forward(layer, bottom, top);
    double sum = 0.0;
    for (size_t i = 0; i < top.size(); ++i)
      for (int64_t j = 0; j < top[i]->count(); ++j) sum += weights_[i][j] * top[i]->data()[j];
    return sum;
  }

  void compare(Layer& layer, const BlobVec& bottom, const BlobVec& top, Tensor& x,
               const std::vector<float>& analytic, const std::string& what, bool is_input) {
    const int64_t n = x.count();
    const int64_t stride = std::max<int64_t>(1, n / opt_.max_elements);
    int failures = 0;
    for (int64_t i = 0; i < n; i += stride) {
      const float original = x[i];
      if (is_input && opt_.kink_range >= 0 && std::fabs(original - opt_.kink) < opt_.kink_range) continue;
      x[i] = original + opt_.step;
      const double plus = objective(layer, bottom, top);
      x[i] = original - opt_.step;
      const double minus = objective(layer, bottom, top);
      x[i] = original;
      const double numeric = (plus - minus) / (2.0 * opt_.step);
      const double a = analytic[static_cast<size_t>(i)];
      const double scale = std::max({std::fabs(a), std::fabs(numeric), 1.0});
      if (std::fabs(a - numeric) > opt_.threshold * scale && failures++ < 5) {
        FAIL_CHECK(fmt::format("layer '{}' ({}): {} element {}: analytic {} vs numeric {}", layer.name(),
                               layer.type(), what, i, a, numeric));
      }
    }
    CHECK_MESSAGE(failures == 0, fmt::format("{} mismatches in {}", failures, what));
    forward(layer, bottom, top);
  }

  GradientCheckOptions opt_;
  Rng rng_state_;
  std::vector<std::vector<float>> weights_;
};

inline void check_gradients(Layer& layer, const BlobVec& bottom, const BlobVec& top,
                            GradientCheckOptions options = {}) {
  GradientChecker(std::move(options)).check(layer, bottom, top);
}

}  // namespace taihu::testing
