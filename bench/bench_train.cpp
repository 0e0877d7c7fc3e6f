// End-to-end training throughput of one net on synthetic data: forward,
// backward and an SGD-momentum step per iteration, as in
// bench/pytorch/pytorch_baseline.py, so that the two can be run side by side.
//
//   bench_train --net=config/nets/lenet.ini --batch=64 [--classes=10 --iters=100 --warmup=10
//               --repeats=5 --threads=0 --kernel=auto --conv=auto --grain=FLOATS --json=FILE --profile]
//
// --conv: the convolutions' algorithm, as [conv] algorithm (auto, measured, im2col, dnnl).
// --grain: the memory-bound layers' parallel_grain (core/kernels/parallel.hpp), to measure it.
//
// --profile times each layer's forward and backward pass instead (median over
// `iters` iterations after the warm-up), with the solver step, and prints
// them sorted by time, like `caffe time`. Beside each layer's wall time it
// prints what the process did meanwhile: CPU time over wall time (the threads
// busy on average), the kernel's share of that CPU time, and the minor page
// faults; so a layer slow on a many-core host can be told apart as waiting
// (threads < 1), faulting fresh pages (faults, sys%) or plainly computing.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "bench/process_usage.hpp"
#include "core/common/sync_wait.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/convolution.hpp"
#include "core/layers/convolution_choices.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/common/random.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"

using namespace taihu;

