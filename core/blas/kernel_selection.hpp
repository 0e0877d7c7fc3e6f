#pragma once
// Chooses the OpenBLAS kernel ("core type") at start-up.
//
// Debian's OpenBLAS is a DYNAMIC_ARCH build: the kernel is fixed when the
// library loads, from OPENBLAS_CORETYPE if set, else by OpenBLAS's own CPU
// detection, which misdetects some CPUs (AVX-512 Xeons can end up on a generic
// kernel at a fifth of the speed). select_kernel(), called first thing in
// main, reads CPUID itself; when the loaded kernel is not the best one this CPU
// can run it sets OPENBLAS_CORETYPE and re-executes the process (the only way
// to change the kernel), then checks a few products against a double-precision
// reference and falls back to a safe kernel if they disagree.
//
// Everything that decides is a pure function (features_from_cpuid,
// best_coretype, decide_kernel) so that it can be tested on any machine.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace taihu::blas {

// Raw CPUID/XGETBV words that the decision needs.
struct CpuidWords {
  uint32_t max_leaf = 0;     // leaf 0 eax
  char vendor[13] = {};      // leaf 0 ebx, edx, ecx
  uint32_t leaf1_ecx = 0;    // FMA, OSXSAVE, AVX
  uint32_t leaf7_ebx = 0;    // AVX2, AVX-512 F/DQ/BW/VL
  uint32_t leaf7_1_eax = 0;  // AVX512_BF16
  uint64_t xcr0 = 0;         // which register states the OS saves
};

struct CpuFeatures {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ...
  bool avx = false;    // CPU and OS support
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;  // CPU and OS support (opmask + ZMM state)
  bool avx512dq = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_bf16 = false;

  bool amd() const { return vendor == "AuthenticAMD" || vendor == "HygonGenuine"; }
  bool intel() const { return vendor == "GenuineIntel"; }
  // "avx2 fma avx512f ..." for logs.
  std::string str() const;
};

CpuFeatures features_from_cpuid(const CpuidWords& words);
// Reads this CPU (all false on non-x86 builds).
CpuidWords read_cpuid();
CpuFeatures detect_cpu();

// The best OpenBLAS core type this CPU can run ("Cooperlake", "SkylakeX",
// "Zen", "Haswell"), or "" to keep OpenBLAS's own choice.
std::string best_coretype(const CpuFeatures& cpu);
// Whether this CPU can run a core type's instructions (unknown names: false).
bool can_run(const CpuFeatures& cpu, std::string_view coretype);
// The canonical spelling of an OpenBLAS x86-64 core type ("skylakex" ->
// "SkylakeX"), or nullopt if OpenBLAS 0.3.21 does not know it.
std::optional<std::string> canonical_coretype(std::string_view name);

struct KernelRequest {
  // "auto" (best for this CPU), "openblas" (keep OpenBLAS's own detection) or
  // a core type name such as "Haswell". From config key [blas] kernel.
  std::string kernel = "auto";
  // OpenBLAS threads; <= 0: OPENBLAS_NUM_THREADS if set, else all cores.
  // Never more than the cores this process may run on.
  int threads = 0;
  // Check a few products against a reference after loading.
  bool verify = true;
};

// What the environment says, as seen by decide_kernel.
struct KernelEnvironment {
  std::optional<std::string> coretype;  // OPENBLAS_CORETYPE
  std::optional<std::string> marker;    // set by taihu before re-executing
  std::string loaded;                   // openblas_get_corename()
};

struct KernelDecision {
  bool reexec = false;   // set OPENBLAS_CORETYPE = coretype and re-execute
  std::string coretype;  // the kernel to force (when reexec)
  std::string reason;    // why the kernel in use is (or will be) what it is
  std::string warning;   // something the user asked for that was not done
};

// The pure decision: which kernel to run and whether a re-exec is needed.
// Throws ConfigError for a request naming no OpenBLAS core type.
KernelDecision decide_kernel(const CpuFeatures& cpu, const KernelRequest& request, const KernelEnvironment& env);

// Checks all four transpose combinations, with odd sizes and beta != 0, against
// a double-precision reference. Returns "" if they agree, else a description.
std::string verify_sgemm();

// Call first thing in main (before any thread starts): may re-execute the
// process. Sets OpenBLAS's thread count and logs the kernel in use and why.
void select_kernel(const KernelRequest& request, int argc, char** argv);

// The OpenBLAS kernel in use ("Zen").
std::string kernel_name();
// OpenBLAS's build ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64").
std::string library_config();
// Why it is in use (empty before select_kernel).
std::string kernel_reason();
// Cores this process may run on (affinity mask), at least 1.
int available_cores();

}  // namespace taihu::blas
