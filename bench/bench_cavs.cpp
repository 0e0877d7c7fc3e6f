// Cavs engine throughput on SST-like trees: binary Tree-LSTM training steps
// (forward + backward + weight gradients, no solver update) per second,
// batched against the same engine run one vertex at a time.
//
//   bench_cavs [--trees=1000] [--batch=25] [--embedding=300] [--hidden=150]
//              [--vocabulary=21701] [--modes=batched,serial] [--repeats=3]
//              [--model=binary|childsum]

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/blas/blas.hpp"
#include "core/cavs/executor.hpp"
#include "core/cavs/models/tree_lstm.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/graph/tree_generators.hpp"

using namespace taihu;
using namespace taihu::cavs;

namespace {
// CPU seconds of the whole process (all threads): steadier than wall time
// when the machine is shared.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  auto arg = [&](const char* key, const char* fallback) { return bench::arg_value(argc, argv, key, fallback); };
  const int trees = std::stoi(arg("trees", "1000"));
  const int batch = std::stoi(arg("batch", "25"));
  const int repeats = std::stoi(arg("repeats", "3"));
  const std::string model = arg("model", "binary");
  TreeLstmOptions o;
  o.embedding = std::stoi(arg("embedding", "300"));
  o.hidden = std::stoi(arg("hidden", "150"));
  o.vocabulary = std::stoi(arg("vocabulary", "21701"));
  o.classes = 5;
  enable_flush_to_zero();

  Rng rng(2024);
  RandomTreeOptions tree_options;
  tree_options.vocabulary_size = o.vocabulary;
  tree_options.num_classes = o.classes;
  std::vector<InputGraph> data;
  int64_t vertices = 0;
  for (int i = 0; i < trees; ++i) {
    data.push_back(sst_like_tree(rng, tree_options));
    vertices += data.back().num_vertices();
  }
  VertexFunction f = model == "childsum" ? make_child_sum_tree_lstm(o) : make_binary_tree_lstm(o);
  fmt::print("cavs {} Tree-LSTM, E={} H={} vocabulary {}, {} SST-like trees ({:.1f} vertices/tree), batch {}, "
             "BLAS threads {}\n",
             model, o.embedding, o.hidden, o.vocabulary, trees, static_cast<double>(vertices) / trees, batch,
             blas::threads());

  std::stringstream modes(arg("modes", "batched,serial"));
  std::string mode;
  while (std::getline(modes, mode, ',')) {
    ExecutorOptions options = mode == "serial" ? ExecutorOptions::serial()
                              : mode == "reference" ? ExecutorOptions::reference()
                                                    : ExecutorOptions{};
    if (mode == "nofuse") options.fuse_elementwise = false;
    if (mode == "nomerge") options.merge_matmuls = false;
    if (mode == "noskip") options.skip_zero_rows = false;
    if (mode == "nolazy") options.lazy_weight_gradients = false;
    if (mode == "noeager") options.eager_lazy = false;
    Executor ex(f, options);
    std::vector<double> rates, cpu_ms;
    ExecutorStats best_stats;
    double best = 0;
    // Serial is slow: one pass over fewer trees is enough.
    const int used = mode == "serial" || mode == "reference" ? std::min(trees, 200) : trees;
    for (int rep = 0; rep < repeats; ++rep) {
      ex.stats().reset();
      double zero_seconds = 0;
      const double cpu_start = cpu_seconds();
      const auto start = std::chrono::steady_clock::now();
      for (int b = 0; b + batch <= used; b += batch) {
        const auto z = std::chrono::steady_clock::now();
        f.zero_diffs();
        zero_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - z).count();
        ex.set_inputs(std::span<const InputGraph>(data.data() + b, static_cast<size_t>(batch)));
        ex.run_forward_backward();
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - zero_seconds;
      const double rate = static_cast<double>(used / batch * batch) / seconds;
      rates.push_back(rate);
      cpu_ms.push_back(1e3 * (cpu_seconds() - cpu_start - zero_seconds) / static_cast<double>(used / batch * batch));
      if (rate > best) {
        best = rate;
        best_stats = ex.stats();
      }
    }
    std::sort(rates.begin(), rates.end());
    std::sort(cpu_ms.begin(), cpu_ms.end());
    const double median = rates[rates.size() / 2];
    const ExecutorStats& s = best_stats;
    const double total = s.schedule_seconds + s.forward_seconds + s.backward_seconds + s.weight_gradient_seconds;
    fmt::print("{:>10}: {:8.1f} trees/s (median of {}), {:.3f} CPU ms/tree, rounds/batch {:.1f}, GEMM calls/batch {:.0f}, "
               "{:.1f} GFLOP/s in GEMMs ({:.1f} MFLOP/tree); time: schedule {:.1f}% forward {:.1f}% backward {:.1f}% "
               "weight gradients {:.1f}%\n",
               mode, median, rates.size(), cpu_ms[cpu_ms.size() / 2], static_cast<double>(s.rounds) / s.batches,
               static_cast<double>(s.gemm_calls) / s.batches, s.gemm_flops / total * 1e-9,
               s.gemm_flops / (static_cast<double>(s.batches) * batch) * 1e-6, 100 * s.schedule_seconds / total,
               100 * s.forward_seconds / total, 100 * s.backward_seconds / total,
               100 * s.weight_gradient_seconds / total);
  }
  return 0;
}
