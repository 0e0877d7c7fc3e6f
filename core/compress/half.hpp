#pragma once
// IEEE 754 binary16 conversions in plain integer code, for builds without
// F16C (packed.cpp uses the instructions where the target has them) and for
// compilers without _Float16 on x86 (clang before 15). Round to nearest, ties
// to even; NaN stays NaN (quiet, payload truncated) and infinities stay.
// No saturation here: values past the half range become infinity.

#include <bit>
#include <cstdint>

namespace taihu::compress {

constexpr std::uint16_t half_bits(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u)  // infinity, NaN
    return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u | ((magnitude >> 13) & 0x3ffu) : 0u);
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds to 65520 or more: infinity
  auto round_shifted = [](std::uint32_t bits, std::uint32_t shift) {
    std::uint32_t kept = bits >> shift;
    const std::uint32_t rest = bits & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (kept & 1u) != 0u)) ++kept;  // a carry moves into the exponent: right
    return kept;
  };
  if (magnitude < 0x38800000u) {                   // below 2^-14: a subnormal half (units of 2^-24) or zero
    if (magnitude < 0x33000000u) return sign;      // below 2^-25: rounds to zero
    const std::uint32_t exponent = magnitude >> 23;  // 102 ... 112
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    return sign | static_cast<std::uint16_t>(round_shifted(mantissa, 126u - exponent));
  }
  return sign | static_cast<std::uint16_t>(round_shifted(magnitude - 0x38000000u, 13u));  // rebias 127 -> 15
}

constexpr float float_of_half(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace taihu::compress
