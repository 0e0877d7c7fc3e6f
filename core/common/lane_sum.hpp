#pragma once
// Float reductions that vectorise without -ffast-math: the terms are spread
// over independent lanes (a single accumulator would force the compiler to add
// them one after another), and the lanes are added at the end.

#include <cstdint>

namespace taihu::detail {

inline constexpr int sum_lanes = 16;  // two AVX2 registers: hides the add latency

// Sum of term(i) for i in [0, n).
template <class Term>
inline float lane_sum(int64_t n, Term&& term) {
  float acc[sum_lanes] = {};
  int64_t i = 0;
  for (; i + sum_lanes <= n; i += sum_lanes)
    for (int j = 0; j < sum_lanes; ++j) acc[j] += term(i + j);
  float total = 0.0f;
  for (; i < n; ++i) total += term(i);
  for (int j = 0; j < sum_lanes; ++j) total += acc[j];
  return total;
}

// Two sums over the same range: first = sum a(i), second = sum b(i). Done as
// two passes: GCC 12 does not vectorise two interleaved lane sets (measured
// 4x slower than two passes, whose second pass finds the data in cache).
template <class TermA, class TermB>
inline void lane_sum2(int64_t n, TermA&& a, TermB&& b, float& first, float& second) {
  first = lane_sum(n, a);
  second = lane_sum(n, b);
}

}  // namespace taihu::detail
