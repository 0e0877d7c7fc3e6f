#pragma once
// Parameter initialisation, written in config as one value:
//   weight_filler = xavier | msra | gaussian STD | uniform LO HI | constant VALUE
// xavier and msra (He) scale by fan-in; fan-in and fan-out are given by the layer.

#include <string>

#include "core/common/random.hpp"
#include "core/config/config.hpp"
#include "core/tensor/tensor.hpp"

namespace taihu {

struct Filler {
  enum class Kind { constant, gaussian, uniform, xavier, msra };
  Kind kind = Kind::constant;
  float a = 0.0f;  // constant value, gaussian std, uniform low
  float b = 0.0f;  // uniform high

  // Reads `key` from options, or uses `fallback` (same syntax) if absent.
  static Filler from_options(const config::Section& options, const std::string& key,
                             const std::string& fallback);
  void fill(Tensor& tensor, Rng& rng, int64_t fan_in, int64_t fan_out) const;
};

}  // namespace taihu
