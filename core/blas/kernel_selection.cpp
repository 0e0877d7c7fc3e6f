#include "core/blas/kernel_selection.hpp"

#include <cblas.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TAIHU_X86 1
#endif

#include "core/blas/blas.hpp"
#include "core/common/check.hpp"
#include "core/common/cpu_features.hpp"
#include "core/kernels/compute_threads.hpp"

namespace taihu::blas {

namespace {

// Set (with the value "forced:NAME" or "fallback:NAME") before re-executing,
// so the new process knows the kernel is already decided and never loops.
constexpr const char* marker_variable = "TAIHU_BLAS_KERNEL_SELECTION";

// OpenBLAS 0.3.21's x86-64 core types (driver/others/dynamic.c).
constexpr std::array<std::string_view, 25> known_coretypes = {
    "Katmai", "Coppermine",  "Northwood",  "Prescott",   "Banias",  "Atom",         "Core2",
    "Penryn", "Dunnington",  "Nehalem",    "Athlon",     "Opteron", "Opteron_SSE3", "Barcelona",
    "Nano",   "Sandybridge", "Bulldozer",  "Piledriver", "Haswell", "Steamroller",  "Excavator",
    "Zen",    "SkylakeX",    "Cooperlake", "Unknown"};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool bit(uint64_t word, int index) { return ((word >> index) & 1u) != 0; }

bool skylakex_features(const CpuFeatures& cpu) { return cpu.avx512f && cpu.avx512dq && cpu.avx512bw && cpu.avx512vl; }

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string g_reason;  // why the kernel in use was chosen (for reports)

// Re-executes this program with OPENBLAS_CORETYPE = coretype (unset if empty).
// Returns only if exec failed.
void reexec(const std::string& coretype, const std::string& marker, char** argv) {
  if (argv == nullptr || argv[0] == nullptr) {
    spdlog::warn("BLAS: cannot re-execute without argv; keeping kernel {}", kernel_name());
    return;
  }
  if (coretype.empty())
    ::unsetenv("OPENBLAS_CORETYPE");
  else
    ::setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
  ::setenv(marker_variable, marker.c_str(), 1);
  spdlog::default_logger()->flush();
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv("/proc/self/exe", argv);
  spdlog::warn("BLAS: re-executing /proc/self/exe failed ({}); keeping kernel {}", std::strerror(errno), kernel_name());
}

// Deterministic values in [-1, 1) without touching any shared generator.
void fill_pseudo_random(std::vector<float>& v, uint32_t seed) {
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

}  // namespace

std::string CpuFeatures::str() const {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512dq, "avx512dq");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_bf16, "avx512_bf16");
  return out.empty() ? std::string("no avx") : out;
}

