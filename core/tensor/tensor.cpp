#include "core/tensor/tensor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include <unistd.h>

#include "core/common/check.hpp"

namespace taihu {

namespace {

// The machine's memory: no tensor can be larger (an impossible request from a
// config, such as batch_size = 1e9, must fail with its shape, not bad_alloc).
double memory_bytes() {
  static const double bytes = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  return bytes;
}

std::shared_ptr<float[]> allocate(size_t count, const Shape& shape) {
  const double wanted = static_cast<double>(count) * sizeof(float);
  if (wanted > memory_bytes())
    raise<ResourceError>("a tensor of shape {} needs {:.1f} GiB; this machine has {:.1f} GiB of memory", shape.str(),
                         wanted / (1u << 30), memory_bytes() / (1u << 30));
  const size_t bytes = (count * sizeof(float) + Tensor::alignment - 1) / Tensor::alignment *
                       Tensor::alignment;
  void* p = std::aligned_alloc(Tensor::alignment, std::max<size_t>(bytes, Tensor::alignment));
  if (p == nullptr)
    raise<ResourceError>("a tensor of shape {} ({:.1f} GiB) does not fit in the memory left", shape.str(),
                         wanted / (1u << 30));
  return std::shared_ptr<float[]>(static_cast<float*>(p), [](float* q) { std::free(q); });
}

thread_local bool shapes_only = false;

}  // namespace

ShapesOnly::ShapesOnly(bool on) : outer_(shapes_only) { shapes_only = on; }
ShapesOnly::~ShapesOnly() { shapes_only = outer_; }
bool ShapesOnly::active() { return shapes_only; }

Tensor::Tensor(Shape shape) { reshape(shape); }

Tensor Tensor::uninitialized(Shape shape) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.count_ = t.shape_.count();
  t.capacity_ = static_cast<size_t>(t.count_);
  t.storage_ = allocate(t.capacity_, t.shape_);
  return t;
}

void Tensor::reshape(const Shape& shape) {
  shape_ = shape;
  count_ = shape.count();
  if (static_cast<size_t>(count_) > capacity_ || !storage_) {
    if (shapes_only || shape_only_) {
      // No storage rather than too little: a later reshape outside allocates.
      storage_.reset();
      capacity_ = 0;
      return;
    }
    capacity_ = static_cast<size_t>(count_);
    storage_ = allocate(capacity_, shape);
    std::memset(storage_.get(), 0, capacity_ * sizeof(float));
  }
}

void Tensor::use_storage_of(const Tensor& owner, int64_t offset) {
  const auto start = static_cast<size_t>(offset);
  require(offset >= 0 && start <= owner.capacity_ && owner.capacity_ - start >= static_cast<size_t>(count_) &&
              start % (alignment / sizeof(float)) == 0,
          "a tensor of shape {} cannot use the storage of {} floats from {} on", shape_.str(), owner.capacity_, offset);
  storage_ = std::shared_ptr<float[]>(owner.storage_, owner.storage_.get() + start);  // shares its ownership
  // Its own part and no more: the floats after it may be another tensor's, so
  // a larger reshape takes storage of its own (and the net plans again).
  capacity_ = static_cast<size_t>(count_);
  shape_only_ = false;
}

void Tensor::set_shape_only(bool on) {
  shape_only_ = on;
  if (on) {
    storage_.reset();
    capacity_ = 0;
  } else {
    reshape(shape_);
  }
}

void Tensor::fill(float value) {
  if (storage_) std::fill_n(ptr(), count_, value);  // none: a ShapesOnly tensor, which holds no values
}

void Tensor::copy_from(const Tensor& other) {
  require<ShapeError>(other.count_ == count_, "cannot copy a tensor of shape {} into one of shape {}",
                      other.shape_.str(), shape_.str());
  if (ptr() != other.ptr()) std::memcpy(ptr(), other.ptr(), count_ * sizeof(float));
}

void Tensor::share(const Tensor& other) {
  shape_only_ = other.shape_only_;  // a view of a tensor without storage has none either
  shape_ = other.shape_;
  count_ = other.count_;
  capacity_ = other.capacity_;
  storage_ = other.storage_;
}

}  // namespace taihu
