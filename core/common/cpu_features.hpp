#pragma once
// Which of taihu's own vector kernels run on this CPU. The default build
// targets every x86-64 CPU (no -march=native); the hand-written kernels
// (compression's scans, half floats) come in an AVX2 and a generic version
// and are chosen here at run time, and the hot loops of the layers are built
// twice by the compiler (core/common/multiversion.hpp). OpenBLAS chooses its
// own kernel (core/blas/kernel_selection.hpp).
//
// TAIHU_SIMD=generic forces the generic kernels (to test them, or to compare
// a run with one made on an older CPU); TAIHU_SIMD=avx2 on a CPU without
// AVX2 is ignored with a warning.

#include <string_view>

namespace taihu::cpu {

enum class Simd { generic, avx2 };

// The kernels in use: the best this CPU runs, unless TAIHU_SIMD or
// force_simd says otherwise. Cheap: read once, then a load.
Simd simd();
inline bool use_avx2() { return simd() == Simd::avx2; }

// What this CPU supports, whatever is in use: AVX2 with FMA and F16C.
bool supports_avx2();

// For tests and benchmarks: use `level` from now on (clamped to what the CPU
// supports); returns the level it replaced.
Simd force_simd(Simd level);

std::string_view simd_name(Simd level);

}  // namespace taihu::cpu
