#pragma once
// The dimensions of a tensor, outermost first (NCHW for images).

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace taihu {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t axis) const { return dims_.at(axis); }
  const std::vector<int64_t>& dims() const { return dims_; }

  // Product of all dimensions; 1 for a scalar (rank 0).
  int64_t count() const { return count(0, rank()); }
  // Product of dimensions [begin, end).
  int64_t count(size_t begin, size_t end) const;
  // Product of dimensions from `begin` to the last.
  int64_t count_from(size_t begin) const { return count(begin, rank()); }

  // Caffe-style NCHW accessors: an absent axis reads as 1.
  int64_t num() const { return dim_or_one(0); }
  int64_t channels() const { return dim_or_one(1); }
  int64_t height() const { return dim_or_one(2); }
  int64_t width() const { return dim_or_one(3); }

  // Resolves a possibly negative axis (-1 is the last) or throws.
  size_t axis(int index) const;

  // "2x3x28x28"; "scalar" for rank 0.
  std::string str() const;

  friend bool operator==(const Shape&, const Shape&) = default;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(dims_);
  }

 private:
  int64_t dim_or_one(size_t axis) const { return axis < dims_.size() ? dims_[axis] : 1; }
  void validate() const;

  std::vector<int64_t> dims_;
};

}  // namespace taihu
