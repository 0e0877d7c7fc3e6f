#pragma once
// Vector code for CPUs newer than the build's baseline. The default build
// targets every x86-64 CPU Debian supports, so that a binary built on a login
// node runs on any compute node; these attributes put AVX2 back where it pays:
//
//  TAIHU_MULTIVERSION  on a hot loop's function: GCC builds it twice, for
//                      x86-64-v3 (AVX2, FMA) and for the baseline, and the
//                      loader picks one by the CPU (an ifunc). The loop's
//                      source stays one; with -ffp-contract=off (CMakeLists)
//                      both versions compute the same bits.
//  TAIHU_TARGET_AVX2   on a function written with AVX2 intrinsics, which runs
//                      only after cpu::use_avx2() (core/common/cpu_features.hpp).
//
// A build for the host (-DTAIHU_NATIVE=ON) needs no second version. Nor does
// GCC's ThreadSanitizer build, which has to do without: GCC instruments the
// ifunc resolver it writes for target_clones, the loader runs that resolver
// while it relocates the program, before the sanitizer's runtime is set up, and
// the resolver's call into that runtime crashes the program before main().

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TAIHU_X86_KERNELS 1
#define TAIHU_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#if defined(__clang__) || defined(TAIHU_NATIVE_BUILD) || defined(__SANITIZE_THREAD__)
#define TAIHU_MULTIVERSION
#else
#define TAIHU_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
#else
#define TAIHU_X86_KERNELS 0
#define TAIHU_TARGET_AVX2
#define TAIHU_MULTIVERSION
#endif
