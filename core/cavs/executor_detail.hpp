#pragma once
// What the Executor's files (core/cavs/executor*.cpp) share: the clock of
// its statistics and the row addition of its gathers and gradients.

#include <chrono>
#include <cstdint>


namespace taihu::cavs::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline void add_row(float* __restrict y, const float* __restrict x, int32_t w) {
  for (int32_t j = 0; j < w; ++j) y[j] += x[j];
}

}  // namespace taihu::cavs::detail
