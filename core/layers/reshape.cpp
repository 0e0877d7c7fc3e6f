#include "core/layers/reshape.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/layers/registry.hpp"

namespace taihu {

ReshapeLayer::ReshapeLayer(const LayerSpec& spec)
    : Layer(spec),
      shape_(options().get_list<int64_t>("shape")),
      axis_(options().get_or<int>("axis", 0)),
      num_axes_(options().get_or<int>("num_axes", -1)) {
  if (std::any_of(shape_.begin(), shape_.end(), [](int64_t d) { return d < -1; }))
    throw options().error("shape", "extents must be positive, 0 (copy) or -1 (infer)");
  if (std::count(shape_.begin(), shape_.end(), -1) > 1)
    throw options().error("shape", "at most one extent can be -1 (inferred)");
  if (num_axes_ < -1) throw options().error("num_axes", "must be >= 0, or -1 for all remaining axes");
}

void ReshapeLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& in = bottom[0]->shape();
  const int rank = static_cast<int>(in.rank());
  const int start = axis_ >= 0 ? axis_ : rank + axis_ + 1;
  const int end = num_axes_ == -1 ? rank : start + num_axes_;
  if (start < 0 || start > rank || end > rank)
    shape_error(
        fmt::format("axis = {} with num_axes = {} does not fit input shape {}", axis_, num_axes_, in.str()));
  std::vector<int64_t> dims(in.dims().begin(), in.dims().begin() + start);
  int64_t known = 1;
  size_t inferred = static_cast<size_t>(-1);
  for (size_t i = 0; i < shape_.size(); ++i) {
    int64_t d = shape_[i];
    if (d == 0) {
      const size_t source = static_cast<size_t>(start) + i;
      if (source >= in.rank())
        shape_error(fmt::format("shape entry {} is 0 (copy), but input shape {} has no axis {}", i, in.str(),
                                source));
      d = in[source];
    }
    if (d == -1) {
      inferred = dims.size();
      dims.push_back(1);
      continue;
    }
    known *= d;
    dims.push_back(d);
  }
  dims.insert(dims.end(), in.dims().begin() + end, in.dims().end());
  for (int a = 0; a < start; ++a) known *= in[static_cast<size_t>(a)];
  for (int a = end; a < rank; ++a) known *= in[static_cast<size_t>(a)];
  if (inferred != static_cast<size_t>(-1)) {
    if (known == 0 || in.count() % known != 0)
      shape_error(fmt::format("cannot infer the -1 extent: {} elements do not divide into parts of {}",
                              in.count(), known));
    dims[inferred] = in.count() / known;
  }
  const Shape out(dims);
  if (out.count() != in.count())
    shape_error(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", in.str(), in.count(),
                            out.str(), out.count()));
  top[0]->share(*bottom[0]);
  top[0]->reshape(out);
}

TAIHU_REGISTER_LAYER("Reshape", ReshapeLayer);

}  // namespace taihu
