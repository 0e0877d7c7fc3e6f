#include "core/layers/inner_product.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/blas/blas.hpp"
#include "core/layers/registry.hpp"

namespace taihu {

using blas::Trans;

InnerProductLayer::InnerProductLayer(const LayerSpec& spec) : Layer(spec) {
  const auto& o = options();
  num_output_ = o.get<int64_t>("num_output");
  if (num_output_ < 1) throw o.error("num_output", "must be at least 1");
  axis_option_ = o.get_or<int>("axis", 1);
  bias_term_ = o.get_or<bool>("bias_term", true);
  weight_filler_ = Filler::from_options(o, "weight_filler", "xavier");
  if (bias_term_) bias_filler_ = Filler::from_options(o, "bias_filler", "constant 0");
}

void InnerProductLayer::setup(const BlobVec& bottom, const BlobVec& top) {
  const Shape& s = bottom[0]->shape();
  try {
    axis_ = s.axis(axis_option_);
  } catch (const Error&) {
    shape_error(fmt::format("axis {} is out of range for bottom {}", axis_option_, s.str()));
  }
  inputs_ = s.count_from(axis_);
  Blob& weight = add_param("weight", Shape{num_output_, inputs_});
  weight_filler_.fill(weight.data(), rng(), inputs_, num_output_);
  if (bias_term_) {
    Blob& bias = add_param("bias", Shape{num_output_});
    bias_filler_.fill(bias.data(), rng(), 1, 1);
  }
}

void InnerProductLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& s = bottom[0]->shape();
  if (axis_ >= s.rank() || s.count_from(axis_) != inputs_)
    shape_error(fmt::format("expected {} inputs per sample from axis {} (as at setup), got bottom {}", inputs_, axis_,
                            s.str()));
  rows_ = s.count(0, axis_);
  std::vector<int64_t> dims(s.dims().begin(), s.dims().begin() + static_cast<std::ptrdiff_t>(axis_));
  dims.push_back(num_output_);
  top[0]->reshape(Shape(std::move(dims)));
  if (bias_term_ && ones_.count() < rows_) {
    ones_.reshape(Shape{rows_});
    ones_.fill(1.0f);
  }
}

void InnerProductLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  float* y = top[0]->data().ptr();
  const float* weight = params()[0].blob->data().ptr();
  if (bias_term_) {
    const float* bias = params()[1].blob->data().ptr();
    for (int64_t r = 0; r < rows_; ++r) std::copy_n(bias, num_output_, y + r * num_output_);
  }
  blas::gemm(Trans::no, Trans::yes, rows_, num_output_, inputs_, 1.0f, bottom[0]->data().ptr(), weight,
             bias_term_ ? 1.0f : 0.0f, y);
}

void InnerProductLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) {
  const float* dy = top[0]->diff().ptr();
  // dW (num_output x K) += dY^T X; db += dY^T 1; dX = dY W.
  blas::gemm(Trans::yes, Trans::no, num_output_, inputs_, rows_, 1.0f, dy, bottom[0]->data().ptr(), 1.0f,
             params()[0].blob->diff().ptr());
  if (bias_term_)
    blas::gemv(Trans::yes, rows_, num_output_, 1.0f, dy, ones_.ptr(), 1.0f, params()[1].blob->diff().ptr());
  if (propagate_down[0])
    blas::gemm(Trans::no, Trans::no, rows_, inputs_, num_output_, 1.0f, dy, params()[0].blob->data().ptr(), 0.0f,
               bottom[0]->diff().ptr());
}

TAIHU_REGISTER_LAYER("InnerProduct", InnerProductLayer);

}  // namespace taihu
