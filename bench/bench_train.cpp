// End-to-end training throughput of one net on synthetic data: forward,
// backward and an SGD-momentum step per iteration, as in
// bench/pytorch/pytorch_baseline.py, so that the two can be run side by side.
//
//   bench_train --net=config/nets/lenet.ini --batch=64 [--classes=10 --iters=100 --warmup=10
//               --repeats=5 --threads=0 --kernel=auto --json=FILE]

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/common/random.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"

using namespace taihu;

namespace {

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return std::string(argv[i]).substr(prefix.size());
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  blas::KernelRequest request;
  request.kernel = arg(argc, argv, "kernel", "auto");
  request.threads = std::stoi(arg(argc, argv, "threads", "0"));
  blas::select_kernel(request, argc, argv);
  enable_flush_to_zero();

  const std::string net_path = arg(argc, argv, "net", "config/nets/lenet.ini");
  const int64_t batch = std::stoll(arg(argc, argv, "batch", "64"));
  const int iters = std::stoi(arg(argc, argv, "iters", "100"));
  const int warmup = std::stoi(arg(argc, argv, "warmup", "10"));
  const int repeats = std::stoi(arg(argc, argv, "repeats", "5"));
  const std::string json = arg(argc, argv, "json", "");
  const uint64_t classes = std::stoull(arg(argc, argv, "classes", "10"));

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
              sorted.back(), blas::kernel_name().c_str(), blas::threads());
  if (!json.empty()) {
    std::ofstream out(json, std::ios::app);
    out << fmt::format(
        "{{\"framework\": \"taihu\", \"net\": \"{}\", \"batch\": {}, \"images_per_second\": {:.2f}, "
        "\"repeats\": [{:.2f}], \"kernel\": \"{}\", \"threads\": {}}}\n",
        net.name(), batch, median, fmt::join(rates, ", "), blas::kernel_name(), blas::threads());
  }
  return 0;
}
