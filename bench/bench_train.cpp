// End-to-end training throughput of one net on synthetic data: forward,
// backward and an SGD-momentum step per iteration, as in
// bench/pytorch/pytorch_baseline.py, so that the two can be run side by side.
//
//   bench_train --net=config/nets/lenet.ini --batch=64 [--classes=10 --iters=100 --warmup=10
//               --repeats=5 --threads=0 --kernel=auto --conv=auto --json=FILE --profile]
//
// --conv: the convolutions' algorithm, as [conv] algorithm (auto, measured, im2col, dnnl).
//
// --profile times each layer's forward and backward pass instead (median over
// `iters` iterations after the warm-up), with the solver step, and prints
// them sorted by time, like `caffe time`.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "core/kernels/compute_threads.hpp"
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

// Times each layer's forward and backward pass and the solver step over
// `iters` iterations, and prints the medians sorted by time.
void profile(Net& net, Solver& solver, int iters) {
  const size_t n = net.num_layers();
  std::vector<std::vector<double>> fwd(n), bwd(n);
  std::vector<double> zero, step, total;
  for (int it = 0; it < iters; ++it) {
    const auto iteration = std::chrono::steady_clock::now();
    auto t = std::chrono::steady_clock::now();
    net.zero_param_diffs();
    zero.push_back(seconds_since(t));
    for (size_t i = 0; i < n; ++i) {
      t = std::chrono::steady_clock::now();
      net.forward_layer(i);
      fwd[i].push_back(seconds_since(t));
    }
    net.begin_backward();
    for (size_t i = n; i-- > 0;) {
      t = std::chrono::steady_clock::now();
      net.backward_layer(i);
      bwd[i].push_back(seconds_since(t));
    }
    t = std::chrono::steady_clock::now();
    solver.step();
    step.push_back(seconds_since(t));
    total.push_back(seconds_since(iteration));
  }

  struct Row {
    std::string name, type;
    double forward = 0, backward = 0, forward_flops = 0, backward_flops = 0;
  };
  std::vector<Row> rows;
  double layers_total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    Row r{net.layer(i).name(), net.layer(i).type(), median_of(fwd[i]), median_of(bwd[i])};
    r.forward_flops = forward_flops(net, i);
    // Backward: the weight gradient, plus the bottom gradient when it is wanted.
    const auto& down = net.layer_propagate_down(i);
    const bool data_grad = !down.empty() && down[0];
    r.backward_flops = r.forward_flops * (data_grad ? 2.0 : 1.0);
    layers_total += r.forward + r.backward;
    rows.push_back(std::move(r));
  }
  const double zero_s = median_of(zero), step_s = median_of(step), total_s = median_of(total);
  rows.push_back({"(zero param diffs)", "Net", zero_s, 0});
  rows.push_back({"(solver step)", "Solver", step_s, 0});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.forward + a.backward > b.forward + b.backward; });

  auto rate = [](double flops, double s) { return flops > 0 && s > 0 ? fmt::format("{:8.1f}", flops / s * 1e-9) : std::string(8, ' '); };
  std::printf("%-28s %-14s %9s %9s %9s %6s %6s %8s %8s\n", "layer", "type", "fwd ms", "bwd ms", "total ms", "share",
              "cum", "fwd GF/s", "bwd GF/s");
  const double sum = layers_total + zero_s + step_s;
  double cumulative = 0.0;
  double conv_flops = 0.0, conv_time = 0.0;
  for (const Row& r : rows) {
    const double t = r.forward + r.backward;
    cumulative += t;
    if (r.forward_flops > 0) conv_flops += r.forward_flops + r.backward_flops, conv_time += t;
    std::printf("%-28s %-14s %9.3f %9.3f %9.3f %5.1f%% %5.1f%% %s %s\n", r.name.c_str(), r.type.c_str(),
                r.forward * 1e3, r.backward * 1e3, t * 1e3, 100.0 * t / sum, 100.0 * cumulative / sum,
                rate(r.forward_flops, r.forward).c_str(), rate(r.backward_flops, r.backward).c_str());
  }
  std::printf("sum of medians %.1f ms; median iteration %.1f ms (%.2f images/s); "
              "Convolution + InnerProduct %.1f ms at %.1f GFLOP/s\n",
              sum * 1e3, total_s * 1e3, static_cast<double>(net.batch()) / total_s, conv_time * 1e3,
              conv_time > 0 ? conv_flops / conv_time * 1e-9 : 0.0);
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
        "\"repeats\": [{:.2f}], \"kernel\": \"{}\", \"threads\": {}}}\n",
        net.name(), batch, median, fmt::join(rates, ", "), blas::kernel_name(), compute_threads());
  }
  return 0;
}
