#pragma once
// A blob pairs a value (data) with its gradient (diff), as in Caffe. Layers
// read bottom blobs and write top blobs; parameters are blobs too.

#include <string>

#include "core/tensor/tensor.hpp"

namespace taihu {

class Blob {
 public:
  Blob() = default;
  explicit Blob(const Shape& shape) { reshape(shape); }

  const Shape& shape() const { return data_.shape(); }
  int64_t count() const { return data_.count(); }
  // Reshapes data and diff together.
  void reshape(const Shape& shape) {
    data_.reshape(shape);
    diff_.reshape(shape);
  }

  Tensor& data() { return data_; }
  const Tensor& data() const { return data_; }
  Tensor& diff() { return diff_; }
  const Tensor& diff() const { return diff_; }

  // Data and diff without storage (see Tensor::set_shape_only), or with it again.
  void set_shape_only(bool on) {
    data_.set_shape_only(on);
    diff_.set_shape_only(on);
  }
  bool shape_only() const { return data_.shape_only(); }

  // Makes this blob a view of another's data and diff (for in-place reshapes).
  void share(const Blob& other) {
    data_.share(other.data_);
    diff_.share(other.diff_);
    view_of_ = &other.view_root();
    data_of_ = &other.data_root();
  }
  // Makes this blob's data a view of another's, its diff its own (Split).
  void share_data(const Blob& other) {
    data_.share(other.data_);
    data_of_ = &other.data_root();
  }
  // The blob whose data and diff this one views (itself if none).
  const Blob& view_root() const { return view_of_ ? *view_of_ : *this; }
  // The blob whose data this one views (itself if none).
  const Blob& data_root() const { return data_of_ ? *data_of_ : *this; }

 private:
  const Blob* view_of_ = nullptr;
  const Blob* data_of_ = nullptr;
  Tensor data_;
  Tensor diff_;
};

}  // namespace taihu
