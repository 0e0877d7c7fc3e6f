// Cavs engine throughput: training steps (forward + backward + weight
// gradients + Executor::zero_gradients; no solver update) on
// synthetic inputs, batched against the same engine run one vertex at a time.
//
//   bench_cavs [--model=binary|childsum|treegru|treefc|lstm-lm|gru-lm]
//              [--samples=1000] [--batch=25] [--embedding=300] [--hidden=150]
//              [--vocabulary=21701] [--modes=batched,serial] [--repeats=3]
//              [--replicas=1] [--threads=0 (BLAS threads)]
//
// Trees are SST-like (core/graph/tree_generators.hpp); Tree-FC uses complete
// trees of 128 leaves; the language models use chains of 5..40 tokens.
// modes: batched | serial | reference | nofuse | nomerge | noskip | nolazy | noeager.
// --replicas=N runs N executors on N threads over replicas of F (batches dealt
// round-robin), the way an actor runtime runs independent vertex batches.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/cavs/executor.hpp"
#include "core/cavs/models/chain_lm.hpp"
#include "core/cavs/models/tree_fc.hpp"
#include "core/cavs/models/tree_gru.hpp"
#include "core/cavs/models/tree_lstm.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/graph/tree_generators.hpp"
#include "core/kernels/compute_threads.hpp"

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

