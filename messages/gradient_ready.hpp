#pragma once
// Worker -> its shard actor of a bucket: the bucket's gradients of one
// iteration exist. In-process the worker moves its buffer in (no copy) and
// does not touch it until Reduced hands it back; the shard then reduces in
// place (TensorPayload::mutable_data finds it the only owner).

#include <cstdint>

#include "messages/tensor_payload.hpp"

namespace taihu::msg {

struct GradientReady {
  std::uint32_t bucket = 0;
  std::uint64_t iteration = 0;
  TensorPayload buffer;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GradientReady& x) {
  return f(caf::meta::type_name("taihu::msg::GradientReady"), x.bucket, x.iteration, x.buffer);
}

}  // namespace taihu::msg
