#include "messages/tensor_payload.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/sec.hpp>
#include <caf/error.hpp>
#include <caf/serializer.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/common/check.hpp"

namespace taihu::msg {

TensorPayload TensorPayload::allocate(std::size_t n, const PayloadAllocator* allocator) {
  if (n == 0) return {};
  if (allocator != nullptr)
    if (auto storage = allocator->allocate(n)) return {std::move(storage), 0, n};
  return {std::make_shared_for_overwrite<float[]>(n), 0, n};
}

TensorPayload TensorPayload::copy_of(std::span<const float> values, const PayloadAllocator* allocator) {
  auto out = allocate(values.size(), allocator);
  if (!values.empty()) std::memcpy(out.storage_.get(), values.data(), values.size_bytes());
  return out;
}

TensorPayload TensorPayload::slice(std::size_t offset, std::size_t length) const {
  require(offset <= length_ && length <= length_ - offset, "TensorPayload::slice: [{}, +{}) of {} floats", offset,
          length, length_);
  if (length == 0) return {};
  return {storage_, offset_ + offset, length};
}

float* TensorPayload::mutable_data() {
  if (!storage_) return nullptr;
  if (unique()) {
    // Pairs with the release in the last other owner's reference drop: its
    // reads of the floats happen before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
  } else {
    *this = copy_of(span());
  }
  return storage_.get() + offset_;
}

bool operator==(const TensorPayload& a, const TensorPayload& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

caf::error inspect(caf::serializer& f, TensorPayload& x) {
  auto n = x.size();
  return caf::error::eval([&] { return f.begin_sequence(n); },
                          [&] {
                            return n ? f.apply_raw(n * sizeof(float), const_cast<float*>(x.data())) : caf::error{};
                          },
                          [&] { return f.end_sequence(); });
}

caf::error inspect(caf::deserializer& f, TensorPayload& x) {
  std::size_t n = 0;
  return caf::error::eval([&] { return f.begin_sequence(n); },
                          [&] {
                            // A corrupt length must fail, not allocate gigabytes.
                            if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&f);
                                binary != nullptr && n > binary->remaining() / sizeof(float)) {
                              return caf::make_error(caf::sec::end_of_stream);
                            }
                            x = TensorPayload::allocate(n);
                            return n ? f.apply_raw(n * sizeof(float), x.mutable_data()) : caf::error{};
                          },
                          [&] { return f.end_sequence(); });
}

}  // namespace taihu::msg
