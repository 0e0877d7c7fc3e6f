#pragma once
// What the recurrent vertex functions (core/cavs/models/) share, written
// once: a gate's pre-activation and the GRU cell. Each builds the same
// operations in the same order as the models once did by hand, so their
// parameters, initial values and results are unchanged.

#include <cstdint>

#include "core/cavs/function.hpp"

namespace taihu::cavs {

// x W^T + h U^T + b: a gate's pre-activation from the input and the state.
inline Value gate_input(FunctionBuilder& f, Value x, Parameter W, Value h, Parameter U, Parameter b) {
  return f.add_bias(f.add(f.matmul(x, W), f.matmul(h, U)), b);
}

// A GRU's parameters, `hidden` wide, from an input `input` wide and a state
// `state` wide (the reset gate is as wide as the state it gates), created in
// the order W_z, W_r, W_n, U_z, U_r, U_n, b_z, b_r, b_n.
struct GruParameters {
  Parameter W_z, W_r, W_n, U_z, U_r, U_n, b_z, b_r, b_n;
};
GruParameters gru_parameters(FunctionBuilder& f, int32_t hidden, int32_t input, int32_t state);

// The GRU cell over input x and `state`:
//   z = sigmoid(x W_z + state U_z + b_z), r = sigmoid(x W_r + state U_r + b_r)
//   n = tanh(x W_n + (r * state) U_n + b_n)
//   h = (1 - z) * n + z * carry()
// `carry` (the state the gate keeps: the previous h, a sum of children's)
// is built where the models built it, after the gates.
template <class Carry>
Value gru_cell(FunctionBuilder& f, const GruParameters& p, Value x, Value state, Carry&& carry) {
  Value z = f.sigmoid(gate_input(f, x, p.W_z, state, p.U_z, p.b_z));
  Value r = f.sigmoid(gate_input(f, x, p.W_r, state, p.U_r, p.b_r));
  Value n = f.tanh(gate_input(f, x, p.W_n, f.mul(r, state), p.U_n, p.b_n));
  return f.add(f.mul(f.one_minus(z), n), f.mul(z, carry()));
}

}  // namespace taihu::cavs
