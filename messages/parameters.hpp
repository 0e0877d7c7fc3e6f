#pragma once
// Parameter values of a net (all learnable blobs, concatenated in the net's
// parameter order), e.g. broadcast from rank 0 at start so every replica
// starts from the same weights. `version` is the iteration they belong to.

#include <cstdint>

#include "messages/tensor_payload.hpp"

namespace taihu::msg {

struct Parameters {
  std::uint64_t version = 0;
  std::int32_t source = 0;  // rank
  TensorPayload values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Parameters& x) {
  return f(caf::meta::type_name("taihu::msg::Parameters"), x.version, x.source, x.values);
}

}  // namespace taihu::msg
