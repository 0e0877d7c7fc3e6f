#pragma once
// Denormal floats are up to 100x slower on x86; training never needs them.
// Sets FTZ (results) and DAZ (inputs) in this thread's MXCSR; threads created
// afterwards inherit it.

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace taihu {

inline void enable_flush_to_zero() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) | DAZ (bit 6)
#endif
}

}  // namespace taihu
