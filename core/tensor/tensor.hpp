#pragma once
// A dense float32 tensor on host memory aligned to `host_alignment` (256 bytes;
// aligned_allocator.hpp says why).
//
// Storage is reference counted so that layers such as Reshape or Split can
// share it (Tensor::share); reshape() reuses the allocation when it is large
// enough, so per-iteration reshapes cost nothing. Under a ShapesOnly (below)
// reshape() takes the shape and allocates nothing.

#include <cstddef>
#include <memory>
#include <span>

#include "core/common/aligned_allocator.hpp"
#include "core/tensor/shape.hpp"

namespace taihu {

// While one lives on this thread, tensors reshaped here take their new shape
// without storage (ptr() is null; fill() sets nothing): a net built under one
// knows every blob's shape at no memory cost, but cannot compute (Net's
// Storage::parameters_only: taihu-convert translates a net whose input holds
// 10^9 values per sample without allocating them). ShapesOnly(false) lifts it
// for a scope inside (a layer's parameters, Layer::add_param).
class ShapesOnly {
 public:
  explicit ShapesOnly(bool on = true);
  ~ShapesOnly();
  ShapesOnly(const ShapesOnly&) = delete;
  ShapesOnly& operator=(const ShapesOnly&) = delete;
  static bool active();

 private:
  bool outer_;
};

class Tensor {
 public:
  static constexpr size_t alignment = host_alignment;

  Tensor() = default;
  explicit Tensor(Shape shape);
  // Storage whose contents are unspecified, not zeroed: for memory its users
  // always write before they read (a net's arena), whose pages the system
  // then maps only as they are first touched.
  static Tensor uninitialized(Shape shape);

  const Shape& shape() const { return shape_; }
  int64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }

  // Changes the shape; keeps the storage if it holds enough elements,
  // otherwise allocates new storage (contents are then unspecified), or
  // under a ShapesOnly drops it.
  void reshape(const Shape& shape);

  float* ptr() { return storage_.get(); }
  const float* ptr() const { return storage_.get(); }
  std::span<float> span() { return {ptr(), static_cast<size_t>(count_)}; }
  std::span<const float> span() const { return {ptr(), static_cast<size_t>(count_)}; }
  float& operator[](int64_t i) { return storage_.get()[i]; }
  float operator[](int64_t i) const { return storage_.get()[i]; }

  void fill(float value);
  void zero() { fill(0.0f); }
  // Copies values from a tensor of the same element count.
  void copy_from(const Tensor& other);
  // Makes this tensor a view of other's storage with other's shape (and
  // without storage while other has none: set_shape_only).
  void share(const Tensor& other);
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  // Keeps this tensor's shape but uses `owner`'s storage from now on, from
  // `offset` floats on (a multiple of alignment / sizeof(float)): its count()
  // floats there, and no more, so a larger reshape allocates. A shape-only
  // tensor gets storage so. Tensors whose values are never needed at the same
  // time take turns in one arena (core/net/storage_sharing.hpp).
  void use_storage_of(const Tensor& owner, int64_t offset = 0);
  // Drops its storage and keeps its shape; the next reshape() allocates.
  void release_storage() {
    storage_.reset();
    capacity_ = 0;
  }

  // on: holds no storage from now on, and reshape() takes shapes only, as
  // under a ShapesOnly (for a blob nothing writes: a fused run's inside,
  // fusion.hpp); off: storage again, allocated (zeroed) for the current shape.
  void set_shape_only(bool on);
  bool shape_only() const { return shape_only_; }

 private:
  bool shape_only_ = false;
  Shape shape_;
  int64_t count_ = 0;
  size_t capacity_ = 0;
  std::shared_ptr<float[]> storage_;
};

}  // namespace taihu
