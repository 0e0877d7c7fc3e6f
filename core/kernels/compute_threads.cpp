#include "core/kernels/compute_threads.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace taihu {

namespace {
std::atomic<int> g_threads{0};  // 0: not yet taken from OpenBLAS
}

void keep_openblas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] {
    int expected = 0;
    g_threads.compare_exchange_strong(expected, std::max(1, openblas_get_num_threads()));
    openblas_set_num_threads(1);
  });
}

void set_compute_threads(int threads) {
  keep_openblas_single_threaded();
  g_threads.store(std::max(1, threads));
}

int compute_threads() {
  keep_openblas_single_threaded();
  return g_threads.load();
}

}  // namespace taihu