ExecutorOptions options_for(const std::string& mode) {
  ExecutorOptions options = mode == "serial"      ? ExecutorOptions::serial()
                            : mode == "reference" ? ExecutorOptions::reference()
                                                  : ExecutorOptions{};
  if (mode == "nofuse") options.fuse_elementwise = false;
  if (mode == "nomerge") options.merge_matmuls = false;
  if (mode == "noskip") options.skip_zero_rows = false;
  if (mode == "nolazy") options.lazy_weight_gradients = false;
  if (mode == "noeager") options.eager_lazy = false;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  auto arg = [&](const char* key, const char* fallback) { return bench::arg_value(argc, argv, key, fallback); };
  blas::KernelRequest request;
  request.threads = std::stoi(arg("threads", "0"));  // BLAS threads; 0: OpenBLAS's default
  blas::select_kernel(request, argc, argv);
  const std::string model = arg("model", "binary");
  const bool lm = model == "lstm-lm" || model == "gru-lm";
  const int samples = std::stoi(arg("samples", "1000"));
  const int batch = std::stoi(arg("batch", lm ? "64" : "25"));
  const int repeats = std::stoi(arg("repeats", "3"));
  const int replicas = std::max(1, std::stoi(arg("replicas", "1")));
  const int embedding = std::stoi(arg("embedding", lm ? "512" : "300"));
  const int hidden = std::stoi(arg("hidden", lm ? "512" : "150"));
  const int vocabulary = std::stoi(arg("vocabulary", lm ? "10000" : "21701"));
  enable_flush_to_zero();

  Rng rng(2024);
  std::vector<InputGraph> data;
  int64_t vertices = 0;
  RandomTreeOptions tree_options;
  tree_options.vocabulary_size = vocabulary;
  tree_options.num_classes = 5;
  for (int i = 0; i < samples; ++i) {
    if (lm) {
      std::vector<int32_t> tokens(6 + rng.below(36));
      for (auto& t : tokens) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocabulary)));
      data.push_back(language_model_chain(tokens));
    } else if (model == "treefc") {
      data.push_back(complete_binary_tree(7, vocabulary));
      for (int32_t v = 0; v < data.back().num_vertices(); ++v) data.back().set_label(v, static_cast<int32_t>(rng.below(2)));
    } else {
      data.push_back(sst_like_tree(rng, tree_options));
    }
    vertices += data.back().num_vertices();
  }

  VertexFunction f = [&] {
    if (lm) {
      ChainLmOptions o;
      o.vocabulary = vocabulary;
      o.embedding = embedding;
      o.hidden = hidden;
      return model == "lstm-lm" ? make_lstm_language_model(o) : make_gru_language_model(o);
    }
    if (model == "treefc") {
      TreeFcOptions o;
      o.vocabulary = vocabulary;
      o.hidden = hidden;
      return make_tree_fc(o);
    }
    if (model == "treegru") {
      TreeGruOptions o;
      o.vocabulary = vocabulary;
      o.embedding = embedding;
      o.hidden = hidden;
      return make_tree_gru(o);
    }
    TreeLstmOptions o;
    o.vocabulary = vocabulary;
    o.embedding = embedding;
    o.hidden = hidden;
    return model == "childsum" ? make_child_sum_tree_lstm(o) : make_binary_tree_lstm(o);
  }();
  std::vector<VertexFunction> functions;
  for (int k = 1; k < replicas; ++k) functions.push_back(f.replica());
  functions.insert(functions.begin(), std::move(f));

  fmt::print("cavs {}: E={} H={} vocabulary {}, {} samples ({:.1f} vertices each), batch {}, BLAS threads {}, "
             "{} replica thread(s)\n",
             model, embedding, hidden, vocabulary, samples, static_cast<double>(vertices) / samples, batch,
             compute_threads(), replicas);

  std::stringstream modes(arg("modes", "batched,serial"));
  std::string mode;
  while (std::getline(modes, mode, ',')) {
    const ExecutorOptions options = options_for(mode);
    std::vector<std::unique_ptr<Executor>> executors;
    for (auto& fn : functions) executors.push_back(std::make_unique<Executor>(fn, options));
    // Serial is slow: fewer samples are enough.
    const bool slow = mode == "serial" || mode == "reference";
    const int used = (slow ? std::min(samples, lm ? 128 : 200) : samples) / batch * batch;
    std::vector<double> rates, cpu_ms;
    ExecutorStats stats;
    int64_t units = 0;  // trees, or tokens for the language models
    for (int rep = 0; rep < repeats; ++rep) {
      for (auto& ex : executors) ex->stats().reset();
      std::vector<double> zero_seconds(static_cast<size_t>(replicas), 0.0);
      std::vector<int64_t> tokens(static_cast<size_t>(replicas), 0);
      const double cpu_start = cpu_seconds();
      const auto start = std::chrono::steady_clock::now();
      auto work = [&](int k) {
        Executor& ex = *executors[static_cast<size_t>(k)];
        for (int b = k * batch; b + batch <= used; b += replicas * batch) {
          ex.set_inputs(std::span<const InputGraph>(data.data() + b, static_cast<size_t>(batch)));
          ex.run_forward_backward();
          ex.zero_gradients();  // what a trainer does after its solver step
          tokens[static_cast<size_t>(k)] += ex.loss_vertices();
        }
      };
      std::vector<std::thread> threads;
      for (int k = 1; k < replicas; ++k) threads.emplace_back(work, k);
      work(0);
      for (auto& t : threads) t.join();
      const double zero = *std::max_element(zero_seconds.begin(), zero_seconds.end());
      double zero_cpu = 0;
      for (double z : zero_seconds) zero_cpu += z;
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - zero;
      units = 0;
      for (int64_t t : tokens) units += t;
      if (!lm) units = used;
      rates.push_back(static_cast<double>(units) / seconds);
      cpu_ms.push_back(1e3 * (cpu_seconds() - cpu_start - zero_cpu) / static_cast<double>(units));
      if (rep == 0 || rates.back() >= *std::max_element(rates.begin(), rates.end())) {
        stats = ExecutorStats{};
        for (auto& ex : executors) stats += ex->stats();
      }
    }
    std::sort(rates.begin(), rates.end());
    std::sort(cpu_ms.begin(), cpu_ms.end());
    const ExecutorStats& s = stats;
    const double total = s.schedule_seconds + s.forward_seconds + s.backward_seconds + s.weight_gradient_seconds;
    const char* unit = lm ? "tokens" : "trees";
    const char* one = lm ? "token" : "tree";
    fmt::print("{:>10}: {:9.1f} {}/s (median of {}), {:.4f} CPU ms/{}, rounds/batch {:.1f}, GEMM calls/batch {:.0f}, "
               "{:.2f} MFLOP/{} in GEMMs at {:.1f} GFLOP/s; time: GEMM {:.1f}% schedule {:.1f}% forward {:.1f}% "
               "backward {:.1f}% weight gradients {:.1f}%\n",
               mode, rates[rates.size() / 2], unit, rates.size(), cpu_ms[cpu_ms.size() / 2], one,
               static_cast<double>(s.rounds) / s.batches, static_cast<double>(s.gemm_calls) / s.batches,
               s.gemm_flops / static_cast<double>(units) * 1e-6, one, s.gemm_flops / s.gemm_seconds * 1e-9,
               100 * s.gemm_seconds / total, 100 * s.schedule_seconds / total, 100 * s.forward_seconds / total, 100 * s.backward_seconds / total,
               100 * s.weight_gradient_seconds / total);
  }
  return 0;
}
