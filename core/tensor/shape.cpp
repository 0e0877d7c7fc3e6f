#include "core/tensor/shape.hpp"

#include "core/common/check.hpp"

namespace taihu {

Shape::Shape(std::initializer_list<int64_t> dims) : dims_(dims) { validate(); }

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) { validate(); }

void Shape::validate() const {
  for (auto d : dims_)
    require<ShapeError>(d >= 0, "negative dimension in shape {}", fmt::join(dims_, "x"));
}

int64_t Shape::count(size_t begin, size_t end) const {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < dims_.size(); ++i) n *= dims_[i];
  return n;
}

size_t Shape::axis(int index) const {
  const int r = static_cast<int>(rank());
  const int resolved = index < 0 ? index + r : index;
  require<ShapeError>(resolved >= 0 && resolved < r, "axis {} out of range for shape {}", index,
                      str());
  return static_cast<size_t>(resolved);
}

std::string Shape::str() const {
  if (dims_.empty()) return "scalar";
  return fmt::format("{}", fmt::join(dims_, "x"));
}

}  // namespace taihu
