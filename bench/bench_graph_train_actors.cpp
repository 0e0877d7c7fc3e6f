// Training (or inference) throughput of a dynamic network through taihu's
// real runtime — the graph actor runtime (actors/graph_runtime) or one inline
// executor — on a tree workload file shared with the PyTorch baselines
// (bench/pytorch/, bench/compare_cavs.sh). A timed training step is what the
// trainer does per mini-batch: schedule + forward + backward + weight
// gradients, a plain SGD update, and zeroing what the batch added to the
// diffs; like PyTorch's forward, backward, step and zero_grad.
//
//   bench_graph_train_actors --workload=build/workloads/sst-like.txt [--model=tree_lstm]
//       [--batch=25] [--embed=300] [--hidden=150] [--executors=2] [--threads=1 (BLAS)]
//       [--runner=actors|inline] [--mode=batched|serial] [--phase=train|infer]
//       [--warmup=5] [--batches=20] [--repeats=3] [--lr=0.001] [--system=NAME] [--kernel=auto|openblas|NAME]
//       [--chunk=N (chains: re-cut the label stream into equal chains of N)]
//       [--json=FILE] [--csv=FILE]
//       [--dump-weights=DIR (tree_lstm: initial weights in the PyTorch baseline's --init-weights layout)]
//       [--loss-trace=N (print the summed loss of the first N training steps, loss_scale 1)]
//
// Prints trees/s and vertices/s (median over repeats), ms per batch (p50, p90
// over every timed batch), and where the executors' time went: scheduling,
// GEMM (its FLOPs at this machine's measured SGEMM rate) and the rest.

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "actors/graph_runtime/graph_runner.hpp"
#include "bench/bench_args.hpp"
#include "core/common/sync_wait.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/cavs/batch_runner.hpp"
#include "core/cavs/model_config.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/config/config.hpp"
#include "core/graph/graph_dataset.hpp"
#include "core/graph/tree_workload_io.hpp"
#include "core/solver/solver.hpp"
#include "core/tensor/tensor.hpp"
#include "messages/type_ids.hpp"

using namespace taihu;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// Sustained SGEMM rate of this machine at the benchmark's thread count, on
// the shapes a round of a Tree-LSTM produces (rows x 600 x 150) and on a large
// square: the denominator of "GEMM share".
double sgemm_gflops(int64_t m, int64_t n, int64_t k) {
  Tensor a(Shape{m, k}), b(Shape{k, n}), c(Shape{m, n});
  a.fill(0.5f);
  b.fill(0.25f);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    const int reps = 20;
    const double t0 = now();
    for (int i = 0; i < reps; ++i)
      blas::gemm(blas::Trans::no, blas::Trans::no, m, n, k, 1.0f, a.ptr(), b.ptr(), 0.0f, c.ptr());
    best = std::max(best, 2.0 * double(m) * double(n) * double(k) * reps / (now() - t0) * 1e-9);
  }
  return best;
}

