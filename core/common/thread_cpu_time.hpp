#pragma once
// CPU time the calling thread has used, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
// Unlike a wall clock, it does not count the time the thread waited for a
// core, so on a machine whose cores are shared it measures the work itself:
// what taihu-sim's host-CPU model takes as a job's length.

#include <time.h>

#include <cstdint>

namespace taihu {

inline std::int64_t thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace taihu