CpuFeatures features_from_cpuid(const CpuidWords& w) {
  CpuFeatures f;
  f.vendor = std::string(w.vendor, strnlen(w.vendor, 12));
  if (w.max_leaf < 1) return f;
  const bool osxsave = bit(w.leaf1_ecx, 27);
  // The OS must save the YMM (and for AVX-512 the opmask and ZMM) state,
  // otherwise the instructions fault even though CPUID lists them.
  const bool os_avx = osxsave && (w.xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (w.xcr0 & 0xe0) == 0xe0;
  f.avx = os_avx && bit(w.leaf1_ecx, 28);
  f.fma = f.avx && bit(w.leaf1_ecx, 12);
  if (w.max_leaf >= 7) {
    f.avx2 = f.avx && bit(w.leaf7_ebx, 5);
    f.avx512f = os_avx512 && bit(w.leaf7_ebx, 16);
    f.avx512dq = f.avx512f && bit(w.leaf7_ebx, 17);
    f.avx512bw = f.avx512f && bit(w.leaf7_ebx, 30);
    f.avx512vl = f.avx512f && bit(w.leaf7_ebx, 31);
    f.avx512_bf16 = f.avx512f && bit(w.leaf7_1_eax, 5);
  }
  return f;
}

CpuidWords read_cpuid() {
  CpuidWords w;
#ifdef TAIHU_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return w;
  w.max_leaf = a;
  std::memcpy(w.vendor + 0, &b, 4);
  std::memcpy(w.vendor + 4, &d, 4);
  std::memcpy(w.vendor + 8, &c, 4);
  if (w.max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
    w.leaf1_ecx = c;
    if (bit(c, 27)) {  // OSXSAVE: XGETBV is available
      uint32_t lo = 0, hi = 0;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      w.xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
    }
  }
  if (w.max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    w.leaf7_ebx = b;
    const unsigned subleaves = a;
    if (subleaves >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      w.leaf7_1_eax = a;
    }
  }
#endif
  return w;
}

CpuFeatures detect_cpu() { return features_from_cpuid(read_cpuid()); }

std::string best_coretype(const CpuFeatures& cpu) {
  if (skylakex_features(cpu) && cpu.avx512_bf16) return "Cooperlake";
  if (skylakex_features(cpu)) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return cpu.amd() ? "Zen" : "Haswell";
  return "";
}

std::optional<std::string> canonical_coretype(std::string_view name) {
  for (std::string_view known : known_coretypes)
    if (known != "Unknown" && iequals(known, name)) return std::string(known);
  return std::nullopt;
}

bool can_run(const CpuFeatures& cpu, std::string_view coretype) {
  const auto name = canonical_coretype(coretype);
  if (!name) return false;
#ifndef TAIHU_X86
  return false;
#endif
  if (*name == "Cooperlake") return skylakex_features(cpu) && cpu.avx512_bf16;
  if (*name == "SkylakeX") return skylakex_features(cpu);
  if (*name == "Haswell" || *name == "Zen") return cpu.avx2 && cpu.fma;
  if (*name == "Excavator") return cpu.amd() && cpu.avx2 && cpu.fma;
  // These use AMD's FMA4/XOP, which only AMD's Bulldozer family has.
  if (*name == "Bulldozer" || *name == "Piledriver" || *name == "Steamroller") return cpu.amd() && cpu.avx;
  if (*name == "Sandybridge") return cpu.avx;
  return true;  // SSE-era kernels run on every x86-64 CPU
}

KernelDecision decide_kernel(const CpuFeatures& cpu, const KernelRequest& request,
                             const KernelEnvironment& environment) {
  const bool is_auto = request.kernel.empty() || iequals(request.kernel, "auto");
  const bool keep_openblas = iequals(request.kernel, "openblas");
  std::optional<std::string> requested;
  if (!is_auto && !keep_openblas) {
    requested = canonical_coretype(request.kernel);
    if (!requested) {
      std::string names;
      for (std::string_view k : known_coretypes)
        if (k != "Unknown") names += (names.empty() ? "" : ", ") + std::string(k);
      raise<ConfigError>("[blas] kernel = '{}' is not an OpenBLAS core type (expected auto, openblas or one of {})",
                         request.kernel, names);
    }
  }

  KernelDecision d;
  // A kernel already decided by an earlier run of this process (or inherited
  // by a child process): never re-execute again.
  if (environment.marker) {
    const std::string& m = *environment.marker;
    if (m.rfind("fallback:", 0) == 0) {
      d.reason = fmt::format("fallback: kernel {} failed the start-up check", m.substr(9));
      return d;
    }
    if (m.rfind("forced:", 0) == 0 && environment.coretype && iequals(m.substr(7), *environment.coretype)) {
      KernelEnvironment fresh;
      fresh.loaded = environment.loaded;
      KernelDecision again = decide_kernel(cpu, request, fresh);
      d.reason = again.reason;
      d.warning = again.warning;
      if (again.reexec)
        d.warning = fmt::format("OpenBLAS loaded {} although OPENBLAS_CORETYPE={} was set", environment.loaded,
                                *environment.coretype);
      return d;
    }
  }
  if (environment.coretype) {
    d.reason = fmt::format("OPENBLAS_CORETYPE={} set in the environment", *environment.coretype);
    if (requested && !iequals(*requested, *environment.coretype))
      d.warning = fmt::format("[blas] kernel = {} ignored because OPENBLAS_CORETYPE={} is set", *requested,
                              *environment.coretype);
    return d;
  }
  if (keep_openblas) {
    d.reason = "OpenBLAS's own CPU detection (requested by [blas] kernel = openblas)";
    return d;
  }

  std::string target;
  std::string why;
  if (requested && can_run(cpu, *requested)) {
    target = *requested;
    why = fmt::format("requested by [blas] kernel = {}", request.kernel);
  } else {
    if (requested)
      d.warning = fmt::format("[blas] kernel = {} needs instructions this CPU lacks ({}); choosing automatically",
                              *requested, cpu.str());
    target = best_coretype(cpu);
    why = fmt::format("best for this CPU ({}, {})", cpu.vendor.empty() ? "unknown vendor" : cpu.vendor, cpu.str());
  }
  if (target.empty()) {
    d.reason = fmt::format("OpenBLAS's own CPU detection (no better kernel known for {})", cpu.str());
    return d;
  }
  if (iequals(target, environment.loaded)) {
    d.reason = why;
    return d;
  }
  d.reexec = true;
  d.coretype = target;
  d.reason = fmt::format("{}; OpenBLAS had chosen {}", why, environment.loaded);
  return d;
}

std::string verify_sgemm() {
  struct Case {
    int m, n, k;
  };
  // Odd sizes exercise the edge kernels; the larger one takes the packed,
  // multi-threaded path.
  constexpr Case cases[] = {{67, 45, 33}, {96, 80, 161}};
  for (const Case& s : cases) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const int lda = (ta ? s.m : s.k) + 3;
        const int ldb = (tb ? s.k : s.n) + 1;
        const int ldc = s.n + 2;
        std::vector<float> a(static_cast<size_t>((ta ? s.k : s.m) * lda));
        std::vector<float> b(static_cast<size_t>((tb ? s.n : s.k) * ldb));
        std::vector<float> c(static_cast<size_t>(s.m * ldc));
        fill_pseudo_random(a, 11u + ta);
        fill_pseudo_random(b, 23u + tb);
        fill_pseudo_random(c, 37u);
        const std::vector<float> c0 = c;
        const float alpha = 0.75f, beta = -0.5f;
        gemm(ta ? Trans::yes : Trans::no, tb ? Trans::yes : Trans::no, s.m, s.n, s.k, alpha, a.data(), lda, b.data(),
             ldb, beta, c.data(), ldc);
        for (int i = 0; i < s.m; ++i) {
          for (int j = 0; j < s.n; ++j) {
            double sum = 0.0, magnitude = 0.0;
            for (int p = 0; p < s.k; ++p) {
              const double x = ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
              const double y = tb ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
              sum += x * y;
              magnitude += std::fabs(x * y);
            }
            const double c_old = c0[static_cast<size_t>(i * ldc + j)];
            const double expected = alpha * sum + beta * c_old;
            const double bound = 1e-4 * (alpha * magnitude + std::fabs(beta * c_old)) + 1e-6;
            const double got = c[static_cast<size_t>(i * ldc + j)];
            if (!(std::fabs(got - expected) <= bound))
              return fmt::format("sgemm {}{} {}x{}x{}: C[{},{}] = {} but expected {}", ta ? 'T' : 'N', tb ? 'T' : 'N',
                                 s.m, s.n, s.k, i, j, got, expected);
          }
        }
      }
    }
  }
  return "";
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void select_kernel(const KernelRequest& request, int argc, char** argv) {
  const CpuFeatures cpu = detect_cpu();
  KernelEnvironment environment;
  environment.coretype = env("OPENBLAS_CORETYPE");
  environment.marker = env(marker_variable);
  environment.loaded = kernel_name();
  KernelDecision d = decide_kernel(cpu, request, environment);
  if (!d.warning.empty()) spdlog::warn("BLAS: {}", d.warning);
  if (d.reexec) {
    spdlog::debug("BLAS: re-executing with OPENBLAS_CORETYPE={} ({})", d.coretype, d.reason);
    if (argc > 0) reexec(d.coretype, "forced:" + d.coretype, argv);
    d.reason = "OpenBLAS's own CPU detection (could not re-execute to switch to " + d.coretype + ")";
  }

  const int cores = available_cores();
  int threads = request.threads;
  if (threads <= 0) threads = env("OPENBLAS_NUM_THREADS") ? compute_threads() : cores;
  set_compute_threads(std::clamp(threads, 1, cores));

  if (request.verify) {
    const std::string problem = verify_sgemm();
    if (!problem.empty()) {
      const bool already_fallback = environment.marker && environment.marker->rfind("fallback:", 0) == 0;
      const bool forced_by_taihu = environment.marker && environment.marker->rfind("forced:", 0) == 0;
      if (already_fallback || argc <= 0) {
        spdlog::error("BLAS: kernel {} computes wrong products ({}); results will be wrong", kernel_name(), problem);
      } else {
        // A kernel we forced goes back to OpenBLAS's own choice; OpenBLAS's
        // own choice goes to a conservative kernel.
        std::string fallback;
        if (!forced_by_taihu && !environment.coretype)
          fallback = can_run(cpu, "Haswell") && !iequals(kernel_name(), "Haswell") ? "Haswell" : "Prescott";
        spdlog::warn("BLAS: kernel {} failed the start-up check ({}); restarting with {}", kernel_name(), problem,
                     fallback.empty() ? "OpenBLAS's own choice" : fallback);
        reexec(fallback, "fallback:" + kernel_name(), argv);
      }
    }
  }
  g_reason = d.reason;
  spdlog::info("BLAS: OpenBLAS kernel {} ({}), {} threads; taihu's vector kernels: {}", kernel_name(), d.reason,
               compute_threads(), cpu::simd_name(cpu::simd()));
}

std::string library_config() {
  const char* config = openblas_get_config();
  return config != nullptr ? config : "OpenBLAS";
}

std::string kernel_name() {
  const char* name = openblas_get_corename();
  return name != nullptr ? std::string(name) : std::string("unknown");
}

std::string kernel_reason() { return g_reason; }

}  // namespace taihu::blas
