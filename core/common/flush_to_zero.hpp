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

// This thread's floating-point mode (MXCSR: flush-to-zero, rounding), so that
// a helper thread can compute in exactly its caller's mode.
inline unsigned float_mode() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#else
  return 0;
#endif
}
inline void set_float_mode(unsigned mode) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(mode);
#endif
}

}  // namespace taihu
