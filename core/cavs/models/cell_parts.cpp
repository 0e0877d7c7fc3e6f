#include "core/cavs/models/cell_parts.hpp"

namespace taihu::cavs {

GruParameters gru_parameters(FunctionBuilder& f, int32_t hidden, int32_t input, int32_t state) {
  const int32_t H = hidden, X = input, S = state;
  auto W_z = f.parameter("W_z", {H, X}), W_r = f.parameter("W_r", {S, X}), W_n = f.parameter("W_n", {H, X});
  auto U_z = f.parameter("U_z", {H, S}), U_r = f.parameter("U_r", {S, S}), U_n = f.parameter("U_n", {H, S});
  auto b_z = f.parameter("b_z", {H}), b_r = f.parameter("b_r", {S}), b_n = f.parameter("b_n", {H});
  return {W_z, W_r, W_n, U_z, U_r, U_n, b_z, b_r, b_n};
}

}  // namespace taihu::cavs
