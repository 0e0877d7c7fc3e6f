#include "core/common/cpu_features.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace taihu::cpu {
namespace {

bool detect_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool f16c = (ecx & bit_F16C) != 0;
  // __builtin_cpu_supports also checks that the OS saves the YMM registers.
  return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

Simd initial_level() {
  const Simd best = supports_avx2() ? Simd::avx2 : Simd::generic;
  const char* wanted = std::getenv("TAIHU_SIMD");
  if (wanted == nullptr || *wanted == '\0') return best;
  const std::string name = wanted;
  if (name == "generic") return Simd::generic;
  if (name == "avx2" && best == Simd::avx2) return Simd::avx2;
  spdlog::warn("TAIHU_SIMD={}: {}; using {} kernels", name,
               name == "avx2" ? "this CPU lacks AVX2, FMA or F16C" : "expected generic or avx2", simd_name(best));
  return best;
}

std::atomic<Simd>& level() {
  static std::atomic<Simd> current{initial_level()};
  return current;
}

}  // namespace

Simd simd() { return level().load(std::memory_order_relaxed); }

bool supports_avx2() {
  static const bool supported = detect_avx2();
  return supported;
}

Simd force_simd(Simd wanted) {
  if (wanted == Simd::avx2 && !supports_avx2()) wanted = Simd::generic;
  return level().exchange(wanted);
}

std::string_view simd_name(Simd level) { return level == Simd::avx2 ? "avx2" : "generic"; }

}  // namespace taihu::cpu