namespace {

using taihu::bench::arg_value;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Multiply-adds x 2 of one forward pass of a Convolution or InnerProduct
// layer: every weight meets every output position once; 0 for other layers.
double forward_flops(const Net& net, size_t i) {
  const Layer& layer = net.layer(i);
  const std::string type = layer.type();
  if ((type != "Convolution" && type != "InnerProduct") || layer.params().empty()) return 0.0;
  const Blob& top = *net.layer_tops(i)[0];
  const double weights = static_cast<double>(layer.params()[0].blob->count());
  const int64_t outputs = top.shape().rank() > 1 ? top.shape()[1] : 1;
  return 2.0 * weights * static_cast<double>(top.count() / std::max<int64_t>(outputs, 1));
}

using Usage = taihu::bench::ProcessUsage;

// One pass of one layer, or of the solver: wall time and the process's usage during it.
struct Sample {
  double wall = 0;
  Usage usage;
};

template <class Fn>
Sample measure(Fn&& fn) {
  const Usage before = Usage::now();
  const auto start = std::chrono::steady_clock::now();
  fn();
  const double wall = seconds_since(start);
  return {wall, Usage::now() - before};
}

// Per-iteration samples of one pass; medians of each quantity on their own.
struct Samples {
  std::vector<double> wall, user, system, faults;
  void add(const Sample& s) {
    wall.push_back(s.wall), user.push_back(s.usage.user), system.push_back(s.usage.system);
    faults.push_back(s.usage.faults);
  }
  double median_wall() const { return median_of(wall); }
  Usage median_usage() const { return {median_of(user), median_of(system), median_of(faults)}; }
};

// Times each layer's forward and backward pass and the solver step over
// `iters` iterations, and prints the medians sorted by time.
void profile(Net& net, Solver& solver, int iters) {
  const size_t n = net.num_layers();
  std::vector<Samples> fwd(n), bwd(n);
  Samples zero, step, total;
  for (int it = 0; it < iters; ++it) {
    total.add(measure([&] {
      zero.add(measure([&] { net.zero_param_diffs(); }));
      for (size_t i = 0; i < n; ++i) fwd[i].add(measure([&] { async::sync_wait(net.forward_layer(i)); }));
      net.begin_backward();
      for (size_t i = n; i-- > 0;) bwd[i].add(measure([&] { async::sync_wait(net.backward_layer(i)); }));
      step.add(measure([&] { solver.step(); }));
    }));
  }

  struct Row {
    std::string name, type;
    double forward = 0, backward = 0, forward_flops = 0, backward_flops = 0;
    Usage usage;  // forward and backward together
  };
  std::vector<Row> rows;
  double layers_total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    Row r{net.layer(i).name(), net.layer(i).type(), fwd[i].median_wall(), bwd[i].median_wall(), 0, 0, {}};
    r.forward_flops = forward_flops(net, i);
    // Backward: the weight gradient, plus the bottom gradient when it is wanted.
    const auto& down = net.layer_propagate_down(i);
    const bool data_grad = !down.empty() && down[0];
    r.backward_flops = r.forward_flops * (data_grad ? 2.0 : 1.0);
    const Usage f = fwd[i].median_usage(), b = bwd[i].median_usage();
    r.usage = {f.user + b.user, f.system + b.system, f.faults + b.faults};
    layers_total += r.forward + r.backward;
    rows.push_back(std::move(r));
  }
  const double zero_s = zero.median_wall(), step_s = step.median_wall(), total_s = total.median_wall();
  rows.push_back({"(zero param diffs)", "Net", zero_s, 0, 0, 0, zero.median_usage()});
  rows.push_back({"(solver step)", "Solver", step_s, 0, 0, 0, step.median_usage()});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.forward + a.backward > b.forward + b.backward; });

  auto rate = [](double flops, double s) { return flops > 0 && s > 0 ? fmt::format("{:8.1f}", flops / s * 1e-9) : std::string(8, ' '); };
  // threads: process CPU time / wall time; sys%: the kernel's share of that CPU time.
  auto usage = [](const Usage& u, double wall) {
    const double cpu = u.user + u.system;
    return fmt::format("{:7.1f} {:5.0f}% {:8.0f}", wall > 0 ? cpu / wall : 0.0, cpu > 0 ? 100.0 * u.system / cpu : 0.0,
                       u.faults);
  };
  std::printf("%-28s %-14s %9s %9s %9s %6s %6s %8s %8s %7s %6s %8s\n", "layer", "type", "fwd ms", "bwd ms", "total ms",
              "share", "cum", "fwd GF/s", "bwd GF/s", "threads", "sys", "faults");
  const double sum = layers_total + zero_s + step_s;
  double cumulative = 0.0;
  double conv_flops = 0.0, conv_time = 0.0;
  for (const Row& r : rows) {
    const double t = r.forward + r.backward;
    cumulative += t;
    if (r.forward_flops > 0) conv_flops += r.forward_flops + r.backward_flops, conv_time += t;
    std::printf("%-28s %-14s %9.3f %9.3f %9.3f %5.1f%% %5.1f%% %s %s %s\n", r.name.c_str(), r.type.c_str(),
                r.forward * 1e3, r.backward * 1e3, t * 1e3, 100.0 * t / sum, 100.0 * cumulative / sum,
                rate(r.forward_flops, r.forward).c_str(), rate(r.backward_flops, r.backward).c_str(),
                usage(r.usage, t).c_str());
  }
  std::printf("sum of medians %.1f ms; median iteration %.1f ms (%.2f images/s); "
              "Convolution + InnerProduct %.1f ms at %.1f GFLOP/s\n",
              sum * 1e3, total_s * 1e3, static_cast<double>(net.batch()) / total_s, conv_time * 1e3,
              conv_time > 0 ? conv_flops / conv_time * 1e-9 : 0.0);
  std::printf("per iteration: %s (threads busy, system share, minor faults) on %d compute threads\n",
              usage(total.median_usage(), total_s).c_str(), compute_threads());
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  blas::KernelRequest request;
  request.kernel = arg_value(argc, argv, "kernel", "auto");
  request.threads = std::stoi(arg_value(argc, argv, "threads", "0"));
  blas::select_kernel(request, argc, argv);
  enable_flush_to_zero();
  ConvolutionLayer::default_algorithm() = ConvolutionLayer::parse_algorithm(arg_value(argc, argv, "conv", "auto"));
  set_parallel_grain(std::stoll(arg_value(argc, argv, "grain", std::to_string(parallel_grain()))));

  const std::string net_path = arg_value(argc, argv, "net", "config/nets/lenet.ini");
  const int64_t batch = std::stoll(arg_value(argc, argv, "batch", "64"));
  const int iters = std::stoi(arg_value(argc, argv, "iters", "100"));
  const int warmup = std::stoi(arg_value(argc, argv, "warmup", "10"));
  const int repeats = std::stoi(arg_value(argc, argv, "repeats", "5"));
  const std::string json = arg_value(argc, argv, "json", "");
  const uint64_t classes = std::stoull(arg_value(argc, argv, "classes", "10"));
  bool profiling = false;
  for (int i = 1; i < argc; ++i) profiling = profiling || std::string(argv[i]) == "--profile";

  auto description = std::make_shared<config::Document>(config::Document::parse_file(net_path));
  Net net(description, batch, 1);
  const auto solver_doc = config::Document::parse(
      "[solver]\ntype = sgd\nbase_lr = 0.01\nmomentum = 0.9\nweight_decay = 0.0005\n", "bench");
  auto solver = Solver::create(solver_doc.section("solver"), net.learnable_params());

  // One fixed batch, as the PyTorch baseline does: data preparation is not timed.
  Rng rng(0);
  Blob& data = net.blob("data");
  for (int64_t i = 0; i < data.count(); ++i) data.data()[i] = rng.uniform();
  Blob& label = net.blob("label");
  for (int64_t i = 0; i < label.count(); ++i) label.data()[i] = static_cast<float>(rng.below(classes));

  auto step = [&] {
    net.zero_param_diffs();
    net.forward_backward();
    solver->step();
  };
  for (int i = 0; i < warmup; ++i) step();
  if (profiling) {
    profile(net, *solver, iters);
    return 0;
  }
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(iters * batch) / s);
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::printf("taihu %s batch %lld: %.1f images/s (median of %d; min %.1f max %.1f) kernel %s threads %d\n",
              net.name().c_str(), static_cast<long long>(batch), median, repeats, sorted.front(),
              sorted.back(), blas::kernel_name().c_str(), compute_threads());
  // What --conv=measured chose, pass by pass (the layers log it at info).
  for (const auto& d : ConvolutionChoices::process().decisions())
    std::printf("  measured %s: %s (oneDNN %.3f ms, im2col+GEMM %.3f ms)\n", d.key.c_str(),
                d.dnnl ? "oneDNN" : "im2col+GEMM", 1e3 * d.dnnl_seconds, 1e3 * d.im2col_seconds);
  if (!json.empty()) {
    std::ofstream out(json, std::ios::app);
    out << fmt::format(
        "{{\"framework\": \"taihu\", \"net\": \"{}\", \"batch\": {}, \"images_per_second\": {:.2f}, "
        "\"repeats\": [{:.2f}], \"kernel\": \"{}\", \"threads\": {}, \"grain\": {}}}\n",
        net.name(), batch, median, fmt::join(rates, ", "), blas::kernel_name(), compute_threads(), parallel_grain());
  }
  return 0;
}
