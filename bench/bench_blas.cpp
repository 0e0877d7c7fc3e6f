// SGEMM throughput with the OpenBLAS kernel taihu selects, and with the one
// OpenBLAS picks by itself (measured in a child process, since the kernel is
// fixed when the library loads).
//
//   bench_blas [--kernel=auto|openblas|NAME] [--threads=N] [--runs=N] [--json=FILE]
//
// --child (internal) prints machine-readable lines for the parent.

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/random.hpp"
#include "core/kernels/compute_threads.hpp"

using namespace taihu;

namespace {

struct GemmShape {
  const char* name;
  int64_t m, n, k;
  blas::Trans ta, tb;
};

const std::vector<GemmShape> shapes = {
    {"1024^3 NN", 1024, 1024, 1024, blas::Trans::no, blas::Trans::no},
    {"1024^3 NT", 1024, 1024, 1024, blas::Trans::no, blas::Trans::yes},
    {"1024^3 TN", 1024, 1024, 1024, blas::Trans::yes, blas::Trans::no},
    {"conv-like 128x6272x1152", 128, 6272, 1152, blas::Trans::no, blas::Trans::no},
    {"wgrad-like 256x2304x3136", 256, 2304, 3136, blas::Trans::no, blas::Trans::yes},
    {"fc 32x4096x9216", 32, 4096, 9216, blas::Trans::no, blas::Trans::yes},
};

using taihu::bench::arg_value;

bool has_flag(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i < argc; ++i)
    if (argv[i] == "--" + flag) return true;
  return false;
}

double gflops_of(const GemmShape& s, int runs) {
  std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n)),
      c(static_cast<size_t>(s.m * s.n));
  Rng rng(1);
  for (auto& v : a) v = rng.uniform(-1, 1);
  for (auto& v : b) v = rng.uniform(-1, 1);
  auto once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    blas::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), b.data(), 0.0f, c.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  once();  // warm-up: thread start, page faults
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) times.push_back(once());
  std::sort(times.begin(), times.end());
  return 2.0 * s.m * s.n * s.k / times[times.size() / 2] * 1e-9;
}

std::string self_path() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  const bool child = has_flag(argc, argv, "child");
  spdlog::set_level(child ? spdlog::level::warn : spdlog::level::info);
  blas::KernelRequest request;
  request.kernel = arg_value(argc, argv, "kernel", "auto");
  request.threads = std::stoi(arg_value(argc, argv, "threads", "0"));
  blas::select_kernel(request, argc, argv);
  const int runs = std::max(1, std::stoi(arg_value(argc, argv, "runs", "5")));

  if (child) {
    std::printf("KERNEL %s\n", blas::kernel_name().c_str());
    if (has_flag(argc, argv, "name-only")) return 0;
    for (size_t i = 0; i < shapes.size(); ++i) std::printf("RESULT %zu %.3f\n", i, gflops_of(shapes[i], runs));
    return 0;
  }

  // OpenBLAS's own choice, in a child with a clean environment.
  const std::string selected = blas::kernel_name();
  ::unsetenv("OPENBLAS_CORETYPE");
  ::unsetenv("TAIHU_BLAS_KERNEL_SELECTION");
  const std::string base =
      fmt::format("'{}' --child --kernel=openblas --runs={} --threads={}", self_path(), runs, compute_threads());
  auto run_child = [&](const std::string& command, std::string& name, std::vector<double>& results) {
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return;
    char line[256];
    while (std::fgets(line, sizeof(line), pipe) != nullptr) {
      char word[128];
      size_t index = 0;
      double value = 0;
      if (std::sscanf(line, "KERNEL %127s", word) == 1) name = word;
      if (std::sscanf(line, "RESULT %zu %lf", &index, &value) == 2 && index < results.size()) results[index] = value;
    }
    ::pclose(pipe);
  };
  std::string openblas_name = "?";
  std::vector<double> openblas_results(shapes.size(), -1.0);
  run_child(base + " --name-only", openblas_name, openblas_results);
  const bool same = openblas_name == selected;

  std::printf("SGEMM, %d threads, median of %d runs\n", compute_threads(), runs);
  std::printf("selected kernel: %s (%s)\nOpenBLAS default: %s%s\n\n", selected.c_str(), blas::kernel_reason().c_str(),
              openblas_name.c_str(), same ? " (same kernel: not measured twice)" : "");
  std::vector<double> selected_results;
  for (const auto& s : shapes) selected_results.push_back(gflops_of(s, runs));
  if (!same) run_child(base, openblas_name, openblas_results);

  std::printf("%-28s %14s %14s\n", "shape (M x N x K)", selected.c_str(), same ? "" : openblas_name.c_str());
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::printf("%-28s %9.1f GF/s", shapes[i].name, selected_results[i]);
    if (!same) std::printf(" %9.1f GF/s", openblas_results[i]);
    std::printf("\n");
  }

  const std::string json = arg_value(argc, argv, "json", "");
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\n  \"threads\": " << compute_threads() << ",\n  \"selected_kernel\": \"" << selected
        << "\",\n  \"openblas_kernel\": \"" << openblas_name << "\",\n  \"results\": [\n";
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto& s = shapes[i];
      out << "    {\"shape\": \"" << s.name << "\", \"m\": " << s.m << ", \"n\": " << s.n << ", \"k\": " << s.k
          << ", \"selected_gflops\": " << selected_results[i]
          << ", \"openblas_gflops\": " << (same ? selected_results[i] : openblas_results[i]) << "}"
          << (i + 1 < shapes.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
  }
  return 0;
}
