#pragma once
// Bulk float data in a message: a view (offset, length) of an immutable,
// reference-counted buffer.
//
// In-process, a payload travels by reference count only: copying the message,
// the payload or a slice of it copies no floats, so a chunk of a gradient
// bucket reaches a local actor without a memcpy. Nobody writes through a
// shared buffer; mutable_data() writes only when this payload is the sole
// owner and otherwise first copies its view into a fresh buffer (copy on
// write). That is how a shard reduces in place into a bucket the worker has
// handed over (moved) to it.
//
// On the network, the view's floats go as one raw block (caf::serializer's
// apply_raw: host byte order, all nodes share it), ~10x faster than CAF's
// element-wise default for std::vector<float>; the receiver gets a fresh
// buffer holding exactly the view. Between processes of one host the data
// plane lets the receiver read large buffers in place instead: those are
// allocated by the process's shared arena, passed in as a PayloadAllocator
// (messages/payload_allocator.hpp).

#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "messages/payload_allocator.hpp"

namespace taihu::msg {

class TensorPayload {
 public:
  TensorPayload() = default;

  // A fresh, uninitialised buffer of n floats (the caller fills it while it is
  // the only owner, through mutable_data()), from `allocator` when it takes
  // that size, else from the heap.
  static TensorPayload allocate(std::size_t n, const PayloadAllocator* allocator = nullptr);
  static TensorPayload copy_of(std::span<const float> values, const PayloadAllocator* allocator = nullptr);
  static TensorPayload copy_of(const float* values, std::size_t n, const PayloadAllocator* allocator = nullptr) {
    return copy_of({values, n}, allocator);
  }
  // n floats that are never read or written: a size without values, for
  // timing-only simulations (actors/sim/). data() and mutable_data() are
  // null; slices keep that; it must not go on the network.
  static TensorPayload sized(std::size_t n) { return {nullptr, 0, n}; }

  std::size_t size() const { return length_; }
  bool empty() const { return length_ == 0; }
  const float* data() const { return storage_ ? storage_.get() + offset_ : nullptr; }
  const float* begin() const { return data(); }
  const float* end() const { return data() + length_; }
  float operator[](std::size_t i) const { return data()[i]; }
  std::span<const float> span() const { return {data(), length_}; }
  std::vector<float> to_vector() const { return {begin(), end()}; }

  // A view of [offset, offset + length) of this view, sharing the buffer.
  // Throws taihu::Error when the range does not fit.
  TensorPayload slice(std::size_t offset, std::size_t length) const;

  // True when no other payload shares the buffer: writing cannot be observed.
  bool unique() const { return storage_.use_count() <= 1; }
  // Writable floats of this view; copies the view first unless unique().
  float* mutable_data();

  // Same floats, bit for bit (not: same buffer).
  friend bool operator==(const TensorPayload& a, const TensorPayload& b);

 private:
  TensorPayload(std::shared_ptr<float[]> storage, std::size_t offset, std::size_t length)
      : storage_(std::move(storage)), offset_(offset), length_(length) {}

  std::shared_ptr<float[]> storage_;
  std::size_t offset_ = 0;
  std::size_t length_ = 0;
};

// The binary processors take the raw path (tensor_payload.cpp).
caf::error inspect(caf::serializer& f, TensorPayload& x);
caf::error inspect(caf::deserializer& f, TensorPayload& x);

// Every other inspector (to_string, deep_to_string) reads a copy of the
// values; there is no other inspector that writes in CAF 0.17.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TensorPayload& x) {
  static_assert(!Inspector::writes_state, "TensorPayload: only caf::deserializer may write");
  auto values = x.to_vector();
  return f(caf::meta::type_name("taihu::msg::TensorPayload"), values);
}

}  // namespace taihu::msg