// Writes a binary Tree-LSTM's weights in the layout of
// bench/pytorch/treelstm_baseline.py --init-weights: raw little-endian float32,
// row-major, x @ W convention (taihu stores [out, in], so matrices transpose),
// gates i | o | u, forget gates f_l | f_r, one b_f shared by both children.
// taihu's W_f (x into the forget gates) has no PyTorch counterpart and no
// effect: a leaf's children are zero rows, an internal vertex's x is a zero row.
void dump_tree_lstm_weights(cavs::VertexFunction& f, const std::string& dir) {
  std::filesystem::create_directories(dir);
  auto data = [&](const char* name) -> const Tensor& { return f.param(name).blob->data(); };
  auto write = [&](const char* name, const std::vector<float>& v) {
    std::ofstream out(std::filesystem::path(dir) / (std::string(name) + ".f32"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    if (!out) throw Error(fmt::format("--dump-weights: cannot write {}/{}.f32", dir, name));
  };
  // Columns [offset, offset + out) of a [in x cols] matrix from w [out, in]: dst[k, offset + j] = w[j, k].
  auto put_transposed = [](const Tensor& w, std::vector<float>& dst, int64_t cols, int64_t offset) {
    const int64_t rows_out = w.shape()[0], in = w.shape()[1];
    const float* p = w.ptr();
    for (int64_t j = 0; j < rows_out; ++j)
      for (int64_t k = 0; k < in; ++k) dst[static_cast<size_t>(k * cols + offset + j)] = p[j * in + k];
  };
  auto copy = [](const Tensor& t) { return std::vector<float>(t.ptr(), t.ptr() + t.shape().count()); };
  auto concat = [](std::initializer_list<std::vector<float>> parts) {
    std::vector<float> v;
    for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
    return v;
  };
  const int64_t H = data("b_i").shape()[0], X = data("W_i").shape()[1], C = data("b_out").shape()[0];
  write("embedding", copy(data("embedding")));
  std::vector<float> w_iou(static_cast<size_t>(X * 3 * H)), u_iou(static_cast<size_t>(2 * H * 3 * H));
  std::vector<float> u_f(static_cast<size_t>(2 * H * 2 * H)), w_out(static_cast<size_t>(H * C));
  const char* gates[] = {"i", "o", "u"};
  for (int g = 0; g < 3; ++g) {
    put_transposed(data(fmt::format("W_{}", gates[g]).c_str()), w_iou, 3 * H, g * H);
    put_transposed(data(fmt::format("U_{}", gates[g]).c_str()), u_iou, 3 * H, g * H);
  }
  put_transposed(data("U_fl"), u_f, 2 * H, 0);
  put_transposed(data("U_fr"), u_f, 2 * H, H);
  put_transposed(data("W_out"), w_out, C, 0);
  write("W_iou", w_iou);
  write("b_iou", concat({copy(data("b_i")), copy(data("b_o")), copy(data("b_u"))}));
  write("U_iou", u_iou);
  write("U_f", u_f);
  write("b_f", copy(data("b_f")));
  write("W_out", w_out);
  write("b_out", copy(data("b_out")));
}

}  // namespace

int main(int argc, char** argv) {
  auto arg = [&](const char* key, const std::string& fallback) { return bench::arg_value(argc, argv, key, fallback); };
  try {
    const std::string workload_path = arg("workload", "");
    if (workload_path.empty()) {
      std::fputs("usage: bench_graph_train_actors --workload=FILE [--model=tree_lstm] [--batch=25] ... (see source)\n",
                 stderr);
      return 2;
    }
    const std::string model = arg("model", "tree_lstm");
    const int batch = std::stoi(arg("batch", "25"));
    const int embed = std::stoi(arg("embed", "300"));
    const int hidden = std::stoi(arg("hidden", "150"));
    const int threads = std::stoi(arg("threads", "1"));
    // The OpenBLAS kernel as taihu-train chooses it (OpenBLAS's own detection
    // falls back to its generic kernel on some Xeons: Emerald Rapids, a fifth of
    // the rate), and the BLAS threads per executor.
    blas::KernelRequest kernel_request;
    kernel_request.kernel = arg("kernel", "auto");
    kernel_request.threads = threads;
    blas::select_kernel(kernel_request, argc, argv);
    const int executors = std::stoi(arg("executors", std::to_string(std::max(1, blas::available_cores() / threads))));
    const std::string runner_kind = arg("runner", "actors");
    const std::string mode = arg("mode", "batched");
    const std::string phase = arg("phase", "train");
    const int warmup = std::stoi(arg("warmup", "5"));
    const int batches = std::stoi(arg("batches", "20"));
    const int repeats = std::stoi(arg("repeats", "3"));
    const std::string lr = arg("lr", "0.001");
    enable_flush_to_zero();

    TreeWorkload workload = read_tree_workload(workload_path);
    if (const int chunk = std::stoi(arg("chunk", "0")); chunk > 0) {
      // The chains' labels back to back are the token stream (w1..wn <eos> per
      // sentence); fixed-length language-model batches cut it into equal chains.
      std::vector<int32_t> stream;
      for (const auto& g : workload.trees) stream.insert(stream.end(), g.labels().begin(), g.labels().end());
      workload.trees = chunk_chains(stream, chunk);
      workload.name += fmt::format("-fixed{}", chunk);
    }
    GraphDataset data;
    data.vocabulary_size = workload.vocabulary_size;
    data.num_classes = workload.num_classes;
    data.language_model = model == "lstm" || model == "gru";
    data.source = workload.name;
    const auto doc = config::Document::parse(fmt::format("[model]\ntype = {}\nembedding = {}\nhidden = {}\n"
                                                         "[solver]\ntype = sgd\nbase_lr = {}\nmomentum = 0\n",
                                                         model, embed, hidden, lr),
                                             "bench");
    cavs::VertexFunction f = cavs::build_model(doc.section("model"), data, 1);
    if (model == "tree_fc") doc.section("model").mark_all_used();
    auto solver = Solver::create(doc.section("solver"), f.param_pointers());
    if (auto dir = arg("dump-weights", ""); !dir.empty()) {
      if (model != "tree_lstm") throw Error("--dump-weights supports --model=tree_lstm only");
      dump_tree_lstm_weights(f, dir);
    }
    const int loss_trace = std::stoi(arg("loss-trace", "0"));
    std::vector<double> losses;

    cavs::ExecutorOptions options = mode == "serial" ? cavs::ExecutorOptions::serial() : cavs::ExecutorOptions{};
    // The executors are detached; the batcher is the only scheduled actor, and
    // one thread that sleeps when idle (no work-stealing polls) leaves the cores to them.
    caf::actor_system_config actor_config;  // the process's one actor system, as in taihu-train
    actor_config.add_message_types<caf::id_block::taihu>();
    actor_config.set("scheduler.policy", caf::atom("sharing"));
    actor_config.set("scheduler.max-threads", 1);
    caf::actor_system actor_system{actor_config};
    std::unique_ptr<cavs::BatchRunner> runner;
    if (runner_kind == "inline") {
      runner = std::make_unique<cavs::InlineRunner>(f, options);
    } else {
      graph::GraphRunnerOptions ro;
      ro.executors = executors;
      ro.executor = options;
      runner = graph::make_graph_runner(actor_system, f, ro);
    }

    // Mini-batches in workload order (the same trees as the PyTorch runs).
    const auto& trees = workload.trees;
    const int64_t available = static_cast<int64_t>(trees.size()) / batch;
    if (available < 1) throw Error(fmt::format("workload has {} trees, fewer than one batch of {}", trees.size(), batch));
    auto batch_span = [&](int64_t b) {
      return std::span<const InputGraph>(trees.data() + (b % available) * batch, static_cast<size_t>(batch));
    };
    auto step = [&](int64_t b) {
      if (phase == "infer") {
        async::sync_wait(runner->evaluate(batch_span(b)));
        return;
      }
      // loss_scale 1: gradients of the summed loss, as the PyTorch baseline's reduction="sum".
      const cavs::GraphMetrics m = async::sync_wait(runner->train(batch_span(b), 1.0f));
      if (static_cast<int>(losses.size()) < loss_trace) losses.push_back(m.loss);
      solver->step(runner->sparse_gradients());
      runner->zero_gradients();
    };
    f.zero_diffs();
    for (int b = 0; b < warmup; ++b) step(b);
    runner->reset_stats();

    std::vector<double> batch_ms, rates, vertex_rates;
    for (int r = 0; r < repeats; ++r) {
      int64_t vertices = 0;
      const double t0 = now();
      for (int b = 0; b < batches; ++b) {
        const double s = now();
        step(warmup + b);
        batch_ms.push_back((now() - s) * 1e3);
        for (const auto& g : batch_span(warmup + b)) vertices += g.num_vertices();
      }
      const double seconds = now() - t0;
      rates.push_back(double(batches) * batch / seconds);
      vertex_rates.push_back(double(vertices) / seconds);
    }
    const double trees_per_s = percentile(rates, 0.5);
    const double vertices_per_s = percentile(vertex_rates, 0.5);

    const cavs::ExecutorStats s = runner->stats();
    const double executor_seconds = s.schedule_seconds + s.forward_seconds + s.backward_seconds + s.weight_gradient_seconds;
    const double peak = sgemm_gflops(512, 512, 512);
    const double gemm_seconds_at_peak = s.gemm_flops * 1e-9 / peak;
    const double gemm_share = executor_seconds > 0 ? gemm_seconds_at_peak / executor_seconds : 0;
    const double schedule_share = executor_seconds > 0 ? s.schedule_seconds / executor_seconds : 0;
    const double rounds_per_batch = s.batches > 0 ? double(s.rounds) / double(s.batches) : 0;
    const double gemm_calls_per_batch = s.batches > 0 ? double(s.gemm_calls) / double(s.batches) : 0;
    const std::string system = arg("system", fmt::format("taihu-{}-{}", runner_kind, mode));

    fmt::print("{} {} on {} ({} trees, {} vertices): batch {}, E {}, H {}, {} executors x {} BLAS threads, {}, "
               "kernel {}\n",
               system, model, workload.name, trees.size(), workload.num_vertices(), batch, embed, hidden,
               runner_kind == "inline" ? 1 : executors, threads, phase, blas::kernel_name());
    fmt::print("  {:.1f} trees/s, {:.0f} vertices/s (median of {}); ms/batch p50 {:.2f} p90 {:.2f}\n", trees_per_s,
               vertices_per_s, repeats, percentile(batch_ms, 0.5), percentile(batch_ms, 0.9));
    fmt::print("  executor time: schedule {:.1f}%, GEMM at the SGEMM rate ({:.0f} GFLOP/s) {:.1f}%; "
               "{:.1f} rounds and {:.0f} GEMM calls per batch (per executor part)\n",
               100 * schedule_share, peak, 100 * gemm_share, rounds_per_batch, gemm_calls_per_batch);

    const std::string row = fmt::format(
        "{{\"system\": \"{}\", \"model\": \"{}\", \"workload\": \"{}\", \"bs\": {}, \"E\": {}, \"H\": {}, "
        "\"threads\": {}, \"executors\": {}, \"mode\": \"{}\", \"trees_per_s\": {:.2f}, \"vertices_per_s\": {:.1f}, "
        "\"ms_p50\": {:.3f}, \"ms_p90\": {:.3f}, \"rounds\": {:.2f}, \"gemm_calls\": {:.1f}, "
        "\"schedule_share\": {:.4f}, \"gemm_share\": {:.4f}, \"sgemm_gflops\": {:.1f}, \"kernel\": \"{}\", \"ftz\": true}}",
        system, model, workload.name, batch, embed, hidden, threads * (runner_kind == "inline" ? 1 : executors),
        runner_kind == "inline" ? 1 : executors, phase, trees_per_s, vertices_per_s, percentile(batch_ms, 0.5),
        percentile(batch_ms, 0.9), rounds_per_batch, gemm_calls_per_batch, schedule_share, gemm_share, peak,
        blas::kernel_name());
    if (!losses.empty()) {
      std::string line = "losses:";
      for (double l : losses) line += fmt::format(" {:.6f}", l);
      fmt::print("{}\n", line);
    }
    if (auto path = arg("json", ""); !path.empty()) std::ofstream(path, std::ios::app) << row << "\n";
    if (auto path = arg("csv", ""); !path.empty()) {
      const bool fresh = !std::ifstream(path).good();
      std::ofstream out(path, std::ios::app);
      if (fresh)
        out << "system,model,workload,bs,E,H,threads,mode,trees_per_s,vertices_per_s,ms_p50,ms_p90,rounds,gemm_calls,"
               "schedule_share,gemm_share\n";
      out << fmt::format("{},{},{},{},{},{},{},{},{:.2f},{:.1f},{:.3f},{:.3f},{:.2f},{:.1f},{:.4f},{:.4f}\n", system,
                         model, workload.name, batch, embed, hidden, threads, phase, trees_per_s, vertices_per_s,
                         percentile(batch_ms, 0.5), percentile(batch_ms, 0.9), rounds_per_batch,
                         gemm_calls_per_batch, schedule_share, gemm_share);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_graph_train_actors: %s\n", e.what());
    return 2;
  }
}
