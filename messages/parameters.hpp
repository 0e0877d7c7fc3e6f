#pragma once
// Parameter values of a net (all learnable blobs, concatenated in the net's
// parameter order), e.g. broadcast from rank 0 at start so every replica
// starts from the same weights. `version` is the iteration they belong to.
//
// With them go the convolution kernels rank 0 chose by timing (`[conv]
// algorithm = measured`, core/layers/convolution_choices.hpp): every replica
// must compute with the same kernels to compute the same bits.

#include <cstdint>
#include <string>
#include <vector>

#include "messages/tensor_payload.hpp"

namespace taihu::msg {

struct KernelChoice {
  std::string key;  // a convolution's shape and pass
  bool dnnl = true;  // false: im2col + GEMM
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, KernelChoice& x) {
  return f(caf::meta::type_name("taihu::msg::KernelChoice"), x.key, x.dnnl);
}

struct Parameters {
  std::uint64_t version = 0;
  std::int32_t source = 0;  // rank
  TensorPayload values;
  std::vector<KernelChoice> kernel_choices;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Parameters& x) {
  return f(caf::meta::type_name("taihu::msg::Parameters"), x.version, x.source, x.values, x.kernel_choices);
}

}  // namespace taihu::msg
