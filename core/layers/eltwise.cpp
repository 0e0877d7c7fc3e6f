#include "core/layers/eltwise.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/kernels/elementwise.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

EltwiseLayer::EltwiseLayer(const LayerSpec& spec) : Layer(spec) {
  const std::string op = options().get_choice("operation", {"sum", "prod", "max"}, "sum");
  operation_ = op == "sum" ? Operation::sum : op == "prod" ? Operation::prod : Operation::max;
  coeffs_ = options().get_list_or<float>("coeff", {});
  if (!coeffs_.empty() && operation_ != Operation::sum)
    throw options().error("coeff", "applies only to operation = sum");
}

void EltwiseLayer::setup(const BlobVec& bottom, const BlobVec& top) {
  if (coeffs_.empty()) coeffs_.assign(bottom.size(), 1.0f);
  if (coeffs_.size() != bottom.size())
    throw options().error("coeff", fmt::format("needs one value per bottom: {} bottoms, {} values",
                                               bottom.size(), coeffs_.size()));
}

void EltwiseLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& shape = bottom[0]->shape();
  for (size_t i = 1; i < bottom.size(); ++i)
    if (bottom[i]->shape() != shape)
      shape_error(fmt::format("all bottoms must have the same shape: bottom[0] is {}, bottom[{}] is {}",
                              shape.str(), i, bottom[i]->shape().str()));
  top[0]->reshape(shape);
  // As large as the top, and as much not wanted by a net built for its shapes (ShapesOnly).
  if (operation_ == Operation::max && !ShapesOnly::active()) argmax_.resize(static_cast<size_t>(shape.count()));
}

void EltwiseLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  const int64_t n = top[0]->count();
  float* out = top[0]->data().ptr();
  switch (operation_) {
    case Operation::sum:
      parallel_ranges(n, parallel_grain(), [&](int64_t begin, int64_t end) { sum_range(bottom, out, begin, end); });
      break;
    case Operation::prod:
      kernels::mul(n, bottom[0]->data().ptr(), bottom[1]->data().ptr(), out);
      for (size_t i = 2; i < bottom.size(); ++i) kernels::mul(n, out, bottom[i]->data().ptr(), out);
      break;
    case Operation::max: {
      int32_t* arg = argmax_.data();
      top[0]->data().copy_from(bottom[0]->data());
      std::fill_n(arg, n, 0);
      for (size_t b = 1; b < bottom.size(); ++b) {
        const float* in = bottom[b]->data().ptr();
        const auto index = static_cast<int32_t>(b);
        for (int64_t j = 0; j < n; ++j) {
          const bool better = in[j] > out[j];
          out[j] = better ? in[j] : out[j];
          arg[j] = better ? index : arg[j];
        }
      }
      break;
    }
  }
}

void EltwiseLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
  const int64_t n = top[0]->count();
  const float* grad = top[0]->diff().ptr();
  for (size_t b = 0; b < bottom.size(); ++b) {
    if (!propagate_down[b]) continue;
    float* diff = bottom[b]->diff().ptr();
    switch (operation_) {
      case Operation::sum:
        parallel_ranges(n, parallel_grain(), [&](int64_t begin, int64_t end) {
          if (coeffs_[b] == 1.0f)
            std::copy(grad + begin, grad + end, diff + begin);
          else
            kernels::scale(end - begin, coeffs_[b], grad + begin, diff + begin);
        });
        break;
      case Operation::prod:
        // The product of the other inputs, not top / x_b, so zeros are fine.
        std::copy_n(grad, n, diff);
        for (size_t k = 0; k < bottom.size(); ++k)
          if (k != b) kernels::mul(n, diff, bottom[k]->data().ptr(), diff);
        break;
      case Operation::max: {
        const int32_t* arg = argmax_.data();
        const auto index = static_cast<int32_t>(b);
        for (int64_t j = 0; j < n; ++j) diff[j] = arg[j] == index ? grad[j] : 0.0f;
        break;
      }
    }
  }
}

void EltwiseLayer::sum_range(const BlobVec& bottom, float* out, int64_t begin, int64_t end) const {
  const int64_t len = end - begin;
  if (bottom.size() == 2) {  // the common case, in one pass
    const float *a = bottom[0]->data().ptr() + begin, *b = bottom[1]->data().ptr() + begin;
    const float ca = coeffs_[0], cb = coeffs_[1];
    float* o = out + begin;
    for (int64_t i = 0; i < len; ++i) o[i] = ca * a[i] + cb * b[i];
    return;
  }
  kernels::scale(len, coeffs_[0], bottom[0]->data().ptr() + begin, out + begin);
  for (size_t i = 1; i < bottom.size(); ++i) kernels::axpy(len, coeffs_[i], bottom[i]->data().ptr() + begin, out + begin);
}

void EltwiseLayer::sum_gradient_range(const float* grad, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom, int64_t begin, int64_t end) const {
  for (size_t b = 0; b < bottom.size(); ++b) {
    if (!propagate_down[b]) continue;
    float* diff = bottom[b]->diff().ptr() + begin;
    if (coeffs_[b] == 1.0f)
      std::copy(grad, grad + (end - begin), diff);
    else
      kernels::scale(end - begin, coeffs_[b], grad, diff);
  }
}

namespace {
// Elements per step of a fused pass: its intermediate stays in L1.
constexpr int64_t fused_step = 4096;
}  // namespace

void EltwiseLayer::forward_then_relu(const BlobVec& bottom, Blob& out, float slope) {
  float* y = out.data().ptr();
  parallel_ranges(out.count(), parallel_grain(), [&](int64_t begin, int64_t end) {
    for (int64_t step = begin; step < end; step += fused_step) {
      const int64_t step_end = std::min(step + fused_step, end);
      sum_range(bottom, y, step, step_end);
      kernels::relu_forward(step_end - step, slope, y + step, y + step);
    }
  });
}

void EltwiseLayer::backward_through_relu(const Blob& out, float slope, const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  const float* sign = out.data().ptr();  // slope >= 0: positive where the sum was
  const float* dy = out.diff().ptr();
  parallel_ranges(out.count(), parallel_grain(), [&](int64_t begin, int64_t end) {
    float grad[fused_step];  // the sum's gradient, one step at a time
    for (int64_t step = begin; step < end; step += fused_step) {
      const int64_t step_end = std::min(step + fused_step, end);
      kernels::relu_backward(step_end - step, slope, sign + step, dy + step, grad);
      sum_gradient_range(grad, propagate_down, bottom, step, step_end);
    }
  });
}

TAIHU_REGISTER_LAYER("Eltwise", EltwiseLayer);

}  // namespace taihu
